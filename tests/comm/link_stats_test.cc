// Link accounting: per-connection bytes against the closed-form traffic of
// a ring allreduce, the creation probe (bytes exact, time bounded), the
// C API's argument checks, and the gather of every rank's links at rank 0.
#include "comm/link_stats.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "algo/dispatch/dispatch.h"
#include "api/handle.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

constexpr uint64_t kHeaderBytes = 48;  // algo::CollHeader, one per collective and neighbour
constexpr size_t kBytes = 786432;      // divisible by 4 * n for n = 2, 3, 4: equal chunks

std::map<int, rinaLinkStats_t> linksOf(rinaComm_t comm) {
  int n = 0;
  EXPECT_EQ(rinaCommGetLinkStats(comm, nullptr, 0, &n), rinaSuccess);
  std::vector<rinaLinkStats_t> v(static_cast<size_t>(n));
  EXPECT_EQ(rinaCommGetLinkStats(comm, v.data(), n, &n), rinaSuccess);
  std::map<int, rinaLinkStats_t> out;
  for (const rinaLinkStats_t& l : v) out[l.peer] = l;
  return out;
}

// One ring allreduce of kBytes: every rank sends 2(n-1)/n * S to its next
// and receives as much from its previous, plus one header each way; no
// other link moves a byte. Returns the number of failed expectations.
int checkRingTraffic(int rank, rinaComm_t comm) {
  int n = 0;
  rinaCommCount(comm, &n);
  const int failuresBefore = ::testing::UnitTest::GetInstance()->failed_test_count();
  EXPECT_EQ(rinaCommSetAlgorithm(comm, "ring"), rinaSuccess);
  std::vector<float> in(kBytes / 4, 1.0f), out(kBytes / 4);
  const std::map<int, rinaLinkStats_t> before = linksOf(comm);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(rinaAllReduce(in.data(), out.data(), in.size(), rinaFloat32, rinaSum, comm),
            rinaSuccess)
      << rinaCommGetLastError(comm);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(out[0], static_cast<float>(n));
  const std::map<int, rinaLinkStats_t> after = linksOf(comm);
  EXPECT_EQ(before.size(), after.size());
  const uint64_t data = 2 * static_cast<uint64_t>(n - 1) * kBytes / static_cast<uint64_t>(n);
  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  for (const auto& [peer, a] : after) {
    const rinaLinkStats_t& b = before.at(peer);
    const uint64_t sent = a.bytesSent - b.bytesSent, recvd = a.bytesReceived - b.bytesReceived;
    EXPECT_EQ(sent, peer == next ? data + kHeaderBytes : 0) << "rank " << rank << " -> " << peer;
    EXPECT_EQ(recvd, peer == prev ? data + kHeaderBytes : 0) << "rank " << rank << " <- " << peer;
    // Busy time lies inside the call.
    EXPECT_LE(a.busyRecvSec - b.busyRecvSec, wall);
    EXPECT_LE(a.busySendSec - b.busySendSec, wall);
    if (peer == prev) {
      EXPECT_GT(a.busyRecvSec, b.busyRecvSec);
      EXPECT_GT(a.recvRate, 0.0);
    }
    if (peer == next) {
      EXPECT_GT(a.busySendSec, b.busySendSec);
    }
    if (sent == 0) {
      EXPECT_EQ(a.busySendSec, b.busySendSec);
    }
  }
  rinaCommStats_t stats{};
  stats.size = sizeof(stats);
  EXPECT_EQ(rinaCommGetStats(comm, &stats), rinaSuccess);
  EXPECT_EQ(stats.version, static_cast<uint32_t>(RINA_COMM_STATS_VERSION));
  EXPECT_EQ(stats.links, after.size());
  uint64_t total = 0;
  for (const auto& [peer, a] : after) total += a.bytesSent;
  EXPECT_EQ(stats.bytesSent, total);
  return ::testing::UnitTest::GetInstance()->failed_test_count() - failuresBefore;
}

TEST(LinkStats, RingAllReduceBytesThreads) {
  for (int n = 2; n <= 4; ++n) {
    SCOPED_TRACE("n = " + std::to_string(n));
    runThreads(n, [](int rank, rinaComm_t comm) { checkRingTraffic(rank, comm); });
  }
}

TEST(LinkStats, RingAllReduceBytesProcessesTcp) {
  ScopedEnv tcp("RINA_SHM_DISABLE", "1");
  std::vector<int> codes = runProcesses(
      3,
      [](int rank, rinaComm_t comm) {
        checkRingTraffic(rank, comm);
        return ::testing::Test::HasFailure() ? 1 : 0;
      },
      60);
  for (size_t r = 0; r < codes.size(); ++r) EXPECT_EQ(codes[r], 0) << "rank " << r;
}

TEST(LinkStats, ProbeMovesExactlyItsBytes) {
  config::Options o;
  o.probeBytes = 256 << 10;
  const auto t0 = std::chrono::steady_clock::now();
  runThreads(4, o, [](int rank, rinaComm_t comm) {
    for (const auto& [peer, l] : linksOf(comm)) {
      EXPECT_EQ(l.bytesSent, 256u * 1024) << rank << " -> " << peer;
      EXPECT_EQ(l.bytesReceived, 256u * 1024) << rank << " <- " << peer;
      EXPECT_GT(l.recvRate, 0.0);
      EXPECT_GT(l.busyRecvSec, 0.0);
      EXPECT_STREQ(l.transport, "shm");
    }
  });
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

TEST(LinkStats, ProbeGivesUpAtItsTimeLimit) {
  ScopedEnv probe("RINA_PROBE_BYTES", "64M");  // cannot move in 1 ms
  ScopedEnv limit("RINA_PROBE_TIMEOUT_MS", "1");
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<rinaResult_t> rc(3);
  std::vector<std::string> msg(3);
  std::vector<std::thread> ts;
  for (int r = 0; r < 3; ++r) {
    ts.emplace_back([&, r] {
      rinaComm_t comm = nullptr;
      rc[r] = rinaCommInitRank(&comm, 3, id, r);
      msg[r] = rinaCommGetLastError(nullptr);
      if (rc[r] == rinaSuccess) rinaCommDestroy(comm);
    });
  }
  for (std::thread& t : ts) t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  int timeouts = 0;
  for (int r = 0; r < 3; ++r) {
    EXPECT_NE(rc[r], rinaSuccess) << "rank " << r;
    if (rc[r] != rinaTimeout) continue;
    ++timeouts;
    EXPECT_NE(msg[r].find("rank " + std::to_string(r) + ": link probe with peer"),
              std::string::npos)
        << msg[r];
    EXPECT_NE(msg[r].find("RINA_PROBE_TIMEOUT_MS"), std::string::npos) << msg[r];
  }
  EXPECT_GE(timeouts, 1);
}

TEST(LinkStats, BadArguments) {
  int count = -1;
  EXPECT_EQ(rinaCommGetLinkStats(nullptr, nullptr, 0, &count), rinaInvalidArgument);
  EXPECT_NE(std::string(rinaCommGetLastError(nullptr)).find("comm is NULL"), std::string::npos);
  {
    ScopedEnv bad("RINA_PROBE_BYTES", "-1");
    rinaUniqueId id;
    ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
    rinaComm_t comm = nullptr;
    EXPECT_EQ(rinaCommInitRank(&comm, 1, id, 0), rinaInvalidArgument);
    EXPECT_NE(std::string(rinaCommGetLastError(nullptr)).find("RINA_PROBE_BYTES"),
              std::string::npos);
  }
  runThreads(3, [](int, rinaComm_t comm) {
    int n = -1;
    rinaLinkStats_t one[1];
    EXPECT_EQ(rinaCommGetLinkStats(comm, one, 1, nullptr), rinaInvalidArgument);
    EXPECT_EQ(rinaCommGetLinkStats(comm, one, -1, &n), rinaInvalidArgument);
    EXPECT_EQ(rinaCommGetLinkStats(comm, nullptr, 1, &n), rinaInvalidArgument);
    EXPECT_NE(std::string(rinaCommGetLastError(comm)).find("maxLinks 1"), std::string::npos);
    EXPECT_EQ(rinaCommGetLinkStats(comm, nullptr, 0, &n), rinaSuccess);
    EXPECT_EQ(n, 2);  // both ring neighbours
    // Truncated: one written, the count is still the whole.
    one[0].peer = -7;
    EXPECT_EQ(rinaCommGetLinkStats(comm, one, 1, &n), rinaSuccess);
    EXPECT_EQ(n, 2);
    EXPECT_GE(one[0].peer, 0);
    // A version-1 caller gets the old layout only.
    rinaCommStats_t s;
    std::memset(&s, 0xff, sizeof(s));
    s.size = offsetof(rinaCommStats_t, links);
    EXPECT_EQ(rinaCommGetStats(comm, &s), rinaSuccess);
    EXPECT_EQ(s.links, ~uint64_t{0});
  });
}

// Every rank's links at rank 0: one row per (rank, peer), the bytes each
// rank reported, and hop rates the planner accepts.
int checkGather(int rank, rinaComm_t comm) {
  comm::Communicator* c = api::communicatorOf(comm);
  // 16 KiB (recursive doubling): bytes move, but transfers under 64 KiB say
  // nothing of a link's rate (latency and engine passes), so none is set.
  std::vector<float> x(4096, 1.0f);
  EXPECT_EQ(rinaAllReduce(x.data(), x.data(), x.size(), rinaFloat32, rinaSum, comm), rinaSuccess);
  for (const comm::LinkRate& l : comm::localLinkRates(*c)) {
    EXPECT_EQ(l.recvRate, 0.0) << rank << " <- " << l.peer << " after " << l.bytesRecv << " bytes";
  }
  // 1 MiB (the ring): every ring hop carries at least 2 x 1 MiB / 4 at once.
  x.assign(1 << 18, 1.0f);
  EXPECT_EQ(rinaAllReduce(x.data(), x.data(), x.size(), rinaFloat32, rinaSum, comm), rinaSuccess);
  const std::vector<comm::LinkRate> mine = comm::localLinkRates(*c);
  std::vector<comm::LinkRate> table;
  Status st = comm::gatherLinkRates(*c, &table);
  EXPECT_TRUE(st.ok()) << st.message();
  if (rank != 0) {
    EXPECT_TRUE(table.empty());
    return 0;
  }
  int n = c->size();
  size_t expected = 0;
  int lastRank = -1, lastPeer = -1;
  for (const comm::LinkRate& l : table) {
    EXPECT_TRUE(l.rank > lastRank || (l.rank == lastRank && l.peer > lastPeer));
    lastRank = l.rank;
    lastPeer = l.peer;
    EXPECT_NE(l.rank, l.peer);
    EXPECT_LT(l.peer, n);
  }
  for (int r = 0; r < n; ++r) expected += algo::neighbourRanks(r, n).size();
  EXPECT_GE(table.size(), expected);
  for (const comm::LinkRate& m : mine) {  // rank 0's own rows are as it measured them
    bool found = false;
    for (const comm::LinkRate& l : table)
      found |= l.rank == 0 && l.peer == m.peer && l.bytesSent == m.bytesSent;
    EXPECT_TRUE(found) << "peer " << m.peer;
  }
  // Each hop was measured at both ends: every rank took its rows before any
  // of its gather traffic, after all earlier traffic had arrived, so what one
  // end sent the other received.
  for (const comm::LinkRate& l : table) {
    int ends = 0;
    for (const comm::LinkRate& o : table) {
      if (o.rank != l.peer || o.peer != l.rank) continue;
      ++ends;
      EXPECT_EQ(l.bytesSent, o.bytesRecv) << l.rank << " -> " << l.peer;
    }
    EXPECT_EQ(ends, 1) << l.rank << " -> " << l.peer;
  }
  plan::Network net;
  for (int r = 0; r < n; ++r)
    net.hosts.push_back(plan::Network::Host{"h" + std::to_string(r), 0, 0});
  net.racks.push_back(plan::Network::Rack{"r0", false, {}, {}});
  for (int r = 0; r < n; ++r) net.racks[0].hosts.push_back(r);
  comm::addMeasuredProbes(table, &net);
  comm::addMeasuredProbes(table, &net);  // again: replaced, not duplicated
  size_t received = 0;
  for (const comm::LinkRate& l : table) received += l.bytesRecv > 0 && l.recvRate > 0 ? 1 : 0;
  if (n >= 2) {
    EXPECT_GE(received, static_cast<size_t>(n));  // at least every ring hop
  }
  EXPECT_EQ(net.probes.size(), received);
  for (const plan::Network::Probe& p : net.probes) EXPECT_GT(p.mbit, 0.0);
  Status valid = plan::validateNetwork(net);
  EXPECT_TRUE(valid.ok()) << valid.message();
  return ::testing::Test::HasFailure() ? 1 : 0;
}

TEST(LinkStats, GatherAtRankZeroThreads) {
  for (int n = 1; n <= 4; ++n) {
    SCOPED_TRACE("n = " + std::to_string(n));
    runThreads(n, [](int rank, rinaComm_t comm) { checkGather(rank, comm); });
  }
}

TEST(LinkStats, GatherAtRankZeroProcesses) {
  for (int n : {2, 4}) {
    std::vector<int> codes = runProcesses(n, checkGather, 60);
    for (size_t r = 0; r < codes.size(); ++r) EXPECT_EQ(codes[r], 0) << "n " << n << " rank " << r;
  }
}

}  // namespace
}  // namespace rina::testing
