// summary.json: the machine-readable run summary. Schema (version
// kSummarySchemaVersion; absent values are null, never 0):
//   schema_version
//   run:     {run_dir, status, started_at, finished_at, config_path, backend, mode, machine}
//   totals:  {selected, finished, not_run, pass, correctness_rate, cheat_rate,
//             cheats_by_rule: {<rule id>: count}, timing_flags: {<flag>: count}, geomean_speedup,
//             geomean_ci95: [lo, hi], speedup_cases, faster_with_confidence,
//             fast_p: [{p, count, rate, rate_ci95, point_count, point_rate}],
//             verdicts: {<verdict>: count},
//             agent: {tokens_in, tokens_out, tool_calls, cost, cases_with_cost, cost_per_pass}}
//             (fast_p count: speedup interval above p; point_count: median above p)
//   levels:  [{level, selected, finished, not_run, pass, correctness_rate, cheat_rate, verdicts,
//              fast_p, geomean_speedup, geomean_ci95, speedup_cases}]
//   cases:   [{case_id, level, status: done|not_run, verdict, speedup, speedup_ci95,
//              reference_ms, candidate_ms, timing_flags, reason}]
// With verifier.baselines beyond eager only: totals.speedup_vs: {<baseline>:
// {timed, unavailable, fast_p, geomean_speedup, geomean_ci95, speedup_cases}}
// and each case row speedup_vs: {<baseline>: {speedup, speedup_ci95}}.
// With samples per case (config `samples` > 1) only: totals and each level
// get pass_at_k: {cases, samples, samples_run, samples_passed, pass_at_1,
// pass_at: {"<k>": rate}, best_of_k_geomean_speedup}, and each case row
// samples: {n, passed}.
#include "report/summary.h"

namespace kgym::report {
namespace {

using nlohmann::json;

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json verdict_counts(const Tally& t) {
  json counts = json::object();
  for (Verdict v : kAllVerdicts) counts[std::string(to_string(v))] = t.count(v);
  return counts;
}

json tally_json(const Tally& t) {
  return {{"selected", t.selected},
          {"finished", t.finished},
          {"not_run", t.not_run},
          {"pass", t.passed()},
          {"correctness_rate", opt(t.correctness_rate())},
          {"cheat_rate", opt(t.cheat_rate())},
          {"verdicts", verdict_counts(t)}};
}

json interval(const std::optional<Interval>& i) { return i ? json::array({i->lo, i->hi}) : json(nullptr); }

json fast_p_json(const std::vector<FastP>& fast_p) {
  json out = json::array();
  for (const FastP& f : fast_p) {
    out.push_back({{"p", f.threshold},
                   {"count", f.count},
                   {"rate", opt(f.rate)},
                   {"rate_ci95", interval(f.rate_ci95)},
                   {"point_count", f.point_count},
                   {"point_rate", opt(f.point_rate)}});
  }
  return out;
}

json run_json(const RunInfo& info) {
  return {{"run_dir", info.run_dir},
          {"status", info.status},
          {"started_at", opt(info.started_at_iso)},
          {"finished_at", opt(info.finished_at_iso)},
          {"config_path", opt(info.config_path)},
          {"backend", info.backend.empty() ? json(nullptr) : json(info.backend)},
          {"mode", info.mode.empty() ? json(nullptr) : json(info.mode)},
          {"machine", info.machine}};
}

json pass_at_k_json(const PassAtK& p, std::optional<double> geomean) {
  json rates = json::object();
  for (const auto& [k, rate] : p.rate) rates[std::to_string(k)] = rate;
  auto one = p.rate.find(1);
  return {{"cases", p.cases},
          {"samples", p.samples},
          {"samples_run", p.samples_run},
          {"samples_passed", p.samples_passed},
          {"pass_at_1", one == p.rate.end() ? json(nullptr) : json(one->second)},
          {"pass_at", std::move(rates)},
          {"best_of_k_geomean_speedup", opt(geomean)}};
}

json case_json(const CaseRow& row) {
  json ci = row.speedup_ci95 ? json::array({row.speedup_ci95->lo, row.speedup_ci95->hi}) : json(nullptr);
  json j = {{"case_id", row.case_id},
            {"level", row.level},
            {"status", row.verdict ? "done" : "not_run"},
            {"verdict", row.verdict ? json(std::string(to_string(*row.verdict))) : json(nullptr)},
            {"speedup", opt(row.speedup)},
            {"speedup_ci95", std::move(ci)},
            {"reference_ms", opt(row.reference_ms)},
            {"candidate_ms", opt(row.candidate_ms)},
            {"timing_flags", row.timing_flags},
            {"reason", row.reason},
            {"execution", row.execution},
            {"transcript_flags", row.transcript_flags}};
  if (row.simulated) {
    j["simulated"] = {
        {"value", row.simulated->value}, {"unit", row.simulated->unit}, {"source", row.simulated->source}};
  }
  if (row.samples) j["samples"] = {{"n", *row.samples}, {"passed", row.samples_passed}};
  if (row.baseline) j["baseline"] = true;
  if (row.roofline && row.roofline->roofs) {
    const Roofline& r = *row.roofline;
    j["roofline"] = {{"sol", opt(r.sol)},      {"reference_sol", opt(r.reference_sol)},
                     {"bound", r.bound},       {"intensity", r.intensity},
                     {"limit_ms", r.limit_ms}, {"error", !r.errors.empty()}};
  }
  if (!row.versus.empty()) {
    json vs = json::object();
    for (const auto& v : row.versus)
      vs[v.baseline] = {{"speedup", opt(v.speedup)}, {"speedup_ci95", interval(v.speedup_ci95)}};
    j["speedup_vs"] = std::move(vs);
  }
  return j;
}

}  // namespace

json summary_json(const Summary& summary, const RunInfo& info) {
  json totals = tally_json(summary.total);
  totals["geomean_speedup"] = opt(summary.geomean_speedup);
  totals["geomean_ci95"] = interval(summary.geomean_ci95);
  totals["speedup_cases"] = summary.speedup_cases;
  totals["faster_with_confidence"] = summary.faster_with_confidence;
  totals["fast_p"] = fast_p_json(summary.fast_p);
  totals["device_cases"] = summary.device_selected;
  if (const auto& h = summary.host_interpreter) {
    totals["host_interpreter"] = {{"cases", h->cases}, {"pass", h->passed}, {"simulated", h->simulated}};
  }
  totals["cheats_by_rule"] = summary.cheats_by_rule;
  totals["transcript_flags"] = summary.transcript_flags;
  totals["transcript_flagged_cases"] = summary.transcript_flagged_cases;
  totals["timing_flags"] = summary.timing_flags;
  if (!summary.versus.empty()) {
    json vs = json::object();
    for (const VersusSummary& v : summary.versus) {
      vs[v.baseline] = {{"timed", v.timed},
                        {"unavailable", v.unavailable},
                        {"fast_p", fast_p_json(v.fast_p)},
                        {"geomean_speedup", opt(v.geomean.value)},
                        {"geomean_ci95", interval(v.geomean.ci95)},
                        {"speedup_cases", v.geomean.cases}};
    }
    totals["speedup_vs"] = std::move(vs);
  }
  if (summary.pass_at_k) totals["pass_at_k"] = pass_at_k_json(*summary.pass_at_k, summary.geomean_speedup);
  if (const auto& rounds = summary.rounds) {
    json by_round = json::array();
    for (const RoundPoint& p : rounds->by_round) {
      by_round.push_back({{"round", p.round},
                          {"solved", p.solved},
                          {"solve_rate", opt(p.solve_rate)},
                          {"fast_1", p.fast_1},
                          {"fast_1_rate", opt(p.fast_1_rate)},
                          {"tokens", opt(p.tokens)},
                          {"cost", opt(p.cost)},
                          {"tokens_per_solve", opt(p.tokens_per_solve)},
                          {"cost_per_solve", opt(p.cost_per_solve)}});
    }
    totals["rounds"] = {{"cases", rounds->cases}, {"max_rounds", rounds->max_rounds}, {"by_round", by_round}};
  }
  if (const auto& roof = summary.roofline) {
    totals["roofline"] = {{"cases", roof->cases},
                          {"median_sol", opt(roof->median_sol)},
                          {"reference_cases", roof->reference_cases},
                          {"median_reference_sol", opt(roof->median_reference_sol)},
                          {"above_roof", roof->above_roof},
                          {"missing", roof->missing},
                          {"missing_reason", roof->missing_reason}};
  }
  const AgentTotals& a = summary.agent;
  totals["agent"] = {{"tokens_in", opt(a.tokens_in)},        {"tokens_out", opt(a.tokens_out)},
                     {"tool_calls", opt(a.tool_calls)},      {"cost", opt(a.cost)},
                     {"cases_with_cost", a.cases_with_cost}, {"cost_per_pass", opt(a.cost_per_pass)}};

  json levels = json::array();
  for (const LevelSummary& l : summary.levels) {
    json entry = tally_json(l.tally);
    entry["level"] = l.level;
    entry["fast_p"] = fast_p_json(l.fast_p);
    entry["geomean_speedup"] = opt(l.geomean.value);
    entry["geomean_ci95"] = interval(l.geomean.ci95);
    entry["speedup_cases"] = l.geomean.cases;
    if (l.pass_at_k) entry["pass_at_k"] = pass_at_k_json(*l.pass_at_k, l.geomean.value);
    levels.push_back(std::move(entry));
  }
  json cases = json::array();
  for (const CaseRow& row : summary.cases) cases.push_back(case_json(row));

  json out = {{"schema_version", kSummarySchemaVersion},
              {"run", run_json(info)},
              {"totals", std::move(totals)},
              {"levels", std::move(levels)},
              {"cases", std::move(cases)}};
  if (const auto& b = summary.baseline) {
    out["baseline"] = {{"cases", b->cases},
                       {"pass", b->passed},
                       {"timed", b->timed},
                       {"contains_one", b->contains_one},
                       {"median_speedup", opt(b->median_speedup)},
                       {"spread", opt(b->spread)}};
  }
  return out;
}

}  // namespace kgym::report
