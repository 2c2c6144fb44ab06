// The timing phase against scripted workers: the order of its batches, the
// noise floors from the twins, and what it concludes about the
// machine's load from the cores' counters and the workers' CPU reports.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "verify/timing_session.h"

namespace kgym::verify {
namespace {

constexpr double kCallNs = 1e6;  // every scripted call takes 1 ms

// The sets of `time` requests as each worker sees them: the scripted
// reference serializes a pool as the JSON list of its seeds, and a call's
// set is "seed*scale" of the pool its worker holds.
class HandedSets {
 public:
  std::vector<std::string> of(Role side, const Message& request) {
    auto& held = held_[static_cast<std::size_t>(side)];
    if (!request.payloads.at(0).empty()) {
      held = nlohmann::json::parse(request.payloads.at(0)).get<std::vector<std::uint64_t>>();
      ++pools_handed;
    }
    std::vector<std::string> names;
    for (const auto& set : request.header.at("derive")) {
      double scale = set.at(1).get<double>();
      EXPECT_GE(scale, 0.5);
      EXPECT_LT(scale, 1.0);
      names.push_back(fmt::format("{}*{:.17g}", held.at(set.at(0).get<std::size_t>()), scale));
    }
    return names;
  }
  // The seed a name's set was drawn under.
  static std::string seed_of(const std::string& name) { return name.substr(0, name.find('*')); }
  int pools_handed = 0;

 private:
  std::array<std::vector<std::uint64_t>, 4> held_;
};

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
    if (op == "sets") {  // the seeds of each group stand for its sets
      for (const auto& group : request.header.at("groups")) reply.payloads.push_back(group.dump());
      return reply;
    }
    if (op == "fetch") {  // no outputs: every comparison matches
      auto calls = nlohmann::json::array();
      for (const auto& position : request.header.at("calls"))
        calls.push_back({{"position", position}, {"outputs", nlohmann::json::array()}});
      reply.header = {{"calls", calls}};
      return reply;
    }
    int calls = request.header.value("calls", 1);
    core->workers_s += cpu_per_call_ns * calls / 1e9;
    double ns = side == Role::kTwin            ? kCallNs * twin_factor
                : side == Role::kCandidateTwin ? kCallNs * candidate_twin_factor
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
  return run_timing(
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
  auto outcome = run_timing(
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
  auto outcome = run_timing(
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
    auto start = std::chrono::steady_clock::now();
    auto reply = inner(side, request, what);
    if (!reply || request.header.value("op", "") != "time") return reply;
    int calls = request.header.value("calls", 1);
    int positions = calls + request.header.value("warmup", 0);
    double between = is_candidate(side) ? candidate_outside_ns : outside_ns;
    double elapsed = positions * (kShortCallNs + between);
    while (std::chrono::steady_clock::now() - start < std::chrono::nanoseconds(static_cast<long>(elapsed))) {
    }
    reply->header["ns"] = std::vector<double>(static_cast<std::size_t>(calls), kShortCallNs);
    reply->header["elapsed_ns"] = elapsed;
    if (is_candidate(side)) reply->header["cpu_ns"] = reply->header["cpu_ns"].get<double>() * candidate_cpu_share;
    return reply;
  };
}

TEST(TimingSession, OnlyAShareOfOtherProcessesReadFromOutsideWidensTheClockCheck) {
  // The candidate spends 80 us between its calls, the reference 20 us. On
  // an idle core that is time moved out of the calls.
  auto idle = std::make_shared<FakeCore>();
  auto found = run_timing(short_timing(), TimingInputs{}, with_time_between_calls(idle, 2e4, 8e4, 1),
                          [](const std::string&) {}, scripted_cores(idle));
  ASSERT_TRUE(found.cheat);
  EXPECT_NE(found.cheat->evidence.find("leave time between them"), std::string::npos) << found.cheat->evidence;
  // The candidate under-reports its CPU time: the core looks busy with
  // other processes, but on its own word only, which buys nothing.
  auto lying = std::make_shared<FakeCore>();
  found = run_timing(short_timing(), TimingInputs{}, with_time_between_calls(lying, 2e4, 8e4, 0.01),
                     [](const std::string&) {}, scripted_cores(lying));
  ASSERT_TRUE(found.cheat);
  EXPECT_NE(found.cheat->evidence.find("leave time between them"), std::string::npos) << found.cheat->evidence;
  // Other processes really took most of the core, as both sides' CPU time
  // read from outside shows: the same figures are within the allowance.
  auto busy = std::make_shared<FakeCore>(FakeCore{.foreign_s = 3});
  auto probe = scripted_cores(busy);
  probe.sides_cpu_ns = [busy] { return std::optional<double>(busy->workers_s * 1e9); };
  auto honest = run_timing(short_timing(), TimingInputs{}, with_time_between_calls(busy, 2e4, 8e4, 1),
                           [](const std::string&) {}, probe);
  EXPECT_FALSE(honest.cheat) << (honest.cheat ? honest.cheat->evidence : "");
  ASSERT_TRUE(honest.performance);
  EXPECT_TRUE(has_flag(*honest.performance, "contended"));
}

TEST(TimingSession, UnreadableCountersLeaveTheShareUnknown) {
  auto core = std::make_shared<FakeCore>();
  CoreLoadProbe probe;
  probe.read_stat = [] { return std::optional<util::CpuStat>{}; };
  auto outcome = run_timing(
      short_timing(), TimingInputs{}, scripted_workers(core, kCallNs), [](const std::string&) {}, probe);
  ASSERT_TRUE(outcome.performance) << outcome.mismatch << (outcome.cheat ? outcome.cheat->evidence : "");
  EXPECT_FALSE(outcome.performance->foreign_cpu_share);
  EXPECT_FALSE(has_flag(*outcome.performance, "contended"));
}

TEST(TimingSession, EveryCallGetsAFreshInputSetAndTheTwinsAnotherSequence) {
  auto core = std::make_shared<FakeCore>();
  auto answer = scripted_workers(core, kCallNs);
  // Per side, every set it was handed.
  auto seen = std::make_shared<std::array<std::vector<std::string>, 4>>();
  auto timed_sets = std::make_shared<std::array<std::set<std::string>, 4>>();
  auto handed = std::make_shared<HandedSets>();
  auto order = std::make_shared<std::vector<Role>>();
  auto masks_ok = std::make_shared<bool>(true);
  auto traced = std::make_shared<int>(0);
  auto rewarmed = std::make_shared<int>(0);
  auto timed = std::make_shared<int>(0);
  auto probe_pools = std::make_shared<int>(0);
  Exchange recording = [=](Role side, const Message& request, std::string_view what) {
    if (request.header.value("op", "") == "time") {
      EXPECT_EQ(request.payloads.size(), 2u);  // the pool (or nothing: held) and the trace mask
      auto sets = handed->of(side, request);
      int positions = request.header.value("calls", 0) + request.header.value("warmup", 0);
      EXPECT_EQ(static_cast<int>(sets.size()), positions);
      const std::string& mask = request.payloads.at(1);
      if (what == "timing") {
        order->push_back(side);
        ++*timed;
        *rewarmed += request.header.value("warmup", 0) > 0;
        *masks_ok = *masks_ok && std::count(mask.begin(), mask.end(), '\1') <= 1;
        *traced += std::count(mask.begin(), mask.end(), '\1');
        EXPECT_TRUE(request.payloads.at(0).empty());  // the pool was handed when warming up
        (*timed_sets)[static_cast<std::size_t>(side)].insert(sets.begin(), sets.end());
      }
      if (what != "probing for memoization") {
        auto& into = (*seen)[static_cast<std::size_t>(side)];
        into.insert(into.end(), sets.begin(), sets.end());
      } else {
        *probe_pools += !request.payloads.at(0).empty();
      }
      EXPECT_FALSE(request.header.contains("trace"));  // nothing in the header tells
    }
    return answer(side, request, what);
  };
  auto outcome = run_timing(
      short_timing(), TimingInputs{.set_seeds = 99}, recording, [](const std::string&) {},
      scripted_cores(core));
  ASSERT_TRUE(outcome.performance) << outcome.mismatch;
  EXPECT_FALSE(outcome.cheat);
  EXPECT_TRUE(*masks_ok);  // at most one traced call per batch
  EXPECT_GT(*traced, 0);
  EXPECT_EQ(*rewarmed, *timed);
  using enum Role;
  auto in = [&](Role side) {
    return std::set<std::string>((*seen)[static_cast<std::size_t>(side)].begin(),
                                 (*seen)[static_cast<std::size_t>(side)].end());
  };
  auto seeds_in = [&](Role side) {
    std::set<std::string> seeds;
    for (const auto& name : in(side)) seeds.insert(HandedSets::seed_of(name));
    return seeds;
  };
  // No worker sees a set twice outside the probe.
  for (Role side : {kReference, kCandidate, kTwin, kCandidateTwin})
    EXPECT_EQ(in(side).size(), (*seen)[static_cast<std::size_t>(side)].size());
  // The candidate and its twin (which share a directory) never share a set,
  // nor a set the other's derive from.
  for (const auto& seed : seeds_in(kCandidate)) EXPECT_FALSE(seeds_in(kCandidateTwin).contains(seed));
  // The reference and the candidate get the same sets in the rounds, to
  // be compared call by call; so do the twins.
  EXPECT_EQ((*timed_sets)[0], (*timed_sets)[1]);
  EXPECT_EQ((*timed_sets)[2], (*timed_sets)[3]);
  // Each worker got its pool once; each probe batch, one of its own.
  EXPECT_EQ(handed->pools_handed, 4 + *probe_pools);
  EXPECT_EQ(outcome.counts.input_sets, 4 + *probe_pools / 2 * 6);
  EXPECT_GT(outcome.counts.derived_sets, 100);
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
      const std::string& mask = request.payloads.at(1);
      if (auto position = mask.find('\1'); position != std::string::npos)
        reply->header["traced"] = {
            {{"position", static_cast<int>(position)}, {"op_trace", {{"aten.relu", 1}}}}};
    }
    return reply;
  };
  auto outcome = run_timing(
      short_timing(), TimingInputs{}, library_in_timing, [](const std::string&) {}, scripted_cores(core));
  ASSERT_TRUE(outcome.cheat);
  EXPECT_EQ(outcome.cheat->rule, "runtime.op_trace");
  EXPECT_NE(outcome.cheat->evidence.find("aten.relu"), std::string::npos);
}

TEST(TimingSession, AWrongTimedOutputNamesItsCallAndSet) {
  auto core = std::make_shared<FakeCore>();
  auto answer = scripted_workers(core, kCallNs);
  Exchange wrong = [=](Role side, const Message& request, std::string_view what) {
    auto reply = answer(side, request, what);
    if (reply && request.header.value("op", "") == "fetch") {
      // One float32 output per call: 1.0 from the reference, 2.0 from the candidate.
      float value = is_candidate(side) ? 2.0f : 1.0f;
      for (auto& call : reply->header["calls"]) {
        call["outputs"] = {{{"dtype", "float32"}, {"shape", {1}}}};
        reply->payloads.emplace_back(reinterpret_cast<const char*>(&value), sizeof value);
      }
    }
    return reply;
  };
  auto outcome = run_timing(
      short_timing(), TimingInputs{}, wrong, [](const std::string&) {}, scripted_cores(core));
  EXPECT_FALSE(outcome.performance);
  EXPECT_NE(outcome.mismatch.find("input set of seed"), std::string::npos) << outcome.mismatch;
  EXPECT_NE(outcome.mismatch.find("scaled by 0."), std::string::npos) << outcome.mismatch;
  EXPECT_NE(outcome.mismatch.find("timed call"), std::string::npos);
}

TEST(TimingSession, AWorkerClockThatRunsSlowIsAClockFinding) {
  auto core = std::make_shared<FakeCore>();
  auto answer = scripted_workers(core, kCallNs);
  // The candidate's worker claims its batches took almost no time, while
  // the parent waits 2 ms for each.
  Exchange slow = [=](Role side, const Message& request, std::string_view what) {
    auto reply = answer(side, request, what);
    if (reply && request.header.value("op", "") == "time") {
      auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
      while (std::chrono::steady_clock::now() < until) {
      }
      reply->header["elapsed_ns"] = is_candidate(side) ? 100'000.0 : 2'000'000.0;
    }
    return reply;
  };
  auto outcome = run_timing(
      short_timing(), TimingInputs{}, slow, [](const std::string&) {}, scripted_cores(core));
  ASSERT_TRUE(outcome.cheat);
  EXPECT_EQ(outcome.cheat->rule, "runtime.clock");
  EXPECT_NE(outcome.cheat->evidence.find("parent's clock"), std::string::npos);
}

// The scripted workers, but the candidate's calls take `seen_ns` on a set
// it was handed before and `unseen_ns` on the others: in the probe only,
// or (`everywhere`) in every batch; `probes` counts the probe batches the
// candidate ran. `key` names what the candidate remembers of a set: the
// set itself, or (a cache keyed by the set up to a factor) its seed.
Exchange probed_candidate(std::shared_ptr<FakeCore> core,
                          std::function<double(int probe_batch, bool seen)> ns, std::shared_ptr<int> probes,
                          bool everywhere = false,
                          std::function<std::string(const std::string&)> key = [](const std::string& name) {
                            return name;
                          }) {
  auto inner = scripted_workers(core, kCallNs);
  auto remembered = std::make_shared<std::set<std::string>>();
  auto handed = std::make_shared<HandedSets>();
  return [=](Role side, const Message& request, std::string_view what) -> std::optional<Message> {
    auto reply = inner(side, request, what);
    if (!reply || request.header.value("op", "") != "time") return reply;
    auto sets = handed->of(side, request);
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
  auto outcome = run_timing(
      short_timing(), TimingInputs{.set_seeds = 5},
      probed_candidate(
          core, [](int, bool seen) { return seen ? 0.05 * kCallNs : kCallNs; }, probes),
      [](const std::string&) {}, scripted_cores(core));
  ASSERT_TRUE(outcome.cheat);
  EXPECT_EQ(outcome.cheat->rule, "runtime.memoization");
  EXPECT_NE(outcome.cheat->evidence.find("a second probe"), std::string::npos) << outcome.cheat->evidence;
  EXPECT_EQ(*probes, 8);  // two probes of four batches
}

TEST(TimingSession, ACacheKeyedByTheSetUpToAFactorIsCaughtByTheProbe) {
  // Fast on every set whose seed it has seen in any scale: in the timed
  // rounds that is nearly every call; the probe's unseen sets are fresh
  // draws.
  auto core = std::make_shared<FakeCore>();
  auto probes = std::make_shared<int>(0);
  auto outcome = run_timing(
      short_timing(), TimingInputs{.set_seeds = 5},
      probed_candidate(
          core, [](int, bool seen) { return seen ? 0.05 * kCallNs : kCallNs; }, probes, true,
          HandedSets::seed_of),
      [](const std::string&) {}, scripted_cores(core));
  ASSERT_TRUE(outcome.cheat);
  EXPECT_EQ(outcome.cheat->rule, "runtime.memoization");
  ASSERT_TRUE(outcome.performance);
  // What the rounds alone would have believed (the candidate twin, handed
  // sets of its own, is no faster than the reference).
  EXPECT_GT(outcome.performance->speedup.median, 4.0);
}

TEST(TimingSession, ACacheKeyedByTheExactSetGainsNothingInTheRounds) {
  // Fast on a set it was handed before, in every batch: no timed call gets
  // such a set, so the speedup stays 1; the probe still finds it.
  auto core = std::make_shared<FakeCore>();
  auto probes = std::make_shared<int>(0);
  auto outcome = run_timing(
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
  auto outcome = run_timing(config, TimingInputs{}, slow, [](const std::string&) {}, scripted_cores(core));
  ASSERT_TRUE(outcome.performance);
  EXPECT_EQ(*probe_calls, std::vector<int>{4});
}

TEST(TimingSession, OneProbeSlowedByTheMachineIsNoFinding) {
  // The unseen calls of the first probe only are slow, as if another
  // process had taken the core in step with them.
  auto core = std::make_shared<FakeCore>();
  auto probes = std::make_shared<int>(0);
  std::vector<std::string> notes;
  auto outcome = run_timing(
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
