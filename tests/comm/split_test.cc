// rinaCommSplit against a serial reference of who lands where: every way of
// coloring 1 to 4 ranks (each rank in one of the colors or none, colors up
// to renaming) with keys ascending and descending, and for 5 to 8 ranks a
// family of colorings (one color, one each, halves, even and odd, rank mod
// 3, one rank left out, every other rank left out) with four key orders
// (rank, reverse, all equal: ties by rank, a permutation). Each child's
// size and ranks are checked against the reference, then collectives on
// the parent and the children interleave: a child allreduce (int32,
// float32) and allgather of the members' parent ranks (the child's order),
// a parent allreduce, a child broadcast, another parent allreduce; the
// children stay usable after the parent ran in between and vice versa.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "member_values.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

struct Pattern {
  std::vector<int> color;  // per parent rank; RINA_SPLIT_NOCOLOR: none
  std::vector<int> key;
};

// The members of rank r's child in child order, by the definition: the
// ranks of its color, by key, ties by parent rank.
std::vector<int> membersOf(const Pattern& p, int r) {
  std::vector<int> m;
  if (p.color[r] < 0) return m;
  for (size_t q = 0; q < p.color.size(); ++q) {
    if (p.color[q] == p.color[r]) m.push_back(static_cast<int>(q));
  }
  std::stable_sort(m.begin(), m.end(), [&](int a, int b) { return p.key[a] < p.key[b]; });
  return m;
}

// Colorings of n ranks up to renaming colors, with "none" (-1) allowed.
void colorings(int n, std::vector<int>& cur, int used, std::vector<std::vector<int>>* out) {
  if (static_cast<int>(cur.size()) == n) {
    out->push_back(cur);
    return;
  }
  for (int c = -1; c <= used; ++c) {
    cur.push_back(c);
    colorings(n, cur, std::max(used, c + 1), out);
    cur.pop_back();
  }
}

std::vector<Pattern> patternsFor(int n) {
  std::vector<std::vector<int>> colors;
  if (n <= 4) {
    std::vector<int> cur;
    colorings(n, cur, 0, &colors);
  } else {
    const std::vector<std::function<int(int)>> rules = {
        [](int) { return 0; },
        [](int r) { return r; },
        [n](int r) { return r < n / 2 ? 0 : 1; },
        [](int r) { return r % 2; },
        [](int r) { return r % 3; },
        [n](int r) { return r == n / 2 ? RINA_SPLIT_NOCOLOR : 7; },
        [](int r) { return r % 2 ? RINA_SPLIT_NOCOLOR : 3; },
    };
    for (const auto& rule : rules) {
      std::vector<int> c(n);
      for (int r = 0; r < n; ++r) c[r] = rule(r);
      colors.push_back(c);
    }
  }
  std::vector<std::function<int(int)>> keys = {[](int r) { return r; }, [](int r) { return -r; }};
  if (n > 4) {
    keys.push_back([](int) { return 5; });
    keys.push_back([n](int r) { return (r * 5 + 3) % n; });
  }
  std::vector<Pattern> out;
  for (const auto& c : colors) {
    for (const auto& key : keys) {
      Pattern p{c, std::vector<int>(n)};
      for (int r = 0; r < n; ++r) p.key[r] = key(r);
      out.push_back(p);
    }
  }
  return out;
}

std::string describe(const Pattern& p) {
  std::string s = "colors";
  for (int c : p.color) s += " " + std::to_string(c);
  s += ", keys";
  for (int k : p.key) s += " " + std::to_string(k);
  return s;
}

void allPatterns(int n) {
  const std::vector<Pattern> patterns = patternsFor(n);
  const std::vector<int> everyone = [n] {
    std::vector<int> v(n);
    for (int r = 0; r < n; ++r) v[r] = r;
    return v;
  }();
  runThreads(n, [&](int rank, rinaComm_t parent) {
    for (const Pattern& p : patterns) {
      SCOPED_TRACE(describe(p));
      rinaComm_t child = reinterpret_cast<rinaComm_t>(1);
      ASSERT_EQ(rinaCommSplit(parent, p.color[rank], p.key[rank], &child), rinaSuccess)
          << rinaCommGetLastError(parent);
      const std::vector<int> members = membersOf(p, rank);
      if (members.empty()) {
        EXPECT_EQ(child, nullptr);
      } else {
        ASSERT_NE(child, nullptr);
        int size = 0, childRank = -1;
        ASSERT_EQ(rinaCommCount(child, &size), rinaSuccess);
        ASSERT_EQ(rinaCommUserRank(child, &childRank), rinaSuccess);
        ASSERT_EQ(size, static_cast<int>(members.size()));
        ASSERT_EQ(members[childRank], rank);
        // Child allreduce, by the members' identities (their parent ranks).
        std::vector<int32_t> vi = memberInts(rank, 3000);
        ASSERT_EQ(rinaAllReduce(vi.data(), vi.data(), vi.size(), rinaInt32, rinaSum, child),
                  rinaSuccess)
            << rinaCommGetLastError(child);
        EXPECT_EQ(firstWrongInt(vi, members), -1);
        std::vector<int32_t> order(members.size(), -1);
        const int32_t me = rank;
        ASSERT_EQ(rinaAllGather(&me, order.data(), 1, rinaInt32, child), rinaSuccess);
        EXPECT_EQ(std::vector<int>(order.begin(), order.end()), members);
      }
      // The parent in between.
      std::vector<float> pf = memberFloats(rank, 257);
      ASSERT_EQ(rinaAllReduce(pf.data(), pf.data(), pf.size(), rinaFloat32, rinaSum, parent),
                rinaSuccess)
          << rinaCommGetLastError(parent);
      EXPECT_EQ(firstWrongFloat(pf, everyone), -1);
      if (child) {
        std::vector<float> cf = memberFloats(rank, 70000);
        ASSERT_EQ(rinaAllReduce(cf.data(), cf.data(), cf.size(), rinaFloat32, rinaSum, child),
                  rinaSuccess)
            << rinaCommGetLastError(child);
        EXPECT_EQ(firstWrongFloat(cf, members), -1);
        int64_t b = rank == members.back() ? 1000 + rank : -1;
        const int root = static_cast<int>(members.size()) - 1;
        ASSERT_EQ(rinaBroadcast(&b, &b, 1, rinaInt64, root, child), rinaSuccess);
        EXPECT_EQ(b, 1000 + members.back());
      }
      std::vector<int32_t> pi = memberInts(rank, 5);
      ASSERT_EQ(rinaAllReduce(pi.data(), pi.data(), pi.size(), rinaInt32, rinaSum, parent),
                rinaSuccess);
      EXPECT_EQ(firstWrongInt(pi, everyone), -1);
      if (child) {
        EXPECT_EQ(rinaCommDestroy(child), rinaSuccess);
      }
    }
  });
}

TEST(Split, EveryColoringOfOneRank) { allPatterns(1); }
TEST(Split, EveryColoringOfTwoRanks) { allPatterns(2); }
TEST(Split, EveryColoringOfThreeRanks) { allPatterns(3); }
TEST(Split, EveryColoringOfFourRanks) { allPatterns(4); }
TEST(Split, ColoringFamiliesOfFiveRanks) { allPatterns(5); }
TEST(Split, ColoringFamiliesOfSixRanks) { allPatterns(6); }
TEST(Split, ColoringFamiliesOfSevenRanks) { allPatterns(7); }
TEST(Split, ColoringFamiliesOfEightRanks) { allPatterns(8); }

// A split of racks: a child holding a whole INA rack keeps it as a rack of
// its own, one holding part of it does not; both are exact.
TEST(Split, RackAlgorithmChildren) {
  ScopedEnv racks("RINA_RACKS", "3,3,2");
  ScopedEnv algo("RINA_ALGO", "hier");
  runThreads(8, [](int rank, rinaComm_t parent) {
    rinaComm_t child = nullptr;
    const int color = rank < 3 || rank == 7 ? 0 : 1;  // {0,1,2,7} and {3,4,5,6}
    ASSERT_EQ(rinaCommSplit(parent, color, rank, &child), rinaSuccess)
        << rinaCommGetLastError(parent);
    const std::vector<int> members =
        color == 0 ? std::vector<int>{0, 1, 2, 7} : std::vector<int>{3, 4, 5, 6};
    for (size_t count : {size_t{10}, size_t{200000}}) {
      std::vector<int32_t> v = memberInts(rank, count);
      ASSERT_EQ(rinaAllReduce(v.data(), v.data(), count, rinaInt32, rinaSum, child), rinaSuccess)
          << rinaCommGetLastError(child);
      EXPECT_EQ(firstWrongInt(v, members), -1);
    }
    EXPECT_EQ(rinaCommDestroy(child), rinaSuccess);
  });
}

}  // namespace
}  // namespace rina::testing
