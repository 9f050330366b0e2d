// rinaCommGrow: this communicator's ranks and the joiners meet at the new
// id's root (the unique-id rendezvous of creation): each rank of this
// communicator keeps its number and its listening socket, the joiners take
// the numbers after them (rinaCommJoin, which runs create), and the root
// hands everyone the grown table and a fresh communicator id. The ranks of
// this communicator keep their connections among themselves and make the
// ones to the joiners and to the neighbours the new numbering gives them;
// every INA rack registers its job again with its new members. On one
// host the host segment is kept when it has spare slots for the joiners
// (transport::ShmGroup::grow): rank 0's rendezvous entry offers it, and the
// joiners take the spare slots instead of everyone mapping a new segment.
#include <cstring>
#include <functional>
#include <string>

#include "algo/flat/flat.h"
#include "comm/communicator.h"
#include "core/log.h"
#include "transport/shm_group.h"

namespace rina::comm {
namespace {

std::vector<std::string> hostIdsOf(const std::vector<bootstrap::PeerInfo>& table) {
  std::vector<std::string> ids;
  for (const bootstrap::PeerInfo& p : table)
    ids.emplace_back(p.host, strnlen(p.host, sizeof p.host));
  return ids;
}

// What every rank of the communicator must pass alike, with its complement
// so that one max gives the least value too: nNew, the id's communicator
// id and its root (0 for an id that is not one).
enum GrowWord { kNewRanks, kNewRanksNot, kIdComm, kIdCommNot, kIdRoot, kIdRootNot, kGrowWords };

}  // namespace

// The check that every rank passes the same nNew and uniqueId runs among
// this communicator's ranks, not at the root: a rank with another id meets
// another root, where nothing could see it. It is one allreduce (through
// the host segment when there is one), so every rank fails alike, before
// anyone waits at a root the others never reach.
Status Communicator::checkGrowArguments(int nNew, const bootstrap::IdData* id,
                                        const std::string& where, bool* exchanged) {
  const uint64_t n = static_cast<uint64_t>(nNew);
  const uint64_t comm = id ? id->commId : 0;
  const uint64_t root = id ? std::hash<std::string>{}(id->root.str()) | 1 : 0;
  uint64_t words[kGrowWords] = {n, ~n, comm, ~comm, root, ~root};
  // Of kind "membership exchange", so a rank in another call is told, not
  // misread.
  RINA_TRY((algo::oneShotFits(*this, sizeof words)
                ? algo::oneShotAllReduce(*this, words, words, kGrowWords, rinaUint64, rinaMax,
                                         algo::kMembership)
                : algo::recursiveDoublingAllReduce(*this, words, words, kGrowWords, rinaUint64,
                                                   rinaMax, algo::kMembership))
               .prepend(where));
  *exchanged = true;
  if (words[kNewRanks] != ~words[kNewRanksNot]) {
    return errorf(rinaInvalidUsage,
                  "%snNew differs across ranks (from %llu to %llu; %d on this rank): every rank "
                  "passes the same nNew and uniqueId",
                  where.c_str(), static_cast<unsigned long long>(~words[kNewRanksNot]),
                  static_cast<unsigned long long>(words[kNewRanks]), nNew);
  }
  if (words[kIdComm] != ~words[kIdCommNot] || words[kIdRoot] != ~words[kIdRootNot]) {
    return errorf(rinaInvalidUsage,
                  "%suniqueId differs across ranks%s (this rank's names the root %s): every rank "
                  "passes the same nNew and uniqueId",
                  where.c_str(), ~words[kIdCommNot] == 0 ? ", some not from rinaGetUniqueId" : "",
                  id ? id->root.str().c_str() : "none");
  }
  return {};
}

Status Communicator::grow(int nNew, const rinaUniqueId& id, std::unique_ptr<Communicator>* out,
                          bool* exchanged) {
  *exchanged = false;
  const Clock::time_point started = Clock::now();
  const std::string where = "rank " + std::to_string(rank()) + ": rinaCommGrow: ";
  bootstrap::IdData data{};
  bool fromEnv = false;
  // The id, never RINA_COMM_ID: the root is the process that made it.
  const Status idOk = bootstrap::resolveId(id, "", &data, &fromEnv);
  RINA_TRY(checkGrowArguments(nNew, idOk.ok() ? &data : nullptr, where, exchanged));
  if (!idOk.ok()) return Status(idOk).prepend(where + "uniqueId: ");
  const int total = size() + nNew;
  // Racks as RINA_RACKS gives them count ranks in order: the grown map is
  // this one's racks, then a rack of its own per joiner (a topology file
  // places joiners by their hosts; one rack per host needs no knob).
  config::Options grown = options_;
  if (grown.topoFile.empty() && !grown.racks.empty()) {
    // RINA_SWITCH lists the switches of the racks that still have one.
    topo::RackMap pinned = racks();
    RINA_TRY(pinSwitches(options_.switches, &pinned).prepend(where));
    std::string switches;
    for (const topo::Rack& r : pinned.racks) {
      if (r.ina && !r.switchCtrl.empty())
        switches.append(switches.empty() ? "" : ",").append(r.switchCtrl);
    }
    if (!switches.empty()) grown.switches = switches;
    std::string text = topo::shortFormOf(racks());
    if (text.empty()) {
      return errorf(rinaInvalidUsage,
                    "%sthe racks of this communicator hold ranks out of rack order (a split "
                    "by keys), which RINA_RACKS cannot give the joiners; use RINA_TOPO_FILE",
                    where.c_str());
    }
    for (int j = 0; j < nNew; ++j) text += ",1";
    grown.racks = text;
  }
  std::string schedule, rankZero, secret;
  RINA_TRY(config::scheduleText(grown, &schedule).prepend(where));
  RINA_TRY(bootstrap::readCommSecret(options_.commSecret, &secret).prepend(where));
  std::vector<bootstrap::PeerInfo> table;
  uint64_t newId = 0;
  // This rank's spine addresses were listened on at creation only: the
  // grown communicator's hops take the default path.
  bootstrap::PeerInfo mine = mesh_.table[rank()];
  mine.spineCount = 0;
  mine.segment = bootstrap::SegmentOffer{};
  // The host segment, when it has room for the joiners: every member marks
  // its slot before it meets them (the same on every member, so rank 0's
  // offer is everyone's); the joiners find the marks once the table is out.
  transport::ShmGroup* segment = hostGroup();
  if (segment && algo::hostSegmentFits(*this) && segment->offersSpares(nNew)) {
    segment->markForGrow(data.commId);
    mine.segment = {segment->nameId(), data.commId, segment->ownerPid(), 0};
  }
  RINA_TRY(bootstrap::rendezvous(data, rank(), total, mine, schedule, secret,
                                 deadlineAfterMs(timeoutMs()), &table, &rankZero, &newId)
               .prepend(where));
  const bootstrap::SegmentOffer offer = bootstrap::takeSegmentOffer(&table);
  // Joiners on another host: no segment at all (as at creation).
  const bool keepSegment = offer.nameId != 0 && oneHost(table);
  for (int r = 0; r < size(); ++r) {
    if (!(table[r].listen == mesh_.table[r].listen)) {
      return errorf(rinaInvalidUsage,
                    "%srank %d of the grown table listens at %s, not where rank %d of this "
                    "communicator does (%s): a joiner took its number",
                    where.c_str(), r, table[r].listen.str().c_str(), r,
                    mesh_.table[r].listen.str().c_str());
    }
  }
  std::unique_ptr<Communicator> next = successor(total, rank());
  next->options_ = grown;
  next->handKnobsToContext();
  topo::RackMap grownRacks;
  RINA_TRY(topo::rackMapFrom(grown.topoFile, grown.racks, hostIdsOf(table), &grownRacks,
                             &next->topology_)
               .prepend(where));
  next->setRacks(std::move(grownRacks));
  std::vector<int> members(size());
  for (int r = 0; r < size(); ++r) members[r] = r;
  mesh_.successorId = newId;
  if (keepSegment) {
    if (!segment) {
      return errorf(rinaInternalError, "%srank 0 offered a host segment this rank does not have",
                    where.c_str());
    }
    std::unique_ptr<transport::ShmGroup> kept = releaseHostGroup();
    RINA_TRY(kept->grow(nNew, offer.tag).prepend(where));
    // Waited for with the joiners, as a new segment is (formDerived).
    next->joiningGroup_ = std::move(kept);
    // This rank's slot keeps its count of notices sent to it.
    next->noticesTaken_ = noticesTaken_;
  }
  handOver(members, next.get());
  RINA_TRY(next->formDerived(table, newId, std::move(rackAgent_), started,
                             "grown from " + std::to_string(size()) + " ranks"));
  *out = std::move(next);
  return {};
}

}  // namespace rina::comm
