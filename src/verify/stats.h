#pragma once
// Timing statistics as small pure functions over samples (any unit; the
// caller keeps units consistent). Deterministic: the bootstrap uses a fixed
// seed, so the same samples always give the same interval.
#include <cstdint>
#include <optional>
#include <vector>

#include "core/result.h"

namespace kgym::verify {

// Median (mean of the two middle values for an even count); nullopt if empty.
std::optional<double> median(std::vector<double> samples);

// Median absolute deviation from the median (unscaled); nullopt if empty.
std::optional<double> mad(const std::vector<double>& samples);

// Interquartile range (q3 - q1, linear interpolation between order
// statistics); nullopt for fewer than 2 samples.
std::optional<double> iqr(std::vector<double> samples);

// One flag per sample: true when it lies outside Tukey's fences
// [q1 - 1.5 IQR, q3 + 1.5 IQR]. All false for fewer than 4 samples.
std::vector<bool> outlier_flags(const std::vector<double>& samples);

// Standard error of the median, estimated from the MAD (sigma ~ 1.4826 MAD,
// se(median) ~ 1.2533 sigma / sqrt(n)): robust to the long right tail
// timings have. nullopt for fewer than 2 samples.
std::optional<double> median_se(const std::vector<double>& samples);

struct BootstrapOptions {
  int resamples = 2000;
  std::uint64_t seed = 0x6b67796d;  // fixed: results are reproducible
};

// 95% percentile-bootstrap interval of the median; nullopt for fewer than 2
// samples.
std::optional<Interval> median_ci95(const std::vector<double>& samples, BootstrapOptions options = {});

// speedup = median(reference) / median(candidate) with a 95% bootstrap
// interval of that ratio (both sides resampled independently). Returns
// nullopt when either side is empty or the candidate median is not > 0.
std::optional<SpeedupEstimate> speedup_estimate(const std::vector<double>& reference,
                                                const std::vector<double>& candidate,
                                                BootstrapOptions options = {});

// Samples grouped by the batch (block) that produced them, in time order.
using Blocks = std::vector<std::vector<double>>;

// The same ratio over samples taken in blocks, where block i of the
// reference and block i of the candidate were measured next to each other
// (one alternation round), the order alternating from round to round
// (A B, B A, A B, ...). Each unit of two consecutive rounds (A B B A) gives
// one ratio of batch medians: the geometric mean of its two rounds' ratios,
// so going first or second and a steady drift cancel within it. The
// speedup is the median of the units' ratios and its interval a bootstrap
// over units. Load, frequency or a neighbour on the core that moves the
// batches of a unit together cancels too, also when it comes and goes in
// regimes that would make pooled medians jump. With fewer than
// kMinBootstrapBlocks units it falls back to the pooled medians with single
// samples resampled. Extra blocks on either side are left out.
inline constexpr std::size_t kMinBootstrapBlocks = 4;
std::optional<SpeedupEstimate> paired_speedup_estimate(const Blocks& reference, const Blocks& candidate,
                                                       BootstrapOptions options = {});

// One single-value block per round: the geometric mean of block k's
// medians on either side (rounds where either is empty or not > 0 are
// empty). Two workers timing the same thing in the same rounds become one
// side whose time is less tied to either process.
Blocks geometric_mean_blocks(const Blocks& a, const Blocks& b);

// The relative standard error of that paired speedup: median_se of the
// units' log ratios (a difference of logs is a relative one). nullopt for
// fewer than 2 units.
std::optional<double> paired_speedup_rse(const Blocks& reference, const Blocks& candidate);

// The speedup's interval widened by what the timing cannot see from within
// one pair of processes: two processes running the same code on the same
// inputs differ by an amount that stays fixed for their lifetime (on a
// 2-core VM, 1-2 % for most samples and up to 10 % for a 0.1 ms RMSNorm;
// it stayed with ASLR off, identical allocation histories, fixed string
// hashing and a fresh fork per batch), so a paired interval over rounds
// alone misses it. An A/A noise floor — one side's worker against a second
// worker of that side, timed in the same rounds — shows that difference;
// each bound of `speedup` moves away from its median, in log space, by the
// floor's estimate of it (how far its median lies from 1) and one standard
// error of that estimate (a quarter of its interval's width), in
// quadrature, added in quadrature to the bound's own distance. The median
// stays. Unchanged when either interval is missing. Applied once per
// side's floor, the two add in quadrature: with the speedup from two
// processes per side, that is about two standard deviations of the process
// term. (The floor's far end, used before, counted the rounds' noise a
// second time, which the paired interval already holds: over the 348
// KernelBench A/A cases of two campaigns, median widths fell by about
// half, 0.506 -> 0.280 on level 1, and as many intervals held 1.)
SpeedupEstimate widen_by_noise_floor(const SpeedupEstimate& speedup, const SpeedupEstimate& noise_floor);

// A timing side in milliseconds from samples in nanoseconds.
TimingSide timing_side_from_ns(const std::vector<double>& samples_ns, BootstrapOptions options = {});

}  // namespace kgym::verify
