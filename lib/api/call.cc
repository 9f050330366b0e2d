#include "api/call.h"

#include <algorithm>
#include <limits>

#include "api/group.h"
#include "core/log.h"
#include "cuda/cuda_support.h"
#include "reduce/reduce.h"

namespace rina::api {

std::string& threadLastError() {
  thread_local std::string last;
  return last;
}

// Null, destroyed or not a handle: an error naming the function; else ok.
Status checkHandle(const rinaComm* comm, const char* fn) {
  if (!comm) return errorf(rinaInvalidArgument, "%s: comm is NULL", fn);
  if (comm->magic == kDestroyedComm) {
    return errorf(rinaInvalidArgument, "%s: comm was destroyed (rinaCommDestroy)", fn);
  }
  if (comm->magic != kLiveComm) {
    return errorf(rinaInvalidArgument, "%s: comm is not a communicator (or was destroyed)", fn);
  }
  return {};
}

bool live(const rinaComm* comm) { return comm && comm->magic == kLiveComm; }

rinaResult_t fail(rinaComm* comm, const Status& s) {
  if (comm) {
    comm->impl->lastError() = s.message();
  } else {
    threadLastError() = s.message();
  }
  // A revoke is news of a failure that its own rank reported at WARN.
  RINA_LOG_AT(s.code() == rinaInvalidArgument || s.code() == rinaRevoked ? rina::LogLevel::kInfo
                                                                         : rina::LogLevel::kWarn,
              "%s: %s", rinaGetErrorString(s.code()), s.message().c_str());
  return s.code();
}

// The argument checks every collective makes; bytes gets count * element size.
Status checkCollective(rinaComm* comm, const Collective& call, size_t* bytes) {
  const char* name = call.name;
  if (call.root && (*call.root < 0 || *call.root >= comm->impl->size())) {
    return errorf(rinaInvalidArgument, "%s: root %d is outside [0, %d)", name, *call.root,
                  comm->impl->size());
  }
  if (static_cast<unsigned>(call.type) >= rinaNumTypes) {
    return errorf(rinaInvalidArgument, "%s: invalid datatype %d", name,
                  static_cast<int>(call.type));
  }
  if (call.op && static_cast<unsigned>(*call.op) >= rinaNumOps) {
    return errorf(rinaInvalidArgument, "%s: invalid reduction op %d", name,
                  static_cast<int>(*call.op));
  }
  const size_t es = rina::reduce::dataTypeSize(call.type);
  if (call.count >
      std::numeric_limits<size_t>::max() / es / std::max(call.sendParts, call.recvParts)) {
    return errorf(rinaInvalidArgument, "%s: count %zu is too large", name, call.count);
  }
  *bytes = call.count * es;
  if (call.count > 0 && (!call.send || !call.recv)) {
    return errorf(rinaInvalidArgument, "%s: %s is NULL with count %zu", name,
                  !call.send ? "sendbuff" : "recvbuff", call.count);
  }
  return checkUsable(comm, name);
}

Status checkNotUsedUp(const rinaComm* comm, const char* fn) {
  if (!comm->replacedBy) return {};
  return errorf(rinaInvalidUsage,
                "%s: rank %d: this communicator was used up by %s: call the new one, and "
                "destroy this one",
                fn, comm->impl->rank(), comm->replacedBy);
}

Status checkUsable(rinaComm* comm, const char* fn) {
  RINA_TRY(checkNotUsedUp(comm, fn));
  if (comm->impl->aborted()) return errorf(rinaAborted, "%s: communicator was aborted", fn);
  if (Status s = comm->impl->takeNoticesIfSent(); !s.ok()) return s.prepend(std::string(fn) + ": ");
  if (comm->impl->revoked()) return comm->impl->revokedError(fn);
  if (comm->broken != rinaSuccess) {
    return Status(comm->broken, std::string(fn) + ": communicator failed earlier (" +
                                    comm->impl->lastError() + "); destroy it" +
                                    (comm->broken == rinaRemoteError || comm->broken == rinaTimeout
                                         ? ", or revoke and shrink it (rinaCommShrink)"
                                         : ""));
  }
  return {};
}

rinaResult_t finish(rinaComm* comm, Status s) {
  if (s.ok()) return rinaSuccess;
  if (s.code() != rinaInvalidArgument) comm->broken = s.code();
  return fail(comm, s);
}

namespace {

// Which buffers are GPU memory (staged through pinned host memory).
Status locateBuffers(Communicator& c, const char* name, const void* send, size_t sendBytes,
                     void* recv, size_t recvBytes, rina::cuda::StagedBuffers* b) {
  b->send = send;
  b->sendBytes = sendBytes;
  b->recv = recv;
  b->recvBytes = recvBytes;
  Status s = rina::cuda::isDevicePointer(send, sendBytes, "sendbuff", &b->sendOnDevice);
  if (s.ok()) s = rina::cuda::isDevicePointer(recv, recvBytes, "recvbuff", &b->recvOnDevice);
  if (!s.ok()) s.prepend(std::string(name) + ": rank " + std::to_string(c.rank()) + ": ");
  return s;
}

// RINA_CUDA_STAGE_BYTES of the communicator: the chunks a GPU allreduce is cut into.
size_t stageBytes(const Communicator& c) { return static_cast<size_t>(c.options().cudaStageBytes); }

rinaResult_t executeCollective(rinaComm* comm, const Collective& call, const HostRun& run,
                               size_t bytes);

}  // namespace

// Every collective's entry: the handle and argument checks, the empty call,
// GPU buffers staged as call.staging says, the run, and a failure kept.
rinaResult_t runCollective(rinaComm* comm, const Collective& call, const HostRun& run) {
  Status s = checkHandle(comm, call.name);
  if (!s.ok()) return fail(nullptr, s);
  size_t bytes = 0;
  s = checkCollective(comm, call, &bytes);
  if (!s.ok()) return fail(comm, s);
  if (inGroup()) {
    // At rinaGroupEnd; the buffers are the caller's until then.
    deferCall(comm, [comm, call, run, bytes] { return executeCollective(comm, call, run, bytes); });
    return rinaSuccess;
  }
  return executeCollective(comm, call, run, bytes);
}

namespace {

// What a collective does once its arguments are checked: now, or at rinaGroupEnd.
rinaResult_t executeCollective(rinaComm* comm, const Collective& call, const HostRun& run,
                               size_t bytes) {
  std::lock_guard<std::mutex> running(comm->running);
  Status s = checkUsable(comm, call.name);
  if (!s.ok()) return fail(comm, s);
  Communicator& c = *comm->impl;
  std::string why;
  if (call.onStream && !rina::cuda::usable(&why)) {
    return fail(comm, errorf(rinaSystemError, "%s: rank %d: no usable GPU (%s)", call.name,
                             c.rank(), why.c_str()));
  }
  if (call.count == 0) return rinaSuccess;
  rina::cuda::StagedBuffers b;
  if (call.staging != Staging::kNone) {
    s = locateBuffers(c, call.name, call.send, bytes * call.sendParts, call.recv,
                      bytes * call.recvParts, &b);
    if (!s.ok()) return fail(comm, s);
  }
  if (!b.sendOnDevice && !b.recvOnDevice) {
    if (call.onStream) {
      s = rina::cuda::synchronizeStream(call.stream, c.rank(), c.timeoutMs());
      if (!s.ok()) return fail(comm, s.prepend(std::string(call.name) + ": "));
    }
    return finish(comm, run(c, call.send, call.recv, call.count));
  }
  if (call.staging == Staging::kPipelined) {
    return finish(comm, rina::cuda::runStagedPipelined(
                            b, call.count, bytes / call.count, stageBytes(c), call.stream, c.rank(),
                            c.timeoutMs(), [&](const void* hs, void* hr, size_t, size_t n) {
                              return run(c, hs, hr, n);
                            }));
  }
  return finish(comm, rina::cuda::runStaged(
                          b, call.stream, c.rank(), c.timeoutMs(),
                          [&](const void* hs, void* hr) { return run(c, hs, hr, call.count); }));
}

}  // namespace

}  // namespace rina::api
