// Knobs: the typed table (parsing, defaults, checks, errors), the
// environment and options passed in code, and that docs/knobs.md documents
// every one with its default.
#include "core/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "algo/engine/algorithm.h"
#include "api/handle.h"
#include "comm/communicator.h"
#include "plan/path_choice.h"
#include "rank_harness.h"
#include "topo/thread_placement.h"
#include "transport/verbs/gpu_direct.h"

namespace rina::testing {
namespace {

config::Options fromEnv() {
  config::Options o;
  const Status st = config::fromEnvironment(&o);
  EXPECT_TRUE(st.ok()) << st.message();
  return o;
}

std::vector<std::string> choicesOf(const char* name) {
  const config::Knob* k = config::find(name);
  EXPECT_NE(k, nullptr) << name;
  std::vector<std::string> out;
  std::stringstream ss(k && k->choices ? k->choices : "");
  for (std::string c; std::getline(ss, c, '|');) out.push_back(c);
  return out;
}

TEST(Config, SuffixesAndMalformedValues) {
  {
    ScopedEnv e("RINA_SLICE_BYTES", "3M");
    EXPECT_EQ(fromEnv().sliceBytes, 3 << 20);
  }
  {
    ScopedEnv e("RINA_SLICE_BYTES", "64k");
    EXPECT_EQ(fromEnv().sliceBytes, 64 << 10);
  }
  {
    ScopedEnv e("RINA_SLICE_BYTES", "lots");  // falls back to the default
    EXPECT_EQ(fromEnv().sliceBytes, 128 << 10);
    EXPECT_EQ(config::environment().sliceBytes, 128 << 10);
  }
  ScopedEnv unset("RINA_TIMEOUT_MS", nullptr);
  EXPECT_EQ(fromEnv().timeoutMs, 60000);
}

// A default-constructed Options holds the table's defaults: checked against
// the values the knob list documents.
TEST(Config, DefaultsAreTheTablesDefaults) {
  const config::Options o;
  EXPECT_EQ(o.timeoutMs, 60000);
  EXPECT_EQ(o.sliceBytes, 128 << 10);
  EXPECT_EQ(o.smallMsgBytes, 128 << 10);
  EXPECT_EQ(o.socketNsocks, 0);  // auto
  EXPECT_EQ(o.shmFifoBytes, 1 << 20);
  EXPECT_EQ(o.algo, "auto");
  EXPECT_EQ(o.switches, "auto");
  EXPECT_EQ(o.inaSlots, 64);
  EXPECT_TRUE(o.inaPortMarkers);
  EXPECT_FALSE(o.shmDisable);
  EXPECT_EQ(o.planInterval, (config::Every{100, 0, false}));
  EXPECT_DOUBLE_EQ(o.planThreshold, 0.2);
  EXPECT_EQ(o.planCheckEvery, (config::Every{0, 0.5, true}));
  EXPECT_EQ(o.mpiMinBytes, 0);
  EXPECT_EQ(o.cudaStageBytes, 4 << 20);
  for (const config::Knob& k : config::knobs()) {
    config::Options parsed;
    ASSERT_TRUE(config::set(&parsed, k.name, k.defaultValue).ok()) << k.name;
    EXPECT_EQ(config::valueText(parsed, k), config::valueText(o, k)) << k.name;
  }
}

// valueText writes what set() reads back, so a value can travel as text
// (the environment, a message to other ranks).
TEST(Config, ValueTextReadsBack) {
  config::Options o;
  ASSERT_TRUE(config::set(&o, "RINA_SLICE_BYTES", "3M").ok());
  ASSERT_TRUE(config::set(&o, "RINA_SOCKET_NSOCKS", "4").ok());
  ASSERT_TRUE(config::set(&o, "RINA_PLAN_INTERVAL", "5s").ok());
  ASSERT_TRUE(config::set(&o, "RINA_PLAN_CHECK_EVERY", "16").ok());
  ASSERT_TRUE(config::set(&o, "RINA_PLAN_THRESHOLD", "0.35").ok());
  ASSERT_TRUE(config::set(&o, "RINA_INA_PORT_MARKERS", "0").ok());
  EXPECT_EQ(config::valueText(o, *config::find("RINA_SLICE_BYTES")), "3M");
  EXPECT_EQ(config::valueText(o, *config::find("RINA_SOCKET_NSOCKS")), "4");
  EXPECT_EQ(config::valueText(o, *config::find("RINA_PLAN_INTERVAL")), "5s");
  EXPECT_EQ(config::valueText(o, *config::find("RINA_PLAN_CHECK_EVERY")), "16");
  EXPECT_EQ(config::valueText(o, *config::find("RINA_PLAN_THRESHOLD")), "0.35");
  EXPECT_EQ(config::valueText(config::Options(), *config::find("RINA_SOCKET_NSOCKS")), "auto");
  for (const config::Knob& k : config::knobs()) {
    config::Options back;
    ASSERT_TRUE(config::set(&back, k.name, config::valueText(o, k)).ok()) << k.name;
    EXPECT_EQ(config::valueText(back, k), config::valueText(o, k)) << k.name;
  }
  EXPECT_EQ(o.sliceBytes, 3 << 20);
  EXPECT_EQ(o.planInterval, (config::Every{0, 5, true}));
  EXPECT_DOUBLE_EQ(o.planThreshold, 0.35);
  EXPECT_FALSE(o.inaPortMarkers);
}

TEST(Config, ErrorsNameTheKnobAndTheValue) {
  config::Options o;
  struct Bad {
    const char* name;
    const char* text;
    const char* message;
  };
  for (const Bad& b : {
           Bad{"RINA_SOCKET_NSOCKS", "9", "RINA_SOCKET_NSOCKS=9: expected auto or 1-8"},
           Bad{"RINA_SOCKET_NSOCKS", "two", "RINA_SOCKET_NSOCKS=two: expected auto or 1-8"},
           Bad{"RINA_ALGO", "flat",
               "RINA_ALGO=flat: expected auto, ring, rd, oneshot, twoshot, hier, rina or ps-ina"},
           Bad{"RINA_INA_PORT_MARKERS", "2", "RINA_INA_PORT_MARKERS=2: give 0 or 1"},
           Bad{"RINA_INA_SLOTS", "0", "RINA_INA_SLOTS=0: give 1 to 16384 slots"},
           Bad{"RINA_PROBE_BYTES", "65M", "RINA_PROBE_BYTES=65M: expected 0 (off) to 64M"},
           Bad{"RINA_PLAN_THRESHOLD", "-0.1", "RINA_PLAN_THRESHOLD=-0.1: expected a number >= 0"},
           Bad{"RINA_PLAN_CHECK_EVERY", "0s",
               "RINA_PLAN_CHECK_EVERY=0s: expected a whole number of collectives from 1 to "
               "1048576, or Ns (seconds > 0)"},
           Bad{"RINA_PLAN_INTERVAL", "often",
               "RINA_PLAN_INTERVAL=often: expected a whole number of collectives or Ns (seconds)"},
           Bad{"RINA_PATHS", "random", "RINA_PATHS=random: expected planned, fixed or hash"},
           Bad{"RINA_SLICE_BYTE", "4K", "RINA_SLICE_BYTE is not a rina knob"},
       }) {
    const Status st = config::set(&o, b.name, b.text);
    EXPECT_EQ(st.code(), rinaInvalidArgument) << b.name << "=" << b.text;
    EXPECT_EQ(st.message(), b.message);
  }
  // set() is strict where the environment is lenient: a malformed number.
  EXPECT_EQ(config::set(&o, "RINA_SLICE_BYTES", "lots").message(),
            "RINA_SLICE_BYTES=lots: expected an integer (K, M, G suffixes) from 64");
  // Nothing above changed o.
  EXPECT_EQ(config::valueText(o, *config::find("RINA_ALGO")), "auto");
}

// Values set in code pass the same checks: out of range is an error naming
// the knob and the value, or for clamped knobs the nearest end.
TEST(Config, CheckTakesValuesSetInCode) {
  config::Options o;
  ASSERT_TRUE(config::check(&o).ok());
  o.sliceBytes = 1;
  o.smallMsgBytes = -5;
  ASSERT_TRUE(config::check(&o).ok());
  EXPECT_EQ(o.sliceBytes, 64);
  EXPECT_EQ(o.smallMsgBytes, 0);
  // A timeout of 0 or less is refused, not taken as 1 ms.
  config::Options timeout;
  timeout.timeoutMs = 0;
  EXPECT_EQ(config::check(&timeout).message(),
            "RINA_TIMEOUT_MS=0: give a number of milliseconds > 0");
  config::Options slots;
  slots.inaSlots = 20000;
  EXPECT_EQ(config::check(&slots).message(), "RINA_INA_SLOTS=20000: give 1 to 16384 slots");
  config::Options algo;
  algo.algo = "ring2";
  EXPECT_EQ(config::check(&algo).code(), rinaInvalidArgument);
  config::Options every;
  every.planCheckEvery = config::Every{0, 0, false};
  EXPECT_NE(config::check(&every).message().find("RINA_PLAN_CHECK_EVERY=0:"), std::string::npos);
}

// The environment: strict where a communicator is made, lenient for the
// process (a bad value keeps its default); an empty variable is unset.
TEST(Config, EnvironmentStrictForCommunicatorsLenientForTheProcess) {
  {
    ScopedEnv bad("RINA_ALGO", "flat");
    config::Options o;
    const Status st = config::fromEnvironment(&o);
    EXPECT_EQ(st.code(), rinaInvalidArgument);
    EXPECT_NE(st.message().find("RINA_ALGO=flat"), std::string::npos) << st.message();
    EXPECT_EQ(config::environment().algo, "auto");
  }
  {
    ScopedEnv empty("RINA_ALGO", "");
    EXPECT_EQ(fromEnv().algo, "auto");
  }
  ScopedEnv rd("RINA_ALGO", "rd");
  ScopedEnv every("RINA_PLAN_CHECK_EVERY", "8");
  const config::Options o = fromEnv();
  EXPECT_EQ(o.algo, "rd");
  EXPECT_EQ(o.planCheckEvery, (config::Every{8, 0, false}));
  EXPECT_EQ(config::environment().algo, "rd");
}

// A thread that outlives main (rinaGetUniqueId's detached bootstrap root)
// logs while exit handlers run, and logging reads the environment. A handler
// registered before the first read runs after everything that read set up
// has been torn down; it must still find the environment (under ASan a
// destroyed cache is a use after free and the child exits non-zero).
void readEnvironmentAtExit() {
  config::reloadForTesting();
  std::_Exit(config::environment().timeoutMs > 0 ? 0 : 3);
}

TEST(ConfigDeathTest, EnvironmentReadableWhileExitHandlersRun) {
  // A fresh process: the first read must come after the handler is set.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::atexit(readEnvironmentAtExit);
        (void)config::environment();
        std::exit(7);
      },
      ::testing::ExitedWithCode(0), "");
}

// Every word a choice knob's table lists is one its layer knows, so a value
// the table lets through never fails later.
TEST(Config, ChoicesAreWhatEachLayerAccepts) {
  for (const std::string& c : choicesOf("RINA_ALGO")) {
    algo::Algorithm a;
    EXPECT_TRUE(algo::parseAlgorithm(c, &a).ok()) << c;
  }
  for (const std::string& c : choicesOf("RINA_PATHS")) {
    plan::PathPolicy p;
    EXPECT_TRUE(plan::parsePathPolicy(c, &p).ok()) << c;
  }
  for (const std::string& c : choicesOf("RINA_CPU_AFFINITY")) {
    topo::AffinityMode m;
    EXPECT_TRUE(topo::parseAffinityMode(c, &m).ok()) << c;
  }
  for (const std::string& c : choicesOf("RINA_IB_GDR")) {
    transport::verbs::GdrMode m;
    EXPECT_TRUE(transport::verbs::parseGdrMode(c, &m).ok()) << c;
  }
  EXPECT_EQ(choicesOf("RINA_INA_TRANSPORT"), (std::vector<std::string>{"auto", "udp", "rdma"}));
}

// A communicator made from options ignores the environment's knobs: a bad
// RINA_ALGO there does not matter, the options' algorithm runs (counted by
// rinaCommGetStats), and a bad value in the options fails init naming it.
TEST(Config, CommunicatorTakesOptionsOverTheEnvironment) {
  ScopedEnv bad("RINA_ALGO", "nonsense");
  config::Options o;
  o.algo = "rd";
  o.timeoutMs = 20000;
  runThreads(3, o, [](int rank, rinaComm_t comm) {
    EXPECT_EQ(api::communicatorOf(comm)->options().algo, "rd");
    std::vector<int32_t> buf(1000, rank + 1);
    ASSERT_EQ(rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaInt32, rinaSum, comm),
              rinaSuccess)
        << rinaCommGetLastError(comm);
    for (int32_t v : buf) ASSERT_EQ(v, 6);
    rinaCommStats_t s{};
    s.size = sizeof s;
    ASSERT_EQ(rinaCommGetStats(comm, &s), rinaSuccess);
    EXPECT_EQ(s.callsRd, 1u);
    EXPECT_EQ(s.callsRing, 0u);
  });
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
  rinaComm_t comm = nullptr;
  EXPECT_EQ(rinaCommInitRank(&comm, 1, id, 0), rinaInvalidArgument);  // the environment's
  EXPECT_NE(std::string(rinaCommGetLastError(nullptr)).find("RINA_ALGO=nonsense"),
            std::string::npos)
      << rinaCommGetLastError(nullptr);
  config::Options slots;
  slots.inaSlots = 0;
  EXPECT_EQ(api::commInitRank(&comm, 1, id, 0, slots), rinaInvalidArgument);
  EXPECT_NE(std::string(rinaCommGetLastError(nullptr)).find("rank 0: RINA_INA_SLOTS=0"),
            std::string::npos)
      << rinaCommGetLastError(nullptr);
  EXPECT_EQ(comm, nullptr);
}

// Every declared knob has a row in docs/knobs.md's tables, and the row's
// default column is the declared default (`VALUE`, or "unset" for none).
TEST(Config, KnobsPageDocumentsEveryKnobAndDefault) {
  std::ifstream f(RINA_SOURCE_DIR "/docs/knobs.md");
  ASSERT_TRUE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string page = ss.str();
  for (const config::Knob& k : config::knobs()) {
    const std::string row = std::string("\n| `") + k.name + "` | ";
    const size_t at = page.find(row);
    if (at == std::string::npos) {
      ADD_FAILURE() << k.name << " has no row in docs/knobs.md";
      continue;
    }
    const size_t cell = at + row.size();
    const std::string documented = page.substr(cell, page.find(" |", cell) - cell);
    const std::string declared =
        *k.defaultValue ? std::string("`") + k.defaultValue + "`" : std::string("unset");
    EXPECT_EQ(documented, declared) << "default of " << k.name << " in docs/knobs.md";
  }
}

}  // namespace
}  // namespace rina::testing
