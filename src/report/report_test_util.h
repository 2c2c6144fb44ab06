#pragma once
// Hand-made result records shared by the report tests.
#include <optional>
#include <string>

#include "core/result.h"

namespace kgym::report::testing {

// A result with `verdict`; with a performance record when `speedup` is set
// (reference 2 ms, candidate 2 / speedup ms, CI ±10 %).
inline CaseResult make_result(const std::string& id, Verdict verdict,
                              std::optional<double> speedup = std::nullopt, const std::string& reason = "") {
  CaseResult r;
  r.case_id = id;
  r.verdict = verdict;
  r.reason = reason;
  r.backend = "cpu";
  r.mode = "performance";
  if (speedup) {
    Performance p;
    p.reference = {2.0, 20, Interval{1.9, 2.1}};
    p.candidate = {2.0 / *speedup, 20, Interval{1.8 / *speedup, 2.2 / *speedup}};
    p.speedup = {*speedup, Interval{*speedup * 0.9, *speedup * 1.1}};
    p.stop_reason = "rse_target";
    r.performance = p;
  }
  return r;
}

}  // namespace kgym::report::testing
