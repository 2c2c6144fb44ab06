#include "verify/stats.h"

#include <gtest/gtest.h>

namespace kgym::verify {
namespace {

TEST(Stats, Median) {
  EXPECT_FALSE(median({}));
  EXPECT_EQ(*median({3}), 3);
  EXPECT_EQ(*median({5, 1, 3}), 3);
  EXPECT_EQ(*median({4, 1, 3, 2}), 2.5);
}

TEST(Stats, MedianIntervalContainsMedianAndIsDeterministic) {
  std::vector<double> samples = {10, 11, 9, 10.5, 12, 9.5, 10.2, 10.1};
  auto a = median_ci95(samples), b = median_ci95(samples);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->lo, b->lo);
  EXPECT_EQ(a->hi, b->hi);
  EXPECT_LE(a->lo, *median(samples));
  EXPECT_GE(a->hi, *median(samples));
  EXPECT_FALSE(median_ci95({1}));
}

TEST(Stats, SpeedupIsReferenceOverCandidate) {
  std::vector<double> ref = {200, 210, 190, 205, 195};
  std::vector<double> cand = {100, 105, 95, 102, 98};
  auto s = speedup_estimate(ref, cand);
  ASSERT_TRUE(s);
  EXPECT_NEAR(s->median, 2.0, 1e-9);
  ASSERT_TRUE(s->ci95);
  EXPECT_GT(s->ci95->lo, 1.5);
  EXPECT_LT(s->ci95->hi, 2.5);
  EXPECT_LE(s->ci95->lo, s->median);
  EXPECT_GE(s->ci95->hi, s->median);
}

TEST(Stats, SpeedupNeedsSamples) {
  EXPECT_FALSE(speedup_estimate({}, {1}));
  EXPECT_FALSE(speedup_estimate({1}, {0}));
  auto single = speedup_estimate({4}, {2});
  ASSERT_TRUE(single);
  EXPECT_EQ(single->median, 2);
  EXPECT_FALSE(single->ci95);
}

TEST(Stats, TimingSideConvertsNanosecondsToMilliseconds) {
  auto side = timing_side_from_ns({1e6, 2e6, 3e6});
  EXPECT_EQ(side.samples, 3);
  EXPECT_DOUBLE_EQ(side.median_ms, 2.0);
  ASSERT_TRUE(side.ci95_ms);
  EXPECT_GE(side.ci95_ms->lo, 1.0);
  EXPECT_LE(side.ci95_ms->hi, 3.0);
}

}  // namespace
}  // namespace kgym::verify
