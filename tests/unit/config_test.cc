// Knobs: parsing, defaults, and that docs/knobs.md documents every one with
// its default.
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
