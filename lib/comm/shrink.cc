// rinaCommShrink: the survivors agree on who is out, then form a new
// communicator over the connections they hold (derive.cc).
//
// The agreement. Every survivor sends its list (a proposal: a notice with
// the excluded ranks as a bitmap) to the coordinator, the lowest rank it
// does not exclude, over a connection of its own to the coordinator's
// listening socket; the coordinator waits for every survivor of its list,
// checks that each sent the same list, and answers each on its connection
// (a verdict), so the agreement costs one connection per survivor. Any
// rank that finds a mismatch (a list that differs, a proposal from a rank
// it excludes or sent to it as if it were the coordinator), or a survivor
// that cannot be reached, answers or leaves a refusal with the reason at
// every other rank's listening socket, so every survivor fails at once
// with that reason instead of waiting out RINA_TIMEOUT_MS. Shrink attempts
// are numbered per communicator (every survivor calls rinaCommShrink the
// same number of times), so a refusal or a proposal from another attempt
// is never taken for this one, and the new communicator's id is the same
// on every survivor without a message: a hash of this one's id and the
// attempt.
#include <poll.h>

#include <algorithm>
#include <functional>
#include <string>

#include "comm/communicator.h"
#include "core/log.h"
#include "transport/shm_group.h"

namespace rina::comm {
namespace {

// A refusal reaches the ranks that are alive at once; one that neither
// answers nor refuses is given up after this long.
constexpr int64_t kRefusalWaitMs = 1000;

std::string listOf(const std::vector<bool>& ranks) {
  std::string s;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (!ranks[r]) continue;
    s.append(s.empty() ? "" : ",").append(std::to_string(r));
  }
  return "{" + s + "}";
}

}  // namespace

uint64_t Communicator::successorId(uint64_t attempt) const {
  // splitmix64 of the id and the attempt: the same on every survivor.
  uint64_t z = mesh_.commId ^ (attempt * 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (z ^ (z >> 31)) | 1;
}

void Communicator::refuseShrink(uint64_t attempt, const std::string& why) {
  transport::Notice n;
  n.kind = transport::NoticeKind::kRefusal;
  n.attempt = attempt;
  n.text = why;
  std::vector<PackedAddr> addrs;
  std::vector<Status> sent;
  noticeOthers(std::move(n), kRefusalWaitMs, &addrs, &sent);
}

namespace {

// A notice on a connection this rank opened (the coordinator's answer).
Status readAnswer(int fd, int from, int nranks, uint64_t commId, Deadline deadline,
                  transport::Notice* out) {
  transport::PeerHello hello{};
  RINA_TRY(recvAll(fd, &hello, sizeof hello, deadline));
  if (hello.magic != transport::kPeerMagic || hello.kind != transport::kNoticeHello ||
      hello.commId != commId || hello.from != from) {
    return errorf(rinaRemoteError, "rank %d answered with something that is not a notice", from);
  }
  return transport::readNotice(fd, hello, nranks, deadline, out);
}

}  // namespace

Status Communicator::agreeOnShrink(uint64_t attempt, const std::vector<bool>& excluded,
                                   uint32_t* hostRound, const std::function<Status()>& meanwhile) {
  const std::string where = "rank " + std::to_string(rank()) + ": rinaCommShrink (attempt #" +
                            std::to_string(attempt) + ", excluding " + listOf(excluded) + "): ";
  int coordinator = 0;
  while (excluded[coordinator]) ++coordinator;
  const Deadline deadline = deadlineAfterMs(timeoutMs());
  transport::Notice mine;
  mine.kind = transport::NoticeKind::kProposal;
  mine.attempt = attempt;
  mine.from = rank();
  mine.ranks = excluded;
  mine.hostRound = *hostRound;
  // Whatever fails here fails on every survivor: the reason goes to all.
  auto refuse = [&](rinaResult_t code, const std::string& why) {
    refuseShrink(attempt, why);
    return Status(code, where + why);
  };
  auto refusalOf = [&](const std::string& why) {
    transport::Notice no;
    no.kind = transport::NoticeKind::kRefusal;
    no.attempt = attempt;
    no.from = rank();
    no.ranks.assign(size(), false);
    no.text = why;
    return no;
  };
  // The proposals that came for this attempt, the coordinator's to keep.
  std::vector<Proposal> kept;
  auto answerAll = [&](const transport::Notice& answer) {
    for (Proposal& p : kept) {
      const std::string bytes = transport::encodeNotice(answer, p.notice.from, mesh_.commId);
      (void)sendAll(p.fd.get(), bytes.data(), bytes.size(), deadline);
    }
  };
  // A rank that is not excluded but whose connection to this one closed
  // has failed too: no survivor waits for it (looked at again while
  // waiting).
  auto failedSurvivor = [&]() -> std::string {
    for (auto& [peer, conn] : connections()) {
      Status gone = excluded[peer] ? Status() : conn->checkGone();
      if (!gone.ok()) {
        return "rank " + std::to_string(peer) + " is not excluded, but its connection closed (" +
               gone.message() + "): exclude it too";
      }
    }
    return "";
  };
  // A refusal from another rank is the reason for whatever else went wrong
  // (a rank that refused may leave and close its connections), so notices
  // are read before any failure seen here is blamed.
  auto refusalCame = [&]() { return takeNotices().ok() && refusals_.count(attempt) != 0; };
  if (std::string why = failedSurvivor(); !why.empty() && !refusalCame()) {
    return refuse(rinaRemoteError, why);
  }
  Fd toCoordinator;
  if (rank() != coordinator) {
    countNoticeFor(coordinator);
    Status s = transport::sendNotice(mesh_.table[coordinator].listen,
                                     transport::encodeNotice(mine, coordinator, mesh_.commId),
                                     deadline, &toCoordinator);
    if (!s.ok()) {
      return refuse(rinaRemoteError,
                    "rank " + std::to_string(coordinator) +
                        " (the lowest rank not excluded, which gathers the survivors' lists) "
                        "cannot be reached: " +
                        s.message() + "; exclude it too if it failed");
    }
  }
  if (Status m = meanwhile(); !m.ok()) return refuse(m.code(), m.message());
  std::set<int> missing;
  for (int r = 0; r < size(); ++r) {
    if (!excluded[r] && r != rank() && rank() == coordinator) missing.insert(r);
  }
  for (;;) {
    RINA_TRY(takeNotices().prepend(where));
    // Proposals: the coordinator checks and keeps them; anyone else was
    // sent one because its sender's list differs from its own.
    std::string mismatch;
    for (Proposal& p : proposals_) {
      if (p.notice.attempt != attempt) continue;
      const int from = p.notice.from;
      std::string why;
      if (rank() != coordinator) {
        why = "rank " + std::to_string(from) + " excludes " + listOf(p.notice.ranks) +
              " and sent its list here, while this rank excludes " + listOf(excluded) +
              " and sends it to rank " + std::to_string(coordinator);
      } else if (excluded[from]) {
        why = "rank " + std::to_string(from) +
              ", which this rank excludes, shrinks too (it "
              "excludes " +
              listOf(p.notice.ranks) + ")";
      } else if (p.notice.ranks != excluded) {
        why = "the lists differ: rank " + std::to_string(from) + " excludes " +
              listOf(p.notice.ranks) + ", rank " + std::to_string(rank()) + " excludes " +
              listOf(excluded);
      }
      if (why.empty()) missing.erase(from);
      if (mismatch.empty()) mismatch = why;
      kept.push_back(std::move(p));
      p.notice.attempt = 0;  // taken
    }
    // Older attempts' proposals are void; later ones wait for their attempt.
    std::erase_if(proposals_, [&](const Proposal& p) { return p.notice.attempt <= attempt; });
    auto refused = refusals_.find(attempt);
    if (refused != refusals_.end()) {
      answerAll(refusalOf(refused->second));
      return Status(rinaInvalidUsage, where + refused->second);
    }
    if (!mismatch.empty()) {
      answerAll(refusalOf(mismatch));
      return refuse(rinaInvalidUsage, mismatch);
    }
    if (rank() == coordinator && missing.empty()) {
      transport::Notice verdict = mine;
      verdict.kind = transport::NoticeKind::kVerdict;
      for (const Proposal& p : kept) {
        if (!transport::seqAtLeast(verdict.hostRound, p.notice.hostRound)) {
          verdict.hostRound = p.notice.hostRound;
        }
      }
      *hostRound = verdict.hostRound;
      answerAll(verdict);
      return {};
    }
    std::vector<pollfd> waits{{listen_.get(), POLLIN, 0}};
    if (toCoordinator.valid()) waits.push_back({toCoordinator.get(), POLLIN, 0});
    const int64_t left = msUntil(deadline);
    if (left <= 0) {
      std::string who;
      for (int r : missing) who.append(who.empty() ? "" : ",").append(std::to_string(r));
      return refuse(
          rinaTimeout,
          rank() == coordinator
              ? "rank(s) " + who + " did not join the shrink within RINA_TIMEOUT_MS"
              : "no verdict from rank " + std::to_string(coordinator) + " within RINA_TIMEOUT_MS");
    }
    poll(waits.data(), waits.size(), static_cast<int>(std::min<int64_t>(left, 100)));
    if (std::string why = failedSurvivor(); !why.empty()) {
      if (refusalCame()) continue;
      answerAll(refusalOf(why));
      return refuse(rinaRemoteError, why);
    }
    if (waits.size() < 2 || !(waits[1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    transport::Notice answer;
    Status s =
        readAnswer(toCoordinator.get(), coordinator, size(), mesh_.commId, deadline, &answer);
    if (!s.ok()) {
      if (refusalCame()) continue;
      return refuse(rinaRemoteError,
                    "rank " + std::to_string(coordinator) +
                        " (the coordinator) failed before its verdict: " + s.message());
    }
    if (answer.kind == transport::NoticeKind::kRefusal) {
      return Status(rinaInvalidUsage,
                    where + "rank " + std::to_string(coordinator) + " refused: " + answer.text);
    }
    if (answer.kind != transport::NoticeKind::kVerdict || answer.ranks != excluded ||
        answer.attempt != attempt) {
      return refuse(rinaRemoteError, "rank " + std::to_string(coordinator) + " answered with a " +
                                         transport::noticeKindName(answer.kind) + " for " +
                                         listOf(answer.ranks) + ", not a verdict on this list");
    }
    *hostRound = answer.hostRound;
    return {};
  }
}

Status Communicator::shrink(const std::vector<int>& exclude, std::unique_ptr<Communicator>* out) {
  const Clock::time_point started = Clock::now();
  const uint64_t attempt = ++shrinkAttempts_;
  std::vector<bool> excluded(size(), false);
  for (int r : exclude) excluded[r] = true;
  std::vector<int> members;
  for (int r = 0; r < size(); ++r) {
    if (!excluded[r]) members.push_back(r);
  }
  const int newRank =
      static_cast<int>(std::find(members.begin(), members.end(), rank()) - members.begin());
  std::vector<bootstrap::PeerInfo> table;
  for (int r : members) table.push_back(mesh_.table[r]);
  // Connections of the new communicator that peers open during the
  // agreement are kept for it.
  mesh_.successorId = successorId(attempt);
  // What needs no agreement starts now, so it overlaps the agreement: the
  // connections to the survivors start over under the new id, and a new
  // host segment, where none is kept, is joined (not waited for). This
  // communicator's streams are then no longer its own: a failed agreement
  // revokes it on every rank (a later shrink starts them over again).
  for (auto& [peer, conn] : connections()) {
    if (!excluded[peer] && conn->canResync()) conn->beginResync(mesh_.successorId);
  }
  for (auto& [key, conn] : spineConnections()) {
    if (!excluded[key.first] && conn->canResync()) conn->beginResync(mesh_.successorId);
  }
  std::unique_ptr<Communicator> next = successor(static_cast<int>(members.size()), newRank);
  // This communicator's host segment, where it has one, serves the shrunk
  // one too, its members' slots renumbered once they agree (no segment to
  // make and no wait for every member to map it). Without one, a new one
  // is joined once this rank's list is on its way; its name holds the
  // members too: ranks whose lists differ (the agreement then fails) never
  // meet in one segment.
  const bool keepSegment = hostGroup() != nullptr && members.size() >= 2;
  uint32_t hostRound = keepSegment ? hostGroup()->lastRound() : 0;
  uint64_t segmentId = mesh_.successorId;
  for (int r : members) segmentId = segmentId * 0x100000001b3ull ^ static_cast<uint64_t>(r);
  Status agreed = agreeOnShrink(attempt, excluded, &hostRound, [&] {
    if (keepSegment) return Status();
    return next->joinHostGroup(table, segmentId, deadlineAfterMs(timeoutMs()));
  });
  if (!agreed.ok()) {
    revoke("shrink attempt #" + std::to_string(attempt) + " failed: " + agreed.message());
    return agreed;
  }
  if (keepSegment) {
    std::unique_ptr<transport::ShmGroup> segment = releaseHostGroup();
    segment->renumber(members, newRank, hostRound);
    next->setHostGroup(std::move(segment));
    // This rank's slot keeps its count of notices sent to it: the shrunk
    // communicator goes on from those this rank took.
    next->noticesTaken_ = noticesTaken_;
  }
  topo::RackMap pinned = racks();
  RINA_TRY(pinSwitches(options_.switches, &pinned));
  next->setRacks(topo::subRackMap(pinned, members, /*partialRacksKeepIna=*/true));
  handOver(members, next.get());
  RINA_TRY(next->formDerived(table, mesh_.successorId, std::move(rackAgent_), started,
                             "shrunk from " + std::to_string(size()) + " ranks",
                             /*resyncBegun=*/true));
  *out = std::move(next);
  return {};
}

}  // namespace rina::comm
