#include "verify/output_match.h"

#include <fmt/format.h>

#include <algorithm>

#include "verify/runtime_checks.h"

namespace kgym::verify {

OutputMatch match_outputs(std::span<const TensorBytes> got, std::span<const TensorBytes> want,
                          const OutputRules& rules, std::span<const TensorBytes> scale_by) {
  OutputMatch match;
  if (got.size() != want.size()) {
    match.ok = false;
    match.problem = fmt::format("{} outputs, the reference {}", got.size(), want.size());
    return match;
  }
  static const std::map<std::string, Tolerance> kNone;
  const auto& configured = rules.configured ? *rules.configured : kNone;
  const Backend& backend = rules.backend ? *rules.backend : backend_named("cpu");
  auto raise = [](std::optional<double>& acc, std::optional<double> v) {
    if (v) acc = std::max(acc.value_or(0), *v);
  };
  for (std::size_t i = 0; i < want.size(); ++i) {
    const TensorBytes& b = want[i];
    Tolerance tolerance = tolerance_for(configured, b.dtype, backend);
    if (rules.scaled) tolerance = scaled_tolerance(tolerance, i < scale_by.size() ? scale_by[i] : b);
    match.tolerances.push_back(tolerance);
    auto cmp = compare_tensors(got[i], b, tolerance);
    raise(match.max_abs_err, cmp.max_abs_err);
    raise(match.max_rel_err, cmp.max_rel_err);
    std::string problem = cmp.problem;
    if (cmp.ok && rules.degenerate) {
      // A degenerate reference is also held to a relative bound over the
      // whole output.
      double bound = tolerance_for(configured, b.dtype, backend).rtol;
      if (auto rel = relative_l2_error(got[i], b); rel && *rel > bound) {
        cmp.ok = false;
        problem = fmt::format("relative L2 error {:.3g} exceeds rtol={:g} (degenerate reference: {})", *rel,
                              bound, *rules.degenerate);
      }
    }
    if (!cmp.ok) {
      match.ok = false;
      match.failed_output = i;
      match.problem = fmt::format("output {}: {}", i, problem);
      return match;
    }
  }
  return match;
}

}  // namespace kgym::verify
