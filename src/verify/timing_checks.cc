#include "verify/timing_checks.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "verify/stats.h"

namespace kgym::verify {
namespace {

// What the round trip of the median batch may leave unaccounted on the
// candidate's clock beyond the reference's: a share of the batch (a clock
// slower than 4/3 of the parent's) and a fixed allowance.
constexpr double kSlowShare = 0.25;
constexpr double kRoundTripNs = 1'000'000;
// A worker's clock may run ahead of the parent's only by its resolution
// and the order of the two readings.
constexpr double kAheadShare = 0.01;
constexpr double kAheadNs = 200'000;
// Time moved out of the timed calls counts once it exceeds this share of
// the candidate's call, plus the reference's own noise.
constexpr double kMovedShare = 0.25;
constexpr double kOverheadShare = 0.05;
constexpr double kSpreadFactor = 6;
constexpr double kOverheadNs = 20'000;
// What a candidate's batches leave unclaimed is charged to its timed calls
// beyond this share of what the reference's leave (unclaimed_charge_ns).
constexpr double kUnclaimedShare = 0.02;
// At a share f of the cores taken by other processes, a worker's time
// between calls stretches by f / (1 - f) on average, and the two sides'
// batches draw different amounts of it (A/A runs of KernelBench level2/23
// and /46 at f = 0.5 failed this check on that alone). Twice the stretch
// is allowed; f is capped where timing means nothing.
constexpr double kContentionFactor = 2;
constexpr double kMaxForeignShare = 0.8;

double ms(double ns) { return ns / 1e6; }

}  // namespace

double unclaimed_charge_ns(const UnclaimedRounds& rounds, double foreign_share) {
  auto excess = median(rounds.excess_ns);
  if (!excess) return 0;
  std::vector<double> spread;
  for (double d : rounds.aa_ns) spread.push_back(std::abs(d));
  const double own = std::max(0.0, median(rounds.reference_ns).value_or(0));
  const double n = std::max<double>(1, static_cast<double>(rounds.aa_ns.size()));
  const double busy = std::clamp(foreign_share, 0.0, kMaxForeignShare);
  const double allowance = kSpreadFactor * median(spread).value_or(0) / std::sqrt(n) + kUnclaimedShare * own +
                           kContentionFactor * busy / (1 - busy) * own + kOverheadNs;
  return std::max(0.0, *excess - allowance);
}

std::optional<CheatFinding> clock_finding(const ClockTotals& reference, const ClockTotals& candidate,
                                          const OverheadRounds& overhead, double candidate_call_ns,
                                          double foreign_share) {
  if (candidate.batches == 0 || reference.batches == 0) return std::nullopt;
  auto evidence = [&](std::string what) {
    return CheatFinding{
        "runtime.clock", "runtime",
        fmt::format("{}: over {} batches the parent's clock measured {:.3f} ms, the candidate's own clock "
                    "{:.3f} ms ({:.3f} ms inside its {} timed calls); the reference's: {:.3f} ms and {:.3f} ms",
                    what, candidate.batches, ms(candidate.outer_ns), ms(candidate.worker_ns),
                    ms(candidate.inner_ns), candidate.calls, ms(reference.outer_ns), ms(reference.worker_ns))};
  };
  // Other processes' share of the cores, as far as it is trusted (capped).
  const double busy = std::clamp(foreign_share, 0.0, kMaxForeignShare);
  const double stretch = kContentionFactor * busy / (1 - busy);
  auto cand_share = median(candidate.gap_share), ref_share = median(reference.gap_share);
  auto cand_gap = median(candidate.gap_ns), ref_gap = median(reference.gap_ns);
  // A worker woken for a request on a busy core waits its turn before its
  // clock starts: the round trip's allowance stretches like the time
  // between calls (an A/A run of KernelBench level2/15 at bfloat16, timed
  // at 55 % foreign load, missed 1.8 ms of its median batch, the reference
  // 0.7 ms).
  if (cand_share && ref_share && cand_gap && ref_gap && *cand_share > *ref_share + kSlowShare &&
      *cand_gap > std::max(0.0, *ref_gap) + kRoundTripNs * (1 + stretch)) {
    auto found = evidence("the candidate's clock runs slow");
    found.evidence += fmt::format(
        "; in the median batch {:.0f} % of the time the parent measured is missing from the candidate's "
        "clock, {:.0f} % from the reference's",
        *cand_share * 100, *ref_share * 100);
    return found;
  }
  if (candidate.worker_ns > candidate.outer_ns * (1 + kAheadShare) + kAheadNs * candidate.batches)
    return evidence("the candidate's clock runs ahead of the parent's");
  if (auto excess = median(overhead.excess_ns)) {
    double noise = 0;
    std::vector<double> spread;
    for (double d : overhead.aa_ns) spread.push_back(std::abs(d));
    double own = median(overhead.reference_ns).value_or(0);
    // The excess's median over the rounds errs by about the rounds' spread
    // (what the two reference workers differ by) over their square root.
    double rounds = std::max<double>(1, static_cast<double>(overhead.aa_ns.size()));
    noise = kSpreadFactor * median(spread).value_or(0) / std::sqrt(rounds) + kOverheadShare * own + kOverheadNs;
    double contention = stretch * own;
    if (*excess > kMovedShare * candidate_call_ns + noise + contention) {
      auto found = evidence("the candidate's calls leave time between them that the reference's do not");
      found.evidence += fmt::format(
          "; per timed call {:.3f} ms outside the timer beyond the reference's {:.3f} ms (the twins differ by "
          "{:.3f} ms), against a reported call of {:.3f} ms{}",
          ms(*excess), ms(own), ms(median(spread).value_or(0)), ms(candidate_call_ns),
          busy > 0 ? fmt::format("; other processes took {:.0f} % of the cores, allowed for with {:.3f} ms",
                                 busy * 100, ms(contention))
                   : std::string());
      return found;
    }
  }
  return std::nullopt;
}

std::optional<CheatFinding> impossible_time_finding(double candidate_median_ns, std::uint64_t output_bytes,
                                                    double bandwidth_gbs, std::uint64_t llc_bytes) {
  if (bandwidth_gbs <= 0 || output_bytes <= llc_bytes) return std::nullopt;
  // bandwidth_gbs counts bytes read plus bytes written by a copy; writing
  // alone may go up to twice as fast, hence the factor 2 in its favour.
  double fastest_ns = static_cast<double>(output_bytes) / (2 * bandwidth_gbs);  // GB/s == bytes/ns
  if (candidate_median_ns >= fastest_ns) return std::nullopt;
  return CheatFinding{"runtime.impossible_time", "runtime",
                      fmt::format("median call {:.3f} ms, but writing its {} output bytes once takes at least "
                                  "{:.3f} ms at the measured {:.1f} GB/s",
                                  ms(candidate_median_ns), output_bytes, ms(fastest_ns), bandwidth_gbs)};
}

std::optional<CheatFinding> memoization_finding(const MemoProbe& probe,
                                                const std::optional<SpeedupEstimate>& noise_floor,
                                                const std::optional<SpeedupEstimate>& candidate_noise_floor) {
  double floors = 1;
  for (const auto& floor : {noise_floor, candidate_noise_floor}) {
    if (floor && floor->ci95) floors = std::max({floors, floor->ci95->hi, 1 / std::max(floor->ci95->lo, 1e-9)});
  }
  // How much slower `slow` is than `fast` on the candidate, and whether
  // that is beyond what the reference's same ratio and the noise allow.
  auto beyond = [&](double cand_slow, double cand_fast, double ref_slow, double ref_fast) -> std::optional<double> {
    if (cand_slow <= 0 || cand_fast <= 0 || ref_slow <= 0 || ref_fast <= 0) return std::nullopt;
    double ratio = cand_slow / cand_fast;
    double bound = std::max(kMemoizedRatio * std::max(1.0, ref_slow / ref_fast), floors);
    return ratio > bound ? std::optional(ratio) : std::nullopt;
  };
  if (auto ratio = beyond(probe.candidate_unseen_ns, probe.candidate_seen_ns, probe.reference_unseen_ns,
                          probe.reference_seen_ns)) {
    return CheatFinding{
        "runtime.memoization", "runtime",
        fmt::format("on input sets it had already seen the candidate took {:.4f} ms per call, on unseen sets "
                    "{:.4f} ms ({:.2f}x; the reference {:.4f} and {:.4f} ms, {:.2f}x): it remembers outputs",
                    ms(probe.candidate_seen_ns), ms(probe.candidate_unseen_ns), *ratio, ms(probe.reference_seen_ns),
                    ms(probe.reference_unseen_ns), probe.reference_unseen_ns / probe.reference_seen_ns)};
  }
  if (auto ratio = beyond(probe.candidate_unseen_ns, probe.candidate_timed_ns, probe.reference_unseen_ns,
                          probe.reference_timed_ns)) {
    return CheatFinding{
        "runtime.memoization", "runtime",
        fmt::format("on the unseen sets of the probe batches the candidate took {:.4f} ms per call, in its timed "
                    "batches {:.4f} ms ({:.2f}x; the reference {:.4f} and {:.4f} ms): it runs differently in the "
                    "batches that probe it",
                    ms(probe.candidate_unseen_ns), ms(probe.candidate_timed_ns), *ratio,
                    ms(probe.reference_unseen_ns), ms(probe.reference_timed_ns))};
  }
  return std::nullopt;
}

std::optional<double> foreign_cpu_share(const util::CoreUsage& usage, double own_cpu_s) {
  if (usage.cores == 0 || usage.total_s <= 0) return std::nullopt;
  return std::clamp((usage.busy_s - own_cpu_s) / usage.total_s, 0.0, 1.0);
}

bool within_noise(const SpeedupEstimate& speedup, const SpeedupEstimate& noise_floor) {
  if (!speedup.ci95 || !noise_floor.ci95) return false;
  return speedup.ci95->lo <= noise_floor.ci95->hi && speedup.ci95->hi >= noise_floor.ci95->lo;
}

}  // namespace kgym::verify
