// What the tests of plans in the communicator share (rack_plan_test.cc,
// rack_modes_test.cc): injected rate tables, exact int32 allreduces against
// the serial sum, and per-peer traffic read back from the link stats.
#ifndef RINA_TESTS_COMM_PLAN_TEST_HELPERS_H_
#define RINA_TESTS_COMM_PLAN_TEST_HELPERS_H_

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include "comm/link_stats.h"
#include "comm/plan_sync.h"
#include "rina/rina.h"

namespace rina::testing {

constexpr double kFast = 1e9;  // bytes/s: 8000 Mbit/s
constexpr double kSlow = 1e6;  // 8 Mbit/s

// Sets the process-wide rates hook for one test.
class ScopedRatesHook {
 public:
  explicit ScopedRatesHook(std::function<void(uint64_t, std::vector<comm::LinkRate>*)> fn) {
    comm::setPlanRatesHookForTesting(std::move(fn));
  }
  ~ScopedRatesHook() { comm::setPlanRatesHookForTesting({}); }
};

// A measured table of every ordered pair of n ranks (connected or not, so
// no hop is "unknown" to the planner): recvRate of the hop peer -> rank.
inline std::vector<comm::LinkRate> syntheticTable(
    int n, const std::function<double(int from, int to)>& rate) {
  std::vector<comm::LinkRate> table;
  for (int r = 0; r < n; ++r) {
    for (int p = 0; p < n; ++p) {
      if (p == r) continue;
      comm::LinkRate l;
      l.rank = r;
      l.peer = p;
      l.bytesSent = l.bytesRecv = 1 << 20;
      l.sendBusyNs = l.recvBusyNs = 1000000;
      l.recvRate = l.sendRate = rate(p, r);
      std::strncpy(l.kind, "socket", sizeof(l.kind) - 1);
      table.push_back(l);
    }
  }
  return table;
}

// Fast between ranks that are neighbours on `ring` (a cycle over all ranks,
// either direction), slow otherwise: the planner's best ring is that one.
inline std::function<double(int, int)> ringRates(std::vector<int> ring) {
  return [ring](int a, int b) {
    const int n = static_cast<int>(ring.size());
    for (int k = 0; k < n; ++k) {
      int x = ring[k], y = ring[(k + 1) % n];
      if ((x == a && y == b) || (x == b && y == a)) return kFast;
    }
    return kSlow;
  };
}

inline int32_t input(int rank, int call, size_t i) {
  return static_cast<int32_t>((rank * 7919 + call * 104729 + i * 31) % 2001) - 1000;
}

// One int32 allreduce, checked against the serial sum.
inline void allreduceExact(rinaComm_t comm, int rank, int n, int call, size_t count) {
  std::vector<int32_t> buf(count);
  for (size_t i = 0; i < count; ++i) buf[i] = input(rank, call, i);
  ASSERT_EQ(rinaAllReduce(buf.data(), buf.data(), count, rinaInt32, rinaSum, comm), rinaSuccess)
      << "rank " << rank << " call " << call << ": " << rinaCommGetLastError(comm);
  for (size_t i = 0; i < count; ++i) {
    int32_t want = 0;
    for (int r = 0; r < n; ++r) want += input(r, call, i);
    ASSERT_EQ(buf[i], want) << "rank " << rank << " call " << call << " element " << i;
  }
}

inline std::map<int, uint64_t> bytesSentByPeer(rinaComm_t comm) {
  int n = 0;
  EXPECT_EQ(rinaCommGetLinkStats(comm, nullptr, 0, &n), rinaSuccess);
  std::vector<rinaLinkStats_t> links(static_cast<size_t>(n));
  EXPECT_EQ(rinaCommGetLinkStats(comm, links.data(), n, &n), rinaSuccess);
  std::map<int, uint64_t> out;
  for (const rinaLinkStats_t& l : links) out[l.peer] = l.bytesSent;
  return out;
}

// Bytes this rank sent to each peer during fn.
inline std::map<int, uint64_t> sentDuring(rinaComm_t comm, const std::function<void()>& fn) {
  const std::map<int, uint64_t> before = bytesSentByPeer(comm);
  fn();
  std::map<int, uint64_t> delta = bytesSentByPeer(comm);
  for (auto& [peer, bytes] : delta) {
    auto it = before.find(peer);
    if (it != before.end()) bytes -= it->second;
  }
  return delta;
}

inline rinaCommStats_t statsOf(rinaComm_t comm) {
  rinaCommStats_t s{};
  s.size = sizeof s;
  EXPECT_EQ(rinaCommGetStats(comm, &s), rinaSuccess);
  return s;
}

}  // namespace rina::testing

#endif  // RINA_TESTS_COMM_PLAN_TEST_HELPERS_H_
