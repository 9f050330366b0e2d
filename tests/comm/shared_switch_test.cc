// Communicators that share one rina-switchd: each holds a job of its own
// (random id and token, agreed inside each rack), even when they bootstrap
// through the same RINA_COMM_ID; a job id the switch refuses as taken makes
// the rack's agent take another or do without the switch, and say which.
// Every result is compared with a serial sum computed here.
#include <gtest/gtest.h>

#include <barrier>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/rack_agent.h"
#include "core/socket.h"
#include "ina/ctrl_client.h"
#include "ina_harness.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

[[maybe_unused]] const bool kGenerousInaTimeout = useGenerousInaTimeout();

int32_t input(int comm, int rank, int call, size_t i) {
  return static_cast<int32_t>((comm * 7919 + rank * 131 + call * 17 + static_cast<int>(i)) % 1000);
}

rinaCommStats_t statsOf(rinaComm_t comm) {
  rinaCommStats_t s{};
  s.size = sizeof s;
  EXPECT_EQ(rinaCommGetStats(comm, &s), rinaSuccess);
  return s;
}

// A loopback host:port nobody listens on now.
std::string freeLoopbackPort() {
  PackedAddr any;
  EXPECT_TRUE(parseHostPort("127.0.0.1:0", &any).ok());
  Fd probe;
  PackedAddr bound;
  EXPECT_TRUE(listenOn(any, true, &probe, &bound).ok());
  return bound.str();
}

// nranks ranks of one communicator through RINA_COMM_ID, created together.
std::vector<rinaComm_t> createWithCommId(int nranks) {
  std::vector<rinaComm_t> comms(nranks, nullptr);
  rinaUniqueId unused;
  std::memset(&unused, 0, sizeof unused);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      EXPECT_EQ(rinaCommInitRank(&comms[r], nranks, unused, r), rinaSuccess)
          << "rank " << r << ": " << rinaCommGetLastError(nullptr);
    });
  }
  for (auto& t : threads) t.join();
  return comms;
}

TEST(SharedSwitch, TwoCommunicatorsWithOneCommIdKeepTheirOwnJobs) {
  ina::testing::SwitchdProcess sw({"--slots", "256"});
  ASSERT_TRUE(sw.ready());
  const std::string commId = freeLoopbackPort();
  ScopedEnv id("RINA_COMM_ID", commId.c_str());
  ScopedEnv racks("RINA_RACKS", "2:ina");
  ScopedEnv list("RINA_SWITCH", sw.control().toString().c_str());
  ScopedEnv algo("RINA_ALGO", "rina");
  // The other communicator's job must never slow this one into a fallback.
  ScopedEnv inaTimeout("RINA_INA_TIMEOUT_MS", "10000");
  // One after the other: both bootstrap through the same address.
  std::vector<rinaComm_t> a = createWithCommId(2);
  std::vector<rinaComm_t> b = createWithCommId(2);
  ASSERT_TRUE(a[0] && a[1] && b[0] && b[1]);
  constexpr int kCalls = 20;
  constexpr size_t kCount = 3001;
  std::barrier step(4);  // the two communicators' calls interleave
  std::vector<std::thread> threads;
  std::vector<rinaCommStats_t> stats(4);
  for (int c = 0; c < 2; ++c) {
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, c, r] {
        rinaComm_t comm = (c == 0 ? a : b)[r];
        for (int k = 0; k < kCalls; ++k) {
          std::vector<int32_t> buf(kCount);
          for (size_t i = 0; i < kCount; ++i) buf[i] = input(c, r, k, i);
          step.arrive_and_wait();
          EXPECT_EQ(rinaAllReduce(buf.data(), buf.data(), kCount, rinaInt32, rinaSum, comm),
                    rinaSuccess)
              << "communicator " << c << " rank " << r << " call " << k << ": "
              << rinaCommGetLastError(comm);
          size_t wrong = 0;
          for (size_t i = 0; i < kCount; ++i) {
            wrong += buf[i] != input(c, 0, k, i) + input(c, 1, k, i);
          }
          EXPECT_EQ(wrong, 0u) << "communicator " << c << " rank " << r << " call " << k;
        }
        stats[2 * c + r] = statsOf(comm);
      });
    }
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(stats[i].inaFallbacks, 0u) << "communicator " << i / 2 << " rank " << i % 2;
    EXPECT_EQ(stats[i].callsRina, static_cast<uint64_t>(kCalls));
  }
  for (rinaComm_t comm : {a[0], a[1], b[0], b[1]}) EXPECT_EQ(rinaCommDestroy(comm), rinaSuccess);
}

// The job id the switch refuses: another client holds it (with its own
// token). ids lists the ids the rack's agent draws, in order.
void takenJobId(const std::vector<uint16_t>& ids, bool expectSwitch) {
  ina::testing::SwitchdProcess sw({"--slots", "256"});
  ASSERT_TRUE(sw.ready());
  std::unique_ptr<ina::CtrlClient> holder;
  ASSERT_TRUE(ina::CtrlClient::connect(sw.control(), 5000, &holder).ok());
  ina::CtrlRequest reg;
  reg.verb = ina::CtrlVerb::kRegister;
  reg.job = 777;
  reg.token = 0x1234567890ABCDEFull;
  reg.fanIn = 1;
  reg.priority = 1;
  reg.slots = 8;
  reg.members = {ina::Endpoint{0x7F000001, 9}};
  ina::Grant g;
  ASSERT_TRUE(holder->registerJob(reg, &g).ok());
  size_t next = 0;
  comm::setJobIdSourceForTesting([&] { return ids[std::min(next++, ids.size() - 1)]; });
  ScopedEnv racks("RINA_RACKS", "3:ina");
  ScopedEnv list("RINA_SWITCH", sw.control().toString().c_str());
  ScopedEnv debug("RINA_DEBUG", "INFO");
  ::testing::internal::CaptureStderr();
  std::vector<rinaCommStats_t> stats(3);
  runThreads(3, [&](int rank, rinaComm_t comm) {
    ASSERT_EQ(rinaCommSetAlgorithm(comm, "rina"), rinaSuccess);
    for (int k = 0; k < 3; ++k) {
      std::vector<int32_t> buf(2001);
      for (size_t i = 0; i < buf.size(); ++i) buf[i] = input(0, rank, k, i);
      ASSERT_EQ(rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaInt32, rinaSum, comm),
                rinaSuccess)
          << rinaCommGetLastError(comm);
      for (size_t i = 0; i < buf.size(); ++i) {
        ASSERT_EQ(buf[i], input(0, 0, k, i) + input(0, 1, k, i) + input(0, 2, k, i))
            << "rank " << rank << " call " << k << " elem " << i;
      }
    }
    stats[rank] = statsOf(comm);
  });
  const std::string err = ::testing::internal::GetCapturedStderr();
  comm::setJobIdSourceForTesting(nullptr);
  EXPECT_NE(err.find("INA job 777 is taken on switch"), std::string::npos) << err;
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(stats[r].inaFallbacks, expectSwitch ? 0u : 1u) << "rank " << r;
    EXPECT_EQ(stats[r].inaCalls > 0, expectSwitch) << "rank " << r;
  }
  if (expectSwitch) {
    EXPECT_NE(err.find("trying job 778"), std::string::npos) << err;
    EXPECT_NE(err.find("INA job 778 on switch"), std::string::npos) << err;
  } else {
    // One WARN, on the agent, naming the cause.
    const size_t warn = err.find("WARN");
    ASSERT_NE(warn, std::string::npos) << err;
    const std::string line = err.substr(warn, err.find('\n', warn) - warn);
    EXPECT_NE(line.find("falling back"), std::string::npos) << line;
    EXPECT_NE(line.find("taken"), std::string::npos) << line;
  }
}

TEST(SharedSwitch, TakenJobIdIsReplacedByAnother) { takenJobId({777, 778}, true); }

TEST(SharedSwitch, JobIdTakenOnEveryTryFallsBackToHosts) { takenJobId({777}, false); }

}  // namespace
}  // namespace rina::testing
