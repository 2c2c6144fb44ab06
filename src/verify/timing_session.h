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

#include "core/config.h"
#include "core/result.h"
#include "util/cpu_stat.h"
#include "worker/protocol.h"
#include "verify/stats.h"

namespace kgym::verify {

// kTwin and kCandidateTwin: a second worker of the reference and of the
// candidate, the same code, weights and inputs in another process, timed
// for the noise floors (two processes of one program differ).
enum class TimedSide { kReference, kCandidate, kTwin, kCandidateTwin };

// Sends one request to a side and returns its successful reply, or nullopt
// when the call failed (the exchange has then recorded why).
using Exchange =
    std::function<std::optional<Message>(TimedSide side, const Message& request, std::string_view what)>;

struct TimingInputs {
  std::string blob;                // serialized inputs, relayed to both sides
  std::uint64_t output_bytes = 0;  // bytes of one call's outputs
  std::uint64_t check_seed = 0;    // picks which timed call of a batch is re-checked
};

struct TimingOutcome {
  std::optional<Performance> performance;  // set when timing finished
  std::string mismatch;                    // set when a timed call's output differs
  bool call_failed = false;                // the exchange failed; it holds the reason
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
};

// Runs the timing phase. `note` receives one-line log entries.
TimingOutcome run_timing(const VerifierConfig& config, const TimingInputs& inputs, const Exchange& exchange,
                         const std::function<void(const std::string&)>& note, const CoreLoadProbe& load = {});

// The share (0..1) of the cores' capacity that other processes used: their
// busy time less what this verification itself spent (`own_cpu_s`: both
// workers and the parent), over the elapsed core time. nullopt when no core
// time elapsed. Tick counters are coarse (10 ms), so a share of a few
// percent is within their resolution.
std::optional<double> foreign_cpu_share(const util::CoreUsage& usage, double own_cpu_s);

// `contended`: other processes took more than this share of the leased
// cores while timing ran, so both sides were preempted and the times (and
// their intervals) describe a busy machine, not the kernels.
inline constexpr double kContendedShare = 0.10;

// The order of round `round`'s batches: reference, candidate, twin,
// candidate twin, then the mirror image, so that in a unit of two rounds
// each pair of workers takes both orders (see paired_speedup_estimate).
std::array<TimedSide, 4> round_order(int round);

// ---- Plausibility checks of a timing, as pure functions over what the parent
// observed. Each returns true when the flag it names should be raised.

// What one side's timed batches added up to: the worker's own per-call
// times (inner) and the parent's steady clock around each request (outer).
struct ClockTotals {
  double inner_ns = 0;  // sum of the per-call times the worker reported
  double outer_ns = 0;  // sum of request-to-response times the parent measured
  int calls = 0;        // timed calls in those batches
};

// `outer_clock_mismatch`: a side reports more time inside its calls than
// passed outside them (the inner clock lies), or the candidate's calls leave
// far more time unaccounted for than the reference's while its inner share
// is implausibly small (work moved outside the timed window). Both sides
// pay the same cloning, cache flushing and protocol cost per call, so their
// unaccounted time per call should be alike.
bool outer_clock_mismatch(const ClockTotals& reference, const ClockTotals& candidate);

// `impossible_time`: the candidate's median call is shorter than writing
// its outputs once at the measured memory bandwidth allows. Outputs that fit
// in the last-level cache can be written faster than memory, so they are
// never flagged.
bool impossible_time(double candidate_median_ns, std::uint64_t output_bytes, double bandwidth_gbs,
                     std::uint64_t llc_bytes);

// `within_noise`: the speedup's interval overlaps the spread of an A/A
// noise floor, so it cannot be told apart from a side against itself.
bool within_noise(const SpeedupEstimate& speedup, const SpeedupEstimate& noise_floor);

// `excessive_speedup`: more than this is rare enough to deserve a look.
inline constexpr double kExcessiveSpeedup = 10.0;

}  // namespace kgym::verify
