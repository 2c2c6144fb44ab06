#pragma once
// `kgym compare RUN_A RUN_B`: what changed between two runs, case by case
// and in aggregate. Pure functions over two Summaries; the renderers
// (compare_render.cc) only read a Comparison.
#include <optional>
#include <string>
#include <vector>

#include "report/summary.h"

namespace kgym::report {

enum class Change {
  kFixed,           // B passes, A did not (or did not run)
  kBroken,          // A passed, B does not
  kVerdictChanged,  // both failed, differently
  kFaster,          // both pass; B's speedup is higher beyond the noise (see compare_runs)
  kSlower,          // both pass; B's speedup is lower beyond the noise
  kOnlyInA,         // B did not select the case
  kOnlyInB,         // A did not select the case
  kSame,            // same verdict, speedup within the noise (or none)
};

// "fixed", "broken", "verdict changed", "faster", "slower", "only in A",
// "only in B", "same".
std::string_view to_string(Change change);

struct CaseChange {
  std::string case_id;
  const CaseRow* a = nullptr;  // nullptr when the run did not select the case
  const CaseRow* b = nullptr;
  Change change = Change::kSame;
  std::optional<double> speedup_ratio;  // B speedup / A speedup, when both have one
};

struct AggregateDelta {
  enum class Unit {
    kCount,    // change shown as B − A
    kRate,     // a fraction; change shown as B − A in percentage points
    kSpeedup,  // change shown as the ratio B / A
  };
  std::string name;  // "cases", "correct", "cheat", "fast_1", ..., "geomean speedup"
  std::optional<double> a, b;
  Unit unit = Unit::kRate;
};

struct Comparison {
  std::vector<CaseChange> cases;  // case id order; changed and unchanged
  std::vector<AggregateDelta> aggregates;
  // Geometric mean of B / A speedup over cases passing in both runs with a
  // speedup each (the like-for-like figure); nullopt when there are none.
  std::optional<double> common_speedup_ratio;
  int common_cases = 0;
  int changed = 0;  // cases whose change is not kSame
};

// Compares two runs. A speedup counts as faster/slower only when the ratio
// of the medians lies beyond both runs' noise floors (CaseRow::noise_factor:
// each side timed against itself moved that much) and, where both 95%
// intervals are known, the intervals do not overlap; without intervals the
// medians must also differ by more than 10%.
Comparison compare_runs(const Summary& a, const Summary& b);

// Terminal text (no escape codes, lines at most `width` cells): the
// aggregates as A | B | delta, then the changed cases (all cases with
// `all_cases`), then how many are unchanged.
std::string comparison_table(const Comparison& c, const std::string& label_a, const std::string& label_b,
                             int width, bool all_cases = false);
// The same as GitHub-flavoured Markdown tables.
std::string comparison_markdown(const Comparison& c, const std::string& label_a, const std::string& label_b,
                                bool all_cases = false);

}  // namespace kgym::report
