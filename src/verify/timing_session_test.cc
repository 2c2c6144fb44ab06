// The timing phase against scripted workers: the order of its batches, the
// noise floors from the twins, and what it concludes about the
// machine's load from the cores' counters and the workers' CPU reports.
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>

#include <gtest/gtest.h>

#include "verify/timing_session.h"

namespace kgym::verify {
namespace {

constexpr double kCallNs = 1e6;  // every scripted call takes 1 ms

// One core whose busy time is what the scripted workers report using plus
// `foreign_s` of other processes' work (from the second reading on), and
// which idles 1 s between readings.
struct FakeCore {
  double workers_s = 0;
  double foreign_s = 0;
  int readings = 0;
};

// Workers that answer every batch at once: each call kCallNs (times
// `twin_factor` on the reference's twin, `candidate_twin_factor` on the
// candidate's), reporting `cpu_per_call` of CPU per call, which the core
// counts as busy.
Exchange scripted_workers(std::shared_ptr<FakeCore> core, double cpu_per_call_ns, double twin_factor = 1,
                          double candidate_twin_factor = 1) {
  return [core, cpu_per_call_ns, twin_factor, candidate_twin_factor](
             TimedSide side, const Message& request, std::string_view) -> std::optional<Message> {
    Message reply;
    if (request.header.value("op", "") == "bandwidth") {
      reply.header = {{"gbs", 10.0}};
      return reply;
    }
    int calls = request.header.value("calls", 1);
    core->workers_s += cpu_per_call_ns * calls / 1e9;
    double ns = side == TimedSide::kTwin            ? kCallNs * twin_factor
                : side == TimedSide::kCandidateTwin ? kCallNs * candidate_twin_factor
                                                    : kCallNs;
    reply.header = {{"ns", std::vector<double>(static_cast<std::size_t>(calls), ns)},
                    {"cpu_ns", cpu_per_call_ns * calls}};
    return reply;
  };
}

CoreLoadProbe scripted_cores(std::shared_ptr<FakeCore> core) {
  CoreLoadProbe probe;
  probe.cores = {0};
  probe.ticks_per_second = 1000;
  probe.own_cpu_s = [] { return 0.0; };
  probe.read_stat = [core]() -> std::optional<util::CpuStat> {
    double foreign = core->readings > 0 ? core->foreign_s : 0;
    auto busy = static_cast<std::uint64_t>((core->workers_s + foreign) * 1000);
    auto idle = static_cast<std::uint64_t>(core->readings * 1000);
    ++core->readings;
    util::CpuStat stat;
    stat.cores = {util::CoreTicks{busy, busy + idle}};
    return stat;
  };
  return probe;
}

VerifierConfig short_timing() {
  VerifierConfig config;
  config.timing.warmup = 1;
  config.timing.min_samples = 10;
  config.timing.max_repetitions = 40;
  return config;
}

// The timing against scripted workers whose calls all take kCallNs, but
// for the two twins' factors, on an idle core.
std::optional<Performance> timed_with_twins(double twin_factor, double candidate_twin_factor) {
  auto core = std::make_shared<FakeCore>();
  return run_timing(
             short_timing(), TimingInputs{.blob = "x"},
             scripted_workers(core, kCallNs, twin_factor, candidate_twin_factor), [](const std::string&) {},
             scripted_cores(core))
      .performance;
}

bool has_flag(const Performance& p, const std::string& flag) {
  return std::find(p.flags.begin(), p.flags.end(), flag) != p.flags.end();
}

TEST(TimingSession, BusyCoresBeyondTheWorkersOwnAreContended) {
  auto core = std::make_shared<FakeCore>(FakeCore{.foreign_s = 0.5});
  auto outcome = run_timing(
      short_timing(), TimingInputs{.blob = "x"}, scripted_workers(core, kCallNs), [](const std::string&) {},
      scripted_cores(core));
  ASSERT_TRUE(outcome.performance);
  ASSERT_TRUE(outcome.performance->foreign_cpu_share);
  // The timed rounds' worker CPU, the foreign 0.5 s and 1 s idle.
  double workers_s = core->workers_s;
  EXPECT_NEAR(*outcome.performance->foreign_cpu_share, 0.5 / (1.5 + workers_s), 0.01);
  EXPECT_TRUE(has_flag(*outcome.performance, "contended"));
}

TEST(TimingSession, CoresBusyOnlyWithTheWorkersAreNotContended) {
  // The workers use several threads: 8 ms of CPU per 1 ms call.
  auto core = std::make_shared<FakeCore>();
  auto outcome = run_timing(
      short_timing(), TimingInputs{.blob = "x"}, scripted_workers(core, 8 * kCallNs),
      [](const std::string&) {}, scripted_cores(core));
  ASSERT_TRUE(outcome.performance);
  ASSERT_TRUE(outcome.performance->foreign_cpu_share);
  EXPECT_NEAR(*outcome.performance->foreign_cpu_share, 0.0, 0.01);
  EXPECT_FALSE(has_flag(*outcome.performance, "contended"));
}

TEST(TimingSession, UnreadableCountersLeaveTheShareUnknown) {
  auto core = std::make_shared<FakeCore>();
  CoreLoadProbe probe;
  probe.read_stat = [] { return std::optional<util::CpuStat>{}; };
  auto outcome = run_timing(
      short_timing(), TimingInputs{.blob = "x"}, scripted_workers(core, kCallNs), [](const std::string&) {},
      probe);
  ASSERT_TRUE(outcome.performance);
  EXPECT_FALSE(outcome.performance->foreign_cpu_share);
  EXPECT_FALSE(has_flag(*outcome.performance, "contended"));
}

TEST(TimingSession, InputsTravelOncePerSideAndBatchesStartWarm) {
  auto core = std::make_shared<FakeCore>();
  auto answer = scripted_workers(core, kCallNs);
  struct Seen {
    int with_inputs = 0, without = 0, rewarmed = 0, timed = 0;
  };
  auto seen = std::make_shared<std::array<Seen, 4>>();
  auto order = std::make_shared<std::vector<TimedSide>>();
  Exchange recording = [&, seen, order](TimedSide side, const Message& request, std::string_view what) {
    if (request.header.value("op", "") == "time") {
      Seen& s = (*seen)[static_cast<std::size_t>(side)];
      if (what == "timing") order->push_back(side);
      (request.payloads.empty() ? s.without : s.with_inputs)++;
      if (what == "timing") {
        ++s.timed;
        s.rewarmed += request.header.value("warmup", 0) > 0;
      }
    }
    return answer(side, request, what);
  };
  auto outcome = run_timing(
      short_timing(), TimingInputs{.blob = "inputs"}, recording, [](const std::string&) {},
      scripted_cores(core));
  ASSERT_TRUE(outcome.performance);
  for (const Seen& s : *seen) {
    EXPECT_EQ(s.with_inputs, 1);  // the first request stages them
    EXPECT_GT(s.without, 0);
    EXPECT_GT(s.timed, 0);
    EXPECT_EQ(s.rewarmed, s.timed);  // every timed batch begins with untimed calls
  }
  EXPECT_EQ(outcome.performance->rounds_ms.size(), static_cast<std::size_t>((*seen)[0].timed));
  ASSERT_EQ(outcome.performance->rounds_ms.front().size(), 4u);
  EXPECT_DOUBLE_EQ(outcome.performance->rounds_ms.front()[0], kCallNs / 1e6);
  // Rounds R C T D, then D T C R: each pair of workers takes both orders
  // per unit.
  using enum TimedSide;
  ASSERT_GE(order->size(), 8u);
  EXPECT_EQ(std::vector<TimedSide>(order->begin(), order->begin() + 8),
            (std::vector<TimedSide>{kReference, kCandidate, kTwin, kCandidateTwin, kCandidateTwin, kTwin,
                                    kCandidate, kReference}));
}

TEST(TimingSession, AProcessEffectOnTheTwinWidensTheInterval) {
  // The candidate runs exactly as fast as the reference, the twin (the same
  // code in another process) 4 % slower in every round: the paired interval
  // alone would be a single point away from 1.
  auto performance = timed_with_twins(1.04, 1.0);
  ASSERT_TRUE(performance);
  const Performance& p = *performance;
  ASSERT_TRUE(p.noise_floor && p.noise_floor->ci95 && p.speedup.ci95);
  EXPECT_NEAR(p.noise_floor->median, 1 / 1.04, 1e-9);
  EXPECT_NEAR(p.speedup.median, std::sqrt(1.04), 1e-9);  // both reference workers count
  EXPECT_NEAR(p.speedup.ci95->lo, std::sqrt(1.04) / 1.04, 1e-9);
  EXPECT_NEAR(p.speedup.ci95->hi, std::sqrt(1.04) * 1.04, 1e-9);
  EXPECT_LT(p.speedup.ci95->lo, 1.0);
  ASSERT_TRUE(p.candidate_noise_floor);
  EXPECT_NEAR(p.candidate_noise_floor->median, 1.0, 1e-9);
  EXPECT_EQ(p.reference.samples, p.candidate.samples);  // two workers each
}

TEST(TimingSession, AProcessEffectOnTheCandidateTwinWidensTheIntervalToo) {
  // Now the candidate's twin is the odd process: 4 % slower.
  auto performance = timed_with_twins(1.0, 1.04);
  ASSERT_TRUE(performance);
  const Performance& p = *performance;
  ASSERT_TRUE(p.candidate_noise_floor && p.speedup.ci95);
  EXPECT_NEAR(p.candidate_noise_floor->median, 1 / 1.04, 1e-9);
  EXPECT_NEAR(p.speedup.median, 1 / std::sqrt(1.04), 1e-9);
  EXPECT_NEAR(p.speedup.ci95->lo, 1 / std::sqrt(1.04) / 1.04, 1e-9);
  EXPECT_NEAR(p.speedup.ci95->hi, 1 / std::sqrt(1.04) * 1.04, 1e-9);
  EXPECT_GT(p.speedup.ci95->hi, 1.0);
}

TEST(TimingSession, BothNoiseFloorsAndFourMediansPerRoundSurviveTheResultJson) {
  auto performance = timed_with_twins(1.02, 1.04);
  ASSERT_TRUE(performance);
  CaseResult r;
  r.performance = performance;
  CaseResult back = result_from_json(to_json(r));
  ASSERT_TRUE(back.performance && back.performance->noise_floor && back.performance->candidate_noise_floor);
  EXPECT_NEAR(back.performance->noise_floor->median, 1 / 1.02, 1e-9);
  EXPECT_NEAR(back.performance->candidate_noise_floor->median, 1 / 1.04, 1e-9);
  EXPECT_EQ(back.performance->rounds_ms, performance->rounds_ms);
  ASSERT_FALSE(back.performance->rounds_ms.empty());
  EXPECT_DOUBLE_EQ(back.performance->rounds_ms.front()[3], 1.04 * kCallNs / 1e6);
}

TEST(TimingChecks, ForeignShare) {
  EXPECT_FALSE(foreign_cpu_share(util::CoreUsage{}, 0));
  EXPECT_DOUBLE_EQ(*foreign_cpu_share({.busy_s = 1.0, .total_s = 4.0, .cores = 2}, 0.5), 0.125);
  // Own CPU above the counted busy time (tick rounding) is no negative load.
  EXPECT_DOUBLE_EQ(*foreign_cpu_share({.busy_s = 1.0, .total_s = 4.0, .cores = 2}, 1.2), 0.0);
}

}  // namespace
}  // namespace kgym::verify
