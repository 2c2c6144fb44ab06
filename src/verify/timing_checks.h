#pragma once
// The integrity checks of a timing (docs/anti-cheat.md "Timing"), as pure
// functions over what the parent observed: its own clock around every batch
// against the worker's, the candidate's times against what memory allows,
// its speed on input sets it has seen against unseen ones. Each returns the
// finding that ends the verification with fail_cheat, or nullopt.
#include <cstdint>
#include <optional>
#include <vector>

#include "core/result.h"
#include "util/cpu_stat.h"

namespace kgym::verify {

// What one side's batches (its worker and its twin) added up to.
struct ClockTotals {
  double outer_ns = 0;   // the parent's clock from sending each request to its reply
  double worker_ns = 0;  // the worker's own clock from the request's arrival to its reply
  double inner_ns = 0;   // the per-call times it reported for its timed, untraced calls
  int calls = 0;         // those calls
  int batches = 0;
  // Per batch: what the parent saw pass beyond the worker's account, and
  // that as a share of the batch. A late wake-up on a busy machine widens
  // a few batches' gaps; a slow clock widens every one.
  std::vector<double> gap_ns;
  std::vector<double> gap_share;
};

// Per round, the time a worker spent in a batch outside its timed calls
// (cloning inputs, copying outputs, tracing), per timed call, for the
// candidate's workers less the reference's on the same inputs
// (`excess_ns`) and for the reference's twin less the reference (`aa_ns`:
// what two honest processes differ by).
struct OverheadRounds {
  std::vector<double> excess_ns;
  std::vector<double> aa_ns;
  std::vector<double> reference_ns;  // the reference's own, per timed call
};

// `runtime.clock`: the candidate's clock disagrees with the parent's. Either
// its worker's median batch reports less time than the parent saw pass,
// beyond what the round trip explains (the reference's own median gap shows
// what it explains): a clock that runs slow; or more than the parent saw (one that
// runs fast); or it moves time out of its timed calls into the work
// between them, which both sides do alike (a clock slow only inside the
// call and fast outside it, so that the totals agree). Evidence names both
// clocks' figures. `foreign_share`: other processes' share of the leased
// cores while timing ran, measured where the candidate cannot fake it (0
// when unknown). They preempt a worker between its calls as inside them,
// unevenly between the sides' batches, so the allowance for moved time
// grows with it, in proportion to the reference's own time between calls.
std::optional<CheatFinding> clock_finding(const ClockTotals& reference, const ClockTotals& candidate,
                                          const OverheadRounds& overhead, double candidate_call_ns,
                                          double foreign_share = 0);

// Per round, what a worker's batch left unclaimed: the parent's clock
// around it less the timed calls its worker reported, beyond what the
// reference's batch of the same round left unclaimed (the reference's
// untimed calls scaled by the two sides' timed medians), per timed call.
// `excess_ns`: the candidate's two workers (less what was already charged
// to them batch by batch); `aa_ns`: the reference's twin against the
// reference, what two honest processes differ by; `reference_ns`: the
// reference's own unclaimed time per timed call.
struct UnclaimedRounds {
  std::vector<double> excess_ns;
  std::vector<double> aa_ns;
  std::vector<double> reference_ns;
};

// The time per timed call charged to each of the candidate's timed calls
// where the figures are the workers' own clocks: the median of what its
// batches left unclaimed beyond the reference's, less an allowance for
// noise (what the two reference workers differ by over the square root of
// the rounds, a share of the reference's own unclaimed time, and as much
// again per share of the cores other processes took); 0 within it. A
// worker that under-reports its timed calls, wherever it puts the time it
// hid (in its untimed calls, between its calls, before its reply), is
// charged it back beyond the allowance.
double unclaimed_charge_ns(const UnclaimedRounds& rounds, double foreign_share = 0);

// `runtime.impossible_time`: the candidate's median call is shorter than
// writing its outputs once at the measured memory bandwidth allows. Outputs
// that fit in the last-level cache can be written faster than memory, so
// they are never held against it.
std::optional<CheatFinding> impossible_time_finding(double candidate_median_ns, std::uint64_t output_bytes,
                                                    double bandwidth_gbs, std::uint64_t llc_bytes);

// The memoization probe, whose batches run inside the timed rounds: the
// first quartile of the times per call of each side on input sets the
// candidate had been handed before, on unseen ones, and (`*_timed_ns`) in
// its timed batches. 0 where a kind has no call.
struct MemoProbe {
  double candidate_seen_ns = 0, candidate_unseen_ns = 0, candidate_timed_ns = 0;
  double reference_seen_ns = 0, reference_unseen_ns = 0, reference_timed_ns = 0;
};

// `runtime.memoization`: the candidate is markedly faster on seen sets than
// on unseen ones, or markedly slower on the unseen sets of a probe batch
// than in its timed batches (it tells a probe batch from a timed one): by
// more than kMemoizedRatio, more than the reference's own ratio allows,
// and beyond both noise floors' intervals.
std::optional<CheatFinding> memoization_finding(const MemoProbe& probe,
                                                const std::optional<SpeedupEstimate>& noise_floor,
                                                const std::optional<SpeedupEstimate>& candidate_noise_floor);
inline constexpr double kMemoizedRatio = 1.5;

// The share (0..1) of the cores' capacity that other processes used: their
// busy time less what this verification itself spent (`own_cpu_s`: both
// workers and the parent), over the elapsed core time. nullopt when no core
// time elapsed. Tick counters are coarse (10 ms), so a share of a few
// percent is within their resolution.
std::optional<double> foreign_cpu_share(const util::CoreUsage& usage, double own_cpu_s);

// `within_noise`: the speedup's interval overlaps the spread of an A/A
// noise floor, so it cannot be told apart from a side against itself.
bool within_noise(const SpeedupEstimate& speedup, const SpeedupEstimate& noise_floor);

}  // namespace kgym::verify
