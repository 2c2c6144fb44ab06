#include "verify/lease.h"

#include <gtest/gtest.h>

namespace kgym::verify {
namespace {

constexpr double kMs = 1e6;

// A scripted CPU counter: the test advances it as if the candidate's
// processes had run.
struct FakeCpu {
  double ns = 0;
  bool fails = false;
  CpuReader reader() {
    return [this]() -> std::optional<double> {
      if (fails) return std::nullopt;
      return ns;
    };
  }
};

// One round: a candidate batch of `batch_ms` wall using `batch_cpu_ms`,
// then the reference's batch of `idle_ms` during which the candidate's
// processes use `idle_cpu_ms`. Returns the first finding.
std::optional<CheatFinding> round(LeaseWatch& watch, FakeCpu& cpu, double& now, double batch_ms,
                                  double batch_cpu_ms, double idle_ms, double idle_cpu_ms) {
  if (auto f = watch.before_request(true, now)) return f;
  now += batch_ms * kMs;
  cpu.ns += batch_cpu_ms * kMs;
  if (auto f = watch.after_reply(true, now)) return f;
  if (auto f = watch.before_request(false, now)) return f;
  now += idle_ms * kMs;
  cpu.ns += idle_cpu_ms * kMs;
  return watch.after_reply(false, now);
}

TEST(LeaseWatch, AnHonestSingleCoreCandidatePasses) {
  FakeCpu cpu;
  LeaseWatch watch({.cores = 1}, cpu.reader());
  double now = 0;
  for (int i = 0; i < 100; ++i) ASSERT_FALSE(round(watch, cpu, now, 10, 9.5, 10, 0.05));
  EXPECT_FALSE(watch.finish(now + kMs));
  EXPECT_EQ(watch.figures().batches, 100);
  // 100 idle intervals: 99 between batches and the one finish() closes.
  EXPECT_NEAR(watch.figures().idle_cpu_ns, 100 * 0.05 * kMs, 1);
}

TEST(LeaseWatch, MoreCoresBusyThanLeasedIsALeaseBreak) {
  FakeCpu cpu;
  LeaseWatch watch({.cores = 1}, cpu.reader());
  double now = 0;
  std::optional<CheatFinding> finding;
  for (int i = 0; i < 20 && !finding; ++i) finding = round(watch, cpu, now, 10, 19, 10, 0);
  ASSERT_TRUE(finding);
  EXPECT_EQ(finding->rule, "runtime.lease");
  EXPECT_EQ(finding->layer, "runtime");
  EXPECT_NE(finding->evidence.find("on a lease of 1"), std::string::npos) << finding->evidence;
}

TEST(LeaseWatch, TwoLeasedCoresMayBothBeBusy) {
  FakeCpu cpu;
  LeaseWatch watch({.cores = 2}, cpu.reader());
  double now = 0;
  for (int i = 0; i < 50; ++i) ASSERT_FALSE(round(watch, cpu, now, 10, 19.8, 10, 0));
}

TEST(LeaseWatch, WorkBetweenCallsIsBackgroundWork) {
  FakeCpu cpu;
  LeaseWatch watch({.cores = 1}, cpu.reader());
  double now = 0;
  std::optional<CheatFinding> finding;
  // A burner that takes the core while the reference is timed.
  for (int i = 0; i < 100 && !finding; ++i) finding = round(watch, cpu, now, 10, 9, 10, 9);
  ASSERT_TRUE(finding);
  EXPECT_EQ(finding->rule, "runtime.background_work");
  EXPECT_NE(finding->evidence.find("while none of them was being called"), std::string::npos);
}

// The same rounds with the reference's side read too: `reference_ms` of
// its CPU time in each window between the candidate's batches.
std::optional<CheatFinding> contested_round(LeaseWatch& watch, FakeCpu& cpu, FakeCpu& reference, double& now,
                                            double idle_cpu_ms, double reference_ms) {
  if (auto f = watch.before_request(true, now)) return f;
  now += 10 * kMs;
  cpu.ns += 9 * kMs;
  if (auto f = watch.after_reply(true, now)) return f;
  if (auto f = watch.before_request(false, now)) return f;
  now += 10 * kMs;
  cpu.ns += idle_cpu_ms * kMs;
  reference.ns += reference_ms * kMs;
  return watch.after_reply(false, now);
}

TEST(LeaseWatch, ABurnerIsCaughtHoweverBusyTheMachine) {
  // On a machine so loaded that the burner and the reference each get a
  // fifth of the shared core, the burner's wall-time share is far below
  // any wall-time allowance; its share of what the two sides used is
  // still half.
  FakeCpu cpu, reference;
  LeaseWatch watch({.cores = 1}, cpu.reader(), reference.reader());
  double now = 0;
  std::optional<CheatFinding> finding;
  for (int i = 0; i < 200 && !finding; ++i) finding = contested_round(watch, cpu, reference, now, 2, 2);
  ASSERT_TRUE(finding);
  EXPECT_EQ(finding->rule, "runtime.background_work");
  EXPECT_NE(finding->evidence.find("of the CPU time both sides used"), std::string::npos)
      << finding->evidence;
  // Without the reference's reading the same burner hides in the load.
  FakeCpu cpu2;
  LeaseWatch by_wall({.cores = 1}, cpu2.reader());
  now = 0;
  for (int i = 0; i < 200; ++i) ASSERT_FALSE(round(by_wall, cpu2, now, 10, 9, 10, 2));
}

TEST(LeaseWatch, AnHonestWorkerSettlingAfterItsRepliesPasses) {
  // A worker that spends a little after each reply (freeing its batch)
  // while the reference computes.
  FakeCpu cpu, reference;
  LeaseWatch watch({.cores = 1}, cpu.reader(), reference.reader());
  double now = 0;
  for (int i = 0; i < 500; ++i) ASSERT_FALSE(contested_round(watch, cpu, reference, now, 0.3, 9.5));
  EXPECT_FALSE(watch.finish(now + kMs));
  ASSERT_TRUE(watch.figures().idle_reference_cpu_ns);
  EXPECT_NEAR(*watch.figures().idle_reference_cpu_ns, 500 * 9.5 * kMs, 1);
}

TEST(LeaseWatch, AnUnreadableReferenceFallsBackToWallTime) {
  FakeCpu cpu, reference;
  LeaseWatch watch({.cores = 1}, cpu.reader(), reference.reader());
  double now = 0;
  ASSERT_FALSE(contested_round(watch, cpu, reference, now, 0, 9));
  reference.fails = true;
  ASSERT_FALSE(contested_round(watch, cpu, reference, now, 0, 9));
  EXPECT_FALSE(watch.figures().idle_reference_cpu_ns);
  EXPECT_NE(watch.describe().find("judged by wall time"), std::string::npos) << watch.describe();
  EXPECT_TRUE(watch.readable());
}

TEST(LeaseWatch, WorkAfterTheLastBatchCountsAtTheEnd) {
  FakeCpu cpu;
  LeaseWatch watch({.cores = 1}, cpu.reader());
  double now = 0;
  ASSERT_FALSE(round(watch, cpu, now, 10, 9, 10, 0));
  cpu.ns += 300 * kMs;
  auto finding = watch.finish(now + 200 * kMs);
  ASSERT_TRUE(finding);
  EXPECT_EQ(finding->rule, "runtime.background_work");
}

TEST(LeaseWatch, TickRoundingIsAbsorbed) {
  // /proc readings move in 10 ms steps: a batch may seem to cost a tick
  // more than its wall time, and an idle gap a tick.
  FakeCpu cpu;
  LeaseWatch watch({.cores = 1, .resolution_ns = 10 * kMs}, cpu.reader());
  double now = 0;
  for (int i = 0; i < 100; ++i) {
    double idle_tick = i % 10 == 0 ? 10 : 0;
    ASSERT_FALSE(round(watch, cpu, now, 20, i % 2 ? 30 : 10, 20, idle_tick));
  }
}

TEST(LeaseWatch, AnUnreadableCounterDecidesNothing) {
  FakeCpu cpu;
  cpu.fails = true;
  LeaseWatch watch({.cores = 1}, cpu.reader());
  double now = 0;
  EXPECT_FALSE(round(watch, cpu, now, 10, 50, 10, 50));
  EXPECT_FALSE(watch.finish(now));
  EXPECT_FALSE(watch.readable());
  EXPECT_NE(watch.describe().find("not checked"), std::string::npos);
}

}  // namespace
}  // namespace kgym::verify
