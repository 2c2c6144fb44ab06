#include "verify/stats.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace kgym::verify {
namespace {

std::vector<double> resample(const std::vector<double>& samples, std::mt19937_64& rng) {
  std::uniform_int_distribution<std::size_t> pick(0, samples.size() - 1);
  std::vector<double> out(samples.size());
  for (auto& v : out) v = samples[pick(rng)];
  return out;
}

// Quantile q of sorted values, interpolating linearly between neighbours.
double sorted_quantile(const std::vector<double>& sorted, double q) {
  double pos = q * static_cast<double>(sorted.size() - 1);
  auto below = static_cast<std::size_t>(std::floor(pos));
  auto above = std::min(below + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(below);
  return sorted[below] + frac * (sorted[above] - sorted[below]);
}

Interval percentile_interval(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  auto at = [&](double q) {
    auto index = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
    return values[std::min(index, values.size() - 1)];
  };
  return Interval{at(0.025), at(0.975)};
}

std::vector<double> flatten(const Blocks& blocks) {
  std::vector<double> out;
  for (const auto& block : blocks) out.insert(out.end(), block.begin(), block.end());
  return out;
}

}  // namespace

std::optional<double> median(std::vector<double> samples) {
  if (samples.empty()) return std::nullopt;
  auto mid = samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 2);
  std::nth_element(samples.begin(), mid, samples.end());
  double upper = *mid;
  if (samples.size() % 2 == 1) return upper;
  double lower = *std::max_element(samples.begin(), mid);
  return (lower + upper) / 2;
}

std::optional<double> mad(const std::vector<double>& samples) {
  auto center = median(samples);
  if (!center) return std::nullopt;
  std::vector<double> deviations;
  deviations.reserve(samples.size());
  for (double v : samples) deviations.push_back(std::abs(v - *center));
  return median(std::move(deviations));
}

std::optional<double> iqr(std::vector<double> samples) {
  if (samples.size() < 2) return std::nullopt;
  std::sort(samples.begin(), samples.end());
  return sorted_quantile(samples, 0.75) - sorted_quantile(samples, 0.25);
}

std::vector<bool> outlier_flags(const std::vector<double>& samples) {
  std::vector<bool> flags(samples.size(), false);
  if (samples.size() < 4) return flags;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  double q1 = sorted_quantile(sorted, 0.25), q3 = sorted_quantile(sorted, 0.75);
  double lo = q1 - 1.5 * (q3 - q1), hi = q3 + 1.5 * (q3 - q1);
  for (std::size_t i = 0; i < samples.size(); ++i) flags[i] = samples[i] < lo || samples[i] > hi;
  return flags;
}

std::optional<double> median_se(const std::vector<double>& samples) {
  if (samples.size() < 2) return std::nullopt;
  double sigma = 1.4826 * *mad(samples);
  return 1.2533 * sigma / std::sqrt(static_cast<double>(samples.size()));
}

std::optional<Interval> median_ci95(const std::vector<double>& samples, BootstrapOptions options) {
  if (samples.size() < 2 || options.resamples < 1) return std::nullopt;
  std::mt19937_64 rng(options.seed);
  std::vector<double> medians;
  medians.reserve(static_cast<std::size_t>(options.resamples));
  for (int i = 0; i < options.resamples; ++i) medians.push_back(*median(resample(samples, rng)));
  return percentile_interval(std::move(medians));
}

std::optional<SpeedupEstimate> speedup_estimate(const std::vector<double>& reference,
                                                const std::vector<double>& candidate,
                                                BootstrapOptions options) {
  auto ref_median = median(reference);
  auto cand_median = median(candidate);
  if (!ref_median || !cand_median || *cand_median <= 0) return std::nullopt;
  SpeedupEstimate estimate{*ref_median / *cand_median, std::nullopt};
  if (reference.size() < 2 || candidate.size() < 2 || options.resamples < 1) return estimate;
  std::mt19937_64 rng(options.seed);
  std::vector<double> ratios;
  ratios.reserve(static_cast<std::size_t>(options.resamples));
  for (int i = 0; i < options.resamples; ++i) {
    double r = *median(resample(reference, rng));
    double c = *median(resample(candidate, rng));
    if (c > 0) ratios.push_back(r / c);
  }
  if (!ratios.empty()) estimate.ci95 = percentile_interval(std::move(ratios));
  return estimate;
}

namespace {

// One log(reference median / candidate median) per unit of two
// consecutive rounds (the mean of the two rounds' logs), rounds whose
// medians are not both > 0 left out. The timing alternates the order
// within a round (A B, then B A), so a unit is A B B A: an advantage of
// going first or second, and a steady drift, cancel inside it.
std::vector<double> unit_log_ratios(const Blocks& reference, const Blocks& candidate) {
  std::vector<double> rounds;
  std::size_t pairs = std::min(reference.size(), candidate.size());
  for (std::size_t k = 0; k < pairs; ++k) {
    auto r = median(reference[k]), c = median(candidate[k]);
    rounds.push_back(r && c && *r > 0 && *c > 0 ? std::log(*r) - std::log(*c) : NAN);
  }
  std::vector<double> units;
  for (std::size_t k = 0; k + 1 < rounds.size(); k += 2) {
    if (!std::isnan(rounds[k]) && !std::isnan(rounds[k + 1]))
      units.push_back((rounds[k] + rounds[k + 1]) / 2);
  }
  return units;
}

}  // namespace

Blocks geometric_mean_blocks(const Blocks& a, const Blocks& b) {
  Blocks out;
  for (std::size_t k = 0; k < std::min(a.size(), b.size()); ++k) {
    auto x = median(a[k]), y = median(b[k]);
    out.push_back(x && y && *x > 0 && *y > 0 ? std::vector<double>{std::sqrt(*x * *y)}
                                             : std::vector<double>{});
  }
  return out;
}

std::optional<double> paired_speedup_rse(const Blocks& reference, const Blocks& candidate) {
  return median_se(unit_log_ratios(reference, candidate));
}

std::optional<SpeedupEstimate> paired_speedup_estimate(const Blocks& reference, const Blocks& candidate,
                                                       BootstrapOptions options) {
  auto logs = unit_log_ratios(reference, candidate);
  if (logs.size() < kMinBootstrapBlocks)
    return speedup_estimate(flatten(reference), flatten(candidate), options);
  SpeedupEstimate estimate{std::exp(*median(logs)), std::nullopt};
  if (options.resamples < 1) return estimate;
  std::mt19937_64 rng(options.seed);
  std::vector<double> ratios;
  ratios.reserve(static_cast<std::size_t>(options.resamples));
  for (int i = 0; i < options.resamples; ++i) ratios.push_back(std::exp(*median(resample(logs, rng))));
  estimate.ci95 = percentile_interval(std::move(ratios));
  return estimate;
}

SpeedupEstimate widen_by_noise_floor(const SpeedupEstimate& speedup, const SpeedupEstimate& noise_floor) {
  if (!speedup.ci95 || !noise_floor.ci95 || speedup.median <= 0 || speedup.ci95->lo <= 0 ||
      noise_floor.median <= 0 || noise_floor.ci95->lo <= 0)
    return speedup;
  double process = std::log(noise_floor.median);
  double its_error = (std::log(noise_floor.ci95->hi) - std::log(noise_floor.ci95->lo)) / 4;
  double reach = std::hypot(process, its_error);
  double center = std::log(speedup.median);
  double below = std::max(0.0, center - std::log(speedup.ci95->lo));
  double above = std::max(0.0, std::log(speedup.ci95->hi) - center);
  SpeedupEstimate widened = speedup;
  widened.ci95 =
      Interval{std::exp(center - std::hypot(below, reach)), std::exp(center + std::hypot(above, reach))};
  return widened;
}

TimingSide timing_side_from_ns(const std::vector<double>& samples_ns, BootstrapOptions options) {
  TimingSide side;
  side.samples = static_cast<int>(samples_ns.size());
  side.median_ms = median(samples_ns).value_or(0) / 1e6;
  if (auto ci = median_ci95(samples_ns, options)) side.ci95_ms = Interval{ci->lo / 1e6, ci->hi / 1e6};
  if (auto spread = mad(samples_ns)) side.mad_ms = *spread / 1e6;
  if (samples_ns.size() >= 4) {
    auto flags = outlier_flags(samples_ns);
    side.outliers = static_cast<int>(std::count(flags.begin(), flags.end(), true));
  }
  return side;
}

}  // namespace kgym::verify
