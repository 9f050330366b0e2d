// Revoking a communicator and the notices that carry it (transport/notice.h):
// a revoke is a flag every rank must learn without a collective, so the
// rank that revokes leaves a notice at every other rank's listening socket,
// which each rank reads at the start of every call and after every quiet
// wait of a call in progress (its engines wake when the socket becomes
// readable: Context::setOwnerWatch). With every rank on one host the sender
// first counts the notice in the host segment, and a call's start looks at
// the socket only while a counted notice is not yet taken.
#include "comm/communicator.h"
#include "core/log.h"
#include "transport/channel.h"
#include "transport/shm_group.h"

namespace rina::comm {
namespace {

// A revoke reaches the ranks that are alive at once; one that neither
// answers nor refuses (a host that is gone) is given up after this long.
constexpr int64_t kNoticeWaitMs = 1000;
// Connections taken from the listening socket per look: more wait for the
// next one.
constexpr int kArrivalsPerLook = 64;

}  // namespace

void Communicator::revoke(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(revokeMutex_);
    if (revoked_.load()) return;
    revokedBy_ = "revoked on rank " + std::to_string(rank()) + " (" + why + ")";
    revoked_ = true;
  }
  RINA_INFO("rank %d: communicator revoked: %s; telling the other %d rank(s)", rank(), why.c_str(),
            size() - 1);
  transport::Notice n;
  n.kind = transport::NoticeKind::kRevoke;
  n.text = why;
  std::vector<PackedAddr> addrs;
  std::vector<Status> sent;
  noticeOthers(std::move(n), kNoticeWaitMs, &addrs, &sent);
  for (size_t i = 0; i < sent.size(); ++i) {
    if (!sent[i].ok()) {
      RINA_INFO("rank %d: the revoke did not reach %s: %s", rank(), addrs[i].str().c_str(),
                sent[i].message().c_str());
    }
  }
}

void Communicator::noticeOthers(transport::Notice n, int64_t waitMs, std::vector<PackedAddr>* addrs,
                                std::vector<Status>* sent) {
  n.from = rank();
  n.ranks.assign(size(), false);
  std::vector<std::string> bytes;
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) continue;
    countNoticeFor(r);
    addrs->push_back(mesh_.table[r].listen);
    bytes.push_back(transport::encodeNotice(n, r, mesh_.commId));
  }
  transport::postNotices(*addrs, bytes, deadlineAfterMs(std::min(timeoutMs(), waitMs)), sent);
}

void Communicator::watchNotices() {
  setOwnerWatch(
      [this]() -> Status {
        RINA_TRY(takeNotices());
        if (!revoked()) return {};
        std::lock_guard<std::mutex> lock(revokeMutex_);
        return Status(rinaRevoked, "the communicator was " + revokedBy_);
      },
      listen_.get());
}

Status Communicator::revokedError(const std::string& call) const {
  std::lock_guard<std::mutex> lock(revokeMutex_);
  return Status(rinaRevoked, call + ": rank " + std::to_string(rank()) + ": the communicator was " +
                                 revokedBy_ + "; shrink it (rinaCommShrink) or destroy it");
}

void Communicator::countNoticeFor(int r) {
  transport::ShmGroup* g = hostGroup();
  if (g && g->ranks() == size()) g->countNoticeFor(r);
}

Status Communicator::takeNoticesIfSent() {
  const transport::ShmGroup* g = hostGroup();
  if (g && g->ranks() == size() && g->noticesSentHere() == noticesTaken_) return {};
  return takeNotices();
}

Status Communicator::takeNotices() {
  if (!listen_.valid()) return {};
  for (int i = 0; i < kArrivalsPerLook; ++i) {
    transport::Arrival a;
    bool got = false;
    RINA_TRY(transport::acceptArrivalNow(
        mesh_, listen_.get(), deadlineAfterMs(std::min(timeoutMs(), kNoticeWaitMs)), &a, &got));
    if (!got) break;
    switch (a.hello.kind) {
      case transport::kMeshHello:
        arrivals_.mesh.push_back(std::move(a));
        break;
      case transport::kChannelHello:
        arrivals_.channels.push_back(std::move(a));
        break;
      default:
        arrivals_.notices.push_back(std::move(a));
        break;
    }
  }
  while (!arrivals_.notices.empty()) {
    transport::Arrival a = std::move(arrivals_.notices.front());
    arrivals_.notices.pop_front();
    if (a.hello.commId != mesh_.commId) {
      RINA_INFO("rank %d: dropped a notice from rank %d for another communicator", rank(),
                a.hello.from);
      continue;
    }
    ++noticesTaken_;
    transport::Notice n;
    Status s = transport::readNotice(a.fd.get(), a.hello, size(),
                                     deadlineAfterMs(std::min(timeoutMs(), kNoticeWaitMs)), &n);
    if (!s.ok()) {
      RINA_WARN("rank %d: %s", rank(), s.message().c_str());
      continue;
    }
    applyNotice(std::move(n), std::move(a.fd));
  }
  return {};
}

void Communicator::applyNotice(transport::Notice n, Fd fd) {
  switch (n.kind) {
    case transport::NoticeKind::kRevoke: {
      std::lock_guard<std::mutex> lock(revokeMutex_);
      if (!revoked_.load()) {
        revokedBy_ = "revoked by rank " + std::to_string(n.from) + " (" + n.text + ")";
        revoked_ = true;
        RINA_INFO("rank %d: communicator %s", rank(), revokedBy_.c_str());
      }
      return;
    }
    case transport::NoticeKind::kProposal:
      if (n.flags & transport::kNoticeAbort) {
        std::lock_guard<std::mutex> lock(revokeMutex_);
        if (!revoked_.load()) {
          revokedBy_ = "revoked by rank " + std::to_string(n.from) +
                       " (it shrinks the communicator with rinaShrinkAbort)";
          revoked_ = true;
        }
      }
      proposals_.push_back(Proposal{std::move(n), std::move(fd)});
      return;
    case transport::NoticeKind::kRefusal:
      refusals_.emplace(n.attempt, "rank " + std::to_string(n.from) + " refused shrink attempt #" +
                                       std::to_string(n.attempt) + ": " + n.text);
      return;
    case transport::NoticeKind::kVerdict:
      RINA_WARN("rank %d: dropped a shrink verdict from rank %d that came outside a shrink", rank(),
                n.from);
      return;
  }
}

Status Communicator::asyncError() {
  RINA_TRY(takeNotices());
  if (revoked()) return revokedError("rinaCommGetAsyncError");
  if (aborted()) {
    return errorf(rinaAborted, "rinaCommGetAsyncError: rank %d: communicator was aborted", rank());
  }
  auto check = [this](transport::Connection& c) -> Status {
    Status s = c.checkGone();
    if (!s.ok()) s.prepend("rinaCommGetAsyncError: rank " + std::to_string(rank()) + ": ");
    return s;
  };
  for (auto& [peer, conn] : connections()) RINA_TRY(check(*conn));
  for (auto& [key, conn] : spineConnections()) RINA_TRY(check(*conn));
  if (rackAgent_) {
    RINA_TRY(rackAgent_->checkWhileIdle(*this).prepend("rinaCommGetAsyncError: "));
  }
  return {};
}

}  // namespace rina::comm
