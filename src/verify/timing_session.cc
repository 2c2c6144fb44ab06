#include "verify/timing_session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "core/backend.h"
#include "util/seed_mix.h"
#include "verify/runtime_checks.h"
#include "verify/stats.h"
#include "verify/tensor_compare.h"
#include "verify/timing_session_internal.h"

namespace kgym::verify::timing_internal {

std::string BatchSets::describe(int position) const {
  const DerivedSet& set = calls.at(static_cast<std::size_t>(position));
  return fmt::format("set of seed {} scaled by {:.17g}", pool->seeds.at(static_cast<std::size_t>(set.base)),
                     set.scale);
}

std::optional<Pool> TimingSession::make_pool(std::vector<std::uint64_t> seeds) {
  for (auto& seed : seeds) {
    if (seed == 0) seed = util::splitmix64(inputs_.set_seeds + ++sets_made_) >> 1;
  }
  Message request;
  request.header = {{"op", "sets"}, {"groups", nlohmann::json::array({seeds})}};
  auto sent = SteadyClock::now();
  auto reply = exchange_(Role::kReference, request, "making input sets");
  if (!reply) return std::nullopt;
  make_ns_ += elapsed_ns(sent);
  sets_drawn_ += seeds.size();
  if (reply->payloads.size() != 1) return std::nullopt;
  return Pool{.id = ++pools_made_, .seeds = std::move(seeds), .blob = std::move(reply->payloads[0])};
}

// A factor in [0.5, 1) from `set_seeds`, so that a mismatch names the set
// it was found on; scaling down keeps bounded inputs in their bounds.
double TimingSession::next_scale() {
  std::uint64_t bits = util::splitmix64(inputs_.set_seeds ^ 0x5ca1ab1e5ca1ab1eULL ^ ++scales_made_);
  return 0.5 + static_cast<double>(bits >> 11) * 0x1.0p-54;
}

BatchSets TimingSession::derive(Pool& pool, int calls) {
  BatchSets sets{.pool = &pool};
  std::uniform_int_distribution<int> base(0, static_cast<int>(pool.seeds.size()) - 1);
  for (int i = 0; i < calls; ++i) sets.calls.push_back({base(rng_), next_scale()});
  return sets;
}

// One traced call in (a share of) the batches, at a position the parent
// draws: among all calls when at least two are timed (so one timed call is
// left), else among the untimed ones. The mask travels as a payload, not in
// the header, and is drawn anew for every batch.
std::string TimingSession::trace_mask(int warmup, int calls) {
  std::string mask(static_cast<std::size_t>(warmup + calls), '\0');
  int span = calls >= 2 ? warmup + calls : warmup;
  if (span <= 0 || !std::bernoulli_distribution(kTracedBatchShare)(rng_)) return mask;
  mask[static_cast<std::size_t>(std::uniform_int_distribution<int>(0, span - 1)(rng_))] = '\1';
  return mask;
}

std::optional<Batch> TimingSession::batch(Role side, const BatchSets& sets, const std::string& mask,
                                          int warmup, int calls, std::string_view what) {
  Message request;
  auto derived = nlohmann::json::array();
  for (const DerivedSet& set : sets.calls) derived.push_back({set.base, set.scale});
  request.header = {{"op", "time"},     {"calls", calls},       {"warmup", warmup},
                    {"pool", sets.pool->id}, {"derive", std::move(derived)}, {"cache_flush", timing_.cache_flush}};
  // The pool travels once to each worker; a worker holds one pool.
  Pool& pool = *sets.pool;
  bool hand = held_[index_of(side)] != pool.id;
  request.payloads = {hand ? pool.blob : std::string(), mask};
  auto sent = SteadyClock::now();
  auto reply = exchange_(side, request, what);
  if (!reply) return std::nullopt;
  if (hand) {
    held_[index_of(side)] = pool.id;
    // Both workers of a sequence hold it: the parent's copy goes.
    if (++pool.holders >= 2) std::string().swap(pool.blob);
  }
  Batch b;
  b.outer_ns = elapsed_ns(sent);
  b.positions = warmup + calls;
  for (const auto& ns : reply->header.value("ns", nlohmann::json::array())) {
    if (ns.is_number()) b.ns.push_back(ns.get<double>());
  }
  b.untimed_ns = number(reply->header, "untimed_ns");
  b.worker_ns = number(reply->header, "elapsed_ns");
  b.cpu_ns = number(reply->header, "cpu_ns");
  b.traced = reply->header.value("traced", nlohmann::json::array());
  // Every batch, warm-up and probe included, counts for the clocks.
  ClockTotals& clock = clocks_[is_candidate(side) ? 1 : 0];
  clock.outer_ns += b.outer_ns;
  clock.worker_ns += b.worker_ns;
  for (double ns : b.ns) clock.inner_ns += ns;
  clock.calls += static_cast<int>(b.ns.size());
  clock.batches += 1;
  clock.gap_ns.push_back(b.outer_ns - b.worker_ns);
  clock.gap_share.push_back(b.outer_ns > 0 ? (b.outer_ns - b.worker_ns) / b.outer_ns : 0);
  if (is_candidate(side) && inputs_.check_op_trace && !check_traces(side, b, what)) return std::nullopt;
  return b;
}

// A traced call of the candidate that ran library compute: runtime.op_trace.
bool TimingSession::check_traces(Role side, const Batch& b, std::string_view what) {
  for (const auto& entry : b.traced) {
    ++traced_calls_;
    nlohmann::json facts = {{"op_trace", entry.value("op_trace", nlohmann::json::object())}};
    if (auto finding = runtime_finding(facts, nlohmann::json::object(), *inputs_.backend)) {
      finding->evidence =
          fmt::format("call {} of a batch while {}{}: {}", entry.value("position", -1), what,
                      side == Role::kCandidateTwin ? " (candidate twin)" : "", finding->evidence);
      fail(std::move(*finding));
      return false;
    }
  }
  return true;
}

// Untimed rounds of `warmup` calls until two consecutive round medians agree
// within kWarmupStable (bounded by rounds and a quarter of the budget).
bool TimingSession::warm_up(Role side, double& per_call_ns) {
  int calls = std::max(2, timing_.warmup);
  Pool& pool = pools_[first_sequence(side) ? 0 : 1];
  // The batch that hands the worker its pool also loads it: one call, not
  // counted.
  if (held_[index_of(side)] != pool.id && !batch(side, derive(pool, 1), trace_mask(0, 1), 0, 1, "warming up"))
    return false;
  std::optional<double> previous;
  for (int round = 0; round < kMaxWarmupRounds; ++round) {
    auto b = batch(side, derive(pool, calls), trace_mask(0, calls), 0, calls, "warming up");
    if (!b) return false;
    // What a call costs the budget: the parent's clock also sees cloning,
    // cache flushing and the request itself.
    double inner = median(b->ns).value_or(0);
    per_call_ns = std::max(inner, b->outer_ns / calls);
    bool stable = previous && std::abs(inner - *previous) <= kWarmupStable * *previous;
    bool spent = elapsed_ns(start_) - make_ns_ > std::chrono::duration<double, std::nano>(timing_.budget).count() / 4;
    if (timing_.warmup == 0 || stable || spent) break;
    previous = inner;
  }
  return true;
}

std::string TimingSession::compare(const Message& reference, const Message& candidate) {
  const auto& ref_calls = reference.header.value("calls", nlohmann::json::array());
  const auto& cand_calls = candidate.header.value("calls", nlohmann::json::array());
  if (ref_calls.size() != cand_calls.size()) return "the candidate returned other calls than asked for";
  std::size_t ref_payload = 0, cand_payload = 0;
  for (std::size_t c = 0; c < ref_calls.size(); ++c) {
    const auto& ref_outputs = ref_calls[c].value("outputs", nlohmann::json::array());
    const auto& cand_outputs = cand_calls[c].value("outputs", nlohmann::json::array());
    if (ref_outputs.size() != cand_outputs.size() ||
        reference.payloads.size() < ref_payload + ref_outputs.size() ||
        candidate.payloads.size() < cand_payload + cand_outputs.size()) {
      return fmt::format("{} outputs, the reference {}", cand_outputs.size(), ref_outputs.size());
    }
    for (std::size_t i = 0; i < ref_outputs.size(); ++i) {
      TensorBytes b{ref_outputs[i].value("dtype", ""),
                    ref_outputs[i].value("shape", std::vector<std::int64_t>{}),
                    reference.payloads[ref_payload++]};
      TensorBytes a{cand_outputs[i].value("dtype", ""),
                    cand_outputs[i].value("shape", std::vector<std::int64_t>{}),
                    candidate.payloads[cand_payload++]};
      Tolerance tolerance = tolerance_for(config_.tolerances, b.dtype, backend_of(config_));
      auto cmp = compare_tensors(a, b, scaled_tolerance(tolerance, b));
      if (!cmp.ok) return fmt::format("output {}: {}", i, cmp.problem);
    }
  }
  return "";
}

// After all four batches of a round ran, the parent draws which timed calls
// it compares: each side's kept output of those calls, the candidate's
// against the reference's for the same input set, the candidate twin's
// against the reference twin's.
bool TimingSession::check_outputs(int round, int calls, const std::array<const BatchSets*, kSides>& sets,
                                  int warmup) {
  std::set<int> chosen;
  std::uniform_int_distribution<int> pick(0, calls - 1);
  while (static_cast<int>(chosen.size()) < std::min(kCheckedCalls, calls)) chosen.insert(pick(rng_));
  Message fetch;
  fetch.header = {{"op", "fetch"}, {"calls", std::vector<int>(chosen.begin(), chosen.end())}};
  std::array<std::optional<Message>, kSides> got;
  for (Role side : kAllSides) {
    got[index_of(side)] = exchange_(side, fetch, "fetching timed outputs");
    if (!got[index_of(side)]) return false;
  }
  checked_calls_ += static_cast<int>(chosen.size());
  for (auto [reference, candidate] :
       {std::pair{Role::kReference, Role::kCandidate}, std::pair{Role::kTwin, Role::kCandidateTwin}}) {
    // Compared one call at a time, so that the failure names the call.
    for (int position : chosen) {
      Message one_ref, one_cand;
      auto select = [position](const Message& all, Message& one) {
        std::size_t payload = 0;
        for (const auto& call : all.header.value("calls", nlohmann::json::array())) {
          std::size_t n = call.value("outputs", nlohmann::json::array()).size();
          if (call.value("position", -1) == position) {
            one.header["calls"] = nlohmann::json::array({call});
            for (std::size_t i = 0; i < n && payload + i < all.payloads.size(); ++i)
              one.payloads.push_back(all.payloads[payload + i]);
          }
          payload += n;
        }
      };
      select(*got[index_of(reference)], one_ref);
      select(*got[index_of(candidate)], one_cand);
      if (auto problem = compare(one_ref, one_cand); !problem.empty()) {
        std::string set = sets[index_of(candidate)]->describe(warmup + position);
        bool twin = candidate == Role::kCandidateTwin;
        note_(fmt::format("timed call {} of round {} differs{}: {}", position, round,
                          twin ? " (candidate twin)" : "", problem));
        outcome_.mismatch = fmt::format("output of timed call {} of round {}{} (input {}) differs ({})",
                                        position, round, twin ? " (candidate twin)" : "", set, problem);
        return false;
      }
    }
  }
  return true;
}

void TimingSession::account(int round, const std::array<std::optional<Batch>, kSides>& taken) {
  (void)round;
  auto outside = [&](Role side) {
    const Batch& b = *taken[index_of(side)];
    double inner = 0;
    for (double ns : b.ns) inner += ns;
    return (b.worker_ns - inner - b.untimed_ns) / std::max(1, b.positions);
  };
  overhead_.excess_ns.push_back(outside(Role::kCandidate) - outside(Role::kReference));
  overhead_.excess_ns.push_back(outside(Role::kCandidateTwin) - outside(Role::kTwin));
  overhead_.aa_ns.push_back(outside(Role::kTwin) - outside(Role::kReference));
  overhead_.reference_ns.push_back(outside(Role::kReference));
  for (Role side : kAllSides) {
    const Batch& b = *taken[index_of(side)];
    rounds_[index_of(side)].push_back(b.ns);
    auto& samples = is_candidate(side) ? candidate_ : reference_;
    samples.insert(samples.end(), b.ns.begin(), b.ns.end());
    workers_cpu_ns_ += b.cpu_ns;
  }
}

TimingOutcome TimingSession::run() {
  Message bandwidth;
  bandwidth.header = {{"op", "bandwidth"}};
  auto measured = exchange_(Role::kReference, bandwidth, "measuring memory bandwidth");
  if (!measured) return {.call_failed = true};
  if (auto gbs = measured->header.find("gbs"); gbs != measured->header.end() && gbs->is_number())
    bandwidth_gbs_ = gbs->get<double>();
  if (auto llc = measured->header.find("llc_bytes"); llc != measured->header.end() && llc->is_number())
    llc_bytes_ = llc->get<std::uint64_t>();

  auto failed = [this]() {
    if (outcome_.cheat || !outcome_.mismatch.empty()) return std::move(outcome_);
    return TimingOutcome{.call_failed = true};
  };
  // One pool per sequence, made before any call; every call's set derives
  // from it.
  for (Pool& pool : pools_) {
    auto made = make_pool(std::vector<std::uint64_t>(kPoolSets, 0));
    if (!made) return failed();
    pool = std::move(*made);
  }
  const double pool_ms = make_ns_ / 1e6;
  std::array<double, kSides> per_call_ns{};
  for (Role side : kAllSides) {
    if (!warm_up(side, per_call_ns[index_of(side)])) return failed();
  }
  // Batches long enough to amortize a request, short enough that there are
  // many of them for the alternation to cancel drift. Each call position of
  // a round runs four calls (a derived set's copy is in each call's time on
  // the parent's clock).
  const int max_reps = std::max(2, timing_.max_repetitions);
  const int min_samples = std::clamp(timing_.min_samples, 2, max_reps);
  const double budget_ns = std::chrono::duration<double, std::nano>(timing_.budget).count();
  double batch_ns = budget_ns / (kSides * kRoundsWanted);
  double slowest = std::max({per_call_ns[0], per_call_ns[1], per_call_ns[2], per_call_ns[3], 1.0});
  const std::uint64_t per_call_bytes = std::max<std::uint64_t>(1, inputs_.set_bytes + inputs_.output_bytes);
  const int memory_cap = static_cast<int>(std::max<std::uint64_t>(2, kBatchBytes / per_call_bytes));
  const int per_batch = std::clamp(static_cast<int>(batch_ns / slowest), 1,
                                   std::max(1, std::min(max_reps / kRoundsWanted, memory_cap)));
  // The workers share the cores, so each batch begins with another's data
  // in the caches: measured on the 1 MB ScaleShift sample at 4x its
  // batch size, the first call after the switch took 2.2x the steady time,
  // the second 1.3x, the third 1.08x. A few untimed calls at the start of
  // every batch make each side's batch median its warm, steady time (with
  // cache_flush every timed call starts cold anyway).
  const int rewarm = per_batch >= 4 ? std::min(kRewarmCalls, per_batch / 4) : 1;
  note_(fmt::format(
      "timing: warm {:.3f} / {:.3f} / {:.3f} / {:.3f} ms per call (reference, candidate, their twins); "
      "two pools of {} input sets took {:.1f} ms to make; batches of {} after {} untimed",
      per_call_ns[0] / 1e6, per_call_ns[1] / 1e6, per_call_ns[2] / 1e6, per_call_ns[3] / 1e6, kPoolSets,
      pool_ms, per_batch, rewarm));

  std::string stop_reason;
  stat_start_ = load_.read_stat();
  own_cpu_start_s_ = load_.own_cpu_s();
  if (load_.sides_cpu_ns) sides_cpu_start_ns_ = load_.sides_cpu_ns();
  BatchSets last_seen;
  double check_share = 1;
  for (int round = 0;; ++round) {
    int calls = std::min(per_batch, max_reps - calls_per_worker_);
    // One timed call more than the statistics need: the traced call may be
    // any call of the batch, the first timed one included, even in batches
    // of one (the first call of a batch is the one a candidate can tell
    // apart: nothing ran just before it).
    int sent = calls + 1;
    int n = rewarm + sent;
    std::array<BatchSets, 2> sets = {derive(pools_[0], n), derive(pools_[1], n)};
    std::string mask = trace_mask(rewarm, sent);
    std::array<const BatchSets*, kSides> of_side{};
    std::array<std::optional<Batch>, kSides> taken;
    for (Role side : round_order(round)) {
      of_side[index_of(side)] = &sets[first_sequence(side) ? 0 : 1];
      taken[index_of(side)] = batch(side, *of_side[index_of(side)], mask, rewarm, sent, "timing");
      if (!taken[index_of(side)]) return failed();
      if (taken[index_of(side)]->ns.empty()) {
        note_("timing: a batch came back without timed calls");
        return failed();
      }
    }
    // Outputs are checked in the first round and then in a share of the
    // rounds drawn after they ran: all of them while fetching is cheap,
    // fewer (never under kMinCheckShare) where outputs of tens of MB make
    // a check cost more than the round.
    if (round == 0 || std::bernoulli_distribution(check_share)(rng_)) {
      auto checking = SteadyClock::now();
      if (!check_outputs(round, sent, of_side, rewarm)) return failed();
      double round_ns = 0;
      for (const auto& b : taken) round_ns += b->outer_ns;
      check_share = std::clamp(kCheckCost * round_ns / std::max(1.0, elapsed_ns(checking)), kMinCheckShare, 1.0);
    }
    calls_per_worker_ += calls;
    account(round, taken);
    last_seen = sets[0];
    bool enough = round + 1 >= kMinRounds && calls_per_worker_ >= min_samples;
    auto rse = paired_speedup_rse(both_references(), both_candidates());
    if (enough && rse && *rse <= timing_.target_rse) {
      stop_reason = "target_rse";
    } else if (calls_per_worker_ >= max_reps) {
      stop_reason = "max_repetitions";
    } else if (round + 1 >= 2 &&
               elapsed_ns(start_) - std::min(make_ns_, kMakingShare * budget_ns) >= budget_ns) {
      stop_reason = "budget";
    }
    if (!stop_reason.empty()) break;
  }
  Performance perf = summarize(stop_reason);
  if (!probe_memoization(last_seen, rewarm, perf)) return failed();
  perf.measure_s = std::chrono::duration<double>(SteadyClock::now() - start_).count();
  if (auto found = clock_finding(clocks_[0], clocks_[1], overhead_, median(candidate_).value_or(0),
                                 trusted_foreign_share_))
    fail(*found);
  if (bandwidth_gbs_) {
    if (auto found = impossible_time_finding(median(candidate_).value_or(0), inputs_.output_bytes,
                                             *bandwidth_gbs_, llc_bytes_))
      fail(*found);
  }
  outcome_.counts = TimingCounts{.input_sets = static_cast<int>(sets_drawn_),
                                 .derived_sets = static_cast<int>(scales_made_),
                                 .make_s = make_ns_ / 1e9,
                                 .checked_calls = checked_calls_,
                                 .traced_calls = traced_calls_};
  note_(
      fmt::format("timing integrity: {} input sets made in {:.3f} s, {} derived from them, {} timed outputs "
                  "checked, {} calls traced; candidate batches {:.1f} ms on the parent's clock, {:.1f} ms on its own",
                  sets_drawn_, make_ns_ / 1e9, scales_made_, checked_calls_, traced_calls_, clocks_[1].outer_ns / 1e6,
                  clocks_[1].worker_ns / 1e6));
  outcome_.performance = std::move(perf);
  return std::move(outcome_);
}

Performance TimingSession::summarize(const std::string& stop_reason) {
  Performance perf;
  if (auto stat_end = load_.read_stat(); stat_start_ && stat_end) {
    auto usage = util::usage_between(*stat_start_, *stat_end, load_.cores, load_.ticks_per_second);
    double workers_s = workers_cpu_ns_ / 1e9;
    bool trusted = load_.worker_reports_trusted;
    std::optional<double> sides_end = load_.sides_cpu_ns ? load_.sides_cpu_ns() : std::nullopt;
    if (sides_cpu_start_ns_ && sides_end) {
      workers_s = std::max(0.0, *sides_end - *sides_cpu_start_ns_) / 1e9;
      trusted = true;
    }
    double own_s = workers_s + std::max(0.0, load_.own_cpu_s() - own_cpu_start_s_);
    perf.foreign_cpu_share = foreign_cpu_share(usage, own_s);
    if (trusted && perf.foreign_cpu_share) trusted_foreign_share_ = *perf.foreign_cpu_share;
  }
  perf.reference = timing_side_from_ns(reference_);
  perf.candidate = timing_side_from_ns(candidate_);
  const auto& rounds = rounds_;
  auto of = [&rounds](Role side) -> const Blocks& { return rounds[index_of(side)]; };
  perf.noise_floor = paired_speedup_estimate(of(Role::kReference), of(Role::kTwin));
  perf.candidate_noise_floor = paired_speedup_estimate(of(Role::kCandidate), of(Role::kCandidateTwin));
  if (auto paired = paired_speedup_estimate(both_references(), both_candidates())) {
    perf.speedup = *paired;
    for (const auto& floor : {perf.noise_floor, perf.candidate_noise_floor}) {
      if (floor) perf.speedup = widen_by_noise_floor(perf.speedup, *floor);
    }
    if (paired->ci95 && perf.speedup.ci95) {
      note_(fmt::format(
          "timing: speedup {:.4f}, paired interval [{:.4f}, {:.4f}], widened by the noise floors "
          "to [{:.4f}, {:.4f}]",
          paired->median, paired->ci95->lo, paired->ci95->hi, perf.speedup.ci95->lo, perf.speedup.ci95->hi));
    }
  }
  perf.stop_reason = stop_reason;
  for (std::size_t k = 0; k < of(Role::kCandidate).size(); ++k) {
    std::vector<double> round_ms;
    for (Role side : kAllSides) round_ms.push_back(median(of(side)[k]).value_or(0) / 1e6);
    perf.rounds_ms.push_back(std::move(round_ms));
  }
  perf.memory_bandwidth_gbs = bandwidth_gbs_;
  perf.measure_s = std::chrono::duration<double>(SteadyClock::now() - start_).count();
  auto flag = [&](bool raised, const char* name) {
    if (raised) perf.flags.push_back(name);
  };
  flag((perf.noise_floor && within_noise(perf.speedup, *perf.noise_floor)) ||
           (perf.candidate_noise_floor && within_noise(perf.speedup, *perf.candidate_noise_floor)),
       "within_noise");
  flag(perf.speedup.median > kExcessiveSpeedup, "excessive_speedup");
  flag(calls_per_worker_ < std::min(timing_.min_samples, timing_.max_repetitions), "few_samples");
  flag(perf.foreign_cpu_share && *perf.foreign_cpu_share > kContendedShare, "contended");
  if (perf.foreign_cpu_share && *perf.foreign_cpu_share > kContendedShare) {
    note_(
        fmt::format("timing: other processes used {:.0f} % of the leased cores while timing ran; these times "
                    "describe a busy machine (run on idle cores for numbers to trust)",
                    *perf.foreign_cpu_share * 100));
  }
  note_(fmt::format(
      "timing stopped ({}) after {:.2f} s: {} rounds, {} reference and {} candidate samples "
      "(two workers each; {} and {} outliers); other processes' share of the cores {}; flags [{}]",
      stop_reason, *perf.measure_s, of(Role::kCandidate).size(), reference_.size(), candidate_.size(),
      perf.reference.outliers.value_or(0), perf.candidate.outliers.value_or(0),
      perf.foreign_cpu_share ? fmt::format("{:.0f} %", *perf.foreign_cpu_share * 100) : "unknown",
      fmt::join(perf.flags, ", ")));
  return perf;
}

}  // namespace kgym::verify::timing_internal

namespace kgym::verify {

std::array<Role, 4> round_order(int round) {
  using enum Role;
  if (round % 2 == 0) return {kReference, kCandidate, kTwin, kCandidateTwin};
  return {kCandidateTwin, kTwin, kCandidate, kReference};
}

TimingOutcome run_timing(const VerifierConfig& config, const TimingInputs& inputs, const Exchange& exchange,
                         const std::function<void(const std::string&)>& note, const CoreLoadProbe& load) {
  return timing_internal::TimingSession(config, inputs, exchange, note, load).run();
}

}  // namespace kgym::verify
