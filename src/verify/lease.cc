#include "verify/lease.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace kgym::verify {
namespace {

// Rounding of `readings` tick-resolution deltas: each is off by less than
// one tick, in either direction, so their sum drifts like a random walk.
double rounding_ns(double resolution_ns, int readings) {
  return resolution_ns * (2.0 + 2.0 * std::sqrt(static_cast<double>(std::max(readings, 0))));
}

std::string ms(double ns) { return fmt::format("{:.1f} ms", ns / 1e6); }

}  // namespace

double background_allowance_ns(const LeaseAllowance& allowance, const LeaseFigures& figures) {
  double base = allowance.background_ns + rounding_ns(allowance.resolution_ns, figures.idle_readings);
  if (figures.idle_reference_cpu_ns) {
    // idle <= share x (idle + reference), with the reference's own rounding
    // counted in its favour.
    double share = std::clamp(allowance.contested_share, 0.0, 0.99);
    double reference =
        *figures.idle_reference_cpu_ns + rounding_ns(allowance.resolution_ns, figures.idle_readings);
    return base + share / (1 - share) * reference;
  }
  return base + allowance.wall_share * figures.idle_wall_ns;
}

LeaseWatch::LeaseWatch(LeaseAllowance allowance, CpuReader candidate_cpu, CpuReader reference_cpu)
    : allowance_(allowance), read_(std::move(candidate_cpu)), read_reference_(std::move(reference_cpu)) {
  if (read_reference_) figures_.idle_reference_cpu_ns = 0;
}

bool LeaseWatch::mark(double now_ns, Deltas& deltas) {
  if (!readable_) return false;
  auto cpu = read_();
  if (!cpu) {
    readable_ = false;
    return false;
  }
  std::optional<double> reference;
  if (figures_.idle_reference_cpu_ns) {
    reference = read_reference_();
    // A reference that cannot be read once cannot be compared with at all.
    if (!reference) figures_.idle_reference_cpu_ns.reset();
  }
  bool had_mark = mark_cpu_.has_value();
  if (had_mark) {
    deltas.cpu = std::max(0.0, *cpu - *mark_cpu_);
    deltas.wall = std::max(0.0, now_ns - mark_ns_);
    if (reference && mark_reference_cpu_)
      deltas.reference_cpu = std::max(0.0, *reference - *mark_reference_cpu_);
  }
  mark_cpu_ = *cpu;
  mark_reference_cpu_ = reference;
  mark_ns_ = now_ns;
  return had_mark;
}

void LeaseWatch::add_idle(const Deltas& deltas) {
  figures_.idle_cpu_ns += deltas.cpu;
  figures_.idle_wall_ns += deltas.wall;
  if (figures_.idle_reference_cpu_ns) {
    if (deltas.reference_cpu)
      *figures_.idle_reference_cpu_ns += *deltas.reference_cpu;
    else
      figures_.idle_reference_cpu_ns.reset();
  }
  ++figures_.idle_readings;
}

std::optional<CheatFinding> LeaseWatch::before_request(bool candidate, double now_ns) {
  if (!candidate) return std::nullopt;
  Deltas deltas;
  bool idle = idle_since_mark_;
  idle_since_mark_ = false;
  if (!mark(now_ns, deltas) || !idle) return std::nullopt;
  add_idle(deltas);
  return check_background();
}

std::optional<CheatFinding> LeaseWatch::after_reply(bool candidate, double now_ns) {
  if (!candidate) return std::nullopt;
  Deltas deltas;
  if (!mark(now_ns, deltas)) return std::nullopt;
  idle_since_mark_ = true;
  figures_.batch_cpu_ns += deltas.cpu;
  figures_.batch_wall_ns += deltas.wall;
  ++figures_.batches;
  double allowed = allowance_.cores * figures_.batch_wall_ns * allowance_.cpu_share +
                   allowance_.cpu_slack_ns + rounding_ns(allowance_.resolution_ns, figures_.batches);
  if (figures_.batch_cpu_ns <= allowed) return std::nullopt;
  return CheatFinding{
      "runtime.lease", "runtime",
      fmt::format("the candidate's processes used {} of CPU time in {} timed batches that took {} of wall "
                  "time: {:.2f} cores busy on a lease of {} (allowed {})",
                  ms(figures_.batch_cpu_ns), figures_.batches, ms(figures_.batch_wall_ns),
                  figures_.batch_cpu_ns / std::max(figures_.batch_wall_ns, 1.0), allowance_.cores,
                  ms(allowed))};
}

std::optional<CheatFinding> LeaseWatch::finish(double now_ns) {
  if (!idle_since_mark_) return std::nullopt;
  Deltas deltas;
  idle_since_mark_ = false;
  if (!mark(now_ns, deltas)) return std::nullopt;
  add_idle(deltas);
  return check_background();
}

std::optional<CheatFinding> LeaseWatch::check_background() const {
  double allowed = background_allowance_ns(allowance_, figures_);
  if (figures_.idle_cpu_ns <= allowed) return std::nullopt;
  std::string against;
  if (figures_.idle_reference_cpu_ns) {
    double both = figures_.idle_cpu_ns + *figures_.idle_reference_cpu_ns;
    against = fmt::format(
        "; the reference's side used {} over the same windows, so the candidate took {:.0f} % "
        "of the CPU time both sides used (allowed {} + {:.0f} %)",
        ms(*figures_.idle_reference_cpu_ns), 100 * figures_.idle_cpu_ns / std::max(both, 1.0),
        ms(allowance_.background_ns), 100 * allowance_.contested_share);
  }
  return CheatFinding{
      "runtime.background_work", "runtime",
      fmt::format("the candidate's processes used {} of CPU time while none of them was being called ({} "
                  "between its batches, the reference's included; allowed {}){}",
                  ms(figures_.idle_cpu_ns), ms(figures_.idle_wall_ns), ms(allowed), against)};
}

std::string LeaseWatch::describe() const {
  if (!readable_) return "lease: the candidate's CPU time could not be read; not checked";
  std::string reference = figures_.idle_reference_cpu_ns
                              ? fmt::format(", the reference's side {} over the same windows",
                                            ms(*figures_.idle_reference_cpu_ns))
                              : std::string(", the reference's side not read (judged by wall time)");
  return fmt::format(
      "lease: candidate CPU {} in {} timed batches of {} wall ({:.2f} of {} cores); {} between its calls "
      "over {}{} (allowed {})",
      ms(figures_.batch_cpu_ns), figures_.batches, ms(figures_.batch_wall_ns),
      figures_.batch_cpu_ns / std::max(figures_.batch_wall_ns, 1.0), allowance_.cores,
      ms(figures_.idle_cpu_ns), ms(figures_.idle_wall_ns), reference,
      ms(background_allowance_ns(allowance_, figures_)));
}

}  // namespace kgym::verify
