// InGo batch sizes and InArt model split: water-filling against brute force
// over every integer split, its bounds, closed forms, the C API and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "plan/batch_sizes.h"
#include "plan/ps_split.h"
#include "plan/water_fill.h"
#include "rina/rina.h"

namespace rina::plan {
namespace {

double makespan(const std::vector<int64_t>& b, const std::vector<double>& rate,
                const std::vector<double>& base) {
  double t = 0;
  for (size_t i = 0; i < b.size(); ++i)
    t = std::max(t, (base.empty() ? 0 : base[i]) + b[i] / rate[i]);
  return t;
}

// Every split of total over n (compositions), the best makespan.
double bruteForce(int64_t total, const std::vector<double>& rate, const std::vector<double>& base) {
  const size_t n = rate.size();
  std::vector<int64_t> b(n, 0);
  double best = 1e300;
  std::function<void(size_t, int64_t)> rec = [&](size_t i, int64_t left) {
    if (i + 1 == n) {
      b[i] = left;
      best = std::min(best, makespan(b, rate, base));
      return;
    }
    for (int64_t x = 0; x <= left; ++x) {
      b[i] = x;
      rec(i + 1, left - x);
    }
  };
  rec(0, total);
  return best;
}

TEST(PlanWaterFill, InGoMatchesBruteForce) {
  std::mt19937 rng(6);
  std::uniform_real_distribution<double> rate(5, 200), comm(0, 0.3);
  for (int trial = 0; trial < 200; ++trial) {
    int n = 1 + trial % 4;
    int64_t total = rng() % 40;
    std::vector<double> c(n), t(n);
    for (int i = 0; i < n; ++i)
      c[i] = trial % 4 == 0 ? std::round(rate(rng) / 20) + 1 : rate(rng),
      t[i] = trial % 3 ? comm(rng) : 0;
    BatchAdvice a;
    ASSERT_TRUE(suggestBatchSizes(total, c, t, &a).ok());
    int64_t sum = 0;
    for (int64_t x : a.batch) {
      sum += x;
      EXPECT_GE(x, 0);
    }
    EXPECT_EQ(sum, total);
    double best = bruteForce(total, c, t);
    EXPECT_NEAR(a.iterationSeconds, best, 1e-12 * std::max(1.0, best)) << trial;
    EXPECT_DOUBLE_EQ(a.iterationSeconds, makespan(a.batch, c, t));
    // Bounds: T* <= T_int <= T* + max 1/c.
    double maxUnit = 0;
    for (double x : c) maxUnit = std::max(maxUnit, 1 / x);
    EXPECT_LE(a.lowerBound, best * (1 + 1e-12));
    EXPECT_LE(a.iterationSeconds, a.lowerBound + maxUnit + 1e-12);
  }
}

TEST(PlanWaterFill, ClosedForms) {
  // No comm time: b_i proportional to c_i when that is integral.
  BatchAdvice a;
  ASSERT_TRUE(suggestBatchSizes(600, {100, 200, 300}, {}, &a).ok());
  EXPECT_EQ(a.batch, (std::vector<int64_t>{100, 200, 300}));
  EXPECT_DOUBLE_EQ(a.iterationSeconds, 1.0);
  EXPECT_DOUBLE_EQ(a.lowerBound, 1.0);
  // A rank whose communication alone exceeds the level gets nothing.
  ASSERT_TRUE(suggestBatchSizes(100, {100, 100}, {0, 5}, &a).ok());
  EXPECT_EQ(a.batch, (std::vector<int64_t>{100, 0}));
  EXPECT_DOUBLE_EQ(a.iterationSeconds, 5.0);
  // InArt with idle servers: m_j = M R_j / sum R.
  ModelSplit s;
  ASSERT_TRUE(splitModel(1000, {1, 3, 6}, {}, &s).ok());
  EXPECT_EQ(s.units, (std::vector<int64_t>{100, 300, 600}));
  EXPECT_DOUBLE_EQ(s.seconds, 100.0);
  EXPECT_EQ(s.servers, (std::vector<int>{0, 1, 2}));
  EXPECT_DOUBLE_EQ(s.shares[2], 0.6);
}

TEST(PlanWaterFill, InArtMatchesBruteForceAndDropsIdleServers) {
  std::mt19937 rng(8);
  for (int trial = 0; trial < 100; ++trial) {
    int n = 2 + trial % 3;
    int64_t units = 1 + rng() % 30;
    std::vector<double> r(n), b(n);
    for (int i = 0; i < n; ++i) r[i] = 1 + rng() % 9, b[i] = (rng() % 4) * 0.5;
    ModelSplit s;
    ASSERT_TRUE(splitModel(units, r, b, &s).ok());
    EXPECT_NEAR(s.seconds, bruteForce(units, r, b), 1e-12);
    double shareSum = 0;
    for (double x : s.shares) {
      shareSum += x;
      EXPECT_GT(x, 0);
    }
    EXPECT_NEAR(shareSum, 1.0, 1e-12);
  }
}

TEST(PlanWaterFill, RejectsBadInput) {
  WaterFill w;
  EXPECT_EQ(waterFill(5, {}, {}, &w).code(), rinaInvalidArgument);
  EXPECT_EQ(waterFill(-1, {1}, {}, &w).code(), rinaInvalidArgument);
  EXPECT_EQ(waterFill(5, {1, 0}, {}, &w).code(), rinaInvalidArgument);
  EXPECT_EQ(waterFill(5, {1, NAN}, {}, &w).code(), rinaInvalidArgument);
  EXPECT_EQ(waterFill(5, {1, INFINITY}, {}, &w).code(), rinaInvalidArgument);
  EXPECT_EQ(waterFill(5, {1, 1}, {0}, &w).code(), rinaInvalidArgument);
  EXPECT_EQ(waterFill(5, {1, 1}, {0, -1}, &w).code(), rinaInvalidArgument);
  EXPECT_EQ(waterFill(5, {1, 1}, {0, NAN}, &w).code(), rinaInvalidArgument);
  ModelSplit s;
  Status st = splitModel(5, {0}, {}, &s);
  EXPECT_EQ(st.code(), rinaInvalidArgument);
  EXPECT_NE(st.message().find("InArt"), std::string::npos);
}

TEST(PlanWaterFill, CApiSuggestBatchSizes) {
  const double rate[3] = {100, 200, 300}, comm[3] = {0, 0, 0};
  int64_t b[3] = {-1, -1, -1};
  ASSERT_EQ(rinaSuggestBatchSizes(600, 3, rate, comm, b), rinaSuccess);
  EXPECT_EQ(b[0], 100);
  EXPECT_EQ(b[1], 200);
  EXPECT_EQ(b[2], 300);
  ASSERT_EQ(rinaSuggestBatchSizes(600, 3, rate, nullptr, b), rinaSuccess);
  EXPECT_EQ(b[2], 300);
  EXPECT_EQ(rinaSuggestBatchSizes(600, 0, rate, comm, b), rinaInvalidArgument);
  EXPECT_EQ(rinaSuggestBatchSizes(600, 3, nullptr, comm, b), rinaInvalidArgument);
  EXPECT_EQ(rinaSuggestBatchSizes(600, 3, rate, comm, nullptr), rinaInvalidArgument);
  EXPECT_EQ(rinaSuggestBatchSizes(-1, 3, rate, comm, b), rinaInvalidArgument);
  const double badRate[3] = {100, -1, 300};
  EXPECT_EQ(rinaSuggestBatchSizes(600, 3, badRate, comm, b), rinaInvalidArgument);
  EXPECT_NE(std::string(rinaCommGetLastError(nullptr)).find("rate 1"), std::string::npos);
  const double badComm[3] = {0, NAN, 0};
  EXPECT_EQ(rinaSuggestBatchSizes(600, 3, rate, badComm, b), rinaInvalidArgument);
}

}  // namespace
}  // namespace rina::plan
