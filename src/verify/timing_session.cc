#include "verify/timing_session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "core/backend.h"
#include "verify/stats.h"
#include "verify/tensor_compare.h"

namespace kgym::verify {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr int kMaxWarmupRounds = 8;
constexpr double kWarmupStable = 0.05;  // consecutive warm-up medians within 5 %
// The precision target may end the timing from this round on: 24 units
// (two rounds each, see unit_log_ratios in stats.cc). Fewer units make
// its MAD-based error too rough to stop on.
constexpr int kMinRounds = 48;
// Batches are sized for about this many rounds within the budget: the
// unit, not the call, is what the speedup's median and interval count, and
// short rounds also leave slow regimes of the machine less room to differ
// between the batches of a round.
constexpr int kRoundsWanted = 100;
constexpr int kRewarmCalls = 3;  // untimed calls that start each batch, at most
constexpr std::uint64_t kDefaultLlcBytes = 32ULL << 20;

// Clocks of two processes (both CLOCK_MONOTONIC) and the time a reply
// takes to travel allow the inner sum to exceed the outer one by a little.
constexpr double kClockSlack = 1.01;
constexpr double kClockSlackNs = 200'000;
// Unaccounted time per call the candidate may add before it is suspicious.
constexpr double kExtraPerCallNs = 1'000'000;

constexpr std::size_t kSides = 4;
constexpr std::array<TimedSide, kSides> kAllSides = {TimedSide::kReference, TimedSide::kCandidate,
                                                     TimedSide::kTwin, TimedSide::kCandidateTwin};
bool candidate_side(TimedSide side) {
  return side == TimedSide::kCandidate || side == TimedSide::kCandidateTwin;
}
std::size_t index_of(TimedSide side) { return static_cast<std::size_t>(side); }

struct Batch {
  std::vector<double> ns;
  double outer_ns = 0;
  double cpu_ns = 0;  // the worker's own CPU time over the batch, as it reports it
  Message reply;
};

class TimingSession {
 public:
  TimingSession(const VerifierConfig& config, const TimingInputs& inputs, const Exchange& exchange,
                const std::function<void(const std::string&)>& note, const CoreLoadProbe& load)
      : config_(config),
        timing_(config.timing),
        inputs_(inputs),
        exchange_(exchange),
        note_(note),
        load_(load),
        rng_(inputs.check_seed) {}

  TimingOutcome run();

 private:
  std::optional<Batch> batch(TimedSide side, int calls, int check_call, std::string_view what,
                             int warmup = 0);
  bool warm_up(TimedSide side, double& per_call_ns);
  std::string compare(const Message& reference, const Message& candidate);
  Performance summarize(const std::string& stop_reason);
  // Per round, the geometric mean of a side's two workers' batch medians:
  // the times the speedup is the ratio of.
  Blocks both_references() const {
    return geometric_mean_blocks(rounds_[index_of(TimedSide::kReference)],
                                 rounds_[index_of(TimedSide::kTwin)]);
  }
  Blocks both_candidates() const {
    return geometric_mean_blocks(rounds_[index_of(TimedSide::kCandidate)],
                                 rounds_[index_of(TimedSide::kCandidateTwin)]);
  }

  const VerifierConfig& config_;
  const TimingConfig& timing_;
  const TimingInputs& inputs_;
  const Exchange& exchange_;
  const std::function<void(const std::string&)>& note_;
  const CoreLoadProbe& load_;
  std::mt19937_64 rng_;
  SteadyClock::time_point start_ = SteadyClock::now();
  // Per round, one batch of each side taken back to back; indexed by
  // TimedSide.
  std::array<Blocks, kSides> rounds_;
  std::vector<double> reference_, candidate_;  // all samples of each side's two workers, in order
  ClockTotals clocks_[2];                      // reference, candidate (each side's two workers)
  std::optional<double> bandwidth_gbs_;
  std::array<bool, kSides> inputs_staged_{};
  int calls_per_worker_ = 0;  // timed calls each worker has run
  std::uint64_t llc_bytes_ = kDefaultLlcBytes;
  // The cores' counters and the CPU time spent by this verification over
  // the timed rounds (workers' reports plus the parent's own).
  std::optional<util::CpuStat> stat_start_;
  double own_cpu_start_s_ = 0;
  double workers_cpu_ns_ = 0;
};

std::optional<Batch> TimingSession::batch(TimedSide side, int calls, int check_call, std::string_view what,
                                          int warmup) {
  Message request;
  request.header = {{"op", "time"},
                    {"calls", calls},
                    {"warmup", warmup},
                    {"check_call", check_call},
                    {"cache_flush", timing_.cache_flush}};
  // The inputs travel once per side; later batches reuse the staged copy,
  // so a round costs the calls and a short request, not a transfer.
  bool& staged = inputs_staged_[index_of(side)];
  if (!staged) request.payloads.push_back(inputs_.blob);
  auto sent = SteadyClock::now();
  auto reply = exchange_(side, request, what);
  if (!reply) return std::nullopt;
  staged = true;
  Batch b;
  b.outer_ns = std::chrono::duration<double, std::nano>(SteadyClock::now() - sent).count();
  for (const auto& ns : reply->header.value("ns", nlohmann::json::array())) b.ns.push_back(ns.get<double>());
  if (auto cpu = reply->header.find("cpu_ns"); cpu != reply->header.end() && cpu->is_number())
    b.cpu_ns = std::max(0.0, cpu->get<double>());
  b.reply = std::move(*reply);
  return b;
}

// Untimed rounds of `warmup` calls until two consecutive round medians agree
// within kWarmupStable (bounded by rounds and a quarter of the budget).
bool TimingSession::warm_up(TimedSide side, double& per_call_ns) {
  int calls = std::max(1, timing_.warmup);
  std::optional<double> previous;
  for (int round = 0; round < kMaxWarmupRounds; ++round) {
    auto b = batch(side, calls, -1, "warming up");
    if (!b) return false;
    // What a call costs the budget: the parent's clock also sees cloning,
    // cache flushing and the request itself.
    per_call_ns = std::max(median(b->ns).value_or(0), b->outer_ns / calls);
    double inner = median(b->ns).value_or(0);
    bool stable = previous && std::abs(inner - *previous) <= kWarmupStable * *previous;
    if (timing_.warmup == 0 || stable || SteadyClock::now() - start_ > timing_.budget / 4) break;
    previous = inner;
  }
  return true;
}

std::string TimingSession::compare(const Message& reference, const Message& candidate) {
  const auto& ref_outputs = reference.header.value("outputs", nlohmann::json::array());
  const auto& cand_outputs = candidate.header.value("outputs", nlohmann::json::array());
  if (ref_outputs.size() != cand_outputs.size() || reference.payloads.size() != ref_outputs.size() ||
      candidate.payloads.size() != cand_outputs.size()) {
    return fmt::format("{} outputs, the reference {}", cand_outputs.size(), ref_outputs.size());
  }
  for (std::size_t i = 0; i < ref_outputs.size(); ++i) {
    TensorBytes b{ref_outputs[i].value("dtype", ""),
                  ref_outputs[i].value("shape", std::vector<std::int64_t>{}), reference.payloads[i]};
    TensorBytes a{cand_outputs[i].value("dtype", ""),
                  cand_outputs[i].value("shape", std::vector<std::int64_t>{}), candidate.payloads[i]};
    auto cmp =
        compare_tensors(a, b, tolerance_for(config_.tolerances, b.dtype, backend_named(config_.backend)));
    if (!cmp.ok) return fmt::format("output {}: {}", i, cmp.problem);
  }
  return "";
}

TimingOutcome TimingSession::run() {
  TimingOutcome outcome;
  Message bandwidth;
  bandwidth.header = {{"op", "bandwidth"}};
  auto measured = exchange_(TimedSide::kReference, bandwidth, "measuring memory bandwidth");
  if (!measured) return {.call_failed = true};
  if (auto gbs = measured->header.find("gbs"); gbs != measured->header.end() && gbs->is_number())
    bandwidth_gbs_ = gbs->get<double>();
  if (auto llc = measured->header.find("llc_bytes"); llc != measured->header.end() && llc->is_number())
    llc_bytes_ = llc->get<std::uint64_t>();

  std::array<double, kSides> per_call_ns{};
  for (TimedSide side : kAllSides) {
    if (!warm_up(side, per_call_ns[index_of(side)])) return {.call_failed = true};
  }

  // Batches long enough to amortize a request, short enough that there are
  // many of them for the alternation to cancel drift.
  const int max_reps = std::max(2, timing_.max_repetitions);
  const int min_samples = std::clamp(timing_.min_samples, 2, max_reps);
  double batch_ns =
      std::chrono::duration<double, std::nano>(timing_.budget).count() / (kSides * kRoundsWanted);
  double slowest = std::max({per_call_ns[0], per_call_ns[1], per_call_ns[2], per_call_ns[3], 1.0});
  // About kRoundsWanted rounds also when the repetitions, not the budget,
  // end the timing: the speedup's median and interval count units of rounds.
  const int per_batch =
      std::clamp(static_cast<int>(batch_ns / slowest), 1, std::max(1, max_reps / kRoundsWanted));
  // The workers share the cores, so each batch begins with another's data
  // in the caches: measured on the 1 MB ScaleShift sample at 4x its
  // batch size, the first call after the switch took 2.2x the steady time,
  // the second 1.3x, the third 1.08x. A few untimed calls at the start of
  // every batch make each side's batch median its warm, steady time (with
  // cache_flush every timed call starts cold anyway).
  const int rewarm = per_batch >= 4 ? std::min(kRewarmCalls, per_batch / 4) : 1;
  note_(fmt::format(
      "timing: warm {:.3f} / {:.3f} / {:.3f} / {:.3f} ms per call (reference, candidate, their twins); "
      "batches of {} after {} untimed",
      per_call_ns[0] / 1e6, per_call_ns[1] / 1e6, per_call_ns[2] / 1e6, per_call_ns[3] / 1e6, per_batch,
      rewarm));

  std::string stop_reason;
  stat_start_ = load_.read_stat();
  own_cpu_start_s_ = load_.own_cpu_s();
  for (int round = 0;; ++round) {
    int calls = std::min(per_batch, max_reps - calls_per_worker_);
    int check_call = std::uniform_int_distribution<int>(0, calls - 1)(rng_);
    // Every worker returns the same timed call's outputs, so that all four
    // do the same work; both candidates' are compared with the reference's.
    std::array<std::optional<Batch>, kSides> taken;
    for (TimedSide side : round_order(round)) {
      auto& b = taken[index_of(side)];
      b = batch(side, calls, check_call, "timing", rewarm);
      if (!b) return {.call_failed = true};
    }
    const Batch& ref = *taken[index_of(TimedSide::kReference)];
    for (TimedSide side : {TimedSide::kCandidate, TimedSide::kCandidateTwin}) {
      if (auto problem = compare(ref.reply, taken[index_of(side)]->reply); !problem.empty()) {
        note_(fmt::format("timed call {} of round {} differs{}: {}", check_call, round,
                          side == TimedSide::kCandidateTwin ? " (candidate twin)" : "", problem));
        outcome.mismatch = fmt::format("output of a timed call differs ({})", problem);
        return outcome;
      }
    }
    calls_per_worker_ += calls;
    for (TimedSide side : kAllSides) {
      const Batch& b = *taken[index_of(side)];
      rounds_[index_of(side)].push_back(b.ns);
      auto& samples = candidate_side(side) ? candidate_ : reference_;
      samples.insert(samples.end(), b.ns.begin(), b.ns.end());
      ClockTotals& totals = clocks_[candidate_side(side) ? 1 : 0];
      workers_cpu_ns_ += b.cpu_ns;
      for (double ns : b.ns) totals.inner_ns += ns;
      totals.outer_ns += b.outer_ns;
      totals.calls += static_cast<int>(b.ns.size());
    }
    bool enough = round + 1 >= kMinRounds && calls_per_worker_ >= min_samples;
    auto rse = paired_speedup_rse(both_references(), both_candidates());
    if (enough && rse && *rse <= timing_.target_rse) {
      stop_reason = "target_rse";
    } else if (calls_per_worker_ >= max_reps) {
      stop_reason = "max_repetitions";
    } else if (round + 1 >= 2 && SteadyClock::now() - start_ >= timing_.budget) {
      stop_reason = "budget";
    }
    if (!stop_reason.empty()) break;
  }
  outcome.performance = summarize(stop_reason);
  return outcome;
}

Performance TimingSession::summarize(const std::string& stop_reason) {
  Performance perf;
  if (auto stat_end = load_.read_stat(); stat_start_ && stat_end) {
    auto usage = util::usage_between(*stat_start_, *stat_end, load_.cores, load_.ticks_per_second);
    double own_s = workers_cpu_ns_ / 1e9 + std::max(0.0, load_.own_cpu_s() - own_cpu_start_s_);
    perf.foreign_cpu_share = foreign_cpu_share(usage, own_s);
  }
  perf.reference = timing_side_from_ns(reference_);
  perf.candidate = timing_side_from_ns(candidate_);
  const auto& rounds = rounds_;
  auto of = [&rounds](TimedSide side) -> const Blocks& { return rounds[index_of(side)]; };
  perf.noise_floor = paired_speedup_estimate(of(TimedSide::kReference), of(TimedSide::kTwin));
  perf.candidate_noise_floor =
      paired_speedup_estimate(of(TimedSide::kCandidate), of(TimedSide::kCandidateTwin));
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
  for (std::size_t k = 0; k < of(TimedSide::kCandidate).size(); ++k) {
    std::vector<double> round_ms;
    for (TimedSide side : kAllSides) round_ms.push_back(median(of(side)[k]).value_or(0) / 1e6);
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
  flag(outer_clock_mismatch(clocks_[0], clocks_[1]), "outer_clock_mismatch");
  flag(bandwidth_gbs_ &&
           impossible_time(median(candidate_).value_or(0), inputs_.output_bytes, *bandwidth_gbs_, llc_bytes_),
       "impossible_time");
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
      stop_reason, *perf.measure_s, of(TimedSide::kCandidate).size(), reference_.size(), candidate_.size(),
      perf.reference.outliers.value_or(0), perf.candidate.outliers.value_or(0),
      perf.foreign_cpu_share ? fmt::format("{:.0f} %", *perf.foreign_cpu_share * 100) : "unknown",
      fmt::join(perf.flags, ", ")));
  return perf;
}

}  // namespace

std::array<TimedSide, 4> round_order(int round) {
  using enum TimedSide;
  if (round % 2 == 0) return {kReference, kCandidate, kTwin, kCandidateTwin};
  return {kCandidateTwin, kTwin, kCandidate, kReference};
}

bool outer_clock_mismatch(const ClockTotals& reference, const ClockTotals& candidate) {
  for (const ClockTotals* side : {&reference, &candidate}) {
    if (side->calls > 0 && side->inner_ns > side->outer_ns * kClockSlack + kClockSlackNs) return true;
  }
  if (reference.calls == 0 || candidate.calls == 0 || reference.outer_ns <= 0 || candidate.outer_ns <= 0)
    return false;
  double ref_share = reference.inner_ns / reference.outer_ns;
  double cand_share = candidate.inner_ns / candidate.outer_ns;
  double ref_gap = std::max(0.0, reference.outer_ns - reference.inner_ns) / reference.calls;
  double cand_gap = std::max(0.0, candidate.outer_ns - candidate.inner_ns) / candidate.calls;
  return cand_share < 0.5 * ref_share && cand_gap > 2 * ref_gap + kExtraPerCallNs;
}

bool impossible_time(double candidate_median_ns, std::uint64_t output_bytes, double bandwidth_gbs,
                     std::uint64_t llc_bytes) {
  if (bandwidth_gbs <= 0 || output_bytes <= llc_bytes) return false;
  // bandwidth_gbs counts bytes read plus bytes written by a copy; writing
  // alone may go up to twice as fast, hence the factor 2 in its favour.
  double fastest_ns = static_cast<double>(output_bytes) / (2 * bandwidth_gbs);  // GB/s == bytes/ns
  return candidate_median_ns < fastest_ns;
}

std::optional<double> foreign_cpu_share(const util::CoreUsage& usage, double own_cpu_s) {
  if (usage.cores == 0 || usage.total_s <= 0) return std::nullopt;
  return std::clamp((usage.busy_s - own_cpu_s) / usage.total_s, 0.0, 1.0);
}

bool within_noise(const SpeedupEstimate& speedup, const SpeedupEstimate& noise_floor) {
  if (!speedup.ci95 || !noise_floor.ci95) return false;
  return speedup.ci95->lo <= noise_floor.ci95->hi && speedup.ci95->hi >= noise_floor.ci95->lo;
}

TimingOutcome run_timing(const VerifierConfig& config, const TimingInputs& inputs, const Exchange& exchange,
                         const std::function<void(const std::string&)>& note, const CoreLoadProbe& load) {
  return TimingSession(config, inputs, exchange, note, load).run();
}

}  // namespace kgym::verify
