// The timing's integrity checks (verify/timing_checks.h) as pure functions
// of scripted figures; the session that feeds them is timing_session_test.cc.
#include "verify/timing_checks.h"
#include "verify/timing_session.h"

#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace kgym::verify {
namespace {

TEST(TimingChecks, TimeMovedOutOfTheCallsIsAClockFinding) {
  ClockTotals reference{.outer_ns = 100e6, .worker_ns = 99e6, .inner_ns = 50e6, .calls = 100, .batches = 10};
  ClockTotals candidate = reference;
  OverheadRounds honest{
      .excess_ns = {1'000, -2'000, 500}, .aa_ns = {1'000, 1'500}, .reference_ns = {100'000}};
  EXPECT_FALSE(clock_finding(reference, candidate, honest, 500'000));
  // 0.4 ms per call moved from inside the timer to outside it: the totals
  // agree, the time between calls does not.
  OverheadRounds moved{.excess_ns = {400'000, 390'000, 410'000}, .aa_ns = {1'000}, .reference_ns = {100'000}};
  auto found = clock_finding(reference, candidate, moved, 100'000);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->rule, "runtime.clock");
  // The same excess among four rounds as noisy as it is proves nothing.
  OverheadRounds noisy{.excess_ns = {400'000, -300'000, 500'000, 390'000},
                       .aa_ns = {400'000, -450'000, 380'000, -420'000},
                       .reference_ns = {100'000}};
  EXPECT_FALSE(clock_finding(reference, candidate, noisy, 100'000));
  // A clock running at an eighth of the speed.
  reference.gap_ns = {1e5, 2e5, 1e5};
  reference.gap_share = {0.01, 0.02, 0.01};
  ClockTotals slow = reference;
  slow.worker_ns = reference.outer_ns / 8;
  slow.gap_ns = {8.75e6, 8.7e6, 8.8e6};
  slow.gap_share = {0.875, 0.87, 0.88};
  EXPECT_TRUE(clock_finding(reference, slow, honest, 500'000));
  // One batch whose reply came late on a busy machine is no slow clock.
  ClockTotals late = reference;
  late.gap_ns = {1e5, 30e6, 2e5};
  late.gap_share = {0.01, 0.75, 0.02};
  EXPECT_FALSE(clock_finding(reference, late, honest, 500'000));
  ClockTotals ahead = reference;
  ahead.worker_ns = reference.outer_ns * 1.5;
  EXPECT_TRUE(clock_finding(reference, ahead, honest, 500'000));
}

TEST(TimingChecks, OtherProcessesWidenTheAllowanceForTimeBetweenCalls) {
  ClockTotals reference{.outer_ns = 600e6, .worker_ns = 550e6, .inner_ns = 250e6, .calls = 470, .batches = 200};
  ClockTotals candidate = reference;
  // An honest A/A run on cores half taken by other processes: the
  // candidate's batches happened to be preempted more between calls.
  OverheadRounds preempted{.excess_ns = {420'000, 450'000, 380'000, 430'000, 400'000},
                           .aa_ns = {20'000, -30'000, 10'000, 25'000, -15'000},
                           .reference_ns = {500'000, 520'000, 480'000}};
  EXPECT_TRUE(clock_finding(reference, candidate, preempted, 530'000, 0));
  EXPECT_FALSE(clock_finding(reference, candidate, preempted, 530'000, 0.5));
  // The allowance is the reference's own time between calls times the
  // stretch: moving a whole call's work out of the timer still shows.
  OverheadRounds moved{.excess_ns = {1'600'000, 1'650'000, 1'580'000},
                       .aa_ns = {20'000, -30'000, 10'000},
                       .reference_ns = {500'000, 520'000, 480'000}};
  auto found = clock_finding(reference, candidate, moved, 100'000, 0.5);
  ASSERT_TRUE(found);
  EXPECT_NE(found->evidence.find("other processes took 50 %"), std::string::npos) << found->evidence;
  // A share past 80 % counts as 80 % (an allowance of 8 times the
  // reference's time between calls, not unbounded).
  OverheadRounds moved_more = moved;
  moved_more.excess_ns = {5'000'000, 5'100'000, 4'900'000};
  EXPECT_TRUE(clock_finding(reference, candidate, moved_more, 100'000, 0.99));
  EXPECT_FALSE(clock_finding(reference, candidate, moved, 100'000, 0.99));
}

TEST(TimingChecks, OtherProcessesWidenTheAllowanceForTheRoundTrip) {
  OverheadRounds honest{.excess_ns = {1'000, -2'000, 500}, .aa_ns = {1'000, 1'500}, .reference_ns = {100'000}};
  ClockTotals reference{.outer_ns = 450e6, .worker_ns = 280e6, .inner_ns = 100e6, .calls = 880, .batches = 131};
  reference.gap_ns = {0.7e6, 0.6e6, 0.8e6};
  reference.gap_share = {0.2, 0.18, 0.22};
  // Woken late on a core other processes took half of: 1.8 ms of the
  // median batch missing from the candidate's clock, 0.7 ms from the
  // reference's.
  ClockTotals late = reference;
  late.gap_ns = {1.8e6, 1.7e6, 1.9e6};
  late.gap_share = {0.48, 0.47, 0.5};
  EXPECT_TRUE(clock_finding(reference, late, honest, 100'000, 0));
  EXPECT_FALSE(clock_finding(reference, late, honest, 100'000, 0.55));
  // A clock at an eighth of the speed shows on the same busy cores.
  ClockTotals slow = reference;
  slow.gap_ns = {8.75e6, 8.7e6, 8.8e6};
  slow.gap_share = {0.875, 0.87, 0.88};
  EXPECT_TRUE(clock_finding(reference, slow, honest, 100'000, 0.55));
}

TEST(TimingChecks, MemoizationNeedsAMarkedGapBeyondTheNoiseFloors) {
  MemoProbe honest{.candidate_seen_ns = 1e6,
                   .candidate_unseen_ns = 1.1e6,
                   .reference_seen_ns = 1e6,
                   .reference_unseen_ns = 1e6};
  EXPECT_FALSE(memoization_finding(honest, std::nullopt, std::nullopt));
  MemoProbe memo{.candidate_seen_ns = 0.05e6,
                 .candidate_unseen_ns = 1e6,
                 .reference_seen_ns = 1e6,
                 .reference_unseen_ns = 1e6};
  auto found = memoization_finding(memo, std::nullopt, std::nullopt);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->rule, "runtime.memoization");
  // A noise floor wider than the gap leaves it unproven.
  SpeedupEstimate wide{.median = 1, .ci95 = Interval{0.04, 25}};
  EXPECT_FALSE(memoization_finding(memo, wide, std::nullopt));
}

TEST(TimingChecks, ACandidateSlowerInProbeBatchesThanInTimedOnesTellsThemApart) {
  // Honest: its unseen probe calls cost what its timed calls cost.
  MemoProbe honest{.candidate_seen_ns = 1e6,
                   .candidate_unseen_ns = 1e6,
                   .candidate_timed_ns = 0.95e6,
                   .reference_seen_ns = 1e6,
                   .reference_unseen_ns = 1e6,
                   .reference_timed_ns = 1e6};
  EXPECT_FALSE(memoization_finding(honest, std::nullopt, std::nullopt));
  // Its timed calls take a shortcut the probe batches do not: 3x.
  MemoProbe two_faced = honest;
  two_faced.candidate_timed_ns = 0.33e6;
  auto found = memoization_finding(two_faced, std::nullopt, std::nullopt);
  ASSERT_TRUE(found);
  EXPECT_NE(found->evidence.find("batches that probe it"), std::string::npos) << found->evidence;
  // The reference slower in the probe batches alike (the machine): no finding.
  MemoProbe machine = two_faced;
  machine.reference_timed_ns = 0.33e6;
  EXPECT_FALSE(memoization_finding(machine, std::nullopt, std::nullopt));
}

TEST(TimingChecks, ImpossibleTimeOnlyBeyondTheCache) {
  EXPECT_FALSE(impossible_time_finding(1, 1 << 20, 10, 32 << 20));  // fits in the cache
  EXPECT_FALSE(impossible_time_finding(10e6, 64ull << 20, 10, 32 << 20));
  auto found = impossible_time_finding(1e3, 64ull << 20, 10, 32 << 20);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->rule, "runtime.impossible_time");
}

TEST(TimingChecks, UnclaimedTimeIsChargedOnlyBeyondTheNoiseOfTwoHonestWorkers) {
  // Nothing measured: nothing charged.
  EXPECT_EQ(unclaimed_charge_ns(UnclaimedRounds{}), 0);
  // Four rounds; the reference leaves 10 ms per timed call unclaimed, its
  // twin differs from it by 0.1 ms: the allowance is 6 * 0.1 / 2 + 2 % of
  // 10 + 0.02 = 0.52 ms per call.
  UnclaimedRounds rounds{.excess_ns = {0.3e6, -0.2e6, 0.4e6, 0.1e6},
                         .aa_ns = {0.1e6, -0.1e6, 0.1e6, -0.1e6},
                         .reference_ns = {10e6, 10e6, 10e6, 10e6}};
  EXPECT_EQ(unclaimed_charge_ns(rounds), 0);    // an honest candidate: within the noise
  rounds.excess_ns = {3e6, 3.2e6, 2.8e6, 3e6};  // 3 ms of each call hidden
  EXPECT_NEAR(unclaimed_charge_ns(rounds), 3e6 - 0.52e6, 1);
  // Half the cores taken by others: twice f / (1 - f) of the reference's
  // own unclaimed time is allowed too, 20 ms: nothing charged.
  EXPECT_EQ(unclaimed_charge_ns(rounds, 0.5), 0);
  // One round that hid much, the others nothing: the median is not moved.
  rounds.excess_ns = {0, 50e6, 0, 0.1e6};
  EXPECT_EQ(unclaimed_charge_ns(rounds), 0);
}

TEST(TimingChecks, ForeignShare) {
  EXPECT_FALSE(foreign_cpu_share(util::CoreUsage{}, 0));
  EXPECT_DOUBLE_EQ(*foreign_cpu_share({.busy_s = 1.0, .total_s = 4.0, .cores = 2}, 0.5), 0.125);
  // Own CPU above the counted busy time (tick rounding) is no negative load.
  EXPECT_DOUBLE_EQ(*foreign_cpu_share({.busy_s = 1.0, .total_s = 4.0, .cores = 2}, 1.2), 0.0);
}

TEST(TimingChecks, AnIntervalOverTwiceAsHighAsItsLowerEndIsUncertain) {
  EXPECT_FALSE(uncertain_speedup({.median = 1.4, .ci95 = Interval{1.2, 1.6}}));
  EXPECT_FALSE(uncertain_speedup({.median = 1.4}));  // no interval: nothing to say
  EXPECT_TRUE(uncertain_speedup({.median = 1.42, .ci95 = Interval{0.252, 7.885}}));
  EXPECT_TRUE(uncertain_speedup({.median = 1.0, .ci95 = Interval{0.0, 1.5}}));
}

}  // namespace
}  // namespace kgym::verify
