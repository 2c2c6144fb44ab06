// The timing phase against scripted workers: the order of its batches, the
// noise floors from the twins, and what it concludes about the
// machine's load from the cores' counters and the workers' CPU reports.
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

namespace kgym::verify {
namespace {

constexpr double kCallNs = 1e6;  // every scripted call takes 1 ms

// The scripted reference's files of input sets: each set's layout is
// {"seed": S}; a sealed memfd of a few bytes stands for the file.
std::shared_ptr<util::UniqueFd> sealed(std::string_view bytes) {
  auto fd = util::make_sealed_memory("test", bytes);
  EXPECT_TRUE(fd.has_value());
  return std::make_shared<util::UniqueFd>(std::move(*fd));
}

// The seed of each call's set of a `time` or `trace` request, as the
// worker that gets it sees it.
std::vector<std::string> sets_of(const Message& request) {
  std::vector<std::string> names;
  const auto& files = request.header.at("files");
  EXPECT_EQ(files.size(), request.fds.size());
  for (const auto& fd : request.fds) EXPECT_TRUE(util::is_sealed(fd->get()));
  for (const auto& position : request.header.at("positions")) {
    const auto& layout = files.at(position.at(0).get<std::size_t>()).at(position.at(1).get<std::size_t>());
    names.push_back(std::to_string(layout.at("seed").get<std::uint64_t>()));
  }
  return names;
}

// One core whose busy time is what the scripted workers report using plus
// `foreign_s` of other processes' work (from the second reading on), and
// which idles 1 s between readings.
struct FakeCore {
  double workers_s = 0;
  double foreign_s = 0;
  int readings = 0;
  double workers_at_reading_s = 0;  // workers_s at the last reading
};

// Workers that answer every batch at once: each call kCallNs (times
// `twin_factor` on the reference's twin, `candidate_twin_factor` on the
// candidate's), reporting `cpu_per_call` of CPU per call, which the core
// counts as busy. The reference makes input sets (one payload per group of
// seeds); every worker returns no outputs for the calls fetched.
Exchange scripted_workers(std::shared_ptr<FakeCore> core, double cpu_per_call_ns, double twin_factor = 1,
                          double candidate_twin_factor = 1) {
  return [core, cpu_per_call_ns, twin_factor, candidate_twin_factor](
             Role side, const Message& request, std::string_view) -> std::optional<Message> {
    Message reply;
    std::string op = request.header.value("op", "");
    if (op == "bandwidth") {
      reply.header = {{"gbs", 10.0}};
      return reply;
    }
    if (op == "sets") {
      auto groups = nlohmann::json::array();
      for (const auto& group : request.header.at("groups")) {
        auto layouts = nlohmann::json::array();
        for (const auto& seed : group) layouts.push_back({{"seed", seed}});
        groups.push_back({{"sets", layouts}, {"bytes", 8 * group.size()}});
        reply.fds.push_back(sealed(group.dump()));
      }
      reply.header = {{"groups", groups}};
      return reply;
    }
    int calls = request.header.value("calls", 1);
    int warmup = request.header.value("warmup", 0);
    core->workers_s += cpu_per_call_ns * (calls + warmup) / 1e9;
    double ns = side == Role::kTwin            ? kCallNs * twin_factor
                : side == Role::kCandidateTwin ? kCallNs * candidate_twin_factor
                                               : kCallNs;
    // No outputs: every comparison matches.
    reply.header = {{"ns", std::vector<double>(static_cast<std::size_t>(calls), ns)},
                    {"untimed_ns", ns * warmup},
                    {"cpu_ns", cpu_per_call_ns * (calls + warmup)},
                    {"outputs", nlohmann::json::array()}};
    for (int i = 0; i < calls; ++i) reply.header["outputs"].push_back(nlohmann::json::array());
    reply.fds.push_back(sealed(""));
    return reply;
  };
}

// The parent's clock in a test: scripted workers take the time they say
// their calls took (or, when the reply says more, `elapsed_ns`), and
// nothing else does.
struct ScriptedClock {
  double ns = 1e12;
};

Exchange on_clock(std::shared_ptr<ScriptedClock> clock, Exchange inner) {
  return [clock, inner](Role side, const Message& request, std::string_view what) -> std::optional<Message> {
    auto reply = inner(side, request, what);
    if (!reply || request.header.value("op", "") != "time") return reply;
    double took = reply->header.value("untimed_ns", 0.0);
    for (const auto& ns : reply->header.value("ns", nlohmann::json::array())) took += ns.get<double>();
    clock->ns += std::max(took + reply->header.value("taken_ns", 0.0), reply->header.value("elapsed_ns", 0.0));
    return reply;
  };
}

// run_timing on scripted workers and the scripted clock.
TimingOutcome run_scripted(const VerifierConfig& config, const TimingInputs& inputs, Exchange exchange,
                           std::function<void(const std::string&)> note, const CoreLoadProbe& load) {
  auto clock = std::make_shared<ScriptedClock>();
  return run_timing(config, inputs, on_clock(clock, std::move(exchange)), note, load,
                    [clock] { return clock->ns; });
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
    core->workers_at_reading_s = core->workers_s;
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
  return run_scripted(
             short_timing(), TimingInputs{},
             scripted_workers(core, kCallNs, twin_factor, candidate_twin_factor), [](const std::string&) {},
             scripted_cores(core))
      .performance;
}

bool has_flag(const Performance& p, const std::string& flag) {
  return std::find(p.flags.begin(), p.flags.end(), flag) != p.flags.end();
}

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
  return [=](Role side, const Message& request, std::string_view what) -> std::optional<Message> {
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
  auto rewarmed = std::make_shared<int>(0);
  auto timed = std::make_shared<int>(0);
  Exchange recording = [=](Role side, const Message& request, std::string_view what) {
    std::string op = request.header.value("op", "");
    if (op == "sets") {
      for (const auto& group : request.header.at("groups"))
        for (const auto& seed : group) EXPECT_TRUE(made->insert(std::to_string(seed.get<std::uint64_t>())).second);
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
  EXPECT_EQ(static_cast<int>(made->size()), outcome.counts.input_sets);
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
  Exchange library_in_timing = [=](Role side, const Message& request, std::string_view what) {
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
  Exchange blind = [=](Role side, const Message& request, std::string_view what) {
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
void one_output_each(Message& reply, int calls, float value) {
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
  Exchange wrong = [=](Role side, const Message& request, std::string_view what) {
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
  Exchange unsealed = [=](Role side, const Message& request, std::string_view what) {
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
  Exchange boasting = [=](Role side, const Message& request, std::string_view what) {
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
  Exchange slow = [=](Role side, const Message& request, std::string_view what) {
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

// Every worker's batch spends twice its calls' time around them (the
// harness: mapping sets, copying outputs), so the figures are the workers'
// clocks, bounded by the parent's; the candidate moves `moved` of each
// timed call's work into the batch's first, untimed call.
Exchange heavy_harness(std::shared_ptr<FakeCore> core, double moved) {
  auto inner = scripted_workers(core, kCallNs);
  return [=](Role side, const Message& request, std::string_view what) -> std::optional<Message> {
    auto reply = inner(side, request, what);
    if (!reply || request.header.value("op", "") != "time") return reply;
    int calls = request.header.value("calls", 0), warmup = request.header.value("warmup", 0);
    if (is_candidate(side) && warmup > 0) {
      for (auto& ns : reply->header["ns"]) ns = ns.get<double>() * (1 - moved);
      reply->header["untimed_ns"] = reply->header["untimed_ns"].get<double>() + calls * moved * kCallNs;
    }
    reply->header["taken_ns"] = 2 * (calls + warmup) * kCallNs;
    reply->header["elapsed_ns"] = 3 * (calls + warmup) * kCallNs;
    return reply;
  };
}

TEST(TimingSession, WorkMovedIntoUntimedCallsIsChargedToTheTimedOnes) {
  auto core = std::make_shared<FakeCore>();
  std::vector<std::string> notes;
  auto moved = run_scripted(short_timing(), TimingInputs{}, heavy_harness(core, 0.9),
                            [&notes](const std::string& line) { notes.push_back(line); }, scripted_cores(core));
  ASSERT_TRUE(moved.performance) << (moved.cheat ? moved.cheat->evidence : moved.mismatch);
  EXPECT_EQ(moved.performance->clock, "worker_bounded");
  // Its timed calls alone would read 10x.
  EXPECT_LT(moved.performance->speedup.median, 1.3);
  auto honest = run_scripted(short_timing(), TimingInputs{}, heavy_harness(core, 0), [](const std::string&) {},
                             scripted_cores(core));
  ASSERT_TRUE(honest.performance);
  EXPECT_NEAR(honest.performance->speedup.median, 1.0, 1e-9);
}

// The scripted workers, but the candidate's calls take `seen_ns` on a set
// it was handed before and `unseen_ns` on the others: in the probe only,
// or (`everywhere`) in every batch; `probes` counts the probe batches the
// candidate ran. `key` names what the candidate remembers of a set.
Exchange probed_candidate(std::shared_ptr<FakeCore> core,
                          std::function<double(int probe_batch, bool seen)> ns, std::shared_ptr<int> probes,
                          bool everywhere = false,
                          std::function<std::string(const std::string&)> key = [](const std::string& name) {
                            return name;
                          }) {
  auto inner = scripted_workers(core, kCallNs);
  auto remembered = std::make_shared<std::set<std::string>>();
  return [=](Role side, const Message& request, std::string_view what) -> std::optional<Message> {
    auto reply = inner(side, request, what);
    if (!reply || request.header.value("op", "") != "time") return reply;
    auto sets = sets_of(request);
    if (side != Role::kCandidate) return reply;
    int warmup = request.header.value("warmup", 0);
    bool probing = what == "probing for memoization";
    if (probing || everywhere) {
      std::vector<double> times;
      for (std::size_t k = static_cast<std::size_t>(warmup); k < sets.size(); ++k)
        times.push_back(ns(*probes, remembered->contains(key(sets[k]))));
      reply->header["ns"] = times;
    }
    *probes += probing;
    for (const auto& name : sets) remembered->insert(key(name));
    return reply;
  };
}

TEST(TimingSession, AMemoizerIsCaughtByTwoProbes) {
  auto core = std::make_shared<FakeCore>();
  auto probes = std::make_shared<int>(0);
  auto outcome = run_scripted(
      short_timing(), TimingInputs{.set_seeds = 5},
      probed_candidate(
          core, [](int, bool seen) { return seen ? 0.05 * kCallNs : kCallNs; }, probes),
      [](const std::string&) {}, scripted_cores(core));
  ASSERT_TRUE(outcome.cheat);
  EXPECT_EQ(outcome.cheat->rule, "runtime.memoization");
  EXPECT_NE(outcome.cheat->evidence.find("a second probe"), std::string::npos) << outcome.cheat->evidence;
  EXPECT_EQ(*probes, 8);  // two probes of four batches
}

TEST(TimingSession, ACacheKeyedByTheExactSetGainsNothingInTheRounds) {
  // Fast on a set it was handed before, in every batch: no timed call gets
  // such a set, so the speedup stays 1; the probe still finds it.
  auto core = std::make_shared<FakeCore>();
  auto probes = std::make_shared<int>(0);
  auto outcome = run_scripted(
      short_timing(), TimingInputs{.set_seeds = 5},
      probed_candidate(
          core, [](int, bool seen) { return seen ? 0.05 * kCallNs : kCallNs; }, probes, true),
      [](const std::string&) {}, scripted_cores(core));
  ASSERT_TRUE(outcome.cheat);
  EXPECT_EQ(outcome.cheat->rule, "runtime.memoization");
  ASSERT_TRUE(outcome.performance);
  EXPECT_DOUBLE_EQ(outcome.performance->speedup.median, 1.0);
}

TEST(TimingSession, AProbeOfSecondsLongCallsFitsTheBudget) {
  // Every call takes 2 s (as the workers report it): four batches of eight
  // timed calls per side would take over a minute; one batch of four fits.
  auto core = std::make_shared<FakeCore>();
  auto answer = scripted_workers(core, kCallNs);
  auto probe_calls = std::make_shared<std::vector<int>>();
  Exchange slow = [=](Role side, const Message& request, std::string_view what) {
    auto reply = answer(side, request, what);
    if (reply && request.header.value("op", "") == "time") {
      for (auto& ns : reply->header["ns"]) ns = ns.get<double>() * 2000;
      if (what == "probing for memoization" && side == Role::kCandidate)
        probe_calls->push_back(request.header.value("calls", 0));
    }
    return reply;
  };
  VerifierConfig config = short_timing();
  config.timing.budget = std::chrono::seconds(10);
  auto outcome = run_scripted(config, TimingInputs{}, slow, [](const std::string&) {}, scripted_cores(core));
  ASSERT_TRUE(outcome.performance);
  EXPECT_EQ(*probe_calls, std::vector<int>{4});
}

TEST(TimingSession, OneProbeSlowedByTheMachineIsNoFinding) {
  // The unseen calls of the first probe only are slow, as if another
  // process had taken the core in step with them.
  auto core = std::make_shared<FakeCore>();
  auto probes = std::make_shared<int>(0);
  std::vector<std::string> notes;
  auto outcome = run_scripted(
      short_timing(), TimingInputs{.set_seeds = 5},
      probed_candidate(
          core, [](int batch, bool seen) { return batch < 4 && !seen ? 3 * kCallNs : kCallNs; }, probes),
      [&notes](const std::string& line) { notes.push_back(line); }, scripted_cores(core));
  ASSERT_TRUE(outcome.performance);
  EXPECT_FALSE(outcome.cheat) << outcome.cheat->evidence;
  EXPECT_EQ(*probes, 8);
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.find("did not confirm") != std::string::npos;
  }));
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

}  // namespace
}  // namespace kgym::verify
