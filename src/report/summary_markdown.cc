// summary.md: the run summary as GitHub-flavoured Markdown, meant to read
// well on a code-hosting site (tables only, no raw JSON).
#include <fmt/format.h>

#include "report/format.h"
#include "report/html_report.h"
#include "report/summary.h"

namespace kgym::report {
namespace {

constexpr std::size_t kReasonCells = 100;

// Escapes what would break a table cell or turn into markup.
std::string md_text(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '|': out += "\\|"; break;
      case '\\': out += "\\\\"; break;
      case '*': out += "\\*"; break;
      case '`': out += "\\`"; break;
      case '[': out += "\\["; break;
      case ']': out += "\\]"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      default: out += c;
    }
  }
  return out;
}

// Inline code; backticks inside are dropped since they cannot be escaped.
std::string md_code(std::string_view text) {
  std::string out = "`";
  for (char c : one_line(text, 200)) {
    if (c != '`') out += c;
  }
  return out + "`";
}

std::string count_and_rate(int count, std::optional<double> rate) {
  return fmt::format("{} ({})", count, format_rate(rate));
}

std::string fast_label(double p) { return p == 0.0 ? "fast_0" : fmt::format("fast_{}", p); }

void append_run_lines(std::string& md, const RunInfo& info) {
  md += fmt::format("Run {} · status **{}**", md_code(info.run_dir.empty() ? "?" : info.run_dir),
                    md_text(info.status));
  if (!info.backend.empty()) md += " · backend " + md_code(info.backend);
  if (!info.mode.empty()) md += " · mode " + md_code(info.mode);
  md += "  \n";
  md += fmt::format("Started {} · finished {}", info.started_at_iso.value_or(std::string(kAbsent)),
                    info.finished_at_iso.value_or(std::string(kAbsent)));
  if (info.config_path) md += " · config " + md_code(*info.config_path);
  md += "\n\nPlots, links to every case's files and the full provenance: [report.html](report.html).\n\n";
}

// Scalars of the machine record as "key: value" pairs ("cpu.model: ...").
void flatten_machine(const nlohmann::json& j, const std::string& prefix, std::string& md) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      flatten_machine(value, prefix.empty() ? key : prefix + "." + key, md);
    }
    return;
  }
  if (j.is_null() || j.is_array()) return;
  std::string value = j.is_string() ? j.get<std::string>() : j.dump();
  md += fmt::format("| {} | {} |\n", md_text(prefix), md_text(one_line(value, kReasonCells)));
}

std::string rate_with_ci(const FastP& f) {
  std::string out = count_and_rate(f.count, f.rate);
  if (f.rate_ci95)
    out += fmt::format(" [{}, {}]", format_rate(f.rate_ci95->lo), format_rate(f.rate_ci95->hi));
  return out;
}

std::string geomean_text(std::optional<double> value, std::optional<Interval> ci, int cases) {
  if (!value) return std::string(kAbsent);
  std::string out = format_speedup(value);
  if (ci) out += fmt::format(" [{}, {}]", format_speedup(ci->lo), format_speedup(ci->hi));
  return out + fmt::format(" over {} cases", cases);
}

void append_headline(std::string& md, const Summary& s) {
  if (s.baseline) {
    md += fmt::format(
        "**{}.** Baseline cases run the problem's own Model as the candidate (agent.kind: "
        "reference): the instrument's calibration, not counted below and never a solve.\n\n",
        baseline_line(*s.baseline));
  }
  md +=
      "| Cases | Pass | Correctness rate | Cheat rate | Geomean speedup [95% CI] "
      "|\n|---:|---:|---:|---:|---:|\n";
  md += fmt::format("| {} | {} | {} | {} | {} |\n\n", s.total.selected, s.total.passed(),
                    format_rate(s.total.correctness_rate()), format_rate(s.total.cheat_rate()),
                    geomean_text(s.geomean_speedup, s.geomean_ci95, s.speedup_cases));
  if (s.host_interpreter) {
    md += fmt::format(
        "> **{}.** No device ran them: a simulated time is a performance model's estimate, shown in the "
        "Speedup column as `sim`, never a speedup.\n\n",
        host_interpreter_line(*s.host_interpreter));
  }
  if (s.total.not_run > 0) {
    md += fmt::format(
        "> **{} of {} cases did not run** ({}): they are listed as \"not run\" and are not counted as "
        "passed.\n\n",
        s.total.not_run, s.total.selected, "the run ended before they finished");
  }
  if (s.device_selected == 0 && s.host_interpreter) return;  // nothing measured on a device
  md += "| p | Faster than p [95% CI of the rate] | Median above p |\n|---:|---:|---:|\n";
  for (const FastP& f : s.fast_p) {
    if (f.threshold == 0.0) continue;  // fast_0 is the correctness rate
    md += fmt::format("| {} | {} | {} |\n", fast_label(f.threshold), rate_with_ci(f),
                      count_and_rate(f.point_count, f.point_rate));
  }
  md += fmt::format(
      "\nfast_p: share of all cases that pass and are faster than p, counted only when the lower end of the "
      "speedup's 95% confidence interval is above p (the last column counts median speedups above p "
      "instead). {} passing case{} a speedup whose interval lies above 1.\n\n",
      s.faster_with_confidence, s.faster_with_confidence == 1 ? " has" : "s have");
}

// fast_p against the other baselines (verifier.baselines), beside the
// eager table above.
void append_versus(std::string& md, const Summary& s) {
  for (const VersusSummary& v : s.versus) {
    std::string name = v.baseline == "compile" ? "the reference through torch.compile" : v.baseline;
    md += fmt::format("### Against {}\n\n", name);
    md += fmt::format(
        "Geomean speedup: {}. {} passing case{} timed against it, {} where it was unavailable.\n\n",
        geomean_text(v.geomean.value, v.geomean.ci95, v.geomean.cases), v.timed, v.timed == 1 ? "" : "s",
        v.unavailable);
    if (s.device_selected == 0 && s.host_interpreter) return;  // nothing measured on a device
    md += "| p | Faster than p [95% CI of the rate] | Median above p |\n|---:|---:|---:|\n";
    for (const FastP& f : v.fast_p) {
      if (f.threshold == 0.0) continue;
      md += fmt::format("| {} | {} | {} |\n", fast_label(f.threshold), rate_with_ci(f),
                        count_and_rate(f.point_count, f.point_rate));
    }
    md += "\n";
  }
}

void append_verdicts(std::string& md, const Tally& t) {
  md += "## Verdicts\n\n| Verdict | Cases |\n|---|---:|\n";
  for (const auto& [verdict, count] : t.verdicts) {
    if (count > 0) md += fmt::format("| {} | {} |\n", to_string(verdict), count);
  }
  if (t.not_run > 0) md += fmt::format("| not run | {} |\n", t.not_run);
  md += "\n";
}

void append_cheats(std::string& md, const Summary& s) {
  if (s.cheats_by_rule.empty()) return;
  md += "## Cheats by rule\n\n| Rule | Cases |\n|---|---:|\n";
  for (const auto& [rule, count] : s.cheats_by_rule) md += fmt::format("| `{}` | {} |\n", rule, count);
  md += "\nRule ids are explained in docs/anti-cheat.md.\n\n";
}

void append_transcript_flags(std::string& md, const Summary& s) {
  if (s.transcript_flags.empty()) return;
  md += fmt::format(
      "## Transcript flags\n\n{} case(s) whose agent's transcript raised a flag (result.json "
      "generation.transcript_flags has each, with its evidence).\n\n| Rule | Cases |\n|---|---:|\n",
      s.transcript_flagged_cases);
  for (const auto& [rule, count] : s.transcript_flags) md += fmt::format("| `{}` | {} |\n", rule, count);
  md += "\n";
}

void append_timing_flags(std::string& md, const Summary& s) {
  if (s.timing_flags.empty()) return;
  md += "## Timing flags\n\n| Flag | Cases |\n|---|---:|\n";
  for (const auto& [flag, count] : s.timing_flags) md += fmt::format("| `{}` | {} |\n", flag, count);
  if (s.timing_flags.contains("contended")) {
    md +=
        "\n> **Timing ran on busy cores** in the `contended` cases: other processes used more than 10 % of "
        "the leased cores, so their times describe a busy machine. Rerun them on idle cores (`devices`).\n";
  }
  if (s.timing_flags.contains("uncertain")) {
    md +=
        "\n> **Uncertain speedups** in the `uncertain` cases: the 95 % interval's upper end is more than twice "
        "its lower, so the median says little. A busy machine or few timed rounds widen it; rerun them on idle "
        "cores or with a larger `verifier.timing.budget_sec`.\n";
  }
  md += "\nFlags are explained in docs/results.md.\n\n";
}

void append_agent(std::string& md, const Summary& s) {
  const AgentTotals& a = s.agent;
  if (!a.tokens_in && !a.tokens_out && !a.tool_calls && !a.cost) return;
  auto count = [](const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : std::string("—"); };
  auto usd = [](const std::optional<double>& v) { return v ? fmt::format("${:.4f}", *v) : std::string("—"); };
  md +=
      "## Agent usage\n\n| Tokens in | Tokens out | Tool calls | Cost | Cost per passed case |\n"
      "|---:|---:|---:|---:|---:|\n";
  md += fmt::format("| {} | {} | {} | {} | {} |\n\n", count(a.tokens_in), count(a.tokens_out),
                    count(a.tool_calls), usd(a.cost), usd(a.cost_per_pass));
  md += "As the agent CLIs reported them (docs/agents.md); — means no case reported the figure.\n\n";
}

void append_levels(std::string& md, const Summary& s) {
  md += "## By level\n\n| Level | Cases | Pass | Failed | Not run | Correctness rate |";
  std::string align = "|---|---:|---:|---:|---:|---:|";
  for (double p : kFastThresholds) {
    if (p == 0.0) continue;
    md += fmt::format(" {} |", fast_label(p));
    align += "---:|";
  }
  md += " Geomean speedup |\n" + align + "---:|\n";
  for (const LevelSummary& l : s.levels) {
    const Tally& t = l.tally;
    md += fmt::format("| {} | {} | {} | {} | {} | {} |", md_text(l.level), t.selected, t.passed(),
                      t.finished - t.passed(), t.not_run, format_rate(t.correctness_rate()));
    for (const FastP& f : l.fast_p) {
      if (f.threshold != 0.0) md += fmt::format(" {} |", rate_with_ci(f));
    }
    md += fmt::format(" {} |\n", geomean_text(l.geomean.value, l.geomean.ci95, l.geomean.cases));
  }
  md += "\n";
}

// Only for a run with several samples per case.
void append_pass_at_k(std::string& md, const Summary& s) {
  if (!s.pass_at_k) return;
  const int k_max = s.pass_at_k->samples;
  md += "## pass@k\n\n| Scope | Cases | Samples passed |";
  std::string align = "|---|---:|---:|";
  for (int k = 1; k <= k_max; ++k) {
    md += fmt::format(" pass@{} |", k);
    align += "---:|";
  }
  md += " Best-of-k geomean speedup |\n" + align + "---:|\n";
  auto row = [&](const std::string& scope, const PassAtK& p, const std::string& geomean) {
    md += fmt::format("| {} | {} | {}/{} |", md_text(scope), p.cases, p.samples_passed, p.samples_run);
    for (int k = 1; k <= k_max; ++k) {
      auto it = p.rate.find(k);
      md += fmt::format(" {} |", it == p.rate.end() ? std::string(kAbsent) : format_rate(it->second));
    }
    md += fmt::format(" {} |\n", geomean);
  };
  row("all", *s.pass_at_k, geomean_text(s.geomean_speedup, s.geomean_ci95, s.speedup_cases));
  for (const LevelSummary& l : s.levels) {
    if (l.pass_at_k)
      row(l.level, *l.pass_at_k, geomean_text(l.geomean.value, l.geomean.ci95, l.geomean.cases));
  }
  md += fmt::format(
      "\npass@k: the unbiased estimate, over {} samples per case, that at least one of k samples passes "
      "(mean over cases). Each case reports its best sample, so its speedup is the best of its samples.\n\n",
      k_max);
}

// Only where a passing case's work was counted (docs/roofline.md).
void append_roofline(std::string& md, const Summary& s) {
  if (!s.roofline) return;
  const RooflineSummary& r = *s.roofline;
  md += "## Roofline\n\n";
  md += fmt::format(
      "- Median sol (speed of light: the roofline's time for the problem's bytes and FLOPs over the "
      "candidate's median time, 1 = at the machine's limit): **{}** over {} passing case{}.\n",
      r.median_sol ? fmt::format("{:.3f}", *r.median_sol) : std::string(kAbsent), r.cases,
      r.cases == 1 ? "" : "s");
  if (r.median_reference_sol)
    md += fmt::format("- The reference's median sol: {:.3f} over {} case{}.\n", *r.median_reference_sol,
                      r.reference_cases, r.reference_cases == 1 ? "" : "s");
  if (r.above_roof > 0)
    md += fmt::format(
        "- **{} case{} ran above the roof**: the work count or the roof is wrong there; no score, left out "
        "of "
        "the medians (each case's result.json says which side and by how much).\n",
        r.above_roof, r.above_roof == 1 ? "" : "s");
  if (r.missing > 0)
    md += fmt::format("- {} passing case{} without roofs: {}\n", r.missing, r.missing == 1 ? "" : "s",
                      md_text(r.missing_reason));
  md += r.plotted > 0 ? "\n![roofline](roofline.svg)\n\n" : "\n";
}

// Only for a run with refinement rounds (agent.feedback).
void append_rounds(std::string& md, const Summary& s) {
  if (!s.rounds) return;
  md +=
      "## Refinement rounds\n\n| After round | Solved | fast_1 | Tokens | Cost | Tokens per solve | Cost per "
      "solve |\n";
  md += "|---:|---:|---:|---:|---:|---:|---:|\n";
  auto count = [](const auto& v) { return v ? fmt::format("{}", *v) : std::string(kAbsent); };
  auto money = [](const std::optional<double>& v) {
    return v ? fmt::format("${:.4f}", *v) : std::string(kAbsent);
  };
  for (const RoundPoint& p : s.rounds->by_round) {
    md += fmt::format("| {} | {} ({}) | {} ({}) | {} | {} | {} | {} |\n", p.round, p.solved,
                      format_rate(p.solve_rate), p.fast_1, format_rate(p.fast_1_rate), count(p.tokens),
                      money(p.cost),
                      p.tokens_per_solve ? fmt::format("{:.0f}", *p.tokens_per_solve) : std::string(kAbsent),
                      money(p.cost_per_solve));
  }
  md += fmt::format(
      "\nEach of the {} cases with feedback as it stood after round r: its round r, or its last round when "
      "it "
      "ended earlier. Tokens and cost: what the agents spent in rounds 1 to r.\n\n",
      s.rounds->cases);
}

void append_cases(std::string& md, const Summary& s) {
  md += "## Cases\n\n| Case | Verdict | Speedup | sol | Reference ms | Candidate ms | Reason |\n";
  md += "|---|---|---:|---:|---:|---:|---|\n";
  for (const CaseRow& row : s.cases) {
    std::string verdict = row.verdict ? std::string(to_string(*row.verdict)) : "not run";
    if (row.verdict == Verdict::kPass) verdict = "**pass**";
    if (row.samples) verdict += fmt::format(" ({}/{} samples)", row.samples_passed, *row.samples);
    if (row.baseline) verdict += " (baseline)";
    if (row.rounds.size() > 1) verdict += fmt::format(" (round {})", row.rounds.size());
    // A finished case links to its record, relative to the run directory, so
    // the link works wherever the directory is browsed (a code-hosting site
    // included).
    std::string id = row.verdict ? fmt::format("[{}]({})", md_code(row.case_id),
                                               url_path("cases/" + row.case_id + "/result.json"))
                                 : md_code(row.case_id);
    if (row.execution == "host_interpreter") verdict += " (host interpreter)";
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", id, verdict, speedup_cell(row), sol_cell(row),
                      format_ms(row.reference_ms), format_ms(row.candidate_ms),
                      md_text(speedup_signs(one_line(row.reason, kReasonCells))));
  }
  md += "\n";
}

// One command per case that reproduces its verification (docs/repro.md).
void append_repro(std::string& md, const Summary& s) {
  std::string lines;
  for (const CaseRow& row : s.cases) {
    if (row.repro_command)
      lines += fmt::format("- {}: {}\n", md_code(row.case_id), md_code(*row.repro_command));
  }
  if (lines.empty()) return;
  md +=
      "## Reproduce\n\nEach command, run from the run directory, re-runs a case's verification and "
      "compares it with the recorded result.\n\n";
  md += lines + "\n";
}

}  // namespace

std::string summary_markdown(const Summary& summary, const RunInfo& info) {
  std::string md = "# kgym run summary\n\n";
  append_run_lines(md, info);
  append_headline(md, summary);
  append_versus(md, summary);
  append_verdicts(md, summary.total);
  append_cheats(md, summary);
  append_transcript_flags(md, summary);
  append_timing_flags(md, summary);
  append_agent(md, summary);
  append_levels(md, summary);
  append_pass_at_k(md, summary);
  append_rounds(md, summary);
  append_roofline(md, summary);
  append_cases(md, summary);
  append_repro(md, summary);
  if (info.machine.is_object() && !info.machine.empty()) {
    md += "## Machine\n\n| Property | Value |\n|---|---|\n";
    flatten_machine(info.machine, "", md);
    md += "\n";
  }
  return md;
}

}  // namespace kgym::report
