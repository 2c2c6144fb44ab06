#include "report/summary.h"

#include <algorithm>
#include <cmath>

#include "report/case_order.h"

namespace kgym::report {
namespace {

Tally empty_tally() {
  Tally t;
  for (Verdict v : kAllVerdicts) t.verdicts[v] = 0;
  return t;
}

void add_to(Tally& t, const CaseRow& row) {
  ++t.selected;
  if (row.verdict) {
    ++t.finished;
    ++t.verdicts[*row.verdict];
  } else {
    ++t.not_run;
  }
}

CaseRow row_of(const CaseResult& r) {
  CaseRow row;
  row.case_id = r.case_id;
  row.level = std::string(level_of(r.case_id));
  row.verdict = r.verdict;
  row.reason = r.reason;
  if (r.performance) {
    row.speedup = r.performance->speedup.median;
    row.speedup_ci95 = r.performance->speedup.ci95;
    row.reference_ms = r.performance->reference.median_ms;
    row.candidate_ms = r.performance->candidate.median_ms;
  }
  return row;
}

CaseRow not_run_row(const std::string& id) {
  CaseRow row;
  row.case_id = id;
  row.level = std::string(level_of(id));
  row.reason = "not run (the run ended before this case finished)";
  return row;
}

bool usable_speedup(const CaseRow& row) {
  return row.verdict == Verdict::kPass && row.speedup && std::isfinite(*row.speedup) && *row.speedup > 0;
}

}  // namespace

int Tally::count(Verdict v) const {
  auto it = verdicts.find(v);
  return it == verdicts.end() ? 0 : it->second;
}

std::optional<double> Tally::correctness_rate() const {
  if (selected == 0) return std::nullopt;
  return static_cast<double>(passed()) / selected;
}

std::optional<double> speedup_of(const CaseResult& result) {
  if (!result.performance) return std::nullopt;
  return result.performance->speedup.median;
}

Summary summarize(const std::vector<CaseResult>& results, const std::vector<std::string>& selected_case_ids) {
  std::map<std::string, CaseRow> by_id;
  for (const std::string& id : selected_case_ids) by_id.try_emplace(id, not_run_row(id));
  for (const CaseResult& r : results) by_id.insert_or_assign(r.case_id, row_of(r));

  Summary s;
  s.total = empty_tally();
  for (auto& [id, row] : by_id) s.cases.push_back(std::move(row));
  std::stable_sort(s.cases.begin(), s.cases.end(),
                   [](const CaseRow& a, const CaseRow& b) { return case_id_less(a.case_id, b.case_id); });

  std::map<std::string, Tally> levels;
  double log_sum = 0;
  for (const CaseRow& row : s.cases) {
    add_to(s.total, row);
    auto [it, inserted] = levels.try_emplace(row.level, empty_tally());
    add_to(it->second, row);
    if (usable_speedup(row)) {
      log_sum += std::log(*row.speedup);
      ++s.speedup_cases;
      if (row.speedup_ci95 && row.speedup_ci95->lo > 1.0) ++s.faster_with_confidence;
    }
  }
  if (s.speedup_cases > 0) s.geomean_speedup = std::exp(log_sum / s.speedup_cases);

  for (double p : kFastThresholds) {
    FastP f{p, 0, std::nullopt};
    for (const CaseRow& row : s.cases) {
      if (row.verdict != Verdict::kPass) continue;
      if (p == 0.0 || (usable_speedup(row) && *row.speedup > p)) ++f.count;
    }
    if (s.total.selected > 0) f.rate = static_cast<double>(f.count) / s.total.selected;
    s.fast_p.push_back(f);
  }

  for (auto& [level, tally] : levels) s.levels.push_back({level, std::move(tally)});
  std::stable_sort(s.levels.begin(), s.levels.end(), [](const LevelSummary& a, const LevelSummary& b) {
    return natural_less(a.level, b.level);
  });
  return s;
}

}  // namespace kgym::report
