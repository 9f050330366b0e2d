// rina-allreduce-perf's command line: sizes, flags, the size sequence.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "perf/bench.h"
#include "perf/options.h"

namespace rina::perf {
namespace {

TEST(PerfParseSize, PlainBytesAndSuffixes) {
  size_t bytes = 0;
  ASSERT_TRUE(parseSize("0", &bytes));
  EXPECT_EQ(bytes, 0u);
  ASSERT_TRUE(parseSize("4096", &bytes));
  EXPECT_EQ(bytes, 4096u);
  ASSERT_TRUE(parseSize("64K", &bytes));
  EXPECT_EQ(bytes, 64u * 1024);
  ASSERT_TRUE(parseSize("64k", &bytes));
  EXPECT_EQ(bytes, 64u * 1024);
  ASSERT_TRUE(parseSize("16M", &bytes));
  EXPECT_EQ(bytes, 16u * 1024 * 1024);
  ASSERT_TRUE(parseSize("2G", &bytes));
  EXPECT_EQ(bytes, size_t{2} << 30);
  ASSERT_TRUE(parseSize("3g", &bytes));
  EXPECT_EQ(bytes, size_t{3} << 30);
}

TEST(PerfParseSize, RejectsMalformed) {
  size_t bytes = 7;
  for (const char* bad : {"", "K", "-1", "1.5M", "12KB", "1T", "M1", " 1", "1 ", "0x10",
                          "99999999999999999999", "17179869184G"}) {
    EXPECT_FALSE(parseSize(bad, &bytes)) << bad;
  }
  EXPECT_EQ(bytes, 7u);  // untouched on failure
}

bool parse(std::vector<const char*> args, Options* options, std::string* error) {
  args.insert(args.begin(), "rina-allreduce-perf");
  return parseOptions(static_cast<int>(args.size()), args.data(), options, error);
}

TEST(PerfParseOptions, Defaults) {
  Options options;
  std::string error;
  ASSERT_TRUE(parse({}, &options, &error)) << error;
  EXPECT_EQ(options.minBytes, size_t{32} << 20);
  EXPECT_EQ(options.maxBytes, size_t{32} << 20);
  EXPECT_EQ(options.iters, 20);
  EXPECT_EQ(options.warmupIters, 5);
  EXPECT_TRUE(options.check);
  EXPECT_FALSE(options.inPlace);
  EXPECT_EQ(options.type, rinaFloat32);
  EXPECT_EQ(options.op, rinaSum);
  EXPECT_EQ(options.algorithms, std::vector<std::string>{"auto"});
  EXPECT_EQ(options.localRanks, 0);
}

TEST(PerfParseOptions, EveryFlag) {
  Options options;
  std::string error;
  ASSERT_TRUE(parse({"-b", "64K",       "-e", "64M", "-f",      "4",           "-n",
                     "7",  "-w",        "0",  "-c",  "0",       "-i",          "1",
                     "-d", "bfloat16",  "-o", "avg", "-a",      "ring,mpi,rd", "--local-ranks",
                     "3",  "--timeout", "9",  "-J",  "out.json"},
                    &options, &error))
      << error;
  EXPECT_EQ(options.minBytes, 64u << 10);
  EXPECT_EQ(options.maxBytes, 64u << 20);
  EXPECT_EQ(options.factor, 4u);
  EXPECT_EQ(options.iters, 7);
  EXPECT_EQ(options.warmupIters, 0);
  EXPECT_FALSE(options.check);
  EXPECT_TRUE(options.inPlace);
  EXPECT_EQ(options.type, rinaBfloat16);
  EXPECT_EQ(options.op, rinaAvg);
  EXPECT_EQ(options.algorithms, (std::vector<std::string>{"ring", "mpi", "rd"}));
  EXPECT_EQ(options.localRanks, 3);
  EXPECT_EQ(options.timeoutSeconds, 9);
  EXPECT_EQ(options.jsonPath, "out.json");
  EXPECT_TRUE(wantsMpi(options));
  EXPECT_TRUE(wantsRina(options));
}

TEST(PerfParseOptions, StartsFromTheCallersDefaults) {
  Options options;
  options.minBytes = 64 << 10;
  options.maxBytes = 64 << 20;
  options.factor = 4;
  options.localRanks = 4;
  std::string error;
  ASSERT_TRUE(parse({"-n", "3"}, &options, &error)) << error;
  EXPECT_EQ(options.minBytes, 64u << 10);
  EXPECT_EQ(options.factor, 4u);
  EXPECT_EQ(options.localRanks, 4);
  EXPECT_EQ(options.iters, 3);
  EXPECT_FALSE(parse({"-n", "5", "-d", "nope"}, &options, &error));
  EXPECT_EQ(options.iters, 3);  // untouched on failure
}

TEST(PerfParseOptions, CheckOnly) {
  Options options;
  std::string error;
  ASSERT_TRUE(parse({"-n", "0", "-w", "0"}, &options, &error)) << error;
  EXPECT_EQ(options.iters, 0);
  EXPECT_TRUE(options.check);
  EXPECT_TRUE(blockIterations(0).empty());
}

TEST(PerfParseOptions, CheckLevels) {
  Options options;
  std::string error;
  ASSERT_TRUE(parse({"-c", "2"}, &options, &error)) << error;
  EXPECT_TRUE(options.check);
  EXPECT_TRUE(options.checkEvery);
  ASSERT_TRUE(parse({"-c", "1"}, &options, &error)) << error;
  EXPECT_TRUE(options.check);
  EXPECT_FALSE(options.checkEvery);
}

TEST(PerfParseOptions, Help) {
  Options options;
  std::string error;
  ASSERT_TRUE(parse({"-h"}, &options, &error));
  EXPECT_TRUE(options.help);
  ASSERT_TRUE(parse({"--help"}, &options, &error));
  EXPECT_TRUE(options.help);
  EXPECT_NE(usageText("x").find("--local-ranks"), std::string::npos);
}

TEST(PerfParseOptions, RejectsBadCommandLines) {
  const std::vector<std::vector<const char*>> bad = {
      {"-b"},                               // missing value
      {"-x", "1"},                          // unknown flag
      {"-b", "2M", "-e", "1M"},             // min > max
      {"-b", "1K", "-e", "1M", "-f", "1"},  // cannot grow
      {"-n", "0", "-c", "0"},               // nothing would run
      {"-c", "3"},
      {"-d", "float8"},
      {"-o", "xor"},
      {"-a", "ring,,rd"},
      {"-a", "ring,ring"},
      {"--local-ranks", "0"},
  };
  for (const auto& args : bad) {
    Options options;
    std::string error;
    EXPECT_FALSE(parse(args, &options, &error)) << args[0];
    EXPECT_FALSE(error.empty());
  }
}

TEST(PerfParseOptions, TypeAndOpLists) {
  Options options;
  std::string error;
  ASSERT_TRUE(parse({"-d", "int8,float64", "-o", "max,sum,avg"}, &options, &error)) << error;
  EXPECT_EQ(options.types, (std::vector<rinaDataType_t>{rinaInt8, rinaFloat64}));
  EXPECT_EQ(options.ops, (std::vector<rinaRedOp_t>{rinaMax, rinaSum, rinaAvg}));
  EXPECT_EQ(options.type, rinaInt8);  // the first combination
  EXPECT_EQ(options.op, rinaMax);
  ASSERT_TRUE(parse({"-d", "all", "-o", "all"}, &options, &error)) << error;
  ASSERT_EQ(options.types.size(), size_t{rinaNumTypes});
  ASSERT_EQ(options.ops.size(), size_t{rinaNumOps});
  for (int t = 0; t < rinaNumTypes; ++t) EXPECT_EQ(options.types[t], t);
  for (int o = 0; o < rinaNumOps; ++o) EXPECT_EQ(options.ops[o], o);
  for (const auto& bad : std::vector<std::vector<const char*>>{
           {"-d", "int8,int8"}, {"-d", "int8,"}, {"-d", "all,int8"}, {"-o", "sum,,max"}}) {
    Options before;
    EXPECT_FALSE(parse(bad, &before, &error)) << bad[1];
    EXPECT_EQ(before.types, std::vector<rinaDataType_t>{rinaFloat32});  // untouched
  }
}

TEST(PerfParseOptions, OnlyMpi) {
  Options options;
  std::string error;
  ASSERT_TRUE(parse({"-a", "mpi"}, &options, &error));
  EXPECT_TRUE(wantsMpi(options));
  EXPECT_FALSE(wantsRina(options));
}

TEST(PerfSizeSequence, MultipliesUpToMax) {
  Options options;
  options.minBytes = 64 << 10;
  options.maxBytes = 64 << 20;
  options.factor = 4;
  EXPECT_EQ(sizeSequence(options),
            (std::vector<size_t>{64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20}));
  options.maxBytes = 100 << 10;  // not reached exactly: stops below it
  EXPECT_EQ(sizeSequence(options), (std::vector<size_t>{64 << 10}));
  options.minBytes = options.maxBytes = 4096;
  options.factor = 1;
  EXPECT_EQ(sizeSequence(options), (std::vector<size_t>{4096}));
  options.minBytes = 0;  // the empty message, then from 1 byte
  options.factor = 16;
  EXPECT_EQ(sizeSequence(options), (std::vector<size_t>{0, 1, 16, 256, 4096}));
  options.maxBytes = 0;
  EXPECT_EQ(sizeSequence(options), (std::vector<size_t>{0}));
}

TEST(PerfBlockIterations, SplitsItersOverAtMostFiveRounds) {
  EXPECT_EQ(blockIterations(1), (std::vector<int>{1}));
  EXPECT_EQ(blockIterations(3), (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(blockIterations(20), (std::vector<int>{4, 4, 4, 4, 4}));
  EXPECT_EQ(blockIterations(22), (std::vector<int>{5, 5, 4, 4, 4}));
}

}  // namespace
}  // namespace rina::perf
