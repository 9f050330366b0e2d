#include "algo/dispatch/dispatch.h"

namespace rina::algo {

std::set<int> neighbourRanks(int rank, int n) {
  std::set<int> peers;
  if (n <= 1) return peers;
  peers.insert((rank + 1) % n);
  peers.insert((rank + n - 1) % n);
  int p = 1;
  while (p * 2 <= n) p *= 2;
  int rem = n - p;
  int newRank;
  if (rank < 2 * rem) {
    peers.insert(rank % 2 == 0 ? rank + 1 : rank - 1);
    if (rank % 2 == 0) return peers;  // folded out of the doubling
    newRank = rank / 2;
  } else {
    newRank = rank - rem;
  }
  for (int mask = 1; mask < p; mask <<= 1) {
    int partner = newRank ^ mask;
    peers.insert(partner < rem ? partner * 2 + 1 : partner + rem);
  }
  peers.erase(rank);
  return peers;
}

std::set<int> rackPeerRanks(int rank, const topo::RackMap& map) {
  std::set<int> peers;
  const int nr = static_cast<int>(map.racks.size());
  const int mine = map.rackOf[rank];
  for (int d : {-1, 0, 1}) {
    const topo::Rack& rack = map.racks[((mine + d) % nr + nr) % nr];
    peers.insert(rack.ranks.begin(), rack.ranks.end());
  }
  if (rank == 0) {
    for (int r = 0; r < nr; ++r) peers.insert(map.agentOf(r));
  } else if (map.agentOf(mine) == rank) {
    peers.insert(0);
  }
  peers.erase(rank);
  return peers;
}

std::set<int> basePeerRanks(int rank, const topo::RackMap& map) {
  std::set<int> peers = neighbourRanks(rank, static_cast<int>(map.rackOf.size()));
  const topo::Rack& mine = map.racks[map.rackOf[rank]];
  peers.insert(mine.ranks.begin(), mine.ranks.end());
  if (rank == 0) {
    for (size_t r = 0; r < map.racks.size(); ++r) peers.insert(map.agentOf(static_cast<int>(r)));
  } else if (mine.ranks.front() == rank) {
    peers.insert(0);
  }
  peers.erase(rank);
  return peers;
}

}  // namespace rina::algo
