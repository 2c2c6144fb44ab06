#include "verify/lease.h"

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

double background_allowance_ns(const LeaseAllowance& allowance, const LeaseFigures& figures, int readings) {
  return allowance.background_ns + allowance.background_share * figures.idle_wall_ns +
         rounding_ns(allowance.resolution_ns, readings);
}

bool LeaseWatch::mark(double now_ns, double& cpu_delta, double& wall_delta) {
  if (!readable_) return false;
  auto cpu = read_();
  if (!cpu) {
    readable_ = false;
    return false;
  }
  cpu_delta = mark_cpu_ ? std::max(0.0, *cpu - *mark_cpu_) : 0;
  wall_delta = mark_cpu_ ? std::max(0.0, now_ns - mark_ns_) : 0;
  bool had_mark = mark_cpu_.has_value();
  mark_cpu_ = *cpu;
  mark_ns_ = now_ns;
  return had_mark;
}

std::optional<CheatFinding> LeaseWatch::before_request(bool candidate, double now_ns) {
  if (!candidate) return std::nullopt;
  double cpu = 0, wall = 0;
  bool idle = idle_since_mark_;
  idle_since_mark_ = false;
  if (!mark(now_ns, cpu, wall) || !idle) return std::nullopt;
  figures_.idle_cpu_ns += cpu;
  figures_.idle_wall_ns += wall;
  ++idle_readings_;
  return check_background();
}

std::optional<CheatFinding> LeaseWatch::after_reply(bool candidate, double now_ns) {
  if (!candidate) return std::nullopt;
  double cpu = 0, wall = 0;
  if (!mark(now_ns, cpu, wall)) return std::nullopt;
  idle_since_mark_ = true;
  figures_.batch_cpu_ns += cpu;
  figures_.batch_wall_ns += wall;
  ++figures_.batches;
  double allowed = allowance_.cores * figures_.batch_wall_ns * allowance_.cpu_share + allowance_.cpu_slack_ns +
                   rounding_ns(allowance_.resolution_ns, figures_.batches);
  if (figures_.batch_cpu_ns <= allowed) return std::nullopt;
  return CheatFinding{
      "runtime.lease", "runtime",
      fmt::format("the candidate's processes used {} of CPU time in {} timed batches that took {} of wall "
                  "time: {:.2f} cores busy on a lease of {} (allowed {})",
                  ms(figures_.batch_cpu_ns), figures_.batches, ms(figures_.batch_wall_ns),
                  figures_.batch_cpu_ns / std::max(figures_.batch_wall_ns, 1.0), allowance_.cores, ms(allowed))};
}

std::optional<CheatFinding> LeaseWatch::finish(double now_ns) {
  if (!idle_since_mark_) return std::nullopt;
  double cpu = 0, wall = 0;
  idle_since_mark_ = false;
  if (!mark(now_ns, cpu, wall)) return std::nullopt;
  figures_.idle_cpu_ns += cpu;
  figures_.idle_wall_ns += wall;
  ++idle_readings_;
  return check_background();
}

std::optional<CheatFinding> LeaseWatch::check_background() const {
  double allowed = background_allowance_ns(allowance_, figures_, idle_readings_);
  if (figures_.idle_cpu_ns <= allowed) return std::nullopt;
  return CheatFinding{
      "runtime.background_work", "runtime",
      fmt::format("the candidate's processes used {} of CPU time while none of them was being called ({} "
                  "between its batches, the reference's included; allowed {})",
                  ms(figures_.idle_cpu_ns), ms(figures_.idle_wall_ns), ms(allowed))};
}

std::string LeaseWatch::describe() const {
  if (!readable_) return "lease: the candidate's CPU time could not be read; not checked";
  return fmt::format(
      "lease: candidate CPU {} in {} timed batches of {} wall ({:.2f} of {} cores); {} between its calls "
      "over {} (allowed {})",
      ms(figures_.batch_cpu_ns), figures_.batches, ms(figures_.batch_wall_ns),
      figures_.batch_cpu_ns / std::max(figures_.batch_wall_ns, 1.0), allowance_.cores, ms(figures_.idle_cpu_ns),
      ms(figures_.idle_wall_ns), ms(background_allowance_ns(allowance_, figures_, idle_readings_)));
}

}  // namespace kgym::verify
