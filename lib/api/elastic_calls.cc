// The C entry points of failures and elastic communicators: revoke, the
// asynchronous error, shrink, split, grow and join (docs/api.md, "When a
// rank or a switch fails"). The work is lib/comm's (revoke.cc, shrink.cc,
// split.cc, grow.cc); here are the argument checks and the handles.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "api/call.h"
#include "api/handle.h"
#include "comm/communicator.h"
#include "core/log.h"
#include "rina/rina.h"

using rina::errorf;
using rina::Status;
using rina::api::checkHandle;
using rina::api::fail;

extern "C" {

rinaResult_t rinaCommRevoke(rinaComm_t comm) {
  Status s = checkHandle(comm, "rinaCommRevoke");
  if (!s.ok()) return fail(nullptr, s);
  if (s = rina::api::checkNotUsedUp(comm, "rinaCommRevoke"); !s.ok()) return fail(comm, s);
  {
    // With no call running, a revoke that already came needs no notices of
    // this rank's: every rank has one (after a failure every survivor
    // revokes, and n ranks telling n ranks each would cost n^2 connections).
    std::unique_lock<std::mutex> running(comm->running, std::try_to_lock);
    if (running.owns_lock()) (void)comm->impl->takeNotices();
  }
  // The reason the other ranks read: this rank's last error names the
  // failure that made the caller revoke (a dead peer), if there was one.
  const std::string& last = comm->impl->lastError();
  comm->impl->revoke(last.empty() ? "rinaCommRevoke" : "rinaCommRevoke after: " + last);
  return rinaSuccess;
}

rinaResult_t rinaCommGetAsyncError(rinaComm_t comm, rinaResult_t* asyncError) {
  Status s = checkHandle(comm, "rinaCommGetAsyncError");
  if (!s.ok()) return fail(nullptr, s);
  if (!asyncError) {
    return fail(comm, errorf(rinaInvalidArgument, "rinaCommGetAsyncError: asyncError is NULL"));
  }
  if (s = rina::api::checkNotUsedUp(comm, "rinaCommGetAsyncError"); !s.ok()) {
    return fail(comm, s);
  }
  std::unique_lock<std::mutex> running(comm->running, std::try_to_lock);
  if (!running.owns_lock()) {
    // A call runs on another thread: it reports its own failures.
    *asyncError = comm->impl->revoked() ? rinaRevoked : rinaSuccess;
    return rinaSuccess;
  }
  if (comm->broken != rinaSuccess) {
    *asyncError = comm->broken;
    return rinaSuccess;
  }
  s = comm->impl->asyncError();
  *asyncError = s.code();
  if (!s.ok()) {
    comm->impl->lastError() = s.message();
    RINA_INFO("rinaCommGetAsyncError: %s: %s", rinaGetErrorString(s.code()), s.message().c_str());
  }
  return rinaSuccess;
}

}  // extern "C"

namespace {

// The handle of a communicator made from comm.
rinaResult_t handOut(std::unique_ptr<rina::comm::Communicator> impl, rinaComm_t* out) {
  auto handle = std::make_unique<rinaComm>();
  handle->impl = std::move(impl);
  *out = handle.release();
  return rinaSuccess;
}

}  // namespace

extern "C" {

rinaResult_t rinaCommShrink(rinaComm_t comm, const int* excludeRanks, int excludeCount,
                            rinaComm_t* newcomm, int flags) {
  const char* fn = "rinaCommShrink";
  Status s = checkHandle(comm, fn);
  if (!s.ok()) return fail(nullptr, s);
  if (!newcomm) return fail(comm, errorf(rinaInvalidArgument, "%s: newcomm is NULL", fn));
  *newcomm = nullptr;
  rina::comm::Communicator& c = *comm->impl;
  const int n = c.size();
  std::string bad;
  if (flags != RINA_SHRINK_DEFAULT && flags != RINA_SHRINK_ABORT) {
    bad =
        "flags " + std::to_string(flags) + " is neither RINA_SHRINK_DEFAULT nor RINA_SHRINK_ABORT";
  } else if (excludeCount < 0) {
    bad = "excludeCount " + std::to_string(excludeCount) + " < 0";
  } else if (excludeCount > 0 && !excludeRanks) {
    bad = "excludeRanks is NULL with excludeCount " + std::to_string(excludeCount);
  }
  std::vector<int> exclude;
  std::vector<bool> seen(n, false);
  for (int i = 0; bad.empty() && i < excludeCount; ++i) {
    const int r = excludeRanks[i];
    if (r < 0 || r >= n) {
      bad = "excludeRanks[" + std::to_string(i) + "] = " + std::to_string(r) + " is outside [0, " +
            std::to_string(n) + ")";
    } else if (seen[r]) {
      bad = "excludeRanks lists rank " + std::to_string(r) + " twice";
    } else if (r == c.rank()) {
      bad = "excludeRanks[" + std::to_string(i) + "] is this rank (" + std::to_string(r) +
            "): an excluded rank does not call rinaCommShrink";
    } else {
      seen[r] = true;
      exclude.push_back(r);
    }
  }
  if (s = rina::api::checkNotUsedUp(comm, fn); !s.ok()) return fail(comm, s);
  if (!bad.empty()) {
    // The other survivors wait for this rank's list: they hear why at once.
    Status why = errorf(rinaInvalidArgument, "%s: rank %d: %s", fn, c.rank(), bad.c_str());
    c.refuseShrinkArguments(why.message());
    return fail(comm, why);
  }
  if (flags == RINA_SHRINK_ABORT) c.revoke("rinaCommShrink with RINA_SHRINK_ABORT");
  std::lock_guard<std::mutex> running(comm->running);  // a call in progress has stopped
  std::sort(exclude.begin(), exclude.end());
  std::unique_ptr<rina::comm::Communicator> next;
  s = c.shrink(exclude, &next);
  // Once its connections went to the new communicator (even one whose
  // set-up then failed), this one is used up; a failed agreement leaves it
  // as it was, for another try.
  if (c.usedUp()) comm->replacedBy = fn;
  if (!s.ok()) return fail(comm, s);
  return handOut(std::move(next), newcomm);
}

}  // extern "C"

extern "C" {

rinaResult_t rinaCommSplit(rinaComm_t comm, int color, int key, rinaComm_t* newcomm) {
  const char* fn = "rinaCommSplit";
  Status s = checkHandle(comm, fn);
  if (!s.ok()) return fail(nullptr, s);
  std::lock_guard<std::mutex> running(comm->running);
  s = rina::api::checkUsable(comm, fn);
  if (!s.ok()) return fail(comm, s);
  rina::comm::Communicator& c = *comm->impl;
  Status bad;
  if (!newcomm) {
    bad = errorf(rinaInvalidArgument, "%s: rank %d: newcomm is NULL", fn, c.rank());
  } else if (color < 0 && color != RINA_SPLIT_NOCOLOR) {
    bad = errorf(rinaInvalidArgument,
                 "%s: rank %d: color %d is negative and not RINA_SPLIT_NOCOLOR (%d)", fn, c.rank(),
                 color, RINA_SPLIT_NOCOLOR);
  }
  if (newcomm) *newcomm = nullptr;
  // A rank with bad arguments still takes part, so the others fail at once.
  std::unique_ptr<rina::comm::Communicator> child;
  bool exchanged = false;
  s = c.split(color, key, bad.ok(), &child, &exchanged);
  if (!bad.ok()) return fail(comm, bad);
  if (!s.ok()) return exchanged ? fail(comm, s) : rina::api::finish(comm, s);
  return child ? handOut(std::move(child), newcomm) : rinaSuccess;
}

rinaResult_t rinaCommGrow(rinaComm_t comm, int nNew, rinaUniqueId uniqueId, rinaComm_t* newcomm) {
  const char* fn = "rinaCommGrow";
  Status s = checkHandle(comm, fn);
  if (!s.ok()) return fail(nullptr, s);
  if (!newcomm) return fail(comm, errorf(rinaInvalidArgument, "%s: newcomm is NULL", fn));
  *newcomm = nullptr;
  rina::comm::Communicator& c = *comm->impl;
  if (nNew < 1 || nNew > (1 << 20)) {
    return fail(comm, errorf(rinaInvalidArgument, "%s: rank %d: nNew %d is outside [1, 2^20]", fn,
                             c.rank(), nNew));
  }
  std::lock_guard<std::mutex> running(comm->running);
  s = rina::api::checkUsable(comm, fn);
  if (!s.ok()) return fail(comm, s);
  std::unique_ptr<rina::comm::Communicator> next;
  bool exchanged = false;
  s = c.grow(nNew, uniqueId, &next, &exchanged);
  if (c.usedUp()) comm->replacedBy = fn;
  if (!s.ok()) return exchanged ? fail(comm, s) : rina::api::finish(comm, s);
  return handOut(std::move(next), newcomm);
}

rinaResult_t rinaCommJoin(rinaComm_t* newcomm, int nranks, rinaUniqueId uniqueId, int rank) {
  const char* fn = "rinaCommJoin";
  if (!newcomm) return fail(nullptr, errorf(rinaInvalidArgument, "%s: newcomm is NULL", fn));
  *newcomm = nullptr;
  if (nranks < 2 || rank < 1 || rank >= nranks) {
    return fail(nullptr, errorf(rinaInvalidArgument,
                                "%s: rank %d of %d: a joiner's rank is in [1, nranks) (the "
                                "communicator it joins holds rank 0 and more)",
                                fn, rank, nranks));
  }
  rina::config::Options options;
  Status s = rina::config::fromEnvironment(&options);
  if (!s.ok()) return fail(nullptr, s.prepend(std::string(fn) + ": "));
  options.commId.clear();  // the grow's id names the root, never RINA_COMM_ID
  return rina::api::commInitRank(newcomm, nranks, uniqueId, rank, options);
}

}  // extern "C"
