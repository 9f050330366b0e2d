// Measured link rates: what each connection moved and how fast (the
// counters the step engine keeps, transport::LinkCounters), a bounded probe
// at communicator creation to seed them, and the report of every rank's
// links to rank 0, where the planner (lib/plan) takes them as probes.
#ifndef RINA_LIB_COMM_LINK_STATS_H_
#define RINA_LIB_COMM_LINK_STATS_H_

#include <cstdint>
#include <vector>

#include "algo/engine/context.h"
#include "core/status.h"
#include "plan/network.h"

namespace rina::comm {

// One connection as one rank sees it. Plain data: it crosses the wire as is
// (all ranks run the same library build).
struct LinkRate {
  int32_t rank = 0;  // the rank that measured
  int32_t peer = 0;
  // The spine this connection's path crosses: a per-spine connection's
  // spine, or the spine of the pair's default connection when the pair has
  // addresses on several spines (algo::Context::defaultSpine); -1: none known
  // (same rack, one spine).
  int32_t spine = -1;
  int32_t defaultPath = 1;  // 1: the pair's default connection; 0: a per-spine one
  uint64_t bytesSent = 0;
  uint64_t bytesRecv = 0;
  int64_t sendBusyNs = 0;
  int64_t recvBusyNs = 0;
  double sendRate = 0;  // bytes/s, smoothed; how fast the transport took bytes
  double recvRate = 0;  // bytes/s, smoothed; the hop peer -> rank as achieved
  char kind[8] = {};    // "socket", "shm"
};
static_assert(sizeof(LinkRate) == 72);

// This rank's connections, default and per-spine (algo::Context::
// spineConnections), by (peer, spine) ascending.
std::vector<LinkRate> localLinkRates(const algo::Context& ctx);

// The creation probe (RINA_PROBE_BYTES, RINA_PROBE_TIMEOUT_MS; nothing when
// bytes is 0). Sends `bytes` to and receives `bytes` from every connected peer (over its
// default connection), one peer at a time in ascending order of the pair (lower rank, higher rank),
// so each exchange has the link to itself and no cycle of waits can form. All of it within
// timeoutMs, else rinaTimeout naming the rank and the peer.
Status probeLinks(algo::Context& ctx, size_t bytes, int64_t timeoutMs);

// Collective (every rank calls it, like an allreduce): rank 0 receives
// every rank's localLinkRates, passed down the ring from rank n-1, and gets
// the whole table sorted by (rank, peer, spine); the other ranks get an
// empty one.
// extra: rows of this rank's beyond its connections (switchRateRow).
Status gatherLinkRates(algo::Context& ctx, std::vector<LinkRate>* table,
                       const std::vector<LinkRate>& extra = {});

// The planner's view of a table (addMeasuredRates does all of it, in order).
//
// Which paths are limited by a spine. Per rack R, spine s and direction
// (leaving R / entering R), the rows of hops between R and another rack
// over s (spine >= 0, bytes received, not shared memory) sum to U: the hops
// of a ring run at once, so U is what R's link to s carried. If U is below
// kHostLimited of what the hosts at the two ends could move (the lesser of
// the summed configured link rates of the distinct senders and of the
// distinct receivers; unknown rates: unlimited), something on the path
// through s limited those hops: that (R, s, direction) is spine-limited, and
// so is every row through it. Hops that reached their hosts' rates are
// host-limited and say nothing about the spine. Two racks whose hops meet
// only each other cannot be told apart (both ends count); with three or
// more, the end whose other direction runs fast keeps its rate (below).
inline constexpr double kHostLimited = 0.8;

// Uplinks as measured: the link of rack R to spine s moved at least the
// larger of its two directions' sums U; where a direction is spine-limited
// and that is below kHostLimited of the configured rate (or the rate is
// unknown), the uplink's rate becomes it. (Within kHostLimited, a measure
// is the configured rate: TCP goodput and noise would otherwise make a
// measured spine look slower than an unmeasured one of the same rate.)
void addMeasuredUplinkRates(const std::vector<LinkRate>& table, plan::Network* net);

// One probe per hop peer -> rank that received bytes (its smoothed receive
// rate, in Mbit/s; the fastest of the pair's connections), of any path
// (spine -1: it caps the hop whatever spine it takes). Spine-limited rows
// are left out: one flow of several sharing an uplink says less about a
// ring member's hop than the uplink's sum above. Replaces a probe of the
// same hop already in net, appends the others.
void addMeasuredProbes(const std::vector<LinkRate>& table, plan::Network* net);

// Host link rates as measured, for the port shares of INA racks: a host's
// link moves at least as fast as the fastest hop measured into it and out
// of it (other ranks' receive rates) between hosts of different racks; the
// lower of the two directions, and never above the configured rate. Shared
// memory rows and spine-limited rows (the spine, not the host, set their
// pace) are left out; hosts with nothing measured keep their rate.
void addMeasuredHostRates(const std::vector<LinkRate>& table, plan::Network* net);

// All three on a network with the configured rates: which rows are
// spine-limited is decided once, from the configured host rates, then
// uplinks, probes and host rates are lowered as above.
void addMeasuredRates(const std::vector<LinkRate>& table, plan::Network* net);

// After addMeasuredRates, what the run-time planner keeps of the measures.
// A measured rate is what a connection achieved, and a host's comes from
// the hops it carries: a host the plan gives fewer chunks waits less and
// looks different, and on a busy host readings of equal links differ by
// 2-3x even as peaks over several checks (lab, 2 INA racks of 3 and 2
// hosts at 500 Mbit/s: port shares flipped between 5,4,5 and 4,5,4 at
// every check, doubling hier's time, and the ring order changed at most
// checks). A hop's rate is also one flow's share of a shared link: in the
// same lab after the INA path stopped being CPU-bound, the hops from an
// autonomous host to the 3 ports of an INA rack, and ring hops on INA hosts
// whose links also carry the switch traffic, ran at about a third of the
// host rate and read as low as 0.248 of it, which moved a port share off a
// host at a quarter. So a measured host rate or a probe (a hop's cap,
// against the slower end's configured host rate) counts only below
// kHoldHostFraction of what is configured for it (a failing NIC, a link
// renegotiated down),
// an uplink only below kHoldPathFraction (the lab tests' uplink shaped
// from 200 to 50 Mbit/s reads about 75: the sum of the hops that share
// it); otherwise the configured rate stands. Where nothing is configured
// the measure stands, except that a host's reference is the fastest host
// of its rack.
// A switch's measured rate counts below kHoldSwitchFraction of what its
// hosts could send it together (their configured link rates) or of its own
// configured rate: a switch beside the ring's TCP on the host links
// answers at a share of the link, which says nothing of the switch. With
// neither configured it does not count (nothing says the switch, not the
// path to it, set the pace).
inline constexpr double kHoldHostFraction = 0.125;
inline constexpr double kHoldPathFraction = 0.5;
inline constexpr double kHoldSwitchFraction = 0.125;
void holdMeasuredRates(const plan::Network& configured, plan::Network* net);

// The switch of this rank's INA rack as a row of the table: peer
// kSwitchPeer, its answered payload bytes and their rate
// (ina::InaClient::switchCounters) in the receive fields.
inline constexpr int32_t kSwitchPeer = -1;
LinkRate switchRateRow(int rank, const transport::LinkCounters& counters);
// Moves the switch rows out of table (which then holds links only).
std::vector<LinkRate> takeSwitchRows(std::vector<LinkRate>* table);
// Each INA rack's switch rate (plan::Network::Rack::switchMbit): the sum
// of its workers' measured rates (they send at once), scaled to the whole
// rack when only some measured. Racks without a measure keep theirs.
void addMeasuredSwitchRates(const std::vector<LinkRate>& switchRows, plan::Network* net);

}  // namespace rina::comm

#endif  // RINA_LIB_COMM_LINK_STATS_H_
