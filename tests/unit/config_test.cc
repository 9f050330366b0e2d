// Knobs: parsing, defaults, and that the README documents every one.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/config.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

TEST(Config, SuffixesAndMalformedValues) {
  {
    ScopedEnv e("RINA_SLICE_BYTES", "3M");
    EXPECT_EQ(config::intValue("RINA_SLICE_BYTES"), 3 << 20);
  }
  {
    ScopedEnv e("RINA_SLICE_BYTES", "64k");
    EXPECT_EQ(config::intValue("RINA_SLICE_BYTES"), 64 << 10);
  }
  {
    ScopedEnv e("RINA_SLICE_BYTES", "lots");  // falls back to the default
    EXPECT_EQ(config::intValue("RINA_SLICE_BYTES"), 128 << 10);
  }
  ScopedEnv unset("RINA_TIMEOUT_MS", nullptr);
  EXPECT_EQ(config::intValue("RINA_TIMEOUT_MS"), 60000);
}

TEST(Config, ReadmeDocumentsEveryKnob) {
  std::ifstream f(RINA_SOURCE_DIR "/README.md");
  ASSERT_TRUE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  std::string readme = ss.str();
  for (const config::Knob& k : config::knobs()) {
    EXPECT_NE(readme.find(std::string("`") + k.name + "`"), std::string::npos)
        << k.name << " is not in README.md";
  }
}

}  // namespace
}  // namespace rina::testing
