// The C entries of the calls that move blocks, reduce to a root, or send
// point-to-point, and of groups: argument checks here, then the
// communicator (lib/comm) runs them, at once or at rinaGroupEnd (group.h).
#include <algorithm>
#include <limits>
#include <string>

#include "algo/p2p/message.h"
#include "api/call.h"
#include "api/group.h"
#include "cuda/cuda_support.h"
#include "reduce/reduce.h"
#include "rina/rina.h"

using rina::errorf;
using rina::Status;
using rina::api::checkHandle;
using rina::api::Collective;
using rina::api::Communicator;
using rina::api::fail;
using rina::api::live;
using rina::api::runCollective;

namespace {

static_assert(RINA_ANY_PEER == rina::algo::kAnyPeer && RINA_ANY_TAG == rina::algo::kAnyTag);

// A send's or receive's own checks (its buffer, count and type go through
// checkCollective): the peer is another rank of the communicator (or any,
// for a receive outside a group), the tag is >= 0 (or any, for a receive).
Status checkMessage(const rinaComm* comm, const char* name, bool send, int peer, int tag) {
  const int n = comm->impl->size(), rank = comm->impl->rank();
  if (!send && peer == RINA_ANY_PEER) {
    if (rina::api::inGroup()) {
      return errorf(rinaInvalidUsage,
                    "%s: rank %d: a receive from any peer (RINA_ANY_PEER) cannot be part of a "
                    "group: which message it takes would depend on timing",
                    name, rank);
    }
  } else if (peer < 0 || peer >= n) {
    return errorf(rinaInvalidArgument, "%s: rank %d: peer %d is outside [0, %d)", name, rank, peer,
                  n);
  } else if (peer == rank) {
    return errorf(rinaInvalidArgument, "%s: rank %d: peer %d is this rank (a %s itself)", name,
                  rank, peer, send ? "send to" : "receive from");
  }
  if (tag < 0 && !(tag == RINA_ANY_TAG && !send)) {
    return errorf(rinaInvalidArgument, "%s: rank %d: tag %d is negative%s", name, rank, tag,
                  send ? "" : " (RINA_ANY_TAG takes any)");
  }
  return {};
}

// The common call: a live communicator that has not failed, good
// arguments, a host buffer this thread has passed before, outside a group.
// It goes straight to the communicator; anything else takes message()'s
// checks, which say what is wrong (and remember a host buffer).
bool straightThrough(const rinaComm* comm, bool send, const void* buf, size_t count,
                     rinaDataType_t type, int peer, int tag) {
  if (!live(comm) || comm->broken != rinaSuccess || rina::api::inGroup()) return false;
  const Communicator& c = *comm->impl;
  if (static_cast<unsigned>(type) >= rinaNumTypes || peer < 0 || peer >= c.size() ||
      peer == c.rank() || (tag < 0 && !(tag == RINA_ANY_TAG && !send)) || c.aborted() ||
      c.revoked() || comm->replacedBy) {
    return false;
  }
  size_t bytes = 0;
  if (__builtin_mul_overflow(count, rina::reduce::dataTypeSize(type), &bytes)) return false;
  return count == 0 || (buf && rina::cuda::isRememberedHostMemory(buf, bytes));
}

// One message on host memory, now.
// A revoke's notice that came before it is taken by the call's own waits;
// running is held so that a shrink from another thread waits for the call.
rinaResult_t runNow(rinaComm_t comm, rina::algo::Message& m, int* source) {
  std::lock_guard<std::mutex> running(comm->running);
  Status st = comm->impl->runMessages(std::span<rina::algo::Message>(&m, 1));
  if (st.ok() && source && !m.send) *source = m.source;
  return rina::api::finish(comm, std::move(st));
}

// A send (buf is const) or a receive: inside a group it is posted,
// otherwise it runs now (device buffers staged through host memory).
rinaResult_t message(const char* name, bool send, void* buf, size_t count, rinaDataType_t type,
                     int peer, int tag, int* source, rinaComm_t comm) {
  rina::algo::Message m;
  m.send = send;
  m.peer = peer;
  m.sendBuf = buf;
  m.recvBuf = buf;
  m.count = count;
  m.type = type;
  m.tag = tag;
  if (straightThrough(comm, send, buf, count, type, peer, tag)) return runNow(comm, m, source);
  Status s = checkHandle(comm, name);
  if (!s.ok()) return fail(nullptr, s);
  s = checkMessage(comm, name, send, peer, tag);
  if (!s.ok()) return fail(comm, s);
  Collective call(name, buf, buf, count, type);
  size_t bytes = 0;
  s = rina::api::checkCollective(comm, call, &bytes);
  bool device = false;
  if (s.ok() && bytes > 0) {
    s = rina::cuda::isDevicePointer(buf, bytes, send ? "sendbuff" : "recvbuff", &device);
    if (!s.ok()) s.prepend(std::string(name) + ": ");
  }
  if (!s.ok()) return fail(comm, s);
  if (rina::api::inGroup()) {
    if (device) {
      return fail(comm, errorf(rinaInvalidArgument,
                               "%s: rank %d: device memory in a message inside a group is not "
                               "supported (stage it through host memory, or call outside the "
                               "group)",
                               name, comm->impl->rank()));
    }
    rina::api::deferMessage(comm, name, m, source);
    return rinaSuccess;
  }
  if (!device) return runNow(comm, m, source);  // host memory (the usual case)
  return runCollective(comm, call, [=](Communicator& c, const void* hs, void* hr, size_t) {
    rina::algo::Message staged = m;
    staged.sendBuf = hs;
    staged.recvBuf = hr;
    Status st = c.runMessages(std::span<rina::algo::Message>(&staged, 1));
    if (st.ok() && source && !send) *source = staged.source;
    return st;
  });
}

// One side's blocks of rinaAllToAllv (countsName / displsName: the
// arguments): every count and displacement in range; *extent gets the
// buffer's extent in elements (largest displacement + count).
Status checkBlocks(const char* name, int rank, int n, const size_t* counts, const size_t* displs,
                   const char* countsName, const char* displsName, size_t es, size_t* extent) {
  if (!counts || !displs) {
    return errorf(rinaInvalidArgument, "%s: rank %d: %s is NULL", name, rank,
                  !counts ? countsName : displsName);
  }
  *extent = 0;
  const size_t most = std::numeric_limits<size_t>::max() / es;
  for (int p = 0; p < n; ++p) {
    if (counts[p] > most || displs[p] > most - counts[p]) {
      return errorf(rinaInvalidArgument, "%s: rank %d: %s[%d] %zu at %s[%d] %zu is too large", name,
                    rank, countsName, p, counts[p], displsName, p, displs[p]);
    }
    if (counts[p] > 0) *extent = std::max(*extent, displs[p] + counts[p]);
  }
  return {};
}

}  // namespace

extern "C" {

rinaResult_t rinaSend(const void* sendbuff, size_t count, rinaDataType_t datatype, int peer,
                      rinaComm_t comm) {
  return message("rinaSend", true, const_cast<void*>(sendbuff), count, datatype, peer, 0, nullptr,
                 comm);
}

rinaResult_t rinaRecv(void* recvbuff, size_t count, rinaDataType_t datatype, int peer,
                      rinaComm_t comm) {
  return message("rinaRecv", false, recvbuff, count, datatype, peer, RINA_ANY_TAG, nullptr, comm);
}

rinaResult_t rinaSendTagged(const void* sendbuff, size_t count, rinaDataType_t datatype, int peer,
                            int tag, rinaComm_t comm) {
  return message("rinaSendTagged", true, const_cast<void*>(sendbuff), count, datatype, peer, tag,
                 nullptr, comm);
}

rinaResult_t rinaRecvTagged(void* recvbuff, size_t count, rinaDataType_t datatype, int peer,
                            int tag, int* source, rinaComm_t comm) {
  return message("rinaRecvTagged", false, recvbuff, count, datatype, peer, tag, source, comm);
}

rinaResult_t rinaGroupStart(void) { return rina::api::groupStart(); }

rinaResult_t rinaGroupEnd(void) { return rina::api::groupEnd(); }

rinaResult_t rinaAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                          rinaDataType_t datatype, rinaComm_t comm) {
  Collective call("rinaAllToAll", sendbuff, recvbuff, count, datatype);
  call.sendParts = call.recvParts = live(comm) ? static_cast<size_t>(comm->impl->size()) : 1;
  return runCollective(comm, call, [=](Communicator& c, const void* hs, void* hr, size_t n) {
    return c.allToAll(hs, hr, n, datatype);
  });
}

rinaResult_t rinaAllToAllv(const void* sendbuff, const size_t* sendcounts, const size_t* sdispls,
                           void* recvbuff, const size_t* recvcounts, const size_t* rdispls,
                           rinaDataType_t datatype, rinaComm_t comm) {
  const char* name = "rinaAllToAllv";
  Status s = checkHandle(comm, name);
  if (!s.ok()) return fail(nullptr, s);
  const int n = comm->impl->size(), rank = comm->impl->rank();
  if (static_cast<unsigned>(datatype) >= rinaNumTypes) {
    return fail(comm, errorf(rinaInvalidArgument, "%s: invalid datatype %d", name,
                             static_cast<int>(datatype)));
  }
  const size_t es = rina::reduce::dataTypeSize(datatype);
  size_t sendExtent = 0, recvExtent = 0;
  s = checkBlocks(name, rank, n, sendcounts, sdispls, "sendcounts", "sdispls", es, &sendExtent);
  if (s.ok()) {
    s = checkBlocks(name, rank, n, recvcounts, rdispls, "recvcounts", "rdispls", es, &recvExtent);
  }
  if (s.ok() && sendcounts[rank] != recvcounts[rank]) {
    s = errorf(rinaInvalidArgument,
               "%s: rank %d: sendcounts[%d] %zu differs from recvcounts[%d] %zu (the rank's "
               "block to itself)",
               name, rank, rank, sendcounts[rank], rank, recvcounts[rank]);
  }
  if (!s.ok()) return fail(comm, s);
  if ((sendExtent > 0 && !sendbuff) || (recvExtent > 0 && !recvbuff)) {
    return fail(comm, errorf(rinaInvalidArgument, "%s: rank %d: %s is NULL with blocks in it", name,
                             rank, sendExtent > 0 && !sendbuff ? "sendbuff" : "recvbuff"));
  }
  // One element per part, each buffer's extent in parts (what staging
  // copies). A rank with nothing to send or receive still takes part (its
  // peers exchange headers with it): an empty side points at a byte that
  // is never read or written.
  static char nothing;
  Collective call(name, sendExtent ? sendbuff : &nothing, recvExtent ? recvbuff : &nothing, 1,
                  datatype);
  call.sendParts = std::max<size_t>(sendExtent, 1);
  call.recvParts = std::max<size_t>(recvExtent, 1);
  // Keep the caller's arrays: the call may run at rinaGroupEnd.
  std::vector<size_t> sc(sendcounts, sendcounts + n), sd(sdispls, sdispls + n),
      rc(recvcounts, recvcounts + n), rd(rdispls, rdispls + n);
  return runCollective(comm, call, [=](Communicator& c, const void* hs, void* hr, size_t) {
    return c.allToAllv(hs, sc.data(), sd.data(), hr, rc.data(), rd.data(), datatype);
  });
}

rinaResult_t rinaReduce(const void* sendbuff, void* recvbuff, size_t count, rinaDataType_t datatype,
                        rinaRedOp_t op, int root, rinaComm_t comm) {
  // recvbuff is only the root's.
  const bool isRoot = live(comm) && comm->impl->rank() == root;
  Collective call("rinaReduce", sendbuff, isRoot ? recvbuff : const_cast<void*>(sendbuff), count,
                  datatype);
  call.op = op;
  call.root = root;
  return runCollective(comm, call, [=](Communicator& c, const void* hs, void* hr, size_t n) {
    return c.reduce(hs, hr, n, datatype, op, root);
  });
}

rinaResult_t rinaGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                        rinaDataType_t datatype, int root, rinaComm_t comm) {
  const bool isRoot = live(comm) && comm->impl->rank() == root;
  Collective call("rinaGather", sendbuff, isRoot ? recvbuff : const_cast<void*>(sendbuff),
                  sendcount, datatype);
  call.root = root;
  if (isRoot) call.recvParts = static_cast<size_t>(comm->impl->size());
  return runCollective(comm, call, [=](Communicator& c, const void* hs, void* hr, size_t n) {
    return c.gather(hs, hr, n, datatype, root);
  });
}

rinaResult_t rinaScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                         rinaDataType_t datatype, int root, rinaComm_t comm) {
  const bool isRoot = live(comm) && comm->impl->rank() == root;
  Collective call("rinaScatter", isRoot ? sendbuff : recvbuff, recvbuff, recvcount, datatype);
  call.root = root;
  if (isRoot) call.sendParts = static_cast<size_t>(comm->impl->size());
  return runCollective(comm, call, [=](Communicator& c, const void* hs, void* hr, size_t n) {
    return c.scatter(hs, hr, n, datatype, root);
  });
}

}  // extern "C"
