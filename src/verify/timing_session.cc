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
// A batch's input sets and kept outputs stay below this in each worker.
constexpr std::uint64_t kBatchBytes = 64ULL << 20;
// Timed calls per batch whose outputs are fetched and compared, chosen
// after the batch ran.
constexpr int kCheckedCalls = 2;
// The memoization probe: batches (half as many where input sets are costly)
// of this many timed calls after one untimed, half of them on a seen set,
// half on unseen ones.
constexpr int kProbeBatches = 4;
constexpr int kProbeCalls = 8;
// The share of the batches (warm-up and timed) with a traced call.
constexpr double kTracedBatchShare = 1.0;
// Making input sets costs the reference's time between batches; up to this
// share of the budget it is not counted against it, so that the rounds
// stay many (the timing phase grows by at most this share).
constexpr double kMakingShare = 0.3;

constexpr std::size_t kSides = 4;
constexpr std::array<Role, kSides> kAllSides = {Role::kReference, Role::kCandidate, Role::kTwin,
                                                Role::kCandidateTwin};
std::size_t index_of(Role side) { return static_cast<std::size_t>(side); }
// The reference and the candidate get one sequence of input sets, the twins
// another: the candidate's twin shares the candidate's directory, and must
// not be handed a set the candidate has seen (and could have left a
// remembered output for).
bool first_sequence(Role side) { return side == Role::kReference || side == Role::kCandidate; }

struct Batch {
  std::vector<double> ns;  // the timed calls that were not traced
  double untimed_ns = 0;   // the worker's time for its warm-up and traced calls
  double outer_ns = 0;     // the parent's clock around the request
  double worker_ns = 0;    // the worker's clock from the request's arrival to its reply
  double cpu_ns = 0;       // the worker's own CPU time over the batch, as it reports it
  int positions = 0;       // calls in the batch, untimed ones included
  nlohmann::json traced;   // [{position, op_trace}]
};

// One batch's input sets: the serialized list and each set's seed.
struct InputSets {
  std::string blob;
  std::vector<std::uint64_t> seeds;
};

double elapsed_ns(SteadyClock::time_point since) {
  return std::chrono::duration<double, std::nano>(SteadyClock::now() - since).count();
}

double number(const nlohmann::json& header, const char* key) {
  auto it = header.find(key);
  return it != header.end() && it->is_number() ? std::max(0.0, it->get<double>()) : 0.0;
}

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
        // Which calls are checked and traced must not follow from anything
        // the candidate could know (the run seed is in the run's records).
        rng_(inputs.check_seed ^
             (static_cast<std::uint64_t>(std::random_device{}()) << 32 | std::random_device{}())) {}

  TimingOutcome run();

 private:
  // Asks the reference worker for one batch of sets per entry of `sizes`.
  // `given`, when not empty, fixes some seeds: given[g][i] != 0 is set i of
  // group g.
  std::optional<std::vector<InputSets>> make_sets(const std::vector<int>& sizes,
                                                  const std::vector<std::vector<std::uint64_t>>& given = {});
  std::optional<Batch> batch(Role side, const InputSets& sets, const std::string& mask, int warmup, int calls,
                             std::string_view what);
  std::string trace_mask(int warmup, int calls);
  bool warm_up(Role side, double& per_call_ns);
  bool check_traces(Role side, const Batch& b, std::string_view what);
  bool check_outputs(int round, int calls, const std::array<const InputSets*, kSides>& sets, int warmup);
  std::string compare(const Message& reference, const Message& candidate);
  bool memoization_probe(const InputSets& seen, int warmup, MemoProbe& probe);
  bool probe_memoization(const InputSets& seen, int warmup, const Performance& perf);
  void account(int round, const std::array<std::optional<Batch>, kSides>& taken);
  Performance summarize(const std::string& stop_reason);
  Blocks both_references() const {
    return geometric_mean_blocks(rounds_[index_of(Role::kReference)], rounds_[index_of(Role::kTwin)]);
  }
  Blocks both_candidates() const {
    return geometric_mean_blocks(rounds_[index_of(Role::kCandidate)],
                                 rounds_[index_of(Role::kCandidateTwin)]);
  }
  void fail(CheatFinding finding) {
    if (!outcome_.cheat) outcome_.cheat = std::move(finding);
  }

  const VerifierConfig& config_;
  const TimingConfig& timing_;
  const TimingInputs& inputs_;
  const Exchange& exchange_;
  const std::function<void(const std::string&)>& note_;
  const CoreLoadProbe& load_;
  std::mt19937_64 rng_;
  TimingOutcome outcome_;
  SteadyClock::time_point start_ = SteadyClock::now();
  std::array<Blocks, kSides> rounds_;
  std::vector<double> reference_, candidate_;  // all samples of each side's two workers, in order
  ClockTotals clocks_[2];                      // reference, candidate (each side's two workers)
  OverheadRounds overhead_;
  std::optional<double> bandwidth_gbs_;
  int calls_per_worker_ = 0;  // timed calls each worker has run
  std::uint64_t llc_bytes_ = kDefaultLlcBytes;
  std::uint64_t sets_made_ = 0;
  double make_ns_ = 0;  // the parent's clock around the reference's `sets` requests
  int checked_calls_ = 0, traced_calls_ = 0;
  std::optional<double> probe_ratio_;
  std::optional<util::CpuStat> stat_start_;
  double own_cpu_start_s_ = 0;
  double workers_cpu_ns_ = 0;
};

std::optional<std::vector<InputSets>> TimingSession::make_sets(
    const std::vector<int>& sizes, const std::vector<std::vector<std::uint64_t>>& given) {
  Message request;
  request.header = {{"op", "sets"}};
  std::vector<InputSets> made(sizes.size());
  auto groups = nlohmann::json::array();
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    for (int i = 0; i < sizes[g]; ++i) {
      bool fixed = g < given.size() && static_cast<std::size_t>(i) < given[g].size() && given[g][i] != 0;
      std::uint64_t seed = fixed ? given[g][i] : util::splitmix64(inputs_.set_seeds + ++sets_made_) >> 1;
      made[g].seeds.push_back(seed);
    }
    groups.push_back(made[g].seeds);
  }
  request.header["groups"] = std::move(groups);
  auto sent = SteadyClock::now();
  auto reply = exchange_(Role::kReference, request, "making input sets");
  if (!reply) return std::nullopt;
  make_ns_ += elapsed_ns(sent);
  if (reply->payloads.size() != sizes.size()) return std::nullopt;
  for (std::size_t g = 0; g < sizes.size(); ++g) made[g].blob = std::move(reply->payloads[g]);
  return made;
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

std::optional<Batch> TimingSession::batch(Role side, const InputSets& sets, const std::string& mask,
                                          int warmup, int calls, std::string_view what) {
  Message request;
  request.header = {
      {"op", "time"}, {"calls", calls}, {"warmup", warmup}, {"cache_flush", timing_.cache_flush}};
  request.payloads = {sets.blob, mask};
  auto sent = SteadyClock::now();
  auto reply = exchange_(side, request, what);
  if (!reply) return std::nullopt;
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
    if (auto finding = runtime_finding(facts, nlohmann::json::object(), inputs_.backend)) {
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
  std::optional<double> previous;
  for (int round = 0; round < kMaxWarmupRounds; ++round) {
    auto sets = make_sets({calls});
    if (!sets) return false;
    auto b = batch(side, sets->front(), trace_mask(0, calls), 0, calls, "warming up");
    if (!b) return false;
    // What a call costs the budget: the parent's clock also sees cloning,
    // cache flushing and the request itself.
    double inner = median(b->ns).value_or(0);
    per_call_ns = std::max(inner, b->outer_ns / calls);
    bool stable = previous && std::abs(inner - *previous) <= kWarmupStable * *previous;
    if (timing_.warmup == 0 || stable || SteadyClock::now() - start_ > timing_.budget / 4) break;
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
      Tolerance tolerance = tolerance_for(config_.tolerances, b.dtype, backend_named(config_.backend));
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
bool TimingSession::check_outputs(int round, int calls, const std::array<const InputSets*, kSides>& sets,
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
        std::uint64_t seed = sets[index_of(candidate)]->seeds.at(static_cast<std::size_t>(warmup + position));
        bool twin = candidate == Role::kCandidateTwin;
        note_(fmt::format("timed call {} of round {} differs{}: {}", position, round,
                          twin ? " (candidate twin)" : "", problem));
        outcome_.mismatch =
            fmt::format("output of timed call {} of round {}{} (input set seed {}) differs ({})", position,
                        round, twin ? " (candidate twin)" : "", seed, problem);
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

// The first quartile of `ns`: what a call costs when nothing else took the
// core. Another process's time slice only adds to a call; on a loaded
// machine about half the calls may carry one, and the median of each kind
// then falls on either side of that split by chance (measured: an honest
// kernel read 3.8x faster on the seen set under `ctest -j2`), where the
// first quartile of both stays the call's own time.
double low_quantile(std::vector<double> ns) {
  if (ns.empty()) return 0;
  std::sort(ns.begin(), ns.end());
  return ns[(ns.size() - 1) / 4];
}

// Calls of the reference and the candidate on a set the candidate has
// already seen (clones of it, drawn again from its seed) and on unseen
// sets, mixed in batches like the timed ones, so nothing tells the
// candidate it is probed, and both kinds of call share each batch's
// conditions. Which positions get the seen set is drawn for every batch:
// a fixed alternation could fall in step with another process's time
// slices on a loaded machine and make either kind look slow.
bool TimingSession::memoization_probe(const InputSets& seen, int warmup, MemoProbe& probe) {
  std::uint64_t seen_seed = seen.seeds.at(static_cast<std::size_t>(
      std::uniform_int_distribution<int>(warmup, static_cast<int>(seen.seeds.size()) - 1)(rng_)));
  std::vector<double> ref_seen, ref_unseen, cand_seen, cand_unseen;
  const int n = 1 + kProbeCalls;
  // Each batch makes 1 + kProbeCalls input sets. Where sets are costly
  // (tens of MB each: making one can take 50x a call), the probe takes
  // half the batches rather than more than half the timing's budget.
  double per_set_ns = sets_made_ > 0 ? make_ns_ / static_cast<double>(sets_made_) : 0;
  double budget_ns = std::chrono::duration<double, std::nano>(timing_.budget).count();
  int batches =
      per_set_ns * (1 + kProbeCalls) * kProbeBatches > budget_ns / 2 ? kProbeBatches / 2 : kProbeBatches;
  for (int batch_index = 0; batch_index < batches; ++batch_index) {
    // Position 0 is untimed; half of the others get the seen set.
    std::vector<int> positions(static_cast<std::size_t>(kProbeCalls));
    std::iota(positions.begin(), positions.end(), 1);
    std::shuffle(positions.begin(), positions.end(), rng_);
    std::vector<std::uint64_t> seeds(static_cast<std::size_t>(n), 0);
    for (int k = 0; k < kProbeCalls / 2; ++k)
      seeds[static_cast<std::size_t>(positions[static_cast<std::size_t>(k)])] = seen_seed;
    auto sets = make_sets({n}, {seeds});
    if (!sets) return false;
    std::string none(static_cast<std::size_t>(n), '\0');
    for (Role side : {Role::kReference, Role::kCandidate}) {
      auto b = batch(side, sets->front(), none, 1, kProbeCalls, "probing for memoization");
      if (!b) return false;
      for (std::size_t k = 0; k < b->ns.size(); ++k) {
        bool was_seen = seeds[k + 1] == seen_seed;
        auto& into = side == Role::kReference ? (was_seen ? ref_seen : ref_unseen)
                                              : (was_seen ? cand_seen : cand_unseen);
        into.push_back(b->ns[k]);
      }
    }
  }
  probe = MemoProbe{low_quantile(cand_seen), low_quantile(cand_unseen), low_quantile(ref_seen),
                    low_quantile(ref_unseen)};
  note_(
      fmt::format("memoization probe: candidate {:.4f} ms on a seen set, {:.4f} ms on unseen; reference "
                  "{:.4f} / {:.4f} ms",
                  probe.candidate_seen_ns / 1e6, probe.candidate_unseen_ns / 1e6,
                  probe.reference_seen_ns / 1e6, probe.reference_unseen_ns / 1e6));
  return true;
}

// The probe, and when it finds the candidate faster on the seen set, a
// second probe on another seen set: a memoizer is faster every time, a
// loaded machine's noise seldom twice in the same direction.
bool TimingSession::probe_memoization(const InputSets& seen, int warmup, const Performance& perf) {
  MemoProbe first;
  if (!memoization_probe(seen, warmup, first)) return false;
  auto found = memoization_finding(first, perf.noise_floor, perf.candidate_noise_floor);
  if (!found) return true;
  MemoProbe second;
  if (!memoization_probe(seen, warmup, second)) return false;
  auto confirmed = memoization_finding(second, perf.noise_floor, perf.candidate_noise_floor);
  if (!confirmed) {
    note_("memoization probe: the second probe did not confirm the first; not a finding");
    return true;
  }
  found->evidence += fmt::format("; a second probe on another seen set: {:.4f} ms seen, {:.4f} ms unseen",
                                 second.candidate_seen_ns / 1e6, second.candidate_unseen_ns / 1e6);
  fail(std::move(*found));
  return true;
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
  std::array<double, kSides> per_call_ns{};
  for (Role side : kAllSides) {
    if (!warm_up(side, per_call_ns[index_of(side)])) return failed();
  }
  // What making one input set costs the round, on the parent's clock.
  double make_per_set_ns = sets_made_ > 0 ? make_ns_ / static_cast<double>(sets_made_) : 0;

  // Batches long enough to amortize a request, short enough that there are
  // many of them for the alternation to cancel drift. Each call position of
  // a round makes two sets (one per sequence) and runs four calls.
  const int max_reps = std::max(2, timing_.max_repetitions);
  const int min_samples = std::clamp(timing_.min_samples, 2, max_reps);
  const double budget_ns = std::chrono::duration<double, std::nano>(timing_.budget).count();
  double batch_ns = budget_ns / (kSides * kRoundsWanted);
  double slowest = std::max({per_call_ns[0], per_call_ns[1], per_call_ns[2], per_call_ns[3], 1.0});
  const std::uint64_t per_call_bytes = std::max<std::uint64_t>(1, inputs_.set_bytes + inputs_.output_bytes);
  const int memory_cap = static_cast<int>(std::max<std::uint64_t>(2, kBatchBytes / per_call_bytes));
  const int per_batch = std::clamp(static_cast<int>(batch_ns / (slowest + make_per_set_ns / 2)), 1,
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
      "an input set takes {:.3f} ms to make; batches of {} after {} untimed",
      per_call_ns[0] / 1e6, per_call_ns[1] / 1e6, per_call_ns[2] / 1e6, per_call_ns[3] / 1e6,
      make_per_set_ns / 1e6, per_batch, rewarm));

  std::string stop_reason;
  stat_start_ = load_.read_stat();
  own_cpu_start_s_ = load_.own_cpu_s();
  std::optional<InputSets> last_seen;
  for (int round = 0;; ++round) {
    int calls = std::min(per_batch, max_reps - calls_per_worker_);
    // One timed call more than the statistics need: the traced call may be
    // any call of the batch, the first timed one included, even in batches
    // of one (the first call of a batch is the one a candidate can tell
    // apart: nothing ran just before it).
    int sent = calls + 1;
    int n = rewarm + sent;
    auto sets = make_sets({n, n});
    if (!sets) return failed();
    std::string mask = trace_mask(rewarm, sent);
    std::array<const InputSets*, kSides> of_side{};
    std::array<std::optional<Batch>, kSides> taken;
    for (Role side : round_order(round)) {
      of_side[index_of(side)] = &(*sets)[first_sequence(side) ? 0 : 1];
      taken[index_of(side)] = batch(side, *of_side[index_of(side)], mask, rewarm, sent, "timing");
      if (!taken[index_of(side)]) return failed();
      if (taken[index_of(side)]->ns.empty()) {
        note_("timing: a batch came back without timed calls");
        return failed();
      }
    }
    if (!check_outputs(round, sent, of_side, rewarm)) return failed();
    calls_per_worker_ += calls;
    account(round, taken);
    last_seen = (*sets)[0];
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
  if (!probe_memoization(*last_seen, rewarm, perf)) return failed();
  perf.measure_s = std::chrono::duration<double>(SteadyClock::now() - start_).count();
  if (auto found = clock_finding(clocks_[0], clocks_[1], overhead_, median(candidate_).value_or(0)))
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
  note_(
      fmt::format("timing integrity: {} input sets made in {:.3f} s, {} timed outputs checked, {} calls "
                  "traced; candidate batches {:.1f} ms on the parent's clock, {:.1f} ms on its own",
                  sets_made_, make_ns_ / 1e9, checked_calls_, traced_calls_, clocks_[1].outer_ns / 1e6,
                  clocks_[1].worker_ns / 1e6));
  outcome_.performance = std::move(perf);
  return std::move(outcome_);
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

}  // namespace

std::array<Role, 4> round_order(int round) {
  using enum Role;
  if (round % 2 == 0) return {kReference, kCandidate, kTwin, kCandidateTwin};
  return {kCandidateTwin, kTwin, kCandidate, kReference};
}

TimingOutcome run_timing(const VerifierConfig& config, const TimingInputs& inputs, const Exchange& exchange,
                         const std::function<void(const std::string&)>& note, const CoreLoadProbe& load) {
  return TimingSession(config, inputs, exchange, note, load).run();
}

}  // namespace kgym::verify
