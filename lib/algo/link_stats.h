// Measured link rates: what each connection moved and how fast (the
// counters the step engine keeps, transport::LinkCounters), a bounded probe
// at communicator creation to seed them, and the report of every rank's
// links to rank 0, where the planner (lib/plan) takes them as probes.
#ifndef RINA_LIB_ALGO_LINK_STATS_H_
#define RINA_LIB_ALGO_LINK_STATS_H_

#include <cstdint>
#include <vector>

#include "algo/communicator.h"
#include "core/status.h"
#include "plan/network.h"

namespace rina::algo {

// One connection as one rank sees it. Plain data: it crosses the wire as is
// (all ranks run the same library build).
struct LinkRate {
  int32_t rank = 0;  // the rank that measured
  int32_t peer = 0;
  uint64_t bytesSent = 0;
  uint64_t bytesRecv = 0;
  int64_t sendBusyNs = 0;
  int64_t recvBusyNs = 0;
  double sendRate = 0;  // bytes/s, smoothed; how fast the transport took bytes
  double recvRate = 0;  // bytes/s, smoothed; the hop peer -> rank as achieved
  char kind[8] = {};    // "socket", "shm"
};
static_assert(sizeof(LinkRate) == 64);

// This rank's connections, by peer ascending.
std::vector<LinkRate> localLinkRates(const Communicator& comm);

// Sends `bytes` to and receives `bytes` from every connected peer, one peer
// at a time in ascending order of the pair (lower rank, higher rank), so
// each exchange has the link to itself and no cycle of waits can form. All
// of it within timeoutMs, else rinaTimeout naming the rank and the peer.
Status probeLinks(Communicator& comm, size_t bytes, int64_t timeoutMs);
// probeLinks with RINA_PROBE_BYTES / RINA_PROBE_TIMEOUT_MS; nothing when 0.
Status probeLinksFromConfig(Communicator& comm);

// Collective (every rank calls it, like an allreduce): rank 0 receives
// every rank's localLinkRates, passed down the ring from rank n-1, and gets
// the whole table sorted by (rank, peer); the other ranks get an empty one.
Status gatherLinkRates(Communicator& comm, std::vector<LinkRate>* table);

// The planner's view of a table: one probe per hop peer -> rank that
// received bytes (its smoothed receive rate, in Mbit/s). Replaces a probe
// of the same hop already in net, appends the others.
void addMeasuredProbes(const std::vector<LinkRate>& table, plan::Network* net);

// Host link rates as measured, for the port shares of INA racks: a host's
// link moves at least as fast as the fastest hop measured into it and out
// of it (other ranks' receive rates) between hosts of different racks; the
// lower of the two directions, and never above the configured rate. Shared
// memory rows are left out (they do not cross the host link); hosts with
// nothing measured keep their rate.
void addMeasuredHostRates(const std::vector<LinkRate>& table, plan::Network* net);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_LINK_STATS_H_
