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
#include "util/sealed_memory.h"
#include "verify/runtime_checks.h"
#include "verify/output_match.h"
#include "verify/stats.h"
#include "verify/tensor_compare.h"
#include "verify/timing_session_internal.h"

namespace kgym::verify::timing_internal {

std::string BatchSets::describe(int position) const {
  auto [file, set] = calls.at(static_cast<std::size_t>(position));
  return fmt::format("set of seed {}", files.at(static_cast<std::size_t>(file))->seeds.at(static_cast<std::size_t>(set)));
}

BatchSets TimingSession::whole(std::shared_ptr<const SetFile> file) {
  BatchSets sets;
  for (std::size_t i = 0; i < file->seeds.size(); ++i) sets.calls.emplace_back(0, static_cast<int>(i));
  sets.files.push_back(std::move(file));
  return sets;
}

namespace {

// A time or trace request: the sets' files travel with it, their layouts in
// "files", the set of each call in "positions".
worker::Message sets_request(const char* op, const BatchSets& sets) {
  worker::Message request;
  auto files = nlohmann::json::array();
  for (const auto& file : sets.files) {
    files.push_back(file->layouts);
    request.fds.push_back(file->fd);
  }
  auto positions = nlohmann::json::array();
  for (auto [file, set] : sets.calls) positions.push_back({file, set});
  request.header = {{"op", op}, {"files", std::move(files)}, {"positions", std::move(positions)}};
  return request;
}

}  // namespace

std::optional<Batch> TimingSession::batch(Role side, const BatchSets& sets, const std::string& mask, int warmup,
                                          int calls, std::string_view what) {
  worker::Message request = sets_request("time", sets);
  request.payloads = {mask};
  request.header["calls"] = calls;
  request.header["warmup"] = warmup;
  request.header["cache_flush"] = timing_.cache_flush;
  if (inputs_.backend && inputs_.backend->devices_are_cores) {
    request.header["heap_bytes"] =
        std::min(kMaxHeapPrimeBytes,
                 kHeapPrimeCalls * (inputs_.set_bytes + inputs_.output_bytes) + std::uint64_t{16 << 20});
  }
  if (inputs_.around_batch) inputs_.around_batch(side, what, true);
  auto sent = now_ns();
  auto reply = exchange_(side, request, what);
  double outer_ns = elapsed_ns(sent);
  if (inputs_.around_batch) inputs_.around_batch(side, what, false);
  if (!reply) return std::nullopt;
  Batch b;
  b.outer_ns = outer_ns;
  b.positions = warmup + calls;
  int at = 0;
  for (const auto& ns : reply->header.value("ns", nlohmann::json::array())) {
    if (ns.is_number()) {
      b.ns.push_back(ns.get<double>());
      b.timed_at.push_back(at);
    }
    ++at;
  }
  b.untimed_ns = number(reply->header, "untimed_ns");
  b.worker_ns = number(reply->header, "elapsed_ns");
  b.cpu_ns = number(reply->header, "cpu_ns");
  b.output_layouts = reply->header.value("outputs", nlohmann::json::array());
  b.traced = reply->header.value("traced", nlohmann::json::array());
  // The outputs must arrive sealed: then nothing the worker does after its
  // reply (a thread left running, say) can change what is compared.
  auto view = reply->fds.empty() ? std::unexpected(std::string("no outputs were passed"))
                                 : util::SealedView::map(reply->fds[0]->get());
  if (!view || b.output_layouts.size() != static_cast<std::size_t>(calls)) {
    std::string why = !view ? view.error()
                            : fmt::format("{} calls' outputs described for {} calls", b.output_layouts.size(), calls);
    if (is_candidate(side)) {
      fail(CheatFinding{"runtime.output_channel", "runtime",
                        fmt::format("the outputs of a batch while {} came back in a form kgym cannot trust: {}", what, why)});
    } else {
      note_(fmt::format("timing: the {} worker's outputs while {}: {}", role_name(side), what, why));
    }
    return std::nullopt;
  }
  b.outputs = std::make_shared<const util::SealedView>(std::move(*view));
  // The workers' own CPU time while the cores' load is measured (the
  // timed rounds, probe batches among them) is not other processes'.
  if (stat_start_) workers_cpu_ns_ += b.cpu_ns;
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

// A traced call of the candidate that ran library compute, or came back
// without a trace where the reference traces: runtime.op_trace.
bool TimingSession::check_traces(Role side, const Batch& b, std::string_view what) {
  for (const auto& entry : b.traced) {
    ++traced_calls_;
    nlohmann::json facts = {{"op_trace", entry.value("op_trace", nlohmann::json())}};
    if (auto finding =
            runtime_finding(facts, nlohmann::json::object(), *inputs_.backend, inputs_.trace_expected)) {
      finding->evidence =
          fmt::format("call {} of a batch while {}{}: {}", entry.value("position", -1), what,
                      side == Role::kCandidateTwin ? " (candidate twin)" : "", finding->evidence);
      fail(std::move(*finding));
      return false;
    }
  }
  return true;
}

// Untimed rounds of `warmup` calls on every side until two consecutive
// round medians agree within kWarmupStable on each (bounded by rounds and a
// quarter of the budget).
bool TimingSession::warm_up(std::array<double, kSides>& per_call_ns) {
  int calls = std::max(2, timing_.warmup);
  std::array<std::optional<double>, kSides> previous;
  for (int round = 0; round < kMaxWarmupRounds; ++round) {
    auto files = make_sets({calls, calls});
    if (!files) return false;
    bool all_stable = true;
    for (Role side : kAllSides) {
      auto b = batch(side, whole((*files)[first_sequence(side) ? 0 : 1]), trace_mask(0, calls), 0, calls,
                     "warming up");
      if (!b) return false;
      // What a call costs the budget: the parent's clock also sees the
      // request, the sets' mapping and the outputs' copy.
      double inner = median(b->ns).value_or(0);
      per_call_ns[index_of(side)] = std::max(inner, b->outer_ns / calls);
      if (!is_candidate(side) && b->outer_ns > 0)
        harness_share_[first_sequence(side) ? 0 : 1] = std::max(0.0, b->outer_ns - b->calls_ns()) / b->outer_ns;
      auto& before = previous[index_of(side)];
      all_stable = all_stable && before && std::abs(inner - *before) <= kWarmupStable * *before;
      before = inner;
    }
    bool spent = elapsed_ns(start_) - make_ns_ > std::chrono::duration<double, std::nano>(timing_.budget).count() / 4;
    if (timing_.warmup == 0 || all_stable || spent) break;
  }
  return true;
}

// Timed call `call`'s outputs of two batches, compared as the correctness
// phase compares them; "" when they match.
std::string TimingSession::compare(const Batch& reference, const Batch& candidate, int call) {
  const auto& ref_outputs = reference.output_layouts.at(static_cast<std::size_t>(call));
  const auto& cand_outputs = candidate.output_layouts.at(static_cast<std::size_t>(call));
  if (!ref_outputs.is_array() || !cand_outputs.is_array() || ref_outputs.size() != cand_outputs.size())
    return fmt::format("{} outputs, the reference {}", cand_outputs.size(), ref_outputs.size());
  auto tensor = [](const Batch& from, const nlohmann::json& described) -> std::expected<TensorBytes, std::string> {
    auto bytes = from.outputs->slice(described.value("offset", std::uint64_t{0}),
                                     described.value("nbytes", std::uint64_t{0}));
    if (!bytes) return std::unexpected(bytes.error());
    return TensorBytes{described.value("dtype", ""), described.value("shape", std::vector<std::int64_t>{}), *bytes};
  };
  std::vector<TensorBytes> want, got;
  for (std::size_t i = 0; i < ref_outputs.size(); ++i) {
    auto b = tensor(reference, ref_outputs[i]);
    auto a = tensor(candidate, cand_outputs[i]);
    if (!b) return fmt::format("output {}: the reference's {}", i, b.error());
    if (!a) return fmt::format("output {}: {}", i, a.error());
    want.push_back(std::move(*b));
    got.push_back(std::move(*a));
  }
  OutputRules rules{.configured = &config_.tolerances, .backend = &backend_of(config_), .degenerate = inputs_.degenerate};
  return match_outputs(got, want, rules).problem;
}

// After all four batches of a round ran, the parent draws which timed calls
// it compares: each side's sealed output of those calls, the candidate's
// against the reference's for the same input set, the candidate twin's
// against the reference twin's. Every output left its worker with the
// reply, so the draw is made when nothing can be changed any more.
bool TimingSession::check_outputs(int round, int calls, const std::array<const BatchSets*, kSides>& sets,
                                  const std::array<std::optional<Batch>, kSides>& taken, int warmup) {
  std::set<int> chosen;
  std::uniform_int_distribution<int> pick(0, calls - 1);
  while (static_cast<int>(chosen.size()) < std::min(kCheckedCalls, calls)) chosen.insert(pick(rng_));
  checked_calls_ += static_cast<int>(chosen.size());
  for (auto [reference, candidate] :
       {std::pair{Role::kReference, Role::kCandidate}, std::pair{Role::kTwin, Role::kCandidateTwin}}) {
    for (int position : chosen) {
      if (auto problem = compare(*taken[index_of(reference)], *taken[index_of(candidate)], position);
          !problem.empty()) {
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

TimingOutcome TimingSession::run() {
  worker::Message bandwidth;
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
  std::array<double, kSides> per_call_ns{};
  if (!warm_up(per_call_ns)) return failed();
  const double warm_make_ms = make_ns_ / 1e6;
  // The figure is the parent's clock where the harness around the calls
  // (measured on the reference's last warm-up batch of each sequence) is a
  // small share of a batch; where it is most of it, the difference of two
  // large times would be noise, and the figure is the worker's own clock
  // over all its calls, bounded by the parent's (docs/anti-cheat.md).
  const double harness_share = std::max(harness_share_[0], harness_share_[1]);
  parent_clock_ = harness_share <= kParentClockHarnessShare;
  note_(fmt::format("timing: the harness took {:.0f} % of the reference's warm batches; the figure is {}",
                    harness_share * 100,
                    parent_clock_ ? "the parent's clock" : "the workers' own clocks, bounded by the parent's"));
  // Batches long enough to amortize a request, short enough that there are
  // many of them for the alternation to cancel drift.
  const int max_reps = std::max(2, timing_.max_repetitions);
  const int min_samples = std::clamp(timing_.min_samples, 2, max_reps);
  const double budget_ns = std::chrono::duration<double, std::nano>(timing_.budget).count();
  double batch_ns = budget_ns / (kSides * kRoundsWanted);
  double slowest = std::max({per_call_ns[0], per_call_ns[1], per_call_ns[2], per_call_ns[3], 1.0});
  const std::uint64_t per_call_bytes = std::max<std::uint64_t>(1, inputs_.set_bytes + inputs_.output_bytes);
  const int memory_cap = static_cast<int>(std::max<std::uint64_t>(2, kBatchBytes / per_call_bytes));
  const int most = std::max(1, std::min(max_reps / kRoundsWanted, memory_cap));
  const int per_batch = std::clamp(static_cast<int>(batch_ns / slowest),
                                   parent_clock_ ? 1 : std::min(kCostlyBatchCalls, most), most);
  // The workers share the cores, so each batch begins with another's data
  // in the caches: measured on the 1 MB ScaleShift sample at 4x its
  // batch size, the first call after the switch took 2.2x the steady time,
  // the second 1.3x, the third 1.08x. A few untimed calls start every
  // batch; they are in the batch's figure like every call, so the figure
  // is a batch's mean call with its switch.
  //
  // Where a call is long enough that refilling the last-level cache is a
  // small part of it (kLongCallCaches times what refilling it takes at the
  // measured bandwidth), no untimed call starts a batch: the switch is
  // then a few percent of the first call, for both sides alike, and the
  // rounds are a third more.
  const double refill_ns = static_cast<double>(llc_bytes_) / bandwidth_gbs_.value_or(kDefaultBandwidthGbs);
  const int rewarm = per_batch >= 4                          ? std::min(kRewarmCalls, per_batch / 4)
                     : slowest >= kLongCallCaches * refill_ns ? 0
                                                              : 1;
  note_(fmt::format(
      "timing: warm {:.3f} / {:.3f} / {:.3f} / {:.3f} ms per call (reference, candidate, their twins); "
      "the warm-up's input sets took {:.1f} ms to make; batches of {} after {} untimed, every call on a "
      "set of its own",
      per_call_ns[0] / 1e6, per_call_ns[1] / 1e6, per_call_ns[2] / 1e6, per_call_ns[3] / 1e6, warm_make_ms,
      per_batch, rewarm));

  // Rounds that a budget of this many calls allows, for the probe's plan.
  const double round_ns = kSides * (rewarm + per_batch + 1) * slowest;
  const int rounds_expected = static_cast<int>(std::min<double>(
      {budget_ns / std::max(round_ns, 1.0), std::ceil(static_cast<double>(max_reps) / per_batch), kMinRounds}));
  plan_probes(rewarm, std::max(per_batch + 1, kProbeMinCalls), slowest, budget_ns, rounds_expected);

  std::string stop_reason;
  stat_start_ = load_.read_stat();
  own_cpu_start_s_ = load_.own_cpu_s();
  if (load_.sides_cpu_ns) sides_cpu_start_ns_ = load_.sides_cpu_ns();
  // The budget counts the rounds' batches: neither the probe's nor making
  // sets, up to kMakingBudgets times the budget.
  auto budget_spent = [&] {
    return elapsed_ns(start_) - probe_ns_ - std::min(make_ns_ - probe_make_ns_, kMakingBudgets * budget_ns) >=
           budget_ns;
  };
  double check_share = 1;
  for (int round = 0;; ++round) {
    int calls = std::min(per_batch, max_reps - calls_per_worker_);
    // One timed call more than the statistics need: the traced call may be
    // any call of the batch, the first timed one included, even in batches
    // of one (the first call of a batch is the one a candidate can tell
    // apart: nothing ran just before it).
    int sent = calls + 1;
    int n = rewarm + sent;
    auto files = make_sets({n, n});
    if (!files) return failed();
    std::string mask = trace_mask(rewarm, sent);
    std::array<BatchSets, 2> sets = {whole((*files)[0]), whole((*files)[1])};
    std::array<const BatchSets*, kSides> of_side{};
    std::array<std::optional<Batch>, kSides> taken;
    // A probe batch of the reference and the candidate runs in this round
    // where the plan says so, before any of the round's batches or after
    // one of them, at a place drawn for the round.
    const int probes_here =
        static_cast<int>(std::count(probe_rounds_.begin(), probe_rounds_.end(), round));
    const int probe_at = std::uniform_int_distribution<int>(0, kSides)(rng_);
    int placed = 0;
    for (Role side : round_order(round)) {
      if (placed++ == probe_at) {
        for (int k = 0; k < probes_here; ++k)
          if (!probe_batch(rewarm, std::max(sent, kProbeMinCalls), probe_)) return failed();
      }
      of_side[index_of(side)] = &sets[first_sequence(side) ? 0 : 1];
      taken[index_of(side)] = batch(side, *of_side[index_of(side)], mask, rewarm, sent, "timing");
      if (!taken[index_of(side)]) return failed();
      if (taken[index_of(side)]->ns.empty()) {
        note_("timing: a batch came back without timed calls");
        return failed();
      }
    }
    if (probe_at == static_cast<int>(kSides)) {
      for (int k = 0; k < probes_here; ++k)
        if (!probe_batch(rewarm, std::max(sent, kProbeMinCalls), probe_)) return failed();
    }
    // Outputs are checked in the first round and then in a share of the
    // rounds drawn after they ran: all of them while comparing is cheap,
    // fewer (never under kMinCheckShare) where outputs of tens of MB make
    // a check cost more than the round.
    if (round == 0 || std::bernoulli_distribution(check_share)(rng_)) {
      auto checking = now_ns();
      if (!check_outputs(round, sent, of_side, taken, rewarm)) return failed();
      double round_ns = 0;
      for (const auto& b : taken) round_ns += b->outer_ns;
      check_share = std::clamp(kCheckCost * round_ns / std::max(1.0, elapsed_ns(checking)), kMinCheckShare, 1.0);
    }
    calls_per_worker_ += calls;
    account(round, taken);
    // The sets of the candidate's timed calls, which later probe batches
    // hand it again; and both sides' own timed calls, for the probe.
    const auto& seen_file = *sets[0].files.at(0);
    for (std::size_t k = static_cast<std::size_t>(rewarm); k < seen_file.seeds.size(); ++k)
      seen_seeds_.push_back(seen_file.seeds[k]);
    for (double ns : taken[index_of(Role::kReference)]->ns) reference_timed_.push_back(ns);
    for (double ns : taken[index_of(Role::kCandidate)]->ns) candidate_timed_.push_back(ns);
    bool enough = round + 1 >= kMinRounds && calls_per_worker_ >= min_samples;
    auto rse = paired_speedup_rse(both_references(), both_candidates());
    if (enough && rse && *rse <= timing_.target_rse) {
      stop_reason = "target_rse";
    } else if (calls_per_worker_ >= max_reps) {
      stop_reason = "max_repetitions";
    } else if (round + 1 >= 2 && budget_spent() &&
               (round + 1 >= kPrecisionRounds || elapsed_ns(start_) >= kPrecisionBudgets * budget_ns)) {
      stop_reason = "budget";  // stretched where it ended before kPrecisionRounds
    }
    if (!stop_reason.empty()) break;
  }
  Performance perf = summarize(stop_reason);
  if (!finish_probe(rewarm, std::max(per_batch + 1, kProbeMinCalls), perf)) return failed();
  perf.measure_s = (now_ns() - start_) / 1e9;
  if (auto found = clock_finding(clocks_[0], clocks_[1], overhead_, median(candidate_).value_or(0),
                                 trusted_foreign_share_))
    fail(*found);
  if (bandwidth_gbs_) {
    if (auto found = impossible_time_finding(median(candidate_).value_or(0), inputs_.output_bytes,
                                             *bandwidth_gbs_, llc_bytes_))
      fail(*found);
  }
  outcome_.counts = TimingCounts{.input_sets = static_cast<int>(sets_made_),
                                 .make_s = make_ns_ / 1e9,
                                 .checked_calls = checked_calls_,
                                 .traced_calls = traced_calls_};
  perf.clock = parent_clock_ ? "parent" : "worker_bounded";
  perf.inputs = TimedInputs{.seed = std::to_string(inputs_.set_seeds),
                            .sets = static_cast<int>(sets_made_),
                            .megabytes = set_bytes_ / 1e6,
                            .make_s = make_ns_ / 1e9};
  note_(fmt::format(
      "timing integrity: {} input sets drawn from get_inputs() ({:.1f} MB, {:.3f} s: {:.2f} ms per MB), "
      "{} timed outputs checked, {} calls traced; candidate batches {:.1f} ms on the parent's clock, "
      "{:.1f} ms on its own; {:.3f} ms of its untimed calls charged to its timed ones, and {:.3f} ms to each "
      "of them of what its batches left unclaimed",
      sets_made_, set_bytes_ / 1e6, make_ns_ / 1e9,
      set_bytes_ > 0 ? make_ns_ / 1e6 / (set_bytes_ / 1e6) : 0.0, checked_calls_, traced_calls_,
      clocks_[1].outer_ns / 1e6, clocks_[1].worker_ns / 1e6, charged_untimed_ns_ / 1e6,
      charged_unclaimed_ns_ / 1e6));
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
  charge_unclaimed();
  perf.reference = timing_side_from_ns(reference_);
  perf.candidate = timing_side_from_ns(candidate_);
  const auto& rounds = rounds_;
  auto of = [&rounds](Role side) -> const Blocks& { return rounds[index_of(side)]; };
  perf.noise_floor = paired_speedup_estimate(of(Role::kReference), of(Role::kTwin));
  perf.candidate_noise_floor = paired_speedup_estimate(of(Role::kCandidate), of(Role::kCandidateTwin));
  if (auto paired = paired_speedup_estimate(both_references(), both_candidates())) {
    perf.speedup = *paired;
    perf.paired_speedup = *paired;
    for (const auto& floor : {perf.noise_floor, perf.candidate_noise_floor}) {
      if (floor) perf.speedup = widen_by_noise_floor(perf.speedup, *floor);
    }
    widen_by_unclaimed(perf.speedup);
    if (paired->ci95 && perf.speedup.ci95) {
      note_(fmt::format(
          "timing: speedup {:.4f}, paired interval [{:.4f}, {:.4f}], widened by the noise floors (and "
          "the unclaimed time within its allowance) "
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
  perf.measure_s = (now_ns() - start_) / 1e9;
  auto flag = [&](bool raised, const char* name) {
    if (raised) perf.flags.push_back(name);
  };
  flag((perf.noise_floor && within_noise(perf.speedup, *perf.noise_floor)) ||
           (perf.candidate_noise_floor && within_noise(perf.speedup, *perf.candidate_noise_floor)),
       "within_noise");
  flag(perf.speedup.median > kExcessiveSpeedup, "excessive_speedup");
  flag(calls_per_worker_ < std::min(timing_.min_samples, timing_.max_repetitions), "few_samples");
  flag(perf.foreign_cpu_share && *perf.foreign_cpu_share > kContendedShare, "contended");
  flag(uncertain_speedup(perf.speedup), "uncertain");
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

TimingClock steady_clock_ns() {
  return [] {
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
}

TimingOutcome run_timing(const VerifierConfig& config, const TimingInputs& inputs, const Exchange& exchange,
                         const std::function<void(const std::string&)>& note, const CoreLoadProbe& load,
                         TimingClock clock) {
  return timing_internal::TimingSession(config, inputs, exchange, note, load, std::move(clock)).run();
}

}  // namespace kgym::verify
