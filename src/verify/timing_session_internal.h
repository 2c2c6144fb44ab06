#pragma once
// Internal to the timing phase (timing_session.cc, timing_probe.cc): the
// session's state and constants. Not for other folders.
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "verify/timing_session.h"

namespace kgym::verify::timing_internal {

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
// Checking a round's outputs may cost this share of the round's time; it
// is then done in fewer rounds, never in fewer than kMinCheckShare.
constexpr double kCheckCost = 0.25;
constexpr double kMinCheckShare = 0.2;
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
inline std::size_t index_of(Role side) { return static_cast<std::size_t>(side); }
// The reference and the candidate get one sequence of input sets, the twins
// another: the candidate's twin shares the candidate's directory, and must
// not be handed a set the candidate has seen (and could have left a
// remembered output for).
inline bool first_sequence(Role side) { return side == Role::kReference || side == Role::kCandidate; }

struct Batch {
  std::vector<double> ns;  // the timed calls that were not traced
  double untimed_ns = 0;   // the worker's time for its warm-up and traced calls
  double outer_ns = 0;     // the parent's clock around the request
  double worker_ns = 0;    // the worker's clock from the request's arrival to its reply
  double cpu_ns = 0;       // the worker's own CPU time over the batch, as it reports it
  int positions = 0;       // calls in the batch, untimed ones included
  nlohmann::json traced;   // [{position, op_trace}]
};

// Input sets drawn by the reference worker from the problem's get_inputs()
// (op `sets`), each under a seed of its own, handed once to the workers of
// one sequence and held there for many calls. Making a set of a
// large problem (tens of MB) costs the reference's generator and three
// copies through pipes, often 30x the call; so calls do not each get a set
// of their own but a derived one (below).
struct Pool {
  int id = 0;
  std::vector<std::uint64_t> seeds;
  std::string blob;  // the serialized sets, until every worker of the sequence holds them
  int holders = 0;
};

// The input set a call gets: set `base` of the held pool with every floating
// tensor multiplied by `scale` (one factor in [0.5, 1) for the whole set, so
// the relations a problem builds into its inputs hold: signs, zeros,
// triangles, symmetry, bounds in [-1, 1], one tensor a multiple of another;
// tensors of whole numbers stay as drawn). No two calls of a worker get the
// same set, so a cache keyed by the inputs never hits; the one that keys by
// the set's shape up to a factor does, and the memoization probe, whose
// unseen sets are fresh draws, finds it.
struct DerivedSet {
  int base = 0;
  double scale = 1;
};

// One batch's input sets: the pool and a derived set per call position.
struct BatchSets {
  Pool* pool = nullptr;
  std::vector<DerivedSet> calls;
  std::string describe(int position) const;  // "seed S scaled by F", for a mismatch
};

// Pool sets per sequence in the timed rounds.
constexpr int kPoolSets = 2;

inline double elapsed_ns(SteadyClock::time_point since) {
  return std::chrono::duration<double, std::nano>(SteadyClock::now() - since).count();
}

inline double number(const nlohmann::json& header, const char* key) {
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
  // Asks the reference worker for a pool of one set per seed; a zero seed
  // is drawn from `set_seeds`.
  std::optional<Pool> make_pool(std::vector<std::uint64_t> seeds);
  // `calls` derived sets of `pool`, each base drawn and scaled anew.
  BatchSets derive(Pool& pool, int calls);
  double next_scale();
  std::optional<Batch> batch(Role side, const BatchSets& sets, const std::string& mask, int warmup, int calls,
                             std::string_view what);
  std::string trace_mask(int warmup, int calls);
  bool warm_up(Role side, double& per_call_ns);
  bool check_traces(Role side, const Batch& b, std::string_view what);
  bool check_outputs(int round, int calls, const std::array<const BatchSets*, kSides>& sets, int warmup);
  std::string compare(const Message& reference, const Message& candidate);
  bool memoization_probe(const BatchSets& seen_in, int warmup, MemoProbe& probe);
  bool probe_memoization(const BatchSets& seen_in, int warmup, const Performance& perf);
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
  std::uint64_t sets_made_ = 0;    // seeds drawn from set_seeds
  std::uint64_t sets_drawn_ = 0;   // sets the reference drew from get_inputs()
  std::uint64_t scales_made_ = 0;  // derived sets
  double make_ns_ = 0;             // the parent's clock around the reference's `sets` requests
  int pools_made_ = 0;
  std::array<Pool, 2> pools_;       // the timed rounds': the reference and candidate's, the twins'
  std::array<int, kSides> held_{};  // the id of the pool each worker holds
  int checked_calls_ = 0, traced_calls_ = 0;
  std::optional<util::CpuStat> stat_start_;
  double own_cpu_start_s_ = 0;
  std::optional<double> sides_cpu_start_ns_;
  double workers_cpu_ns_ = 0;
  // Other processes' share of the leased cores while timing ran, when it
  // was measured from readings the candidate cannot fake; else 0.
  double trusted_foreign_share_ = 0;
};

}  // namespace kgym::verify::timing_internal
