#include "report/html_report.h"

#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/case_paths.h"
#include "report/format.h"
#include "report/html_plots.h"
#include "report/svg.h"

namespace kgym::report {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kStyle = R"css(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; margin: 24px auto; max-width: 1180px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.sub { color: #666; margin: 0 0 16px; } .note { max-width: 640px; font-size: 12px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 10px 14px; min-width: 130px; }
.card .v { font-size: 22px; font-weight: 600; } .card .k { color: #666; font-size: 12px; } .card .ci { color: #666; font-size: 12px; }
.plots { display: flex; flex-wrap: wrap; gap: 24px; } figure { margin: 0; } figcaption { font-weight: 600; margin-bottom: 4px; }
svg text { font-family: system-ui, sans-serif; fill: #333; }
table { border-collapse: collapse; font-size: 13px; } th, td { border-bottom: 1px solid #e5e5e5; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f6f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.badge { color: #fff; border-radius: 3px; padding: 1px 6px; font-size: 12px; white-space: nowrap; }
.files { min-width: 150px; max-width: 230px; } .files a { margin-right: 8px; white-space: nowrap; display: inline-block; } .reason { color: #555; max-width: 320px; overflow-wrap: anywhere; } .sizes { color: #777; font-size: 85%; max-width: 260px; } .repro { color: #555; font-size: 85%; overflow-wrap: anywhere; }
.empty { color: #777; font-style: italic; } dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; } dt { color: #666; } dd { margin: 0; font-family: ui-monospace, monospace; font-size: 12px; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
)css";

constexpr std::string_view kRedacted = "<redacted>";

std::string esc(std::string_view text) { return xml_escape(text); }

std::size_t indent_of(std::string_view line) {
  std::size_t n = line.find_first_not_of(' ');
  return n == std::string_view::npos ? line.size() : n;
}

// "--set agent.env.KEY=VALUE" with the value redacted.
std::string redact_set(const std::string& set) {
  auto eq = set.find('=');
  if (set.rfind("agent.env.", 0) != 0 || eq == std::string::npos) return set;
  return set.substr(0, eq + 1) + std::string(kRedacted);
}

std::string rate_with_ci(std::optional<double> rate, std::optional<Interval> ci) {
  std::string out = format_rate(rate);
  if (ci) out += fmt::format(" <span class=\"ci\">[{}, {}]</span>", format_rate(ci->lo), format_rate(ci->hi));
  return out;
}

void card(std::string& html, std::string_view key, const std::string& value_html,
          std::string_view note = {}) {
  html += fmt::format("<div class=\"card\"><div class=\"k\">{}</div><div class=\"v\">{}</div>", esc(key),
                      value_html);
  if (!note.empty()) html += fmt::format("<div class=\"ci\">{}</div>", esc(note));
  html += "</div>\n";
}

void headline(std::string& html, const Summary& s) {
  html += "<section id=\"headline\">\n<h2>Headline</h2>\n<div class=\"cards\">\n";
  const FastP* correct = fast_at(s, 0.0);
  card(html, "correct", rate_with_ci(s.total.correctness_rate(), correct ? correct->rate_ci95 : std::nullopt),
       fmt::format("{} of {} cases", s.total.passed(), s.total.selected));
  card(html, "cheat", esc(format_rate(s.total.cheat_rate())),
       fmt::format("{} of {} cases", s.total.count(Verdict::kFailCheat), s.total.selected));
  if (s.transcript_flagged_cases > 0) {
    std::vector<std::string> rules;
    for (const auto& [rule, count] : s.transcript_flags) rules.push_back(fmt::format("{} {}", rule, count));
    card(html, "transcript flags",
         esc(fmt::format("{} of {} cases", s.transcript_flagged_cases, s.total.selected)),
         fmt::format("{}", fmt::join(rules, ", ")));
  }
  if (const auto& h = s.host_interpreter) {
    card(html, "host interpreter", esc(fmt::format("{} of {} cases", h->cases, s.total.selected)),
         fmt::format("{} pass, {} with a simulated time; correctness only, never in fast_p or the geomean",
                     h->passed, h->simulated));
  }
  for (double p : {1.0, 1.5, 2.0}) {
    const FastP* f = fast_at(s, p);
    if (!f) continue;
    card(html, fmt::format("fast_{}", p), rate_with_ci(f->rate, f->rate_ci95),
         fmt::format("{} with interval above {}×; {} by median", f->count, p, f->point_count));
  }
  std::string geomean = esc(format_speedup(s.geomean_speedup));
  if (s.geomean_ci95) {
    geomean += fmt::format(" <span class=\"ci\">[{}, {}]</span>", esc(format_speedup(s.geomean_ci95->lo)),
                           esc(format_speedup(s.geomean_ci95->hi)));
  }
  card(html, s.pass_at_k ? "best-of-k geomean speedup" : "geomean speedup", geomean,
       fmt::format("over {} passing cases", s.speedup_cases));
  for (const VersusSummary& v : s.versus) {
    std::string against = v.baseline == "compile" ? "torch.compile" : v.baseline;
    for (const FastP& f : v.fast_p) {
      if (f.threshold != 1.0) continue;
      card(html, fmt::format("fast_1 vs {}", esc(against)), rate_with_ci(f.rate, f.rate_ci95),
           fmt::format("{} with interval above 1×; {} timed, {} unavailable", f.count, v.timed,
                       v.unavailable));
    }
    std::string value = esc(format_speedup(v.geomean.value));
    if (v.geomean.ci95) {
      value += fmt::format(" <span class=\"ci\">[{}, {}]</span>", esc(format_speedup(v.geomean.ci95->lo)),
                           esc(format_speedup(v.geomean.ci95->hi)));
    }
    card(html, fmt::format("geomean vs {}", esc(against)), value,
         fmt::format("over {} passing cases", v.geomean.cases));
  }
  if (const auto& b = s.baseline) {
    card(html, "baseline (A/A)", fmt::format("{} of {}", b->contains_one, b->timed),
         fmt::format("timed intervals contain 1; {} cases, {} pass, median {}", b->cases, b->passed,
                     esc(format_speedup(b->median_speedup))));
  }
  // Several samples per case: pass@1 and pass@k, overall and per level.
  if (s.pass_at_k) {
    const PassAtK& p = *s.pass_at_k;
    for (int k : {1, p.samples}) {
      auto it = p.rate.find(k);
      if (it == p.rate.end() || (k == p.samples && k == 1)) continue;
      std::string levels;
      for (const LevelSummary& l : s.levels) {
        if (!l.pass_at_k || !l.pass_at_k->rate.contains(k)) continue;
        levels +=
            fmt::format("{}{} {}", levels.empty() ? "" : ", ", l.level, format_rate(l.pass_at_k->rate.at(k)));
      }
      card(html, fmt::format("pass@{}", k), esc(format_rate(it->second)),
           fmt::format("{} samples per case; {}", p.samples, levels));
    }
  }
  if (const auto& rounds = s.rounds) {
    const RoundPoint& first = rounds->by_round.front();
    const RoundPoint& last = rounds->by_round.back();
    card(html, fmt::format("solved by round {}", last.round), esc(format_rate(last.solve_rate)),
         fmt::format("round 1: {}; fast_1 {} → {}; {} cases with feedback", format_rate(first.solve_rate),
                     format_rate(first.fast_1_rate), format_rate(last.fast_1_rate), rounds->cases));
  }
  if (const auto& roof = s.roofline) {
    card(html, "median sol",
         esc(roof->median_sol ? fmt::format("{:.3f}", *roof->median_sol) : std::string(kAbsent)),
         esc(roofline_line(*roof)));
  }
  html += "</div>\n</section>\n";
}

void figure(std::string& html, std::string_view id, std::string_view caption, const std::string& svg,
            std::string_view note = {}) {
  html += fmt::format("<figure id=\"{}\"><figcaption>{}</figcaption>\n{}\n", esc(id), esc(caption), svg);
  if (!note.empty()) html += fmt::format("<p class=\"sub note\">{}</p>\n", esc(note));
  html += "</figure>\n";
}

void plots(std::string& html, const HtmlReportInput& in) {
  html += "<section id=\"plots\">\n<h2>Plots</h2>\n<div class=\"plots\">\n";
  figure(html, "plot-speedup", "Speedup per case (95% interval)", speedup_plot(*in.summary));
  figure(html, "plot-fast-p", "fast_p over p", fast_p_plot(*in.summary));
  if (const auto& rounds = in.summary->rounds)
    figure(html, "plot-rounds", "Solved and fast_1 after each refinement round", rounds_plot(*rounds),
           "Each case as it stood after round r: its round r, or its last round when it ended earlier.");
  if (in.summary->roofline)
    figure(html, "plot-roofline", "Roofline: candidate and reference per passing case",
           roofline_plot(*in.summary),
           "Achieved GFLOP/s (the problem's counted FLOPs over each side's median time) over FLOPs per byte "
           "moved; the lines are the machine's roofs as measured on the device's cores (docs/roofline.md). A "
           "point above its roof is an error of the count or the roof, never a score.");
  figure(html, "plot-verdicts", "Verdicts per level", verdicts_plot(*in.summary));
  figure(html, "plot-phases", "Time spent per phase", phase_time_plot(*in.results),
         "generate: the agent (or its workflow's stages and gates); build: compiling the candidate; verify: "
         "the verification. Waiting and other: the rest of each case's time from its start: probing the "
         "reference (its sizes and forward time), the static checks, waiting for a build slot and then for a "
         "device, and writing its records.");
  html += "</div>\n</section>\n";
}

std::optional<double> total_seconds(const std::vector<CaseResult>& results, const std::string& id) {
  for (const CaseResult& r : results) {
    if (r.case_id == id) return r.timings.total_s;
  }
  return std::nullopt;
}

// "sizes batch_size=64 (as written 4096): ..." for a case problem.size
// shrank, else "".
std::string sizes_note(const std::vector<CaseResult>& results, const std::string& id) {
  for (const CaseResult& r : results) {
    if (r.case_id == id && r.problem && !r.problem->sizes.empty()) return describe_sizes(*r.problem);
  }
  return "";
}

void case_table(std::string& html, const HtmlReportInput& in) {
  html +=
      "<section id=\"cases\">\n<h2>Cases</h2>\n<table>\n<thead><tr><th>case</th><th>verdict</th>"
      "<th>speedup</th><th>95% interval</th><th>sol</th><th>reference ms</th><th>candidate "
      "ms</th><th>time</th>"
      "<th>reason</th><th>files</th></tr></thead>\n<tbody>\n";
  for (const CaseRow& r : in.summary->cases) {
    std::string verdict = r.verdict ? std::string(to_string(*r.verdict)) : "not_run";
    std::string label =
        r.verdict == Verdict::kFailCheat && r.cheat_rule ? verdict + " (" + *r.cheat_rule + ")" : verdict;
    if (r.baseline) label += " (baseline)";
    if (r.execution == "host_interpreter") label += " (host interpreter)";
    std::string ci = r.speedup_ci95 ? fmt::format("{} – {}", format_speedup(r.speedup_ci95->lo),
                                                  format_speedup(r.speedup_ci95->hi))
                                    : std::string(kAbsent);
    // Against the other baselines, under the eager speedup.
    std::string versus;
    for (const auto& v : r.versus) {
      std::string name = v.baseline == "compile" ? "torch.compile" : v.baseline;
      std::string value = v.speedup ? format_speedup(v.speedup) : std::string("unavailable");
      if (v.speedup_ci95)
        value +=
            fmt::format(" [{} – {}]", format_speedup(v.speedup_ci95->lo), format_speedup(v.speedup_ci95->hi));
      versus += fmt::format("<div class=\"sizes\">vs {}: {}</div>", esc(name), esc(value));
    }
    auto took = total_seconds(*in.results, r.case_id);
    std::string sizes = sizes_note(*in.results, r.case_id);
    std::string files;
    if (auto it = in.files.find(r.case_id); it != in.files.end()) {
      for (const CaseFile& f : it->second) {
        files += fmt::format("<a href=\"{}\">{}</a>", esc(url_path(f.relative_path)), esc(f.label));
      }
    }
    if (r.repro_command)
      files += fmt::format("<div class=\"repro\" title=\"run from the run directory\">reproduce: <code>{}</code></div>", esc(*r.repro_command));
    html += fmt::format(
        "<tr id=\"case-{}\"><td>{}{}</td><td><span class=\"badge\" style=\"background:{}\">{}</span></td>"
        "<td class=\"num\">{}{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"reason\">{}</td><td class=\"files\">{}</td></tr>\n",
        esc(url_path(r.case_id)), esc(r.case_id),
        sizes.empty() ? std::string() : fmt::format("<div class=\"sizes\">{}</div>", esc(sizes)),
        verdict_color(verdict), esc(label), esc(speedup_cell(r)), versus, esc(ci), esc(sol_cell(r)),
        esc(format_ms(r.reference_ms)), esc(format_ms(r.candidate_ms)),
        took ? fmt::format("{:.1f} s", *took) : std::string(kAbsent),
        esc(r.verdict == Verdict::kPass ? "" : speedup_signs(one_line(r.reason, 300))), files);
  }
  html += "</tbody>\n</table>\n</section>\n";
}

// A record value on one line: strings as they are, arrays joined, objects
// flattened by the caller.
std::string scalar_text(const nlohmann::json& v) {
  if (v.is_null()) return std::string(kAbsent);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string out;
    for (const auto& item : v) out += (out.empty() ? "" : ", ") + scalar_text(item);
    return out.empty() ? "(none)" : out;
  }
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void flatten(const nlohmann::json& j, const std::string& prefix, std::string& html) {
  for (const auto& [key, value] : j.items()) {
    std::string name = prefix.empty() ? key : prefix + "." + key;
    if (name == "cases") continue;  // the selection is the case table
    if (name == "sets" && value.is_array()) {
      nlohmann::json redacted = nlohmann::json::array();
      for (const auto& set : value)
        redacted.push_back(set.is_string() ? nlohmann::json(redact_set(set.get<std::string>())) : set);
      html += fmt::format("<dt>{}</dt><dd>{}</dd>\n", esc(name), esc(one_line(scalar_text(redacted), 400)));
      continue;
    }
    if (value.is_object()) {
      flatten(value, name, html);
    } else {
      html += fmt::format("<dt>{}</dt><dd>{}</dd>\n", esc(name), esc(one_line(scalar_text(value), 400)));
    }
  }
}

// One section of run.json as a folded list: "<summary>config.verifier (12)</summary>".
void group(std::string& html, const std::string& name, const nlohmann::json& values, bool open) {
  std::string rows;
  flatten(values, name, rows);
  std::size_t count = 0;
  for (std::size_t at = rows.find("<dt>"); at != std::string::npos; at = rows.find("<dt>", at + 1)) ++count;
  html += fmt::format("<details class=\"group\"{}><summary>{} ({})</summary>\n<dl>\n{}</dl>\n</details>\n",
                      open ? " open=\"open\"" : "", esc(name), count, rows);
}

void provenance(std::string& html, const HtmlReportInput& in) {
  const RunInfo& info = *in.info;
  html += "<section id=\"provenance\">\n<h2>Provenance</h2>\n<dl>\n";
  html += fmt::format("<dt>run directory</dt><dd>{}</dd>\n", esc(info.run_dir));
  html += fmt::format("<dt>status</dt><dd>{}</dd>\n", esc(info.status));
  html +=
      fmt::format("<dt>started</dt><dd>{}</dd>\n", esc(info.started_at_iso.value_or(std::string(kAbsent))));
  html +=
      fmt::format("<dt>finished</dt><dd>{}</dd>\n", esc(info.finished_at_iso.value_or(std::string(kAbsent))));
  if (in.run_record.is_object()) {
    // The record's scalars here; each section (machine, config, ...) a
    // group of its own below, and config one per section of the file.
    nlohmann::json scalars = nlohmann::json::object();
    for (const auto& [key, value] : in.run_record.items())
      if (!value.is_object()) scalars[key] = value;
    flatten(scalars, "", html);
    html += "</dl>\n";
    for (const auto& [key, value] : in.run_record.items()) {
      if (!value.is_object()) continue;
      nlohmann::json direct = nlohmann::json::object();
      std::vector<std::pair<std::string, const nlohmann::json*>> sections;
      for (const auto& [sub, sub_value] : value.items()) {
        if (sub_value.is_object() && key == "config")
          sections.emplace_back(key + "." + sub, &sub_value);
        else
          direct[sub] = sub_value;
      }
      if (!direct.empty()) group(html, key, direct, key == "machine");
      for (const auto& [name, section] : sections) group(html, name, *section, false);
    }
    html += "<dl>\n";
  } else {
    if (!info.backend.empty()) html += fmt::format("<dt>backend</dt><dd>{}</dd>\n", esc(info.backend));
    if (!info.mode.empty()) html += fmt::format("<dt>mode</dt><dd>{}</dd>\n", esc(info.mode));
    if (info.machine.is_object()) flatten(info.machine, "machine", html);
  }
  html += "</dl>\n";
  if (!in.config_text.empty()) {
    html += fmt::format("<details><summary>configuration file {}</summary>\n<pre>{}</pre>\n</details>\n",
                        esc(info.config_path.value_or("")), esc(redact_env_values(in.config_text)));
  }
  html +=
      "<p class=\"sub\">Per-trial input seeds of each case are in its result.json (correctness.seeds).</p>\n";
  html += "</section>\n";
}

}  // namespace

std::string redact_env_values(std::string_view yaml_text) {
  std::string out;
  std::optional<std::size_t> env_indent;  // inside an env: block opened at this indentation
  std::size_t start = 0;
  while (start <= yaml_text.size()) {
    std::size_t end = yaml_text.find('\n', start);
    if (end == std::string_view::npos) end = yaml_text.size();
    std::string line(yaml_text.substr(start, end - start));
    std::size_t indent = indent_of(line);
    bool blank = indent == line.size() || line[indent] == '#';
    if (env_indent && !blank && indent <= *env_indent) env_indent.reset();
    if (env_indent && !blank) {
      // "  KEY: value" -> "  KEY: <redacted>"; "  - item" -> "  - <redacted>".
      std::size_t colon = line.find(':', indent);
      std::size_t cut = line[indent] == '-' ? indent + 1 : colon;
      if (cut != std::string::npos) line = line.substr(0, cut + 1) + " " + std::string(kRedacted);
    } else if (!blank && line.compare(indent, 4, "env:") == 0) {
      std::string_view rest = std::string_view(line).substr(indent + 4);
      std::size_t value = rest.find_first_not_of(' ');
      if (value == std::string_view::npos || rest[value] == '#') {
        env_indent = indent;  // a block follows
      } else {
        line = line.substr(0, indent + 4) + " " + std::string(kRedacted);  // flow style on one line
      }
    }
    out += line;
    if (end < yaml_text.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

std::string url_path(std::string_view path) {
  std::string out;
  for (char c : path) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '/' || c == '.' || c == '_' || c == '~' || c == '-') {
      out += c;
    } else {
      out += fmt::format("%{:02X}", u);
    }
  }
  return out;
}

std::map<std::string, std::vector<CaseFile>> find_case_files(const fs::path& run_dir,
                                                             const std::vector<std::string>& case_ids) {
  static const std::pair<std::string_view, std::string> kFiles[] = {
      {"SPEC.md", std::string(CasePaths::kSpec)},
      {"prompt", std::string(CasePaths::kPrompt)},
      {"agent log", std::string(CasePaths::kAgentLog)},
      {"transcript", std::string(CasePaths::kTranscript)},
      {"candidate", std::string(CasePaths::kCandidate) + "/model_new.py"},
      {"generation", std::string(CasePaths::kGeneration)},
      {"verify log", std::string(CasePaths::kVerifyLog)},
      {"result", std::string(CasePaths::kResult)},
  };
  std::map<std::string, std::vector<CaseFile>> out;
  for (const std::string& id : case_ids) {
    std::vector<CaseFile>& files = out[id];
    for (const auto& [label, name] : kFiles) {
      std::string relative = "cases/" + id + "/" + name;
      std::error_code ec;
      if (fs::is_regular_file(run_dir / relative, ec)) files.push_back({std::string(label), relative});
    }
  }
  return out;
}

std::string html_report(const HtmlReportInput& in) {
  const RunInfo& info = *in.info;
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n";
  html += fmt::format("<title>kgym report: {}</title>\n", esc(info.run_dir.empty() ? "run" : info.run_dir));
  html += fmt::format("<style>{}</style>\n</head>\n<body>\n", kStyle);
  html += fmt::format("<h1>kgym report</h1>\n<p class=\"sub\">{} · status <b>{}</b>", esc(info.run_dir),
                      esc(info.status));
  if (!info.backend.empty()) html += fmt::format(" · backend {}", esc(info.backend));
  if (!info.mode.empty()) html += fmt::format(" · mode {}", esc(info.mode));
  html +=
      fmt::format(" · {} cases, {} finished</p>\n", in.summary->total.selected, in.summary->total.finished);
  headline(html, *in.summary);
  plots(html, in);
  case_table(html, in);
  provenance(html, in);
  html += "</body>\n</html>\n";
  return html;
}

}  // namespace kgym::report
