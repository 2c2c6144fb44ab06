#include "report/summary.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include <fmt/format.h>

#include "core/pass_at_k.h"
#include "report/case_order.h"
#include "report/format.h"

namespace kgym::report {
namespace {

// The factor (>= 1) by which the performance record's A/A noise floors
// reach farthest from 1; nullopt when it has none.
std::optional<double> noise_factor(const Performance& p) {
  std::optional<double> widest;
  for (const auto* floor : {&p.noise_floor, &p.candidate_noise_floor}) {
    if (!*floor) continue;
    std::vector<double> points = {(*floor)->median};
    if ((*floor)->ci95) points.insert(points.end(), {(*floor)->ci95->lo, (*floor)->ci95->hi});
    for (double v : points) {
      if (!(v > 0) || !std::isfinite(v)) continue;
      double factor = std::exp(std::abs(std::log(v)));
      widest = std::max(widest.value_or(1.0), factor);
    }
  }
  return widest;
}

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
  if (r.cheat) row.cheat_rule = r.cheat->rule;
  if (r.generation)
    for (const TranscriptFlag& f : r.generation->transcript_flags) row.transcript_flags.push_back(f.rule);
  row.reason = r.reason;
  row.baseline = r.baseline;
  row.execution = r.execution;
  row.simulated = r.simulated;
  row.rounds = r.rounds;
  if (r.samples) {
    row.samples = r.samples->n;
    row.samples_passed = r.samples->passed;
  }
  if (r.performance) {
    row.speedup = r.performance->speedup.median;
    row.speedup_ci95 = r.performance->speedup.ci95;
    // A side never timed (a refinement round's record keeps only its
    // speedup, at_round) has no time, not 0 ms.
    if (r.performance->reference.samples > 0) row.reference_ms = r.performance->reference.median_ms;
    if (r.performance->candidate.samples > 0) row.candidate_ms = r.performance->candidate.median_ms;
    row.timing_flags = r.performance->flags;
    row.roofline = r.performance->roofline;
    row.noise_factor = noise_factor(*r.performance);
    for (const BaselineSpeedup& b : r.performance->speedup_vs) {
      CaseRow::Versus v{.baseline = b.name};
      if (b.speedup) {
        v.speedup = b.speedup->median;
        v.speedup_ci95 = b.speedup->ci95;
      }
      row.versus.push_back(std::move(v));
    }
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

// Wilson score interval (95%) of successes / trials.
std::optional<Interval> wilson_ci95(int successes, int trials) {
  if (trials <= 0) return std::nullopt;
  constexpr double z = 1.959963984540054;
  double n = trials, p = successes / n;
  double center = (p + z * z / (2 * n)) / (1 + z * z / n);
  double half = z * std::sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n);
  return Interval{std::max(0.0, center - half), std::min(1.0, center + half)};
}

// Geometric mean of `speedups` with a percentile bootstrap over the cases
// (fixed seed: the same results always give the same interval).
Geomean geomean_of(const std::vector<double>& speedups) {
  Geomean g;
  g.cases = static_cast<int>(speedups.size());
  if (speedups.empty()) return g;
  std::vector<double> logs;
  for (double s : speedups) logs.push_back(std::log(s));
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return sum / static_cast<double>(v.size());
  };
  g.value = std::exp(mean(logs));
  if (logs.size() < 2) return g;
  constexpr int kResamples = 2000;
  std::mt19937_64 rng(0x6b67796d);
  std::uniform_int_distribution<std::size_t> pick(0, logs.size() - 1);
  std::vector<double> means(kResamples), sample(logs.size());
  for (double& m : means) {
    for (double& x : sample) x = logs[pick(rng)];
    m = mean(sample);
  }
  std::sort(means.begin(), means.end());
  auto at = [&](double q) { return std::exp(means[static_cast<std::size_t>(q * (kResamples - 1) + 0.5)]); };
  g.ci95 = Interval{at(0.025), at(0.975)};
  return g;
}

namespace {

// fast_p over `rows` with `selected` cases in the denominator.
std::vector<FastP> fast_p_of(const std::vector<const CaseRow*>& rows, int selected) {
  std::vector<FastP> out;
  for (double p : kFastThresholds) {
    FastP f{.threshold = p};
    for (const CaseRow* row : rows) {
      if (row->verdict != Verdict::kPass) continue;
      if (p == 0.0) {
        ++f.count;
        ++f.point_count;
        continue;
      }
      if (!usable_speedup(*row)) continue;
      if (*row->speedup > p) ++f.point_count;
      if (row->speedup_ci95 && row->speedup_ci95->lo > p) ++f.count;
    }
    if (selected > 0) {
      f.rate = static_cast<double>(f.count) / selected;
      f.point_rate = static_cast<double>(f.point_count) / selected;
      f.rate_ci95 = wilson_ci95(f.count, selected);
    }
    out.push_back(f);
  }
  return out;
}

std::optional<PassAtK> pass_at_k_of(const std::vector<const CaseRow*>& rows) {
  PassAtK out;
  for (const CaseRow* row : rows) {
    if (!row->samples || *row->samples < 1) continue;
    ++out.cases;
    out.samples = out.cases == 1 ? *row->samples : std::min(out.samples, *row->samples);
    out.samples_run += *row->samples;
    out.samples_passed += row->samples_passed;
  }
  if (out.cases == 0) return std::nullopt;
  for (int k = 1; k <= out.samples; ++k) {
    double sum = 0;
    for (const CaseRow* row : rows) {
      if (row->samples && *row->samples >= 1) sum += pass_at_k(*row->samples, row->samples_passed, k);
    }
    out.rate[k] = sum / out.cases;
  }
  return out;
}

std::vector<double> speedups_of(const std::vector<const CaseRow*>& rows) {
  std::vector<double> out;
  for (const CaseRow* row : rows) {
    if (usable_speedup(*row)) out.push_back(*row->speedup);
  }
  return out;
}

// Against each other baseline: the rows with their speedup against it in
// place of the eager one (a passing case without it counts as not faster).
std::vector<VersusSummary> versus_of(const std::vector<const CaseRow*>& rows, int selected) {
  std::vector<std::string> names;
  for (const CaseRow* row : rows) {
    for (const auto& v : row->versus) {
      if (std::find(names.begin(), names.end(), v.baseline) == names.end()) names.push_back(v.baseline);
    }
  }
  std::vector<VersusSummary> out;
  for (const std::string& name : names) {
    VersusSummary summary{.baseline = name};
    std::vector<CaseRow> projected;
    projected.reserve(rows.size());
    for (const CaseRow* row : rows) {
      CaseRow p = *row;
      p.speedup.reset();
      p.speedup_ci95.reset();
      for (const auto& v : row->versus) {
        if (v.baseline != name) continue;
        p.speedup = v.speedup;
        p.speedup_ci95 = v.speedup_ci95;
        if (row->verdict == Verdict::kPass) ++(v.speedup ? summary.timed : summary.unavailable);
      }
      projected.push_back(std::move(p));
    }
    std::vector<const CaseRow*> pointers;
    for (const CaseRow& p : projected) pointers.push_back(&p);
    summary.fast_p = fast_p_of(pointers, selected);
    summary.geomean = geomean_of(speedups_of(pointers));
    out.push_back(std::move(summary));
  }
  return out;
}

BaselineSummary baseline_of(const std::vector<const CaseRow*>& rows) {
  BaselineSummary b;
  std::vector<double> medians;
  for (const CaseRow* row : rows) {
    ++b.cases;
    if (row->verdict != Verdict::kPass) continue;
    ++b.passed;
    if (!usable_speedup(*row) || !row->speedup_ci95) continue;
    ++b.timed;
    medians.push_back(*row->speedup);
    if (row->speedup_ci95->lo <= 1.0 && row->speedup_ci95->hi >= 1.0) ++b.contains_one;
  }
  b.median_speedup = percentile(medians, 0.5);
  if (auto p10 = percentile(medians, 0.1), p90 = percentile(medians, 0.9); p10 && p90)
    b.spread = (*p90 - *p10) / 2;
  return b;
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

std::optional<double> Tally::cheat_rate() const {
  if (selected == 0) return std::nullopt;
  return static_cast<double>(count(Verdict::kFailCheat)) / selected;
}

bool is_uncertain(const CaseRow& row) { return std::ranges::find(row.timing_flags, "uncertain") != row.timing_flags.end(); }

std::string speedup_cell(const CaseRow& row) {
  if (row.execution != "host_interpreter") {
    bool uncertain = row.speedup && is_uncertain(row);
    return uncertain ? format_speedup(row.speedup) + " (uncertain)" : format_speedup(row.speedup);
  }
  if (row.simulated) return fmt::format("sim {:.4g} {}", row.simulated->value, row.simulated->unit);
  return "host interpreter";
}

std::optional<double> percentile(std::vector<double> values, double q) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  double at = q * static_cast<double>(values.size() - 1);
  auto lo = static_cast<std::size_t>(at);
  std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (at - static_cast<double>(lo));
}

std::string sol_cell(const CaseRow& row) {
  if (row.verdict != Verdict::kPass || !row.roofline || !row.roofline->roofs || !row.roofline->sol)
    return std::string(kAbsent);
  const Roofline& r = *row.roofline;
  if (!r.errors.empty())
    return fmt::format("error: {:.2f} > 1", std::max(*r.sol, r.reference_sol.value_or(0)));
  return fmt::format("{:.3f}", *r.sol);
}

std::string roofline_line(const RooflineSummary& r) {
  std::string line = fmt::format("roofline: median sol {} over {} passing case{}",
                                 r.median_sol ? fmt::format("{:.3f}", *r.median_sol) : std::string(kAbsent),
                                 r.cases, r.cases == 1 ? "" : "s");
  if (r.median_reference_sol)
    line += fmt::format(" (the reference's: {:.3f} over {})", *r.median_reference_sol, r.reference_cases);
  if (r.above_roof > 0)
    line += fmt::format("; {} case{} above the roof: an error of the count or the roof, left out",
                        r.above_roof, r.above_roof == 1 ? "" : "s");
  if (r.missing > 0) line += fmt::format("; {} without roofs ({})", r.missing, r.missing_reason);
  return line;
}

std::string host_interpreter_line(const HostInterpreterSummary& h) {
  return fmt::format(
      "{} case{} checked on a host interpreter (verifier.execution): {} pass, {} with a simulated time; "
      "correctness only, not in fast_p or the geomean",
      h.cases, h.cases == 1 ? "" : "s", h.passed, h.simulated);
}

std::string baseline_line(const BaselineSummary& b) {
  std::string line = fmt::format("baseline (A/A): {} cases, {} pass, {} of {} timed intervals contain 1",
                                 b.cases, b.passed, b.contains_one, b.timed);
  if (b.median_speedup) line += fmt::format(", median {:.3f}x", *b.median_speedup);
  if (b.spread) line += fmt::format(" (spread {:.3f})", *b.spread);
  return line;
}

std::optional<double> speedup_of(const CaseResult& result) {
  if (!result.performance) return std::nullopt;
  return result.performance->speedup.median;
}

AgentTotals agent_totals(const std::vector<CaseResult>& results, int passed) {
  AgentTotals t;
  auto add = [](auto& total, const auto& value) {
    if (value) total = total.value_or(0) + *value;
  };
  for (const CaseResult& r : results) {
    // A case with samples paid for every one of them.
    if (r.samples) {
      add(t.tokens_in, r.samples->tokens_in);
      add(t.tokens_out, r.samples->tokens_out);
      add(t.tool_calls, r.samples->tool_calls);
      add(t.cost, r.samples->cost);
      if (r.samples->cost) ++t.cases_with_cost;
      continue;
    }
    if (!r.generation) continue;
    add(t.tokens_in, r.generation->tokens_in);
    add(t.tokens_out, r.generation->tokens_out);
    add(t.tool_calls, r.generation->tool_calls);
    add(t.cost, r.generation->cost);
    if (r.generation->cost) ++t.cases_with_cost;
  }
  if (t.cost && passed > 0) t.cost_per_pass = *t.cost / passed;
  return t;
}

std::optional<RooflineSummary> roofline_of(const std::vector<const CaseRow*>& rows) {
  RooflineSummary out;
  std::vector<double> sols, reference_sols;
  bool any = false;
  for (const CaseRow* row : rows) {
    if (row->verdict != Verdict::kPass || !row->roofline) continue;
    any = true;
    const Roofline& r = *row->roofline;
    if (!r.roofs) {
      ++out.missing;
      if (out.missing_reason.empty()) out.missing_reason = r.missing;
      continue;
    }
    if (!r.errors.empty()) {
      ++out.above_roof;
      continue;
    }
    if (r.sol && !row->baseline) sols.push_back(*r.sol);
    if (r.work.flops > 0 && r.achieved_gflops) ++out.plotted;
    if (r.reference_sol) reference_sols.push_back(*r.reference_sol);
  }
  if (!any) return std::nullopt;
  out.cases = static_cast<int>(sols.size());
  out.median_sol = percentile(sols, 0.5);
  out.reference_cases = static_cast<int>(reference_sols.size());
  out.median_reference_sol = percentile(reference_sols, 0.5);
  return out;
}

std::optional<RoundsSummary> rounds_of(const std::vector<const CaseRow*>& rows, int selected) {
  RoundsSummary summary;
  for (const CaseRow* row : rows) {
    if (row->rounds.empty()) continue;
    ++summary.cases;
    summary.max_rounds = std::max(summary.max_rounds, static_cast<int>(row->rounds.size()));
  }
  if (summary.cases == 0) return std::nullopt;
  for (int r = 1; r <= summary.max_rounds; ++r) {
    RoundPoint point{.round = r};
    for (const CaseRow* row : rows) {
      if (row->rounds.empty()) continue;
      std::size_t upto = std::min<std::size_t>(r, row->rounds.size());
      const RoundRecord& at = row->rounds[upto - 1];
      if (at.verdict == Verdict::kPass) {
        ++point.solved;
        if (at.speedup_ci95 && at.speedup_ci95->lo > 1.0) ++point.fast_1;
      }
      for (std::size_t i = 0; i < upto; ++i) {
        if (const auto& t = row->rounds[i].tokens) point.tokens = point.tokens.value_or(0) + *t;
        if (const auto& c = row->rounds[i].cost) point.cost = point.cost.value_or(0) + *c;
      }
    }
    if (selected > 0) {
      point.solve_rate = static_cast<double>(point.solved) / selected;
      point.fast_1_rate = static_cast<double>(point.fast_1) / selected;
    }
    if (point.solved > 0) {
      if (point.tokens) point.tokens_per_solve = static_cast<double>(*point.tokens) / point.solved;
      if (point.cost) point.cost_per_solve = *point.cost / point.solved;
    }
    summary.by_round.push_back(point);
  }
  return summary;
}

CaseResult at_round(const CaseResult& result, int round) {
  if (result.rounds.empty() || round >= static_cast<int>(result.rounds.size())) return result;
  const RoundRecord& at = result.rounds[static_cast<std::size_t>(std::max(round, 1)) - 1];
  CaseResult r = result;
  r.verdict = at.verdict;
  r.reason = at.reason;
  r.cheat.reset();
  r.performance.reset();
  if (at.speedup) {
    Performance p;
    p.speedup = SpeedupEstimate{*at.speedup, at.speedup_ci95};
    r.performance = std::move(p);
  }
  r.rounds.resize(static_cast<std::size_t>(std::max(round, 1)));
  return r;
}

const FastP* fast_at(const Summary& s, double threshold) {
  for (const FastP& f : s.fast_p) {
    if (f.threshold == threshold) return &f;
  }
  return nullptr;
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
  std::map<std::string, std::vector<const CaseRow*>> level_rows;
  std::vector<const CaseRow*> all_rows, baseline_rows, device_rows;
  for (const CaseRow& row : s.cases) {
    if (row.baseline) {
      baseline_rows.push_back(&row);
      continue;
    }
    if (row.execution == "host_interpreter") {
      if (!s.host_interpreter) s.host_interpreter.emplace();
      ++s.host_interpreter->cases;
      if (row.verdict == Verdict::kPass) {
        ++s.host_interpreter->passed;
        if (row.simulated) ++s.host_interpreter->simulated;
      }
    } else {
      device_rows.push_back(&row);
    }
    add_to(s.total, row);
    auto [it, inserted] = levels.try_emplace(row.level, empty_tally());
    add_to(it->second, row);
    level_rows[row.level].push_back(&row);
    all_rows.push_back(&row);
    if (row.cheat_rule) ++s.cheats_by_rule[*row.cheat_rule];
    if (!row.transcript_flags.empty()) {
      ++s.transcript_flagged_cases;
      std::set<std::string> rules(row.transcript_flags.begin(), row.transcript_flags.end());
      for (const std::string& rule : rules) ++s.transcript_flags[rule];
    }
    for (const std::string& flag : row.timing_flags) ++s.timing_flags[flag];
    if (usable_speedup(row) && row.speedup_ci95 && row.speedup_ci95->lo > 1.0) ++s.faster_with_confidence;
  }
  s.agent = agent_totals(results, s.total.passed());
  Geomean overall = geomean_of(speedups_of(all_rows));
  s.geomean_speedup = overall.value;
  s.geomean_ci95 = overall.ci95;
  s.speedup_cases = overall.cases;
  s.device_selected = static_cast<int>(device_rows.size());
  s.fast_p = fast_p_of(device_rows, s.device_selected);
  s.pass_at_k = pass_at_k_of(all_rows);
  if (!baseline_rows.empty()) s.baseline = baseline_of(baseline_rows);
  s.versus = versus_of(device_rows, s.device_selected);
  s.rounds = rounds_of(all_rows, s.total.selected);
  std::vector<const CaseRow*> timed_rows = device_rows;
  timed_rows.insert(timed_rows.end(), baseline_rows.begin(), baseline_rows.end());
  s.roofline = roofline_of(timed_rows);

  for (auto& [level, tally] : levels) {
    std::vector<const CaseRow*> rows;
    for (const CaseRow* row : level_rows[level]) {
      if (row->execution != "host_interpreter") rows.push_back(row);
    }
    s.levels.push_back({level, tally, fast_p_of(rows, static_cast<int>(rows.size())),
                        geomean_of(speedups_of(rows)), pass_at_k_of(level_rows[level])});
  }
  std::stable_sort(s.levels.begin(), s.levels.end(), [](const LevelSummary& a, const LevelSummary& b) {
    return natural_less(a.level, b.level);
  });
  return s;
}

}  // namespace kgym::report
