// The switch-side programs' command-line parser: what it sets, and each
// error's exact text (rina-switchd and rina-bmv2ctl print it as is).
#include "switchd/flag_parser.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rina::switchd {
namespace {

// What a small program's flags set.
struct Settings {
  uint32_t slots = 8;
  double rate = 0;
  int port = 9100;
  std::string file;
  bool raw = false;
  std::string mode;
  double wait = 0;
  uint64_t count = 1;
};

// A parser like a program's: a switch, numbers (an integer range, a
// floating-point one), text, and a flag with its own rule.
FlagParser parserFor(Settings* s) {
  FlagParser p("tool");
  p.addSwitch("--raw", [s] { s->raw = true; });
  p.addNumber("--slots", &s->slots, 1u, 64u);
  p.addNumber("--rate", &s->rate, 0.0, 1.0);
  p.addNumber("--port", &s->port, 0, 65535);
  p.addNumber("--wait", &s->wait, 0.0);
  p.addNumber("--count", &s->count, uint64_t{1});
  p.addText("--file", &s->file);
  p.addValue("--mode", [s](std::string_view v) {
    s->mode = std::string(v);
    return v == "fast" || v == "slow";
  });
  return p;
}

struct Parsed {
  FlagParser::Outcome outcome;
  std::string error;
  Settings settings;
};

Parsed parse(std::vector<const char*> args) {
  args.insert(args.begin(), "tool");
  Parsed r;
  const FlagParser p = parserFor(&r.settings);
  r.outcome = p.parse(static_cast<int>(args.size()), args.data(), &r.error);
  return r;
}

TEST(FlagParser, SetsEveryKindOfFlagAndALaterOneWins) {
  const Parsed r = parse({"--slots", "64", "--raw", "--rate", "0.25", "--port", "0", "--file",
                          "f.txt", "--mode", "fast", "--slots", "1"});
  ASSERT_EQ(r.outcome, FlagParser::Outcome::kParsed) << r.error;
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.settings.slots, 1u);
  EXPECT_TRUE(r.settings.raw);
  EXPECT_EQ(r.settings.rate, 0.25);
  EXPECT_EQ(r.settings.port, 0);
  EXPECT_EQ(r.settings.file, "f.txt");
  EXPECT_EQ(r.settings.mode, "fast");
}

TEST(FlagParser, NothingGivenKeepsTheDefaults) {
  const Parsed r = parse({});
  ASSERT_EQ(r.outcome, FlagParser::Outcome::kParsed);
  EXPECT_EQ(r.settings.slots, 8u);
  EXPECT_FALSE(r.settings.raw);
}

TEST(FlagParser, HelpStopsBeforeTheRest) {
  for (const char* help : {"--help", "-h"}) {
    const Parsed r = parse({"--slots", "2", help, "--bogus"});
    EXPECT_EQ(r.outcome, FlagParser::Outcome::kHelp) << help;
    EXPECT_EQ(r.error, "") << help;
    EXPECT_EQ(r.settings.slots, 2u) << help;
  }
}

// Each error path with the input that triggers it, and its exact text.
TEST(FlagParser, ErrorsNameTheProgramTheFlagAndTheValue) {
  const std::vector<std::pair<std::vector<const char*>, std::string>> cases = {
      // unknown flag (its value taken with it)
      {{"--bogus", "1"}, "tool: unknown flag --bogus"},
      {{"--slots", "2", "slots", "2"}, "tool: unknown flag slots"},
      // missing value: a value flag last, and an unknown flag last
      {{"--slots"}, "tool: --slots needs a value"},
      {{"--raw", "--file"}, "tool: --file needs a value"},
      {{"--bogus"}, "tool: --bogus needs a value"},
      // bad number: not one, trailing text, a sign on an unsigned type, empty
      {{"--slots", "many"}, "tool: bad value for --slots: many"},
      {{"--slots", "12k"}, "tool: bad value for --slots: 12k"},
      {{"--slots", "-1"}, "tool: bad value for --slots: -1"},
      {{"--slots", " 3"}, "tool: bad value for --slots:  3"},
      {{"--slots", ""}, "tool: bad value for --slots: "},
      {{"--rate", "0.5x"}, "tool: bad value for --rate: 0.5x"},
      {{"--rate", "nan"}, "tool: bad value for --rate: nan"},
      // out of range: below, above, beyond the type
      {{"--slots", "0"}, "tool: bad value for --slots: 0"},
      {{"--slots", "65"}, "tool: bad value for --slots: 65"},
      {{"--slots", "4294967296"}, "tool: bad value for --slots: 4294967296"},
      {{"--rate", "-0.1"}, "tool: bad value for --rate: -0.1"},
      {{"--rate", "1.5"}, "tool: bad value for --rate: 1.5"},
      {{"--port", "65536"}, "tool: bad value for --port: 65536"},
      {{"--port", "-1"}, "tool: bad value for --port: -1"},
      {{"--wait", "-0.5"}, "tool: bad value for --wait: -0.5"},
      {{"--count", "0"}, "tool: bad value for --count: 0"},
      {{"--count", "18446744073709551616"}, "tool: bad value for --count: 18446744073709551616"},
      // empty text, and a flag's own rule
      {{"--file", ""}, "tool: bad value for --file: "},
      {{"--mode", "medium"}, "tool: bad value for --mode: medium"},
  };
  for (const auto& [args, want] : cases) {
    const Parsed r = parse(args);
    EXPECT_EQ(r.outcome, FlagParser::Outcome::kError) << want;
    EXPECT_EQ(r.error, want);
  }
}

// The edges of each range are accepted; a lower bound alone leaves the
// type's whole range above it.
TEST(FlagParser, RangesIncludeTheirEnds) {
  const Parsed big = parse({"--wait", "1e300", "--count", "18446744073709551615"});
  ASSERT_EQ(big.outcome, FlagParser::Outcome::kParsed) << big.error;
  EXPECT_EQ(big.settings.wait, 1e300);
  EXPECT_EQ(big.settings.count, UINT64_MAX);
  for (const char* slots : {"1", "64"}) {
    const Parsed r = parse({"--slots", slots, "--rate", "1", "--port", "65535"});
    ASSERT_EQ(r.outcome, FlagParser::Outcome::kParsed) << r.error;
    EXPECT_EQ(r.settings.slots, std::stoul(slots));
    EXPECT_EQ(r.settings.rate, 1.0);
    EXPECT_EQ(r.settings.port, 65535);
  }
}

}  // namespace
}  // namespace rina::switchd
