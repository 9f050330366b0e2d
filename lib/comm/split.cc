// rinaCommSplit: one exchange over the parent (every rank's color, key,
// whether its arguments were good, and where the new communicator listens),
// then each color's ranks set up a communicator of their own: their own
// listening sockets and connections (the parent stays usable beside its
// children), their rack map cut from the parent's (a rack keeps INA only
// when all its ranks are in the child, with a job of its own on the
// switch), their own plan. A rank with bad arguments still takes part, so
// every rank learns of them at once.
#include <algorithm>
#include <cstring>

#include "algo/flat/flat.h"
#include "comm/communicator.h"
#include "core/log.h"

namespace rina::comm {
namespace {

constexpr uint32_t kSplitMagic = 0x54494c53;  // "SLIT"

struct SplitRecord {
  uint32_t magic;
  int32_t argsOk;  // 0: this rank's rinaCommSplit refused its own arguments
  int32_t color;
  int32_t key;
  bootstrap::PeerInfo info;  // where its new communicator listens (color >= 0)
};

}  // namespace

Status Communicator::split(int color, int key, bool argsOk, std::unique_ptr<Communicator>* out,
                           bool* exchanged) {
  *exchanged = false;
  const Clock::time_point started = Clock::now();
  const uint64_t number = ++splits_;
  const std::string where = "rank " + std::to_string(rank()) + ": rinaCommSplit: ";
  SplitRecord mine{};
  mine.magic = kSplitMagic;
  mine.argsOk = argsOk ? 1 : 0;
  mine.color = color;
  mine.key = key;
  Fd listen;
  if (argsOk && color >= 0) {
    // The child's connections arrive at a socket of its own, on this
    // rank's address; its hops take the default path.
    PackedAddr addr = mesh_.table[rank()].listen;
    addr.port = 0;
    mine.info = mesh_.table[rank()];
    mine.info.spineCount = 0;
    RINA_TRY(listenOn(addr, false, &listen, &mine.info.listen).prepend(where));
  }
  std::vector<SplitRecord> all(size());
  RINA_TRY(algo::ringAllGather(*this, &mine, all.data(), sizeof mine, rinaUint8, algo::kMembership)
               .prepend(where));
  *exchanged = true;
  std::vector<int> members;
  for (int r = 0; r < size(); ++r) {
    const SplitRecord& rec = all[r];
    if (rec.magic != kSplitMagic) {
      return errorf(rinaRemoteError, "%srank %d sent a corrupt split record", where.c_str(), r);
    }
    if (!rec.argsOk) {
      return errorf(rinaInvalidUsage, "%srank %d refused its own arguments (see its error)",
                    where.c_str(), r);
    }
    if (rec.color == color && color >= 0) members.push_back(r);
  }
  if (!argsOk) return {};
  if (color < 0) return {};  // RINA_SPLIT_NOCOLOR: no communicator here
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return all[a].key < all[b].key; });
  const int newRank =
      static_cast<int>(std::find(members.begin(), members.end(), rank()) - members.begin());
  std::unique_ptr<Communicator> child = successor(static_cast<int>(members.size()), newRank);
  child->listen_ = std::move(listen);
  topo::RackMap pinned = racks();
  RINA_TRY(pinSwitches(options_.switches, &pinned).prepend(where));
  child->setRacks(topo::subRackMap(pinned, members, /*partialRacksKeepIna=*/false));
  std::vector<bootstrap::PeerInfo> table;
  for (int r : members) table.push_back(all[r].info);
  // The child's id, the same on each of its ranks: this one's, the split's
  // number and the color.
  const uint64_t id = successorId((number << 32) ^ static_cast<uint32_t>(color) ^ (1ull << 63));
  RINA_TRY(child->formDerived(
      table, id, nullptr, started,
      "split from " + std::to_string(size()) + " ranks, color " + std::to_string(color)));
  *out = std::move(child);
  return {};
}

}  // namespace rina::comm
