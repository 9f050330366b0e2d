// rinaCommGrow: this communicator's ranks and the joiners meet at the new
// id's root (the unique-id rendezvous of creation): each rank of this
// communicator keeps its number and its listening socket, the joiners take
// the numbers after them (rinaCommJoin, which runs create), and the root
// hands everyone the grown table and a fresh communicator id. The ranks of
// this communicator keep their connections among themselves and make the
// ones to the joiners and to the neighbours the new numbering gives them;
// every INA rack registers its job again with its new members.
#include <cstring>
#include <functional>

#include "algo/flat/flat.h"
#include "comm/communicator.h"
#include "core/log.h"

namespace rina::comm {
namespace {

constexpr uint32_t kGrowMagic = 0x574f5247;  // "GROW"

struct GrowRecord {
  uint32_t magic;
  int32_t nNew;
  uint64_t id;  // the unique id's communicator id
  PackedAddr root;
};

std::vector<std::string> hostIdsOf(const std::vector<bootstrap::PeerInfo>& table) {
  std::vector<std::string> ids;
  for (const bootstrap::PeerInfo& p : table)
    ids.emplace_back(p.host, strnlen(p.host, sizeof p.host));
  return ids;
}

}  // namespace

Status Communicator::grow(int nNew, const rinaUniqueId& id, std::unique_ptr<Communicator>* out,
                          bool* exchanged) {
  *exchanged = false;
  const Clock::time_point started = Clock::now();
  const std::string where = "rank " + std::to_string(rank()) + ": rinaCommGrow: ";
  bootstrap::IdData data{};
  bool fromEnv = false;
  // The id, never RINA_COMM_ID: the root is the process that made it.
  const Status idOk = bootstrap::resolveId(id, "", &data, &fromEnv);
  // Every rank must name the same id and number of joiners: one exchange
  // here, before anyone waits at a root the others never reach.
  GrowRecord asked{kGrowMagic, nNew, idOk.ok() ? data.commId : 0,
                   idOk.ok() ? data.root : PackedAddr{}};
  std::vector<GrowRecord> all(size());
  RINA_TRY(
      algo::ringAllGather(*this, &asked, all.data(), sizeof asked, rinaUint8, algo::kMembership)
          .prepend(where));
  *exchanged = true;
  if (!idOk.ok()) return Status(idOk).prepend(where + "uniqueId: ");
  for (int r = 0; r < size(); ++r) {
    const GrowRecord& g = all[r];
    if (g.magic != kGrowMagic) {
      return errorf(rinaRemoteError, "%srank %d sent a corrupt grow record", where.c_str(), r);
    }
    if (g.nNew != nNew || g.id != asked.id || !(g.root == asked.root)) {
      return errorf(rinaInvalidUsage,
                    "%srank %d grows by %d with the id of root %s, this rank by %d with the id "
                    "of root %s: every rank passes the same nNew and uniqueId",
                    where.c_str(), r, g.nNew, g.root.str().c_str(), nNew, asked.root.str().c_str());
    }
  }
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
  RINA_TRY(bootstrap::rendezvous(data, rank(), total, mine, schedule, secret,
                                 deadlineAfterMs(timeoutMs()), &table, &rankZero, &newId)
               .prepend(where));
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
  handOver(members, next.get());
  RINA_TRY(next->formDerived(table, newId, std::move(rackAgent_), started,
                             "grown from " + std::to_string(size()) + " ranks"));
  *out = std::move(next);
  return {};
}

}  // namespace rina::comm
