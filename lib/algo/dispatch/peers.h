// The peers each algorithm talks to, from which the communicator knows whom
// to connect: a rank holds O(rack size) connections, not n - 1.
#ifndef RINA_LIB_ALGO_DISPATCH_PEERS_H_
#define RINA_LIB_ALGO_DISPATCH_PEERS_H_

#include <set>

#include "topo/rack_map.h"

namespace rina::algo {

// Ring neighbours and recursive doubling partners (including the fold
// pairs for non-powers of two).
std::set<int> neighbourRanks(int rank, int nranks);

// The peers of the rack algorithms (hier, rina, ps-ina): every rank of this
// rank's rack and of the racks before and after it (in rack order, cyclic),
// because ports rotate over a rack's workers by chunk and a ring member's
// neighbours are always in the same or an adjacent rack; and for ps-ina
// rank 0 (the parameter server) with every rack's agent.
std::set<int> rackPeerRanks(int rank, const topo::RackMap& map);

// The peers a rank keeps whatever the plan: neighbourRanks, its own rack,
// and the ps-ina star (rank 0 with every rack's agent). A plan adds the
// ranks of its ring neighbours (plan_members.h: planPeerRanks).
std::set<int> basePeerRanks(int rank, const topo::RackMap& map);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_DISPATCH_PEERS_H_
