#include "verify/stats.h"

#include <cmath>

#include <gtest/gtest.h>

#include "verify/timing_session.h"

namespace kgym::verify {
namespace {

TEST(Stats, Median) {
  EXPECT_FALSE(median({}));
  EXPECT_EQ(*median({3}), 3);
  EXPECT_EQ(*median({5, 1, 3}), 3);
  EXPECT_EQ(*median({4, 1, 3, 2}), 2.5);
}

TEST(Stats, MadAndIqr) {
  EXPECT_FALSE(mad({}));
  EXPECT_EQ(*mad({1, 2, 3, 4, 100}), 1);  // deviations 2 1 0 1 97
  EXPECT_FALSE(iqr({1}));
  EXPECT_DOUBLE_EQ(*iqr({1, 2, 3, 4, 5}), 2);  // q1 = 2, q3 = 4
}

TEST(Stats, OutlierFlagsUseTukeyFences) {
  auto flags = outlier_flags({10, 11, 10, 12, 11, 10, 50});
  ASSERT_EQ(flags.size(), 7u);
  EXPECT_TRUE(flags[6]);
  EXPECT_EQ(std::count(flags.begin(), flags.end(), true), 1);
  auto few = outlier_flags({1, 100, 1});
  EXPECT_EQ(std::count(few.begin(), few.end(), true), 0);
}

TEST(Stats, MedianSeShrinksWithSamples) {
  std::vector<double> ten, thousand;
  for (int i = 0; i < 10; ++i) ten.push_back(100 + (i % 5));
  for (int i = 0; i < 1000; ++i) thousand.push_back(100 + (i % 5));
  ASSERT_TRUE(median_se(ten) && median_se(thousand));
  EXPECT_NEAR(*median_se(ten), 1.2533 * 1.4826 * 1 / std::sqrt(10.0), 1e-12);  // MAD 1
  EXPECT_NEAR(*median_se(thousand), *median_se(ten) / 10, 1e-12);
  EXPECT_EQ(*median_se({5, 5, 5}), 0);
  EXPECT_FALSE(median_se({5}));
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

TEST(Stats, SpeedupOfIdenticalDistributionsContainsOne) {
  std::vector<double> a, b;
  for (int i = 0; i < 60; ++i) {
    a.push_back(100 + (i * 37) % 11);
    b.push_back(100 + (i * 53) % 11);
  }
  auto s = speedup_estimate(a, b);
  ASSERT_TRUE(s && s->ci95);
  EXPECT_LE(s->ci95->lo, 1.0);
  EXPECT_GE(s->ci95->hi, 1.0);
  EXPECT_GT(s->ci95->lo, 0.95);
  EXPECT_LT(s->ci95->hi, 1.05);
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
  ASSERT_TRUE(side.mad_ms);
  EXPECT_DOUBLE_EQ(*side.mad_ms, 1.0);
  EXPECT_FALSE(side.outliers);  // too few samples to tell
}

TEST(Stats, TimingSideCountsOutliers) {
  auto side = timing_side_from_ns({10, 11, 10, 12, 11, 10, 50, 60});
  ASSERT_TRUE(side.outliers);
  EXPECT_EQ(*side.outliers, 2);
  EXPECT_DOUBLE_EQ(side.median_ms, 11e-6);  // kept in the statistics
}

// Rounds whose samples all move together (load, frequency): round i scales
// every sample of both sides by the same factor when `shared`, by factors of
// its own per side otherwise.
std::pair<Blocks, Blocks> drifting_rounds(double ratio, bool shared, int rounds = 20, int per_round = 10) {
  Blocks reference, candidate;
  for (int i = 0; i < rounds; ++i) {
    double drift_r = 1 + 0.2 * ((i * 7) % 5 - 2) / 2.0;
    double drift_c = shared ? drift_r : 1 + 0.2 * ((i * 3) % 5 - 2) / 2.0;
    std::vector<double> r, c;
    for (int k = 0; k < per_round; ++k) {
      double jitter = 1 + 0.001 * (k % 3);
      r.push_back(100 * ratio * drift_r * jitter);
      c.push_back(100 * drift_c * jitter);
    }
    reference.push_back(r);
    candidate.push_back(c);
  }
  return {reference, candidate};
}

TEST(Stats, PairedBlocksCancelSharedDrift) {
  auto [reference, candidate] = drifting_rounds(2.0, /*shared=*/true);
  auto paired = paired_speedup_estimate(reference, candidate);
  ASSERT_TRUE(paired && paired->ci95);
  EXPECT_NEAR(paired->median, 2.0, 0.01);
  EXPECT_GE(paired->ci95->hi, 2.0);
  EXPECT_LE(paired->ci95->lo, 2.0);
  EXPECT_LT(paired->ci95->hi - paired->ci95->lo, 0.15);
}

TEST(Stats, BlockIntervalIsWiderThanSampleIntervalUnderDrift) {
  // Drift that is not shared by the two sides: resampling single samples
  // treats the 10 samples of a round as independent and is overconfident.
  auto [reference, candidate] = drifting_rounds(1.0, /*shared=*/false);
  auto paired = paired_speedup_estimate(reference, candidate);
  std::vector<double> r, c;
  for (const auto& b : reference) r.insert(r.end(), b.begin(), b.end());
  for (const auto& b : candidate) c.insert(c.end(), b.begin(), b.end());
  auto naive = speedup_estimate(r, c);
  ASSERT_TRUE(paired && paired->ci95 && naive && naive->ci95);
  EXPECT_GT(paired->ci95->hi - paired->ci95->lo, 1.5 * (naive->ci95->hi - naive->ci95->lo));
}

TEST(Stats, GoingSecondCancelsWithinUnits) {
  // Whichever side runs second in a round (the candidate in even rounds,
  // the reference in odd ones) is 5 % slower: each round's ratio is off by
  // 5 %, in alternating directions, and a median of rounds would land on
  // one of the two. A unit (A B B A) holds one round of each order.
  Blocks reference, candidate;
  for (int i = 0; i < 40; ++i) {
    double second = 1.05;
    reference.push_back({150 * (i % 2 == 1 ? second : 1.0)});
    candidate.push_back({100 * (i % 2 == 0 ? second : 1.0)});
  }
  auto paired = paired_speedup_estimate(reference, candidate);
  ASSERT_TRUE(paired && paired->ci95);
  EXPECT_NEAR(paired->median, 1.5, 1e-9);
  EXPECT_NEAR(paired->ci95->lo, 1.5, 1e-9);
  EXPECT_NEAR(paired->ci95->hi, 1.5, 1e-9);
}

TEST(Stats, SlowRegimesDoNotMoveTheRatio) {
  // The machine is 60 % slower in stretches (a neighbour on the core),
  // here every other unit, with a little jitter: pooled medians fall
  // between the two regimes and their interval spans both, while units,
  // whose two rounds share one regime, keep the true ratio 1.25 precisely.
  Blocks reference, candidate;
  for (int i = 0; i < 60; ++i) {
    double regime = (i / 2) % 2 == 0 ? 1.0 : 1.6;
    std::vector<double> r, c;
    for (int k = 0; k < 5; ++k) {
      double jitter = 1 + 0.002 * ((i + k) % 3);
      r.push_back(125 * regime * jitter);
      c.push_back(100 * regime * jitter);
    }
    reference.push_back(r);
    candidate.push_back(c);
  }
  auto paired = paired_speedup_estimate(reference, candidate);
  ASSERT_TRUE(paired && paired->ci95);
  EXPECT_NEAR(paired->median, 1.25, 0.005);
  EXPECT_LT(paired->ci95->hi - paired->ci95->lo, 0.01);
  std::vector<double> r, c;
  for (const auto& b : reference) r.insert(r.end(), b.begin(), b.end());
  for (const auto& b : candidate) c.insert(c.end(), b.begin(), b.end());
  auto pooled = speedup_estimate(r, c);
  ASSERT_TRUE(pooled && pooled->ci95);
  EXPECT_GT(pooled->ci95->hi - pooled->ci95->lo, 0.3);
}

TEST(Stats, PairedSpeedupRse) {
  auto [steady_r, steady_c] = drifting_rounds(2.0, /*shared=*/true);
  auto steady = paired_speedup_rse(steady_r, steady_c);
  ASSERT_TRUE(steady);
  EXPECT_LT(*steady, 1e-3);  // every unit has the same ratio
  auto [short_r, short_c] = drifting_rounds(1.0, /*shared=*/false, 20);
  auto [long_r, long_c] = drifting_rounds(1.0, /*shared=*/false, 80);
  auto rough = paired_speedup_rse(short_r, short_c), finer = paired_speedup_rse(long_r, long_c);
  ASSERT_TRUE(rough && finer);
  EXPECT_GT(*rough, 0.01);
  EXPECT_LT(*finer, *rough);                                 // more units, a smaller error
  EXPECT_FALSE(paired_speedup_rse({{1}, {1}}, {{1}, {1}}));  // one unit
}

TEST(Stats, FewBlocksFallBackToSamples) {
  Blocks reference = {{10, 11, 12}, {10, 11, 13}}, candidate = {{5, 6, 5}, {5, 5, 6}};
  auto paired = paired_speedup_estimate(reference, candidate);
  auto naive = speedup_estimate({10, 11, 12, 10, 11, 13}, {5, 6, 5, 5, 5, 6});
  ASSERT_TRUE(paired && naive && paired->ci95 && naive->ci95);
  EXPECT_EQ(paired->median, naive->median);
  EXPECT_EQ(paired->ci95->lo, naive->ci95->lo);
  EXPECT_EQ(paired->ci95->hi, naive->ci95->hi);
  EXPECT_FALSE(paired_speedup_estimate({}, {{1}}));
}

TEST(Stats, GeometricMeanBlocks) {
  Blocks a = {{4, 4, 100}, {9}, {}}, b = {{1, 1}, {1}, {3}, {5}};
  // Block 0: medians 4 and 1; block 2 has no sample on one side; block 3 no partner.
  EXPECT_EQ(geometric_mean_blocks(a, b), (Blocks{{2}, {3}, {}}));
}

TEST(Stats, NoiseFloorWidensTheIntervalInQuadrature) {
  SpeedupEstimate speedup{2.0, Interval{2.0 * std::exp(-0.03), 2.0 * std::exp(0.01)}};
  // The floor's median is 4 % (in log) below 1, its interval 8 % wide: one
  // standard error of that estimate is 2 %, so the process term counts
  // hypot(4 %, 2 %).
  SpeedupEstimate floor{std::exp(-0.04), Interval{std::exp(-0.08), std::exp(0.0)}};
  auto widened = widen_by_noise_floor(speedup, floor);
  ASSERT_TRUE(widened.ci95);
  EXPECT_DOUBLE_EQ(widened.median, 2.0);
  double reach = std::hypot(0.04, 0.02);
  EXPECT_NEAR(std::log(2.0 / widened.ci95->lo), std::hypot(0.03, reach), 1e-12);
  EXPECT_NEAR(std::log(widened.ci95->hi / 2.0), std::hypot(0.01, reach), 1e-12);
  // A floor whose interval is wide from its rounds' noise alone adds a
  // quarter of that width, not its far end: the paired interval already
  // holds the rounds' noise.
  auto noisy = widen_by_noise_floor(speedup, {1.0, Interval{std::exp(-0.2), std::exp(0.2)}});
  EXPECT_NEAR(std::log(2.0 / noisy.ci95->lo), std::hypot(0.03, 0.1), 1e-12);
  // A floor exactly at 1 with no spread changes nothing; a missing interval neither.
  auto same = widen_by_noise_floor(speedup, {1.0, Interval{1.0, 1.0}});
  EXPECT_NEAR(same.ci95->lo, speedup.ci95->lo, 1e-12);
  EXPECT_NEAR(same.ci95->hi, speedup.ci95->hi, 1e-12);
  EXPECT_FALSE(widen_by_noise_floor({2.0, std::nullopt}, floor).ci95);
  EXPECT_EQ(widen_by_noise_floor(speedup, {1.0, std::nullopt}).ci95->lo, speedup.ci95->lo);
}

TEST(TimingChecks, ImpossibleTime) {
  // 400 MB of output at 10 GB/s copy bandwidth needs at least 20 ms.
  EXPECT_TRUE(impossible_time_finding(1e6, 400'000'000, 10, 32 << 20));
  EXPECT_FALSE(impossible_time_finding(50e6, 400'000'000, 10, 32 << 20));
  EXPECT_FALSE(impossible_time_finding(1, 400'000'000, 0, 32 << 20));
}

TEST(TimingChecks, WithinNoise) {
  SpeedupEstimate noise{1.0, Interval{0.98, 1.02}};
  EXPECT_TRUE(within_noise({1.01, Interval{0.99, 1.03}}, noise));
  EXPECT_FALSE(within_noise({1.5, Interval{1.4, 1.6}}, noise));
  EXPECT_FALSE(within_noise({1.5, std::nullopt}, noise));
}

}  // namespace
}  // namespace kgym::verify
