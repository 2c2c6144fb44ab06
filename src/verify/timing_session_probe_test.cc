// The timing phase against scripted workers (timing_session_fakes.h):
// work a candidate moves into untimed calls, the memoization probes, and
// the noise floors and medians each round keeps.
#include <algorithm>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "verify/timing_session.h"
#include "verify/timing_session_fakes.h"

namespace kgym::verify {
namespace {

using namespace scripted;

// Every worker's batch spends twice its calls' time around them (the
// harness: mapping sets, copying outputs), so the figures are the workers'
// clocks, bounded by the parent's; the candidate moves `moved` of each
// timed call's work into the batch's first, untimed call.
Exchange heavy_harness(std::shared_ptr<FakeCore> core, double moved) {
  auto inner = scripted_workers(core, kCallNs);
  return [=](Role side, const worker::Message& request, std::string_view what) -> std::optional<worker::Message> {
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

// Where the hidden time goes when a candidate's worker reports only
// (1 - hidden) of each timed call: into its untimed calls' report, between
// its calls (its account of the whole request unchanged), or out of its
// account altogether (the gap before its reply that the parent sees).
// Or (kUneven) it hides nothing, but reports the batch's time unevenly:
// all but its last call at a tenth, the last with the rest.
enum class Hidden { kUntimed, kBetweenCalls, kBeforeReply, kUneven };

// The heavy harness, with a candidate whose worker under-reports each timed
// call by `hidden` of it and puts what it hid where `where` says; the
// parent's clock sees the real time.
Exchange lying_clock(std::shared_ptr<FakeCore> core, double hidden, Hidden where) {
  auto inner = heavy_harness(core, 0);
  return [=](Role side, const worker::Message& request,
             std::string_view what) -> std::optional<worker::Message> {
    auto reply = inner(side, request, what);
    if (!reply || request.header.value("op", "") != "time" || !is_candidate(side)) return reply;
    int calls = request.header.value("calls", 0), warmup = request.header.value("warmup", 0);
    double lost = 0;
    if (where == Hidden::kUneven) {
      auto& ns = reply->header["ns"];
      double sum = 0;
      for (const auto& v : ns) sum += v.get<double>();
      for (std::size_t i = 0; i + 1 < ns.size(); ++i) ns[i] = ns[i].get<double>() / 10;
      double rest = sum;
      for (std::size_t i = 0; i + 1 < ns.size(); ++i) rest -= ns[i].get<double>();
      ns[ns.size() - 1] = rest;
      return reply;
    }
    for (auto& ns : reply->header["ns"]) {
      lost += ns.get<double>() * hidden;
      ns = ns.get<double>() * (1 - hidden);
    }
    double taken = 2 * (calls + warmup) * kCallNs, elapsed = 3 * (calls + warmup) * kCallNs;
    if (where == Hidden::kUntimed)
      reply->header["untimed_ns"] = reply->header["untimed_ns"].get<double>() + lost;
    if (where != Hidden::kUntimed) taken += lost;
    if (where == Hidden::kBeforeReply) elapsed -= lost;
    reply->header["taken_ns"] = taken;
    reply->header["elapsed_ns"] = elapsed;
    return reply;
  };
}

TEST(TimingSession, TimeAWorkerHidesFromItsTimedCallsIsChargedBackWhereverItGoes) {
  for (Hidden where : {Hidden::kUntimed, Hidden::kBetweenCalls, Hidden::kBeforeReply, Hidden::kUneven}) {
    auto core = std::make_shared<FakeCore>();
    std::vector<std::string> notes;
    // Its timed calls alone would read 1.43x: each hides 30 % of itself.
    auto lied = run_scripted(
        short_timing(), TimingInputs{}, lying_clock(core, 0.3, where),
        [&notes](const std::string& line) { notes.push_back(line); }, scripted_cores(core));
    SCOPED_TRACE(static_cast<int>(where));
    if (lied.cheat) {
      EXPECT_EQ(lied.cheat->rule, "runtime.clock");
      continue;
    }
    ASSERT_TRUE(lied.performance) << lied.mismatch;
    EXPECT_EQ(lied.performance->clock, "worker_bounded");
    EXPECT_LT(lied.performance->speedup.median, 1.05);
    EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& line) {
      return line.find("charged to each of its timed calls") != std::string::npos;
    }));
    // A lie may cost it more than it hid (its untimed calls are expected to
    // shrink with the speed its timed calls claim), never gain.
    EXPECT_GT(lied.performance->speedup.median, 0.85);
  }
}

TEST(TimingSession, TimeHiddenWithinTheAllowanceMovesThePointButNotTheLowerEnd) {
  auto core = std::make_shared<FakeCore>();
  // 1 % of each 1 ms call hidden before the reply: within the allowance (2 %
  // of the reference's unclaimed time per call, 20 us).
  auto lied = run_scripted(
      short_timing(), TimingInputs{}, lying_clock(core, 0.01, Hidden::kBeforeReply),
      [](const std::string&) {}, scripted_cores(core));
  ASSERT_TRUE(lied.performance) << (lied.cheat ? lied.cheat->evidence : lied.mismatch);
  EXPECT_NEAR(lied.performance->speedup.median, 1 / 0.99, 1e-3);
  ASSERT_TRUE(lied.performance->speedup.ci95);
  EXPECT_LE(lied.performance->speedup.ci95->lo, 1.0 + 1e-6);
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
  return [=](Role side, const worker::Message& request, std::string_view what) -> std::optional<worker::Message> {
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

TEST(TimingSession, ProbeBatchesRunInsideTheRoundsShapedLikeTimedOnes) {
  // The candidate's requests in order: a probe batch comes between timed
  // batches, not after all of them, and its request has a timed batch's
  // shape (one file, a set per call, as many calls, a trace mask), so
  // nothing but the contents of its sets tells it apart.
  auto core = std::make_shared<FakeCore>();
  auto answer = scripted_workers(core, kCallNs);
  struct Seen {
    std::string what;
    int calls, warmup;
    std::size_t files, mask;
  };
  auto requests = std::make_shared<std::vector<Seen>>();
  Exchange recording = [=](Role side, const worker::Message& request, std::string_view what) {
    if (side == Role::kCandidate && request.header.value("op", "") == "time")
      requests->push_back(Seen{std::string(what), request.header.value("calls", 0), request.header.value("warmup", 0),
                               request.fds.size(), request.payloads.at(0).size()});
    return answer(side, request, what);
  };
  VerifierConfig config = short_timing();
  config.timing.max_repetitions = 4000;  // batches of several calls
  auto outcome = run_scripted(config, TimingInputs{.set_seeds = 3}, recording, [](const std::string&) {},
                              scripted_cores(core));
  ASSERT_TRUE(outcome.performance);
  EXPECT_FALSE(outcome.cheat);
  const Seen* timed = nullptr;
  std::size_t last_timed = 0, first_probe = requests->size(), probes = 0;
  for (std::size_t k = 0; k < requests->size(); ++k) {
    const Seen& r = (*requests)[k];
    if (r.what == "timing") {
      timed = &r;
      last_timed = k;
    } else if (r.what == "probing for memoization") {
      first_probe = std::min(first_probe, k);
      ++probes;
    }
  }
  ASSERT_NE(timed, nullptr);
  ASSERT_GE(timed->calls, 4);
  EXPECT_EQ(probes, 4u);
  EXPECT_LT(first_probe, last_timed);
  for (const auto& r : *requests) {
    if (r.what != "probing for memoization") continue;
    EXPECT_EQ(r.calls, timed->calls);
    EXPECT_EQ(r.warmup, timed->warmup);
    EXPECT_EQ(r.files, timed->files);
    EXPECT_EQ(r.mask, timed->mask);
  }
}

TEST(TimingSession, ACandidateThatRunsDifferentlyInProbeBatchesIsCaught) {
  // Fast in its timed batches, honest (3x slower) in the batches that probe
  // it, as a candidate would be that recognized them: its unseen probe
  // calls are slower than its timed calls, which the reference's are not.
  auto core = std::make_shared<FakeCore>();
  auto answer = scripted_workers(core, kCallNs);
  Exchange two_faced = [=](Role side, const worker::Message& request, std::string_view what) {
    auto reply = answer(side, request, what);
    if (reply && side == Role::kCandidate && what == "probing for memoization") {
      for (auto& ns : reply->header["ns"]) ns = ns.get<double>() * 3;
    }
    return reply;
  };
  auto outcome = run_scripted(short_timing(), TimingInputs{.set_seeds = 8}, two_faced, [](const std::string&) {},
                              scripted_cores(core));
  ASSERT_TRUE(outcome.cheat);
  EXPECT_EQ(outcome.cheat->rule, "runtime.memoization");
  EXPECT_NE(outcome.cheat->evidence.find("batches that probe it"), std::string::npos) << outcome.cheat->evidence;
}

TEST(TimingSession, AProbeOfSecondsLongCallsFitsTheBudget) {
  // Every call takes 2 s (as the workers report it): four batches of eight
  // timed calls per side would take over a minute; one batch of four fits.
  auto core = std::make_shared<FakeCore>();
  auto answer = scripted_workers(core, kCallNs);
  auto probe_calls = std::make_shared<std::vector<int>>();
  Exchange slow = [=](Role side, const worker::Message& request, std::string_view what) {
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
  // The record keeps the paired interval too: all of the width is the
  // process term's.
  ASSERT_TRUE(p.paired_speedup && p.paired_speedup->ci95);
  EXPECT_NEAR(p.paired_speedup->median, p.speedup.median, 1e-9);
  EXPECT_NEAR(p.paired_speedup->ci95->lo, std::sqrt(1.04), 1e-9);
  EXPECT_NEAR(p.paired_speedup->ci95->hi, std::sqrt(1.04), 1e-9);
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

TEST(TimingSession, BothNoiseFloorsThePairedIntervalAndFourMediansPerRoundSurviveTheResultJson) {
  auto performance = timed_with_twins(1.02, 1.04);
  ASSERT_TRUE(performance);
  CaseResult r;
  r.performance = performance;
  CaseResult back = result_from_json(to_json(r));
  ASSERT_TRUE(back.performance && back.performance->noise_floor && back.performance->candidate_noise_floor);
  EXPECT_NEAR(back.performance->noise_floor->median, 1 / 1.02, 1e-9);
  EXPECT_NEAR(back.performance->candidate_noise_floor->median, 1 / 1.04, 1e-9);
  ASSERT_TRUE(back.performance->paired_speedup && back.performance->paired_speedup->ci95 &&
              performance->paired_speedup && performance->paired_speedup->ci95);
  EXPECT_NEAR(back.performance->paired_speedup->ci95->lo, performance->paired_speedup->ci95->lo, 1e-9);
  EXPECT_EQ(back.performance->rounds_ms, performance->rounds_ms);
  ASSERT_FALSE(back.performance->rounds_ms.empty());
  EXPECT_DOUBLE_EQ(back.performance->rounds_ms.front()[3], 1.04 * kCallNs / 1e6);
}

}  // namespace
}  // namespace kgym::verify
