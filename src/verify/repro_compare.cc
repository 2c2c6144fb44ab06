#include "verify/repro_compare.h"

#include <fmt/format.h>

namespace kgym::verify {
namespace {

std::string speedup_text(const SpeedupEstimate& s) {
  if (!s.ci95) return fmt::format("{:.3f}x", s.median);
  return fmt::format("{:.3f}x [{:.3f}, {:.3f}]", s.median, s.ci95->lo, s.ci95->hi);
}

std::string value_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>()
                       : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string torch_text(const TorchEnvironment& e) {
  return fmt::format("torch {} ({})", e.torch_version, e.torch_build);
}

}  // namespace

ReproComparison compare_reproduction(const CaseResult& recorded, const nlohmann::json& recorded_machine,
                                     const CaseResult& reproduced, const nlohmann::json& machine) {
  ReproComparison c;
  c.recorded_verdict = recorded.verdict;
  c.verdict = reproduced.verdict;
  if (recorded.performance) c.recorded_speedup = recorded.performance->speedup;
  if (reproduced.performance) c.new_speedup = reproduced.performance->speedup;
  if (c.recorded_speedup && c.recorded_speedup->ci95) {
    if (!c.new_speedup) {
      c.speedup = ReproComparison::Speedup::kNotMeasured;
    } else {
      const Interval& ci = *c.recorded_speedup->ci95;
      bool inside = c.new_speedup->median >= ci.lo && c.new_speedup->median <= ci.hi;
      c.speedup = inside ? ReproComparison::Speedup::kInside : ReproComparison::Speedup::kOutside;
    }
  }
  if (!recorded_machine.is_object()) {
    c.warnings.push_back("the bundle does not describe the machine it was recorded on");
  } else if (machine.is_object()) {
    std::vector<std::string> differences;
    for (const char* key : {"cpu_model", "online_cpus", "hostname"}) {
      nlohmann::json was = recorded_machine.value(key, nlohmann::json()),
                     now = machine.value(key, nlohmann::json());
      if (!was.is_null() && !now.is_null() && was != now)
        differences.push_back(fmt::format("{} {} (recorded {})", key, value_text(now), value_text(was)));
    }
    if (!differences.empty())
      c.warnings.push_back(fmt::format("another machine: {}", fmt::join(differences, ", ")));
  }
  if (recorded.environment && reproduced.environment &&
      (recorded.environment->torch_version != reproduced.environment->torch_version ||
       recorded.environment->torch_build != reproduced.environment->torch_build)) {
    c.warnings.push_back(fmt::format("another torch: {} (recorded {})", torch_text(*reproduced.environment),
                                     torch_text(*recorded.environment)));
  }
  return c;
}

std::vector<std::string> comparison_lines(const ReproComparison& c) {
  using S = ReproComparison::Speedup;
  std::vector<std::string> lines;
  lines.push_back(fmt::format("repro: verdict {}, recorded {}: {}", to_string(c.verdict),
                              to_string(c.recorded_verdict), c.verdict_same() ? "same" : "DIFFERENT"));
  std::string now = c.new_speedup ? speedup_text(*c.new_speedup) : "not measured";
  switch (c.speedup) {
    case S::kNotRecorded:
      if (c.recorded_speedup || c.new_speedup)
        lines.push_back(
            fmt::format("repro: speedup {}; the recorded result has no interval to compare with", now));
      break;
    case S::kNotMeasured:
      lines.push_back(
          fmt::format("repro: speedup not measured, recorded {}", speedup_text(*c.recorded_speedup)));
      break;
    case S::kInside:
    case S::kOutside:
      lines.push_back(fmt::format("repro: speedup {}, recorded {}: {} the recorded interval", now,
                                  speedup_text(*c.recorded_speedup),
                                  c.speedup == S::kInside ? "inside" : "OUTSIDE"));
      break;
  }
  for (const std::string& w : c.warnings) lines.push_back("repro: warning: " + w);
  if (c.agrees()) {
    lines.push_back("repro: agrees with the recorded result");
  } else {
    std::vector<std::string> why;
    if (!c.verdict_same()) why.push_back("the verdict differs");
    if (c.speedup == S::kOutside) why.push_back("the speedup lies outside the recorded interval");
    if (c.speedup == S::kNotMeasured) why.push_back("no speedup was measured");
    lines.push_back(fmt::format("repro: disagrees with the recorded result: {}", fmt::join(why, ", ")));
  }
  return lines;
}

}  // namespace kgym::verify
