// The timing phase against scripted workers (timing_session_fakes.h): the
// order of its batches, the noise floors from the twins, what it concludes
// about the machine's load from the cores' counters and the workers' CPU
// reports, the inputs each call gets, and whose clock the figure is.
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "util/sealed_memory.h"
#include "verify/timing_session.h"
#include "verify/timing_session_fakes.h"

namespace kgym::verify {
namespace {

using namespace scripted;

TEST(TimingSession, BusyCoresBeyondTheWorkersOwnAreContended) {
  auto core = std::make_shared<FakeCore>(FakeCore{.foreign_s = 0.5});
  auto outcome = run_scripted(
      short_timing(), TimingInputs{}, scripted_workers(core, kCallNs), [](const std::string&) {},
      scripted_cores(core));
  ASSERT_TRUE(outcome.performance);
  ASSERT_TRUE(outcome.performance->foreign_cpu_share);
  // The timed rounds' worker CPU (up to the last reading: the probe comes
  // after it), the foreign 0.5 s and 1 s idle.
  double workers_s = core->workers_at_reading_s;
  EXPECT_NEAR(*outcome.performance->foreign_cpu_share, 0.5 / (1.5 + workers_s), 0.01);
  EXPECT_TRUE(has_flag(*outcome.performance, "contended"));
}

TEST(TimingSession, CoresBusyOnlyWithTheWorkersAreNotContended) {
  // The workers use several threads: 8 ms of CPU per 1 ms call.
  auto core = std::make_shared<FakeCore>();
  auto outcome = run_scripted(
      short_timing(), TimingInputs{}, scripted_workers(core, 8 * kCallNs), [](const std::string&) {},
      scripted_cores(core));
  ASSERT_TRUE(outcome.performance);
  ASSERT_TRUE(outcome.performance->foreign_cpu_share);
  EXPECT_NEAR(*outcome.performance->foreign_cpu_share, 0.0, 0.01);
  EXPECT_FALSE(has_flag(*outcome.performance, "contended"));
}

// Workers whose calls take 20 us and whose batches spend `outside_ns` per
// call between their timed calls (the candidate's `candidate_outside_ns`),
// in real time, reporting the candidate's CPU time as
// `candidate_cpu_share` of what it used.
Exchange with_time_between_calls(std::shared_ptr<FakeCore> core, double outside_ns, double candidate_outside_ns,
                                 double candidate_cpu_share) {
  constexpr double kShortCallNs = 20'000;
  auto inner = scripted_workers(core, kShortCallNs);
  return [=](Role side, const worker::Message& request, std::string_view what) -> std::optional<worker::Message> {
    auto reply = inner(side, request, what);
    if (!reply || request.header.value("op", "") != "time") return reply;
    int calls = request.header.value("calls", 1);
    int warmup = request.header.value("warmup", 0);
    int positions = calls + warmup;
    double between = is_candidate(side) ? candidate_outside_ns : outside_ns;
    double elapsed = positions * (kShortCallNs + between);  // what the parent's clock sees
    reply->header["ns"] = std::vector<double>(static_cast<std::size_t>(calls), kShortCallNs);
    reply->header["untimed_ns"] = warmup * kShortCallNs;
    reply->header["elapsed_ns"] = elapsed;
    if (is_candidate(side)) reply->header["cpu_ns"] = reply->header["cpu_ns"].get<double>() * candidate_cpu_share;
    return reply;
  };
}

TEST(TimingSession, OnlyAShareOfOtherProcessesReadFromOutsideWidensTheClockCheck) {
  // The candidate spends 80 us between its calls, the reference 20 us. On
  // an idle core that is time moved out of the calls.
  auto idle = std::make_shared<FakeCore>();
  auto found = run_scripted(short_timing(), TimingInputs{}, with_time_between_calls(idle, 2e4, 8e4, 1),
                          [](const std::string&) {}, scripted_cores(idle));
  ASSERT_TRUE(found.cheat);
  EXPECT_NE(found.cheat->evidence.find("leave time between them"), std::string::npos) << found.cheat->evidence;
  // The candidate under-reports its CPU time: the core looks busy with
  // other processes, but on its own word only, which buys nothing.
  auto lying = std::make_shared<FakeCore>();
  found = run_scripted(short_timing(), TimingInputs{}, with_time_between_calls(lying, 2e4, 8e4, 0.01),
                     [](const std::string&) {}, scripted_cores(lying));
  ASSERT_TRUE(found.cheat);
  EXPECT_NE(found.cheat->evidence.find("leave time between them"), std::string::npos) << found.cheat->evidence;
  // Other processes really took most of the core, as both sides' CPU time
  // read from outside shows: the same figures are within the allowance.
  auto busy = std::make_shared<FakeCore>(FakeCore{.foreign_s = 3});
  auto probe = scripted_cores(busy);
  probe.sides_cpu_ns = [busy] { return std::optional<double>(busy->workers_s * 1e9); };
  auto honest = run_scripted(short_timing(), TimingInputs{}, with_time_between_calls(busy, 2e4, 8e4, 1),
                           [](const std::string&) {}, probe);
  EXPECT_FALSE(honest.cheat) << (honest.cheat ? honest.cheat->evidence : "");
  ASSERT_TRUE(honest.performance);
  EXPECT_TRUE(has_flag(*honest.performance, "contended"));
}

TEST(TimingSession, UnreadableCountersLeaveTheShareUnknown) {
  auto core = std::make_shared<FakeCore>();
  CoreLoadProbe probe;
  probe.read_stat = [] { return std::optional<util::CpuStat>{}; };
  auto outcome = run_scripted(
      short_timing(), TimingInputs{}, scripted_workers(core, kCallNs), [](const std::string&) {}, probe);
  ASSERT_TRUE(outcome.performance) << outcome.mismatch << (outcome.cheat ? outcome.cheat->evidence : "");
  EXPECT_FALSE(outcome.performance->foreign_cpu_share);
  EXPECT_FALSE(has_flag(*outcome.performance, "contended"));
}

TEST(TimingSession, EveryCallGetsAFreshInputSetAndTheTwinsAnotherSequence) {
  auto core = std::make_shared<FakeCore>();
  auto answer = scripted_workers(core, kCallNs);
  // Per side, every set it was handed outside the probe, and those of the
  // timed rounds.
  auto seen = std::make_shared<std::array<std::vector<std::string>, 4>>();
  auto timed_sets = std::make_shared<std::array<std::set<std::string>, 4>>();
  auto masks_ok = std::make_shared<bool>(true);
  auto traced = std::make_shared<int>(0);
  auto order = std::make_shared<std::vector<Role>>();
  auto made = std::make_shared<std::set<std::string>>();
  auto drawn = std::make_shared<int>(0), redrawn = std::make_shared<int>(0);
  auto rewarmed = std::make_shared<int>(0);
  auto timed = std::make_shared<int>(0);
  Exchange recording = [=](Role side, const worker::Message& request, std::string_view what) {
    std::string op = request.header.value("op", "");
    if (op == "sets") {
      // A seed is new, but in a probe's sets, which hand the candidate sets
      // it has seen again: those are drawn again under their old seeds.
      bool probe = what.find("probe") != std::string_view::npos;
      for (const auto& group : request.header.at("groups")) {
        for (const auto& seed : group) {
          ++*drawn;
          bool fresh = made->insert(std::to_string(seed.get<std::uint64_t>())).second;
          if (!probe) {
            EXPECT_TRUE(fresh);
          }
          *redrawn += !fresh;
        }
      }
    }
    if (op == "time") {
      auto sets = sets_of(request);
      int positions = request.header.value("calls", 0) + request.header.value("warmup", 0);
      EXPECT_EQ(static_cast<int>(sets.size()), positions);
      EXPECT_EQ(request.payloads.size(), 1u);  // the trace mask
      const std::string& mask = request.payloads.at(0);
      EXPECT_EQ(static_cast<int>(mask.size()), positions);
      EXPECT_FALSE(request.header.contains("trace"));  // nothing in the header tells
      if (what == "timing") {
        *masks_ok = *masks_ok && std::count(mask.begin(), mask.end(), '\1') <= 1;
        *traced += std::count(mask.begin(), mask.end(), '\1');
        order->push_back(side);
        ++*timed;
        *rewarmed += request.header.value("warmup", 0) > 0;
        (*timed_sets)[static_cast<std::size_t>(side)].insert(sets.begin(), sets.end());
      }
      if (what != "probing for memoization") {
        auto& into = (*seen)[static_cast<std::size_t>(side)];
        into.insert(into.end(), sets.begin(), sets.end());
      }
    }
    return answer(side, request, what);
  };
  auto outcome = run_scripted(
      short_timing(), TimingInputs{.set_seeds = 99}, recording, [](const std::string&) {},
      scripted_cores(core));
  ASSERT_TRUE(outcome.performance) << outcome.mismatch;
  EXPECT_FALSE(outcome.cheat);
  EXPECT_EQ(*rewarmed, *timed);
  using enum Role;
  auto in = [&](Role side) {
    return std::set<std::string>((*seen)[static_cast<std::size_t>(side)].begin(),
                                 (*seen)[static_cast<std::size_t>(side)].end());
  };
  // No worker sees a set twice outside the probe; every set was drawn
  // under a seed of its own.
  for (Role side : {kReference, kCandidate, kTwin, kCandidateTwin})
    EXPECT_EQ(in(side).size(), (*seen)[static_cast<std::size_t>(side)].size());
  EXPECT_EQ(*drawn, outcome.counts.input_sets);
  EXPECT_GT(*redrawn, 0);  // the probe's seen sets
  EXPECT_EQ(static_cast<int>(made->size()) + *redrawn, *drawn);
  ASSERT_TRUE(outcome.performance->inputs);
  EXPECT_EQ(outcome.performance->inputs->sets, outcome.counts.input_sets);
  EXPECT_EQ(outcome.performance->inputs->seed, "99");
  // The candidate and its twin (which share a directory) never share a set.
  for (const auto& set : in(kCandidate)) EXPECT_FALSE(in(kCandidateTwin).contains(set));
  // The reference and the candidate get the same sets in the rounds, to
  // be compared call by call; so do the twins.
  EXPECT_EQ((*timed_sets)[0], (*timed_sets)[1]);
  EXPECT_EQ((*timed_sets)[2], (*timed_sets)[3]);
  EXPECT_TRUE(*masks_ok);  // at most one traced call per batch
  EXPECT_GT(*traced, 0);
  EXPECT_GT(outcome.counts.checked_calls, 0);
  EXPECT_EQ(outcome.performance->rounds_ms.size(), static_cast<std::size_t>(*timed / 4));
  ASSERT_GE(order->size(), 8u);
  EXPECT_EQ(std::vector<Role>(order->begin(), order->begin() + 8),
            (std::vector<Role>{kReference, kCandidate, kTwin, kCandidateTwin, kCandidateTwin, kTwin,
                               kCandidate, kReference}));
}

TEST(TimingSession, ATimedCallWithLibraryComputeIsAnOpTraceFinding) {
  auto core = std::make_shared<FakeCore>();
  auto answer = scripted_workers(core, kCallNs);
  Exchange library_in_timing = [=](Role side, const worker::Message& request, std::string_view what) {
    auto reply = answer(side, request, what);
    if (reply && request.header.value("op", "") == "time" && side == Role::kCandidate && what == "timing") {
      const std::string& mask = request.payloads.at(0);
      if (auto position = mask.find('\1'); position != std::string::npos)
        reply->header["traced"] = {
            {{"position", static_cast<int>(position)}, {"op_trace", {{"aten.relu", 1}}}}};
    }
    return reply;
  };
  auto outcome = run_scripted(
      short_timing(), TimingInputs{}, library_in_timing, [](const std::string&) {}, scripted_cores(core));
  ASSERT_TRUE(outcome.cheat);
  EXPECT_EQ(outcome.cheat->rule, "runtime.op_trace");
  EXPECT_NE(outcome.cheat->evidence.find("aten.relu"), std::string::npos);
}

TEST(TimingSession, ANullTraceWhereTheReferenceTracesIsAnOpTraceFinding) {
  // The candidate's traced calls come back without a trace; the same torch
  // traces in the reference's worker.
  auto core = std::make_shared<FakeCore>();
  auto answer = scripted_workers(core, kCallNs);
  Exchange blind = [=](Role side, const worker::Message& request, std::string_view what) {
    auto reply = answer(side, request, what);
    if (reply && request.header.value("op", "") == "time" && is_candidate(side)) {
      const std::string& mask = request.payloads.at(0);
      if (auto position = mask.find('\1'); position != std::string::npos)
        reply->header["traced"] = {{{"position", static_cast<int>(position)}, {"op_trace", nullptr}}};
    }
    return reply;
  };
  auto outcome = run_scripted(short_timing(), TimingInputs{.trace_expected = true}, blind,
                              [](const std::string&) {}, scripted_cores(core));
  ASSERT_TRUE(outcome.cheat);
  EXPECT_EQ(outcome.cheat->rule, "runtime.op_trace");
  EXPECT_NE(outcome.cheat->evidence.find("without an op trace"), std::string::npos) << outcome.cheat->evidence;
  // On a torch that cannot trace (the reference says so), a null trace is no finding.
  auto untraceable = run_scripted(short_timing(), TimingInputs{}, blind, [](const std::string&) {},
                                  scripted_cores(core));
  EXPECT_FALSE(untraceable.cheat);
}

// One float32 output per timed call, `value` for every call, in a sealed file.
void one_output_each(worker::Message& reply, int calls, float value) {
  std::string bytes;
  auto layouts = nlohmann::json::array();
  for (int i = 0; i < calls; ++i) {
    layouts.push_back({{{"dtype", "float32"}, {"shape", {1}}, {"offset", bytes.size()}, {"nbytes", 4}}});
    bytes.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  reply.header["outputs"] = layouts;
  reply.fds = {sealed(bytes)};
}

TEST(TimingSession, AWrongTimedOutputNamesItsCallAndSet) {
  auto core = std::make_shared<FakeCore>();
  auto answer = scripted_workers(core, kCallNs);
  Exchange wrong = [=](Role side, const worker::Message& request, std::string_view what) {
    auto reply = answer(side, request, what);
    if (reply && request.header.value("op", "") == "time")
      one_output_each(*reply, request.header.value("calls", 0), is_candidate(side) ? 2.0f : 1.0f);
    return reply;
  };
  auto outcome = run_scripted(
      short_timing(), TimingInputs{}, wrong, [](const std::string&) {}, scripted_cores(core));
  EXPECT_FALSE(outcome.performance);
  EXPECT_NE(outcome.mismatch.find("input set of seed"), std::string::npos) << outcome.mismatch;
  EXPECT_NE(outcome.mismatch.find("timed call"), std::string::npos);
}

TEST(TimingSession, OutputsThatArriveUnsealedAreAnOutputChannelFinding) {
  // The candidate hands its outputs in memory it could still write.
  auto core = std::make_shared<FakeCore>();
  auto answer = scripted_workers(core, kCallNs);
  Exchange unsealed = [=](Role side, const worker::Message& request, std::string_view what) {
    auto reply = answer(side, request, what);
    if (reply && request.header.value("op", "") == "time" && side == Role::kCandidate)
      reply->fds = {std::make_shared<util::UniqueFd>(::memfd_create("open", MFD_CLOEXEC))};
    return reply;
  };
  auto outcome = run_scripted(
      short_timing(), TimingInputs{}, unsealed, [](const std::string&) {}, scripted_cores(core));
  ASSERT_TRUE(outcome.cheat);
  EXPECT_EQ(outcome.cheat->rule, "runtime.output_channel");
  EXPECT_NE(outcome.cheat->evidence.find("not sealed"), std::string::npos) << outcome.cheat->evidence;
}

TEST(TimingSession, TheFigureIsTheParentsClockNotTheWorkers) {
  // The candidate's worker says each call took a tenth of what it did: the
  // parent's clock around its batches says otherwise, and is the figure.
  auto core = std::make_shared<FakeCore>();
  auto answer = scripted_workers(core, kCallNs);
  Exchange boasting = [=](Role side, const worker::Message& request, std::string_view what) {
    auto reply = answer(side, request, what);
    if (reply && request.header.value("op", "") == "time" && is_candidate(side)) {
      int calls = request.header.value("calls", 0), warmup = request.header.value("warmup", 0);
      reply->header["taken_ns"] = (calls + warmup) * kCallNs * 0.9;  // the time it did not report
      for (auto& ns : reply->header["ns"]) ns = ns.get<double>() / 10;
      reply->header["untimed_ns"] = reply->header["untimed_ns"].get<double>() / 10;
    }
    return reply;
  };
  auto outcome = run_scripted(
      short_timing(), TimingInputs{}, boasting, [](const std::string&) {}, scripted_cores(core));
  ASSERT_TRUE(outcome.performance);
  EXPECT_NEAR(outcome.performance->speedup.median, 1.0, 1e-6);
}

TEST(TimingSession, WhatRunsAroundABatchIsOutsideItsClock) {
  // The verifier's outside sampler waits for perf around each batch: that
  // time, however long and on whichever side, is no call's.
  auto core = std::make_shared<FakeCore>();
  auto clock = std::make_shared<ScriptedClock>();
  TimingInputs inputs;
  int open = 0, pairs = 0, timing_pairs = 0;
  inputs.around_batch = [&](Role side, std::string_view what, bool starting) {
    if (is_candidate(side)) clock->ns += 50 * kCallNs;
    if (starting) {
      EXPECT_EQ(open, 0);
      ++open;
    } else {
      EXPECT_EQ(open, 1);
      --open;
      ++pairs;
      if (what == "timing") ++timing_pairs;
    }
  };
  auto outcome = run_timing(short_timing(), inputs, on_clock(clock, scripted_workers(core, kCallNs)),
                            [](const std::string&) {}, scripted_cores(core), [clock] { return clock->ns; });
  ASSERT_TRUE(outcome.performance);
  EXPECT_NEAR(outcome.performance->speedup.median, 1.0, 1e-6);
  EXPECT_EQ(open, 0);
  EXPECT_GT(timing_pairs, 0);
  EXPECT_GT(pairs, timing_pairs);  // the warm-up's batches too
}

TEST(TimingSession, AWorkerClockThatRunsSlowIsAClockFinding) {
  auto core = std::make_shared<FakeCore>();
  auto answer = scripted_workers(core, kCallNs);
  // The candidate's worker claims its batches took almost no time, while
  // the parent waits 2 ms for each.
  Exchange slow = [=](Role side, const worker::Message& request, std::string_view what) {
    auto reply = answer(side, request, what);
    if (reply && request.header.value("op", "") == "time") {
      reply->header["taken_ns"] = 2'000'000.0;
      reply->header["elapsed_ns"] = is_candidate(side) ? 100'000.0 : 2'000'000.0;
    }
    return reply;
  };
  auto outcome = run_scripted(
      short_timing(), TimingInputs{}, slow, [](const std::string&) {}, scripted_cores(core));
  ASSERT_TRUE(outcome.cheat);
  EXPECT_EQ(outcome.cheat->rule, "runtime.clock");
  EXPECT_NE(outcome.cheat->evidence.find("parent's clock"), std::string::npos);
}

// A budget that ends before 16 rounds is stretched: to 16 rounds where
// they take at most 4 times the budget (10 ms calls: about 8 rounds fit 1 s),
// else to 4 times the budget (50 ms calls).
TEST(TimingSession, ABudgetThatEndsBeforeSixteenRoundsIsStretchedUpToFourTimes) {
  for (double call_ms : {10.0, 50.0}) {
    SCOPED_TRACE(call_ms);
    auto core = std::make_shared<FakeCore>();
    auto answer = scripted_workers(core, kCallNs);
    Exchange slow = [=](Role side, const worker::Message& request, std::string_view what) {
      auto reply = answer(side, request, what);
      if (reply && request.header.value("op", "") == "time") {
        for (auto& ns : reply->header["ns"]) ns = ns.get<double>() * call_ms;
        reply->header["untimed_ns"] = reply->header["untimed_ns"].get<double>() * call_ms;
      }
      return reply;
    };
    VerifierConfig config = short_timing();
    config.timing.max_repetitions = 10000;
    config.timing.budget = std::chrono::seconds(1);
    auto outcome = run_scripted(config, TimingInputs{}, slow, [](const std::string&) {}, scripted_cores(core));
    ASSERT_TRUE(outcome.performance);
    const Performance& p = *outcome.performance;
    EXPECT_EQ(p.stop_reason, "budget");
    ASSERT_TRUE(p.measure_s);
    if (call_ms == 10.0) {
      EXPECT_EQ(p.rounds_ms.size(), 16u);
      EXPECT_GT(*p.measure_s, 1.5);
      EXPECT_LT(*p.measure_s, 4.0);
    } else {
      EXPECT_LT(p.rounds_ms.size(), 16u);
      EXPECT_GT(p.rounds_ms.size(), 4u);
      EXPECT_GE(*p.measure_s, 4.0);
      EXPECT_LT(*p.measure_s, 5.5);
    }
  }
}

}  // namespace
}  // namespace kgym::verify
