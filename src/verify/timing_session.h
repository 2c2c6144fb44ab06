#pragma once
// The timing phase of a verification (ARCHITECTURE.md "Timing"): the reference
// and the candidate timed by the same worker code path in alternating
// batches, warm-up until stable, batches until the speedup is known to
// target_rse or the budget ends, sampled re-checks of timed outputs, an A/A
// noise floor from a second worker of each side (the twins) timed in the
// same rounds, and plausibility flags. Talks to the workers only through the
// `Exchange` it is given, so the verifier keeps ownership of the processes
// and of how their failures become verdicts.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/backend.h"
#include "core/config.h"
#include "core/result.h"
#include "util/cpu_stat.h"
#include "verify/role.h"
#include "verify/stats.h"
#include "verify/timing_checks.h"
#include "worker/protocol.h"

namespace kgym::verify {

// Sends one request to a side and returns its successful reply, or nullopt
// when the call failed (the exchange has then recorded why).
using Exchange =
    std::function<std::optional<worker::Message>(Role side, const worker::Message& request, std::string_view what)>;

// What the timing needs of the verification: every warm-up, timed, traced
// and probe call of either side gets an input set of its own, which the
// reference worker draws (op `sets`) from the problem's get_inputs() under
// a seed of its own, the seeds following from `set_seeds`; no set is
// derived from another. The sets travel in sealed shared memory with the
// request of the batch that uses them (timing_session_internal.h, `SetFile`).
struct TimingInputs {
  std::uint64_t output_bytes = 0;  // bytes of one call's outputs
  std::uint64_t set_bytes = 0;     // bytes of one serialized input set
  std::uint64_t check_seed = 0;    // seeds the choice of checked and traced calls, with the OS's entropy
  // Where the sets' seeds start: the verifier draws it from the kernel's
  // cryptographic source (util/secure_random.h) and result.json records it
  // after the timing (performance.inputs.seed).
  std::uint64_t set_seeds = 0;
  const Backend* backend = &backend_named("cpu");  // for the op trace's glue allow-list
  bool check_op_trace = true;      // false when the candidate slot runs the reference itself
  bool trace_expected = false;     // the reference's worker traces on this torch: a null trace is a finding
  // The correctness phase found the reference constant or ~zero ("zero",
  // "constant"): the timed calls' outputs are held to its relative bound too
  // (output_match.h).
  std::optional<std::string> degenerate;
  // Runs just before a `time` batch's request is sent (`starting`) and as
  // soon as its reply came, outside the parent's clock around the batch:
  // the verifier switches its outside sampler there. `what` is the phase
  // ("warming up", "timing", ...).
  std::function<void(Role side, std::string_view what, bool starting)> around_batch;
};

// What the timing did to keep its figures honest, for the log and tests.
struct TimingCounts {
  int input_sets = 0;     // sets drawn from get_inputs(), one per call of either side
  double make_s = 0;      // making them, on the parent's clock
  int checked_calls = 0;  // timed calls whose outputs were compared
  int traced_calls = 0;   // calls of the candidate run under the op trace
};

struct TimingOutcome {
  std::optional<Performance> performance;  // set when timing finished
  TimingCounts counts;
  std::string mismatch;               // set when a timed call's output differs
  std::optional<CheatFinding> cheat;  // a runtime finding of the timing (clock, op trace, memoization)
  bool call_failed = false;           // the exchange failed; it holds the reason
};

// How the timing phase tells whether other processes shared its cores: the
// leased cores' counters before and after the timed rounds (/proc/stat by
// default; scripted in tests) and this process's own CPU time. The workers
// report their own CPU time with every batch.
struct CoreLoadProbe {
  std::vector<int> cores;  // the cores the workers are pinned to; empty = every core
  std::function<std::optional<util::CpuStat>()> read_stat = util::read_cpu_stat;
  std::function<double()> own_cpu_s = util::own_cpu_seconds;
  double ticks_per_second = util::cpu_ticks_per_second();
  // Both sides' CPU time so far (ns), read from outside their processes
  // (Verification::sides_cpu_reader: their cgroups or process trees): when
  // set it stands for the workers' own reports, and
  // the share of other processes it gives is trusted to widen the clock
  // check's allowance for time between calls (a busy machine preempts
  // there too). Candidate code could fake that share by under-reporting.
  std::function<std::optional<double>()> sides_cpu_ns;
  // The workers' own reports may be trusted: an A/A run, where both sides
  // are the reference.
  bool worker_reports_trusted = false;
};

// Runs the timing phase. `note` receives one-line log entries.
// The parent's clock, in nanoseconds: what every figure of the timing is
// read from. Steady by default; tests pass a scripted one.
using TimingClock = std::function<double()>;
TimingClock steady_clock_ns();

TimingOutcome run_timing(const VerifierConfig& config, const TimingInputs& inputs, const Exchange& exchange,
                         const std::function<void(const std::string&)>& note, const CoreLoadProbe& load = {},
                         TimingClock clock = {});

// `contended`: other processes took more than this share of the leased
// cores while timing ran, so both sides were preempted and the times (and
// their intervals) describe a busy machine, not the kernels.
inline constexpr double kContendedShare = 0.10;

// The order of round `round`'s batches: reference, candidate, twin,
// candidate twin, then the mirror image, so that in a unit of two rounds
// each pair of workers takes both orders (see paired_speedup_estimate).
std::array<Role, 4> round_order(int round);

// `excessive_speedup`: more than this is rare enough to deserve a look.
inline constexpr double kExcessiveSpeedup = 10.0;
// A speedup interval whose upper end is more than this many times its lower
// says little about the kernel: flagged `uncertain`.
inline constexpr double kUncertainSpan = 2.0;
// Whether `speedup`'s interval is that wide (or has no lower end above 0).
inline bool uncertain_speedup(const SpeedupEstimate& speedup) {
  return speedup.ci95 && (speedup.ci95->lo <= 0 || speedup.ci95->hi > kUncertainSpan * speedup.ci95->lo);
}

}  // namespace kgym::verify
