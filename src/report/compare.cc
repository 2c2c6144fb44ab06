#include "report/compare.h"

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "report/case_order.h"

namespace kgym::report {
namespace {

constexpr double kNoIntervalTolerance = 0.10;

bool passed(const CaseRow* row) { return row && row->verdict == Verdict::kPass; }

Change speed_change(const CaseRow& a, const CaseRow& b) {
  if (!a.speedup || !b.speedup || !(*a.speedup > 0) || !(*b.speedup > 0)) return Change::kSame;
  double ratio = *b.speedup / *a.speedup;
  // Beyond both runs' noise floors: a side timed against itself moved this
  // much, so a smaller change is not one.
  double floor = std::max(a.noise_factor.value_or(1.0), b.noise_factor.value_or(1.0));
  bool beyond_floors = ratio > floor || ratio < 1 / floor;
  if (a.speedup_ci95 && b.speedup_ci95) {
    if (!beyond_floors) return Change::kSame;
    if (b.speedup_ci95->lo > a.speedup_ci95->hi) return Change::kFaster;
    if (b.speedup_ci95->hi < a.speedup_ci95->lo) return Change::kSlower;
    return Change::kSame;
  }
  double threshold = std::max(1 + kNoIntervalTolerance, floor);
  if (ratio > threshold) return Change::kFaster;
  if (ratio < 1 / threshold) return Change::kSlower;
  return Change::kSame;
}

Change classify(const CaseRow* a, const CaseRow* b) {
  if (!a) return Change::kOnlyInB;
  if (!b) return Change::kOnlyInA;
  if (passed(b) && !passed(a)) return Change::kFixed;
  if (passed(a) && !passed(b)) return Change::kBroken;
  if (!passed(a)) return a->verdict == b->verdict ? Change::kSame : Change::kVerdictChanged;
  return speed_change(*a, *b);
}

}  // namespace

std::string_view to_string(Change change) {
  switch (change) {
    case Change::kFixed: return "fixed";
    case Change::kBroken: return "broken";
    case Change::kVerdictChanged: return "verdict changed";
    case Change::kFaster: return "faster";
    case Change::kSlower: return "slower";
    case Change::kOnlyInA: return "only in A";
    case Change::kOnlyInB: return "only in B";
    case Change::kSame: return "same";
  }
  return "same";
}

Comparison compare_runs(const Summary& a, const Summary& b) {
  std::map<std::string, std::pair<const CaseRow*, const CaseRow*>,
           bool (*)(std::string_view, std::string_view)>
      rows(case_id_less);
  for (const CaseRow& r : a.cases) rows[r.case_id].first = &r;
  for (const CaseRow& r : b.cases) rows[r.case_id].second = &r;

  Comparison c;
  double log_sum = 0;
  for (const auto& [id, pair] : rows) {
    CaseChange change{id, pair.first, pair.second, classify(pair.first, pair.second), std::nullopt};
    if (pair.first && pair.second && pair.first->speedup && pair.second->speedup &&
        *pair.first->speedup > 0) {
      change.speedup_ratio = *pair.second->speedup / *pair.first->speedup;
      if (passed(pair.first) && passed(pair.second) && *change.speedup_ratio > 0) {
        log_sum += std::log(*change.speedup_ratio);
        ++c.common_cases;
      }
    }
    if (change.change != Change::kSame) ++c.changed;
    c.cases.push_back(change);
  }
  if (c.common_cases > 0) c.common_speedup_ratio = std::exp(log_sum / c.common_cases);

  using Unit = AggregateDelta::Unit;
  c.aggregates.push_back({"cases", a.total.selected, b.total.selected, Unit::kCount});
  c.aggregates.push_back({"correct", a.total.correctness_rate(), b.total.correctness_rate(), Unit::kRate});
  c.aggregates.push_back({"cheat", a.total.cheat_rate(), b.total.cheat_rate(), Unit::kRate});
  for (double p : kFastThresholds) {
    if (p == 0.0) continue;
    const FastP* fa = fast_at(a, p);
    const FastP* fb = fast_at(b, p);
    c.aggregates.push_back(
        {fmt::format("fast_{}", p), fa ? fa->rate : std::nullopt, fb ? fb->rate : std::nullopt, Unit::kRate});
  }
  c.aggregates.push_back({"geomean speedup", a.geomean_speedup, b.geomean_speedup, Unit::kSpeedup});
  return c;
}

}  // namespace kgym::report
