#pragma once
// Internal to the timing phase (timing_session.cc, timing_probe.cc): the
// session's state and constants. Not for other folders.
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/sealed_memory.h"
#include "util/unique_fd.h"
#include "verify/timing_session.h"

namespace kgym::verify::timing_internal {


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
// A call this many times longer than refilling the last-level cache needs
// no untimed call before it (see run()).
constexpr double kLongCallCaches = 20;
constexpr double kDefaultBandwidthGbs = 10;
constexpr std::uint64_t kDefaultLlcBytes = 32ULL << 20;
// A batch's input sets and outputs stay below this in each worker.
constexpr std::uint64_t kBatchBytes = 256ULL << 20;
// Where the harness is most of a batch (the figure is then the workers'
// clocks), a batch has at least this many timed calls (within kBatchBytes):
// a batch of one spends two of its three fresh sets on the untimed rewarm
// and traced calls, and the median of several calls resists a slow one.
constexpr int kCostlyBatchCalls = 4;
// A worker on the host grows its heap before its first timed call by this
// many times what one call allocates at least (a fresh copy of its inputs
// and its outputs), so that no timed call page-faults its buffers in; at
// most kMaxHeapPrimeBytes (docs/worker-protocol.md, `time`). At 4 a new
// worker's outputs still walked up past the primed pages for a few calls
// (6,144 faults each on a 25 MB ReLU, 9.5 ms instead of 1.5).
constexpr std::uint64_t kHeapPrimeCalls = 8;
constexpr std::uint64_t kMaxHeapPrimeBytes = 512ULL << 20;
// Timed calls per batch whose outputs are fetched and compared, chosen
// after the batch ran.
constexpr int kCheckedCalls = 2;
// Checking a round's outputs may cost this share of the round's time; it
// is then done in fewer rounds, never in fewer than kMinCheckShare.
constexpr double kCheckCost = 0.25;
constexpr double kMinCheckShare = 0.2;
// The memoization probe: this many batches of each of the reference and
// the candidate (half as many where input sets are costly), run inside the
// timed rounds and shaped like their batches (at least kProbeMinCalls timed
// calls), half of the timed calls on sets the candidate was handed before.
constexpr int kProbeBatches = 4;
constexpr int kProbeMinCalls = 4;
// The share of the batches (warm-up and timed) with a traced call.
constexpr double kTracedBatchShare = 1.0;
// Making input sets costs the reference's time between batches; up to this
// many times the budget it is not counted against it, so that the rounds
// stay many where drawing a set takes longer than a call (level 1's
// memory-bound problems at `size: auto`: about 23 ms to draw a 25 MB set
// at torch's 1.0-1.1 GB/s on one core, for a 1.7 ms call; the timing
// phase then grows by at most this factor of the budget).
constexpr double kMakingBudgets = 2.0;
// Where the budget ends before this many rounds (8 units), the timing goes
// on until it has them or its whole phase (sets and probe included) has
// taken kPrecisionBudgets times the budget. Few units leave the interval
// a bootstrap over single samples and the noise floors an estimate from a
// handful of rounds: on the KernelBench A/A campaign (2 s budget), the
// rounds the budget alone kept (medians 2 / 5 / 3 on levels 1 / 2 / 3) gave
// median widths of 0.309 / 0.167 / 0.262, the stretched rounds of the same
// cases 0.244 / 0.128 / 0.167 (docs/kernelbench-cpu.md).
constexpr int kPrecisionRounds = 16;
constexpr double kPrecisionBudgets = 4.0;

// The parent's clock is the figure when the harness takes at most this
// share of the reference's batches.
constexpr double kParentClockHarnessShare = 0.25;

// A candidate's untimed calls may take this much of what the reference's
// predict before the rest is charged to its timed calls.
constexpr double kUntimedSlack = 1.5;

constexpr std::size_t kSides = 4;
constexpr std::array<Role, kSides> kAllSides = {Role::kReference, Role::kCandidate, Role::kTwin,
                                                Role::kCandidateTwin};
inline std::size_t index_of(Role side) { return static_cast<std::size_t>(side); }
// The reference and the candidate get one sequence of input sets, the twins
// another: the candidate's twin shares the candidate's directory, and must
// not be handed a set the candidate has seen (and could have left a
// remembered output for).
inline bool first_sequence(Role side) { return side == Role::kReference || side == Role::kCandidate; }

// A file of input sets the reference worker drew from the problem's
// get_inputs(), each under a seed of its own, in sealed shared memory (op
// `sets`, util/sealed_memory.h). It is handed to a worker with the request
// of the batch that uses it, never earlier, and nobody can change it.
struct SetFile {
  std::shared_ptr<util::UniqueFd> fd;
  nlohmann::json layouts;  // one per set, as the reference described it
  std::vector<std::uint64_t> seeds;
};

// One batch's input sets: per call position, set `second` of file `first`.
struct BatchSets {
  std::vector<std::shared_ptr<const SetFile>> files;
  std::vector<std::pair<int, int>> calls;
  std::string describe(int position) const;  // "set of seed S", for a mismatch
};

// The probe's calls, per side and kind, on the workers' own clocks.
struct ProbeCalls {
  std::vector<double> reference_seen, reference_unseen, candidate_seen, candidate_unseen;
  int batches = 0;  // of each side
};

struct Batch {
  std::vector<double> ns;  // the timed calls, on the worker's own clock
  std::vector<int> timed_at;  // the timed position (from 0) of each of `ns` (a traced call has none)
  double untimed_ns = 0;   // the worker's time for its untimed calls
  double outer_ns = 0;     // the parent's clock around the request
  double worker_ns = 0;    // the worker's clock from the request's arrival to its reply
  double cpu_ns = 0;       // the worker's own CPU time over the batch, as it reports it
  int positions = 0;       // calls in the batch, untimed ones included
  double figure_ns = 0;    // per call, from the parent's clock (TimingSession::account)
  // The timed calls' outputs, sealed before the reply: per call, where
  // each output lies in `outputs`.
  std::shared_ptr<const util::SealedView> outputs;
  nlohmann::json output_layouts;
  nlohmann::json traced;  // [{position, op_trace}]
  // The worker's own time for all its calls.
  double calls_ns() const {
    double sum = untimed_ns;
    for (double v : ns) sum += v;
    return sum;
  }
};

double untimed_excess_ns(const Batch& reference, const Batch& candidate);
double unclaimed_beyond_ns(const Batch& reference, const Batch& b);

inline double number(const nlohmann::json& header, const char* key) {
  auto it = header.find(key);
  return it != header.end() && it->is_number() ? std::max(0.0, it->get<double>()) : 0.0;
}

class TimingSession {
 public:
  TimingSession(const VerifierConfig& config, const TimingInputs& inputs, const Exchange& exchange,
                const std::function<void(const std::string&)>& note, const CoreLoadProbe& load, TimingClock clock)
      : clock_(clock ? std::move(clock) : steady_clock_ns()),
        config_(config),
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
  double now_ns() const { return clock_(); }
  double elapsed_ns(double since_ns) const { return now_ns() - since_ns; }
  // Asks the reference worker for one file per entry of `counts`, of that
  // many sets, each under the next seed from `set_seeds`.
  std::optional<std::vector<std::shared_ptr<const SetFile>>> make_sets(const std::vector<int>& counts);
  // All positions of one batch on the sets of `file`, in order.
  static BatchSets whole(std::shared_ptr<const SetFile> file);
  std::optional<Batch> batch(Role side, const BatchSets& sets, const std::string& mask, int warmup, int calls,
                             std::string_view what);
  std::string trace_mask(int warmup, int calls);
  bool check_traces(Role side, const Batch& b, std::string_view what);
  bool warm_up(std::array<double, kSides>& per_call_ns);
  bool check_outputs(int round, int calls, const std::array<const BatchSets*, kSides>& sets,
                     const std::array<std::optional<Batch>, kSides>& taken, int warmup);
  std::string compare(const Batch& reference, const Batch& candidate, int call);
  // Asks the reference worker for one file per entry of `seeds`, each set
  // drawn from get_inputs() under its seed.
  std::optional<std::vector<std::shared_ptr<const SetFile>>> make_sets_of(
      std::vector<std::vector<std::uint64_t>> seeds, std::string_view what = "making input sets");
  // How many probe batches each side runs, and in which rounds
  // (timing_probe.cc).
  void plan_probes(int warmup, int calls, double per_call_ns, double budget_ns, int rounds_expected);
  // One probe batch of the reference and one of the candidate, on the same
  // sets, in the order drawn.
  bool probe_batch(int warmup, int calls, ProbeCalls& into);
  // The probe batches planned that the rounds did not reach, the finding,
  // and when there is one, a second probe after the rounds to confirm it.
  bool finish_probe(int warmup, int calls, const Performance& perf);
  void account(int round, std::array<std::optional<Batch>, kSides>& taken);
  void charge_unclaimed();
  void widen_by_unclaimed(SpeedupEstimate& speedup) const;
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

  TimingClock clock_;
  const VerifierConfig& config_;
  const TimingConfig& timing_;
  const TimingInputs& inputs_;
  const Exchange& exchange_;
  const std::function<void(const std::string&)>& note_;
  const CoreLoadProbe& load_;
  std::mt19937_64 rng_;
  TimingOutcome outcome_;
  double start_ = now_ns();
  std::array<Blocks, kSides> rounds_;
  std::vector<double> reference_, candidate_;  // all samples of each side's two workers, in order
  ClockTotals clocks_[2];                      // reference, candidate (each side's two workers)
  OverheadRounds overhead_;
  std::optional<double> bandwidth_gbs_;
  int calls_per_worker_ = 0;  // timed calls each worker has run
  std::uint64_t llc_bytes_ = kDefaultLlcBytes;
  // Per sequence, the harness's share of the reference's last warm-up batch,
  // and whether the figures are the parent's clock (account()).
  std::array<double, 2> harness_share_{};
  bool parent_clock_ = true;
  double charged_untimed_ns_ = 0;  // untimed time charged to timed calls (account())
  UnclaimedRounds unclaimed_;      // what batches left unclaimed (account())
  double charged_unclaimed_ns_ = 0;  // charged to each candidate timed call (charge_unclaimed())
  double uncharged_unclaimed_ns_ = 0;  // left unclaimed within the allowance, per timed call
  std::uint64_t sets_made_ = 0;  // seeds drawn from set_seeds, and so sets drawn from get_inputs()
  double set_bytes_ = 0;         // their bytes in shared memory
  double make_ns_ = 0;           // the parent's clock around the reference's `sets` requests
  int checked_calls_ = 0, traced_calls_ = 0;
  // The seeds of the sets the candidate was handed in its timed calls, and
  // the rounds that run a probe batch (one entry per batch, in order).
  std::vector<std::uint64_t> seen_seeds_;
  std::vector<int> probe_rounds_;
  ProbeCalls probe_;
  // The parent's clock around the probe's batches inside the rounds, and
  // the part of make_ns_ that made their sets: not counted against the
  // budget (the probe does not make the figure).
  double probe_ns_ = 0, probe_make_ns_ = 0;
  std::vector<double> reference_timed_, candidate_timed_;  // the reference's and the candidate's own timed calls
  std::optional<util::CpuStat> stat_start_;
  double own_cpu_start_s_ = 0;
  std::optional<double> sides_cpu_start_ns_;
  double workers_cpu_ns_ = 0;
  // Other processes' share of the leased cores while timing ran, when it
  // was measured from readings the candidate cannot fake; else 0.
  double trusted_foreign_share_ = 0;
};

}  // namespace kgym::verify::timing_internal
