// The C ABI: argument checks, error bookkeeping, and the hand-off to
// lib/comm. Every function returns a rinaResult_t; the message behind a
// failure is kept for rinaCommGetLastError.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algo/engine/algorithm.h"
#include "api/call.h"
#include "api/handle.h"
#include "bootstrap/bootstrap.h"
#include "comm/communicator.h"
#include "comm/link_stats.h"
#include "comm/plan_sync.h"
#include "core/log.h"
#include "plan/batch_sizes.h"
#include "rina/rina.h"

using rina::errorf;
using rina::Status;
using rina::api::checkHandle;
using rina::api::Collective;
using rina::api::fail;
using rina::api::live;
using rina::api::runCollective;
using rina::api::Staging;
using rina::comm::Communicator;

Communicator* rina::api::communicatorOf(rinaComm_t comm) {
  return comm && comm->magic == kLiveComm ? comm->impl.get() : nullptr;
}

namespace {

// The memory of the last kKeep destroyed handles (a few dozen bytes each,
// the communicator itself freed), so a call on one of them reads a
// destroyed mark instead of freed memory. Never destroyed itself, so the
// handles stay reachable (no leak report at exit).
class Quarantine {
 public:
  static Quarantine& get() {
    static Quarantine* q = new Quarantine;
    return *q;
  }
  void keep(rinaComm* comm) {
    rinaComm* old = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      handles_.push_back(comm);
      if (handles_.size() > kKeep) {
        old = handles_.front();
        handles_.pop_front();
      }
    }
    delete old;
  }

 private:
  static constexpr size_t kKeep = 64;
  std::mutex mutex_;
  std::deque<rinaComm*> handles_;
};

}  // namespace

rinaResult_t rina::api::commInitRank(rinaComm_t* comm, int nranks, const rinaUniqueId& uniqueId,
                                     int rank, const rina::config::Options& options) {
  if (!comm) return fail(nullptr, errorf(rinaInvalidArgument, "rinaCommInitRank: comm is NULL"));
  *comm = nullptr;
  if (nranks < 1) {
    return fail(nullptr, errorf(rinaInvalidArgument, "rinaCommInitRank: nranks %d < 1", nranks));
  }
  if (rank < 0 || rank >= nranks) {
    return fail(nullptr, errorf(rinaInvalidArgument, "rinaCommInitRank: rank %d is outside [0, %d)",
                                rank, nranks));
  }
  auto handle = std::make_unique<rinaComm>();
  Status s = Communicator::create(nranks, uniqueId, rank, options, &handle->impl);
  if (!s.ok()) return fail(nullptr, s.prepend("rinaCommInitRank: "));
  *comm = handle.release();
  return rinaSuccess;
}

extern "C" {

rinaResult_t rinaGetVersion(int* version) {
  if (!version)
    return fail(nullptr, errorf(rinaInvalidArgument, "rinaGetVersion: version is NULL"));
  *version = RINA_VERSION_CODE;
  return rinaSuccess;
}

rinaResult_t rinaGetUniqueId(rinaUniqueId* uniqueId) {
  if (!uniqueId)
    return fail(nullptr, errorf(rinaInvalidArgument, "rinaGetUniqueId: uniqueId is NULL"));
  const rina::config::Options env = rina::config::environment();
  std::string secret;
  Status s = rina::bootstrap::readCommSecret(env.commSecret, &secret);
  if (!s.ok()) return fail(nullptr, s.prepend("rinaGetUniqueId: "));
  s = rina::bootstrap::createUniqueId(env.socketIfname, env.timeoutMs, secret, uniqueId);
  return s.ok() ? rinaSuccess : fail(nullptr, s);
}

namespace {

// The environment's knobs, with timeoutMs > 0 replacing RINA_TIMEOUT_MS.
rinaResult_t initRank(const char* fn, rinaComm_t* comm, int nranks, const rinaUniqueId& uniqueId,
                      int rank, int64_t timeoutMs) {
  if (!comm) return fail(nullptr, errorf(rinaInvalidArgument, "%s: comm is NULL", fn));
  *comm = nullptr;
  rina::config::Options options;
  Status s = rina::config::fromEnvironment(&options);
  if (!s.ok())
    return fail(nullptr, s.prepend(std::string(fn) + ": rank " + std::to_string(rank) + ": "));
  if (timeoutMs > 0) {
    RINA_INFO("%s: rank %d: timeout %lld ms from rinaConfig_t, in place of RINA_TIMEOUT_MS %lld",
              fn, rank, static_cast<long long>(timeoutMs),
              static_cast<long long>(options.timeoutMs));
    options.timeoutMs = timeoutMs;
  }
  return rina::api::commInitRank(comm, nranks, uniqueId, rank, options);
}

}  // namespace

rinaResult_t rinaCommInitRank(rinaComm_t* comm, int nranks, rinaUniqueId uniqueId, int rank) {
  return initRank("rinaCommInitRank", comm, nranks, uniqueId, rank, 0);
}

rinaResult_t rinaCommInitRankConfig(rinaComm_t* comm, int nranks, rinaUniqueId uniqueId, int rank,
                                    const rinaConfig_t* config) {
  const char* fn = "rinaCommInitRankConfig";
  int64_t timeoutMs = 0;
  if (config) {
    constexpr size_t kHead = offsetof(rinaConfig_t, timeoutMs);
    if (config->size < kHead) {
      return fail(nullptr, errorf(rinaInvalidArgument,
                                  "%s: config->size %zu is smaller than %zu; start from "
                                  "RINA_CONFIG_INITIALIZER",
                                  fn, config->size, kHead));
    }
    rinaConfig_t c{};  // fields the caller's struct does not have stay 0
    std::memcpy(&c, config, std::min(config->size, sizeof c));
    if (c.timeoutMs < 0) {
      return fail(nullptr, errorf(rinaInvalidArgument, "%s: config->timeoutMs %lld < 0", fn,
                                  static_cast<long long>(c.timeoutMs)));
    }
    timeoutMs = c.timeoutMs;
  }
  return initRank(fn, comm, nranks, uniqueId, rank, timeoutMs);
}

rinaResult_t rinaCommDestroy(rinaComm_t comm) {
  Status s = checkHandle(comm, "rinaCommDestroy");
  if (!s.ok()) return fail(nullptr, s);
  comm->magic = kDestroyedComm;
  comm->impl.reset();
  Quarantine::get().keep(comm);
  return rinaSuccess;
}

rinaResult_t rinaCommAbort(rinaComm_t comm) {
  Status s = checkHandle(comm, "rinaCommAbort");
  if (!s.ok()) return fail(nullptr, s);
  comm->impl->abort();
  return rinaSuccess;
}

rinaResult_t rinaCommCount(const rinaComm_t comm, int* count) {
  if (Status h = checkHandle(comm, "rinaCommCount"); !h.ok()) return fail(nullptr, h);
  if (!count) return fail(nullptr, errorf(rinaInvalidArgument, "rinaCommCount: count is NULL"));
  *count = comm->impl->size();
  return rinaSuccess;
}

rinaResult_t rinaCommUserRank(const rinaComm_t comm, int* rank) {
  if (Status h = checkHandle(comm, "rinaCommUserRank"); !h.ok()) return fail(nullptr, h);
  if (!rank) return fail(nullptr, errorf(rinaInvalidArgument, "rinaCommUserRank: rank is NULL"));
  *rank = comm->impl->rank();
  return rinaSuccess;
}

rinaResult_t rinaCommSetAlgorithm(rinaComm_t comm, const char* algorithm) {
  if (Status h = checkHandle(comm, "rinaCommSetAlgorithm"); !h.ok()) return fail(nullptr, h);
  if (!algorithm)
    return fail(nullptr, errorf(rinaInvalidArgument, "rinaCommSetAlgorithm: algorithm is NULL"));
  rina::algo::Algorithm a;
  Status s = rina::algo::parseAlgorithm(algorithm, &a);
  if (!s.ok()) return fail(comm, s.prepend("rinaCommSetAlgorithm: "));
  comm->impl->setAlgorithm(a);
  return rinaSuccess;
}

rinaResult_t rinaCommGetStats(const rinaComm_t comm, rinaCommStats_t* stats) {
  if (Status h = checkHandle(comm, "rinaCommGetStats"); !h.ok()) return fail(nullptr, h);
  if (!stats) return fail(nullptr, errorf(rinaInvalidArgument, "rinaCommGetStats: stats is NULL"));
  constexpr size_t kHead = offsetof(rinaCommStats_t, callsRing);
  if (stats->size < kHead) {
    return fail(comm, errorf(rinaInvalidArgument,
                             "rinaCommGetStats: stats->size %zu is smaller than %zu; set it to "
                             "sizeof(rinaCommStats_t)",
                             stats->size, kHead));
  }
  const rina::algo::CommStats& c = comm->impl->stats();
  rinaCommStats_t full{};
  full.size = std::min(stats->size, sizeof(rinaCommStats_t));
  full.version = RINA_COMM_STATS_VERSION;
  for (const rina::algo::AlgorithmEntry& a : rina::algo::kAlgorithmTable) {
    if (a.calls) full.*a.calls = c.calls[static_cast<int>(a.algorithm)];
  }
  full.callsAllToAll = c.allToAlls;
  full.callsReduce = c.reduces;
  full.callsGather = c.gathers;
  full.callsScatter = c.scatters;
  full.sends = c.sends;
  full.recvs = c.recvs;
  full.p2pBytesSent = comm->impl->channelBytes(rina::transport::Direction::kSend);
  full.p2pBytesReceived = comm->impl->channelBytes(rina::transport::Direction::kRecv);
  const rina::comm::InaCounters ina = comm->impl->inaCounters();
  full.inaFallbacks = ina.fallbacks;
  full.inaCalls = ina.calls;
  full.inaRetransmissions = ina.wire.retransmissions;
  full.inaHostSlices = ina.hostSlices;
  full.inaRegrants = ina.regrants;
  full.inaDatagrams = ina.wire.datagramsSent;
  full.inaFastRetransmissions = ina.wire.fastRetransmissions;
  full.inaLateAnswers = ina.wire.lateAnswers;
  full.inaSocketDrops = ina.wire.socketDrops;
  full.inaWindowCuts = ina.wire.windowCuts;
  full.inaReturns = ina.returns;
  full.bytesSent = c.closedBytesSent;
  full.bytesReceived = c.closedBytesReceived;
  for (const rina::comm::LinkRate& l : rina::comm::localLinkRates(*comm->impl)) {
    ++full.links;
    full.bytesSent += l.bytesSent;
    full.bytesReceived += l.bytesRecv;
  }
  const rina::comm::PlanSync& plans = comm->impl->plans();
  full.planEpoch = plans.epoch();
  full.replans = plans.replans();
  full.planChecks = plans.checks();
  std::memcpy(stats, &full, full.size);
  return rinaSuccess;
}

namespace {

constexpr size_t kLinkStatsV1Bytes = offsetof(rinaLinkStats_t, spine);
static_assert(kLinkStatsV1Bytes == 64, "version 1 entries are 64 bytes");

rinaResult_t linkStats(const char* fn, const rinaComm_t comm, void* links, size_t linkBytes,
                       bool defaultOnly, int maxLinks, int* nLinks) {
  if (Status h = checkHandle(comm, fn); !h.ok()) return fail(nullptr, h);
  if (!nLinks) return fail(comm, errorf(rinaInvalidArgument, "%s: nLinks is NULL", fn));
  if (maxLinks < 0 || (!links && maxLinks > 0)) {
    return fail(comm, errorf(rinaInvalidArgument,
                             "%s: maxLinks %d with links %s; expected "
                             "maxLinks >= 0 and links non-NULL when maxLinks > 0",
                             fn, maxLinks, links ? "set" : "NULL"));
  }
  if (linkBytes < kLinkStatsV1Bytes) {
    return fail(comm, errorf(rinaInvalidArgument,
                             "%s: linkBytes %zu is smaller than %zu; pass sizeof(rinaLinkStats_t)",
                             fn, linkBytes, kLinkStatsV1Bytes));
  }
  std::vector<rina::comm::LinkRate> rows = rina::comm::localLinkRates(*comm->impl);
  if (defaultOnly) {
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [](const rina::comm::LinkRate& l) { return !l.defaultPath; }),
               rows.end());
  }
  *nLinks = static_cast<int>(rows.size());
  char* dst = static_cast<char*>(links);
  for (size_t i = 0; i < rows.size() && i < static_cast<size_t>(maxLinks); ++i) {
    const rina::comm::LinkRate& l = rows[i];
    rinaLinkStats_t out{};
    out.peer = l.peer;
    std::memcpy(out.transport, l.kind, std::min(sizeof(out.transport) - 1, sizeof(l.kind)));
    out.bytesSent = l.bytesSent;
    out.bytesReceived = l.bytesRecv;
    out.busySendSec = static_cast<double>(l.sendBusyNs) / 1e9;
    out.busyRecvSec = static_cast<double>(l.recvBusyNs) / 1e9;
    out.sendRate = l.sendRate;
    out.recvRate = l.recvRate;
    out.spine = l.spine;
    out.defaultPath = l.defaultPath;
    std::memcpy(dst + i * linkBytes, &out, std::min(linkBytes, sizeof out));
  }
  return rinaSuccess;
}

}  // namespace

rinaResult_t rinaCommGetLinkStatsSized(const rinaComm_t comm, rinaLinkStats_t* links,
                                       size_t linkBytes, int maxLinks, int* nLinks) {
  return linkStats("rinaCommGetLinkStats", comm, links, linkBytes, false, maxLinks, nLinks);
}

// Version 1 of the header declared this function; programs built against it
// pass 64-byte entries and know nothing of per-spine connections.
#undef rinaCommGetLinkStats
extern "C" RINA_API rinaResult_t rinaCommGetLinkStats(const rinaComm_t comm, void* links,
                                                      int maxLinks, int* nLinks);
rinaResult_t rinaCommGetLinkStats(const rinaComm_t comm, void* links, int maxLinks, int* nLinks) {
  return linkStats("rinaCommGetLinkStats", comm, links, kLinkStatsV1Bytes, true, maxLinks, nLinks);
}

const char* rinaGetErrorString(rinaResult_t result) {
  switch (result) {
    case rinaSuccess:
      return "no error";
    case rinaSystemError:
      return "system error";
    case rinaInternalError:
      return "internal error";
    case rinaInvalidArgument:
      return "invalid argument";
    case rinaInvalidUsage:
      return "invalid usage";
    case rinaRemoteError:
      return "remote process failed or exited";
    case rinaTimeout:
      return "timed out";
    case rinaAborted:
      return "communicator aborted";
    case rinaRevoked:
      return "communicator revoked";
    default:
      return "unknown result code";
  }
}

const char* rinaCommGetLastError(rinaComm_t comm) {
  if (comm && comm->magic == kDestroyedComm) return "the communicator was destroyed";
  return live(comm) ? comm->impl->lastError().c_str() : rina::api::threadLastError().c_str();
}

rinaResult_t rinaAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           rinaDataType_t datatype, rinaRedOp_t op, rinaComm_t comm) {
  Collective call("rinaAllReduce", sendbuff, recvbuff, count, datatype);
  call.op = op;
  call.staging = Staging::kPipelined;
  return runCollective(comm, call, [=](Communicator& c, const void* send, void* recv, size_t n) {
    return c.allReduce(send, recv, n, datatype, op);
  });
}

rinaResult_t rinaAllReduceStream(const void* sendbuff, void* recvbuff, size_t count,
                                 rinaDataType_t datatype, rinaRedOp_t op, rinaComm_t comm,
                                 void* stream) {
  Collective call("rinaAllReduceStream", sendbuff, recvbuff, count, datatype);
  call.op = op;
  call.staging = Staging::kPipelined;
  call.onStream = true;
  call.stream = stream;
  return runCollective(comm, call, [=](Communicator& c, const void* send, void* recv, size_t n) {
    return c.allReduce(send, recv, n, datatype, op);
  });
}

rinaResult_t rinaAllReduceWeighted(const void* sendbuff, void* recvbuff, size_t count,
                                   rinaDataType_t datatype, double weight, rinaComm_t comm) {
  Collective call("rinaAllReduceWeighted", sendbuff, recvbuff, count, datatype);
  call.staging = Staging::kNone;  // the weights are scaled in on the host
  return runCollective(comm, call, [=](Communicator& c, const void* send, void* recv, size_t n) {
    Status s = c.weightedAllReduce(send, recv, n, datatype, weight);
    if (!s.ok()) s.prepend("rinaAllReduceWeighted: ");
    return s;
  });
}

rinaResult_t rinaSuggestBatchSizes(int64_t globalBatch, int nranks, const double* computeRate,
                                   const double* commSeconds, int64_t* batchSizes) {
  if (nranks < 1) {
    return fail(nullptr,
                errorf(rinaInvalidArgument, "rinaSuggestBatchSizes: nranks %d < 1", nranks));
  }
  if (!computeRate || !batchSizes) {
    return fail(nullptr, errorf(rinaInvalidArgument, "rinaSuggestBatchSizes: %s is NULL",
                                computeRate ? "batchSizes" : "computeRate"));
  }
  std::vector<double> rate(computeRate, computeRate + nranks);
  std::vector<double> comm =
      commSeconds ? std::vector<double>(commSeconds, commSeconds + nranks) : std::vector<double>();
  rina::plan::BatchAdvice advice;
  Status s = rina::plan::suggestBatchSizes(globalBatch, rate, comm, &advice);
  if (!s.ok()) return fail(nullptr, s.prepend("rinaSuggestBatchSizes: "));
  std::memcpy(batchSizes, advice.batch.data(), sizeof(int64_t) * nranks);
  return rinaSuccess;
}

rinaResult_t rinaReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               rinaDataType_t datatype, rinaRedOp_t op, rinaComm_t comm) {
  Collective call("rinaReduceScatter", sendbuff, recvbuff, recvcount, datatype);
  call.op = op;
  call.sendParts = live(comm) ? static_cast<size_t>(comm->impl->size()) : 1;
  return runCollective(comm, call, [=](Communicator& c, const void* send, void* recv, size_t n) {
    return c.reduceScatter(send, recv, n, datatype, op);
  });
}

rinaResult_t rinaAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           rinaDataType_t datatype, rinaComm_t comm) {
  Collective call("rinaAllGather", sendbuff, recvbuff, sendcount, datatype);
  call.recvParts = live(comm) ? static_cast<size_t>(comm->impl->size()) : 1;
  return runCollective(comm, call, [=](Communicator& c, const void* send, void* recv, size_t n) {
    return c.allGather(send, recv, n, datatype);
  });
}

rinaResult_t rinaBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           rinaDataType_t datatype, int root, rinaComm_t comm) {
  // Only the root reads sendbuff.
  const void* send = live(comm) && comm->impl->rank() != root ? recvbuff : sendbuff;
  Collective call("rinaBroadcast", send, recvbuff, count, datatype);
  call.root = root;
  return runCollective(comm, call, [=](Communicator& c, const void* hs, void* hr, size_t n) {
    return c.broadcast(hs, hr, n, datatype, root);
  });
}

}  // extern "C"
