// The two renderings of a Comparison: aligned terminal text and Markdown.
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "report/compare.h"
#include "report/format.h"
#include "util/text_cells.h"

namespace kgym::report {
namespace {

constexpr std::size_t kGap = 2;

std::string value_text(const AggregateDelta& d, std::optional<double> v) {
  if (!v) return std::string(kAbsent);
  switch (d.unit) {
    case AggregateDelta::Unit::kCount: return fmt::format("{:.0f}", *v);
    case AggregateDelta::Unit::kRate: return format_rate(v);
    case AggregateDelta::Unit::kSpeedup: return format_speedup(v);
  }
  return std::string(kAbsent);
}

// "+6.9 pp", "−1", "×1.35"; "—" when either side is missing; "=" when equal.
std::string delta_text(const AggregateDelta& d) {
  if (!d.a || !d.b) return std::string(kAbsent);
  switch (d.unit) {
    case AggregateDelta::Unit::kCount: {
      double diff = *d.b - *d.a;
      return diff == 0 ? "=" : fmt::format("{:+.0f}", diff);
    }
    case AggregateDelta::Unit::kRate: {
      double points = (*d.b - *d.a) * 100;
      return std::abs(points) < 0.05 ? "=" : fmt::format("{:+.1f} pp", points);
    }
    case AggregateDelta::Unit::kSpeedup:
      return *d.a > 0 ? fmt::format("\u00d7{:.2f}", *d.b / *d.a) : std::string(kAbsent);
  }
  return std::string(kAbsent);
}

std::string verdict_text(const CaseRow* row) {
  if (!row) return std::string(kAbsent);
  return row->verdict ? std::string(to_string(*row->verdict)) : "not run";
}

bool uncertain(const CaseRow* row) { return row && is_uncertain(*row); }

// "1.20× → 1.45× (uncertain)": a side whose interval is too wide to mean
// much is marked.
std::string side_speedup(const CaseRow* row) {
  if (!row) return std::string(kAbsent);
  std::string text = format_speedup(row->speedup);
  return uncertain(row) ? text + " (uncertain)" : text;
}

std::string speedup_text(const CaseChange& c) { return side_speedup(c.a) + " \u2192 " + side_speedup(c.b); }

// The line under the cases when a shown speedup is uncertain.
std::optional<std::string> uncertain_line(const std::vector<const CaseChange*>& shown) {
  for (const CaseChange* cc : shown)
    if (uncertain(cc->a) || uncertain(cc->b))
      return "(uncertain): the speedup's 95% interval spans more than 2x (a busy machine or few timed rounds); "
             "its median says little, and compare calls a case faster or slower only beyond both runs' noise "
             "floors";
  return std::nullopt;
}

std::string change_text(const CaseChange& c) {
  std::string text(to_string(c.change));
  if ((c.change == Change::kFaster || c.change == Change::kSlower) && c.speedup_ratio) {
    text += fmt::format(" \u00d7{:.2f}", *c.speedup_ratio);
  }
  return text;
}

std::vector<const CaseChange*> shown_cases(const Comparison& c, bool all_cases) {
  std::vector<const CaseChange*> out;
  for (const CaseChange& cc : c.cases) {
    if (all_cases || cc.change != Change::kSame) out.push_back(&cc);
  }
  return out;
}

std::string common_line(const Comparison& c) {
  if (!c.common_speedup_ratio) return "like for like: no case passes with a speedup in both runs";
  return fmt::format(
      "like for like: B/A speedup \u00d7{:.2f} (geometric mean over the {} case{} passing in both)",
      *c.common_speedup_ratio, c.common_cases, c.common_cases == 1 ? "" : "s");
}

std::string row(const std::vector<std::string>& cells, const std::vector<std::size_t>& widths,
                const std::vector<bool>& right) {
  std::string line;
  for (std::size_t k = 0; k < cells.size(); ++k) {
    if (k > 0) line += std::string(kGap, ' ');
    line += util::fit_cells(cells[k], widths[k], right[k]);
  }
  return util::trim_right(std::move(line));
}

// Column widths: each the widest cell, the first (the name) cut so the row
// fits `width`.
std::vector<std::size_t> widths_of(const std::vector<std::vector<std::string>>& rows, std::size_t width) {
  std::vector<std::size_t> w(rows.front().size(), 0);
  for (const auto& r : rows) {
    for (std::size_t k = 0; k < r.size(); ++k) w[k] = std::max(w[k], util::display_width(r[k]));
  }
  std::size_t others = 0;
  for (std::size_t k = 1; k < w.size(); ++k) others += w[k] + kGap;
  if (others + w[0] > width) w[0] = std::max<std::size_t>(width > others ? width - others : 0, 12);
  return w;
}

std::string md_cell(std::string_view text) {
  std::string out;
  for (char ch : text) {
    if (ch == '|' || ch == '\\' || ch == '*' || ch == '_' || ch == '`' || ch == '[' || ch == ']') out += '\\';
    if (ch == '<') {
      out += "&lt;";
      continue;
    }
    out += ch;
  }
  return out;
}

}  // namespace

std::string comparison_table(const Comparison& c, const std::string& label_a, const std::string& label_b,
                             int width, bool all_cases) {
  const auto cols = static_cast<std::size_t>(std::max(width, 40));
  std::vector<std::string> lines;
  lines.push_back(util::truncate_cells("A: " + label_a, cols));
  lines.push_back(util::truncate_cells("B: " + label_b, cols));
  lines.emplace_back();

  std::vector<std::vector<std::string>> agg = {{"", "A", "B", "change"}};
  for (const AggregateDelta& d : c.aggregates) {
    agg.push_back({d.name, value_text(d, d.a), value_text(d, d.b), delta_text(d)});
  }
  auto aw = widths_of(agg, cols);
  for (const auto& r : agg) lines.push_back(row(r, aw, {false, true, true, true}));
  lines.push_back(util::truncate_cells(common_line(c), cols));
  lines.emplace_back();

  auto shown = shown_cases(c, all_cases);
  if (shown.empty()) {
    lines.push_back(fmt::format("no case changed ({} compared)", c.cases.size()));
  } else {
    lines.push_back(all_cases ? fmt::format("{} cases, {} changed:", c.cases.size(), c.changed)
                              : fmt::format("{} of {} cases changed:", c.changed, c.cases.size()));
    std::vector<std::vector<std::string>> rows = {{"CASE", "A", "B", "SPEEDUP A \u2192 B", "CHANGE"}};
    for (const CaseChange* cc : shown) {
      rows.push_back(
          {cc->case_id, verdict_text(cc->a), verdict_text(cc->b), speedup_text(*cc), change_text(*cc)});
    }
    auto w = widths_of(rows, cols);
    for (const auto& r : rows) lines.push_back(row(r, w, {false, false, false, false, false}));
  }
  if (auto line = uncertain_line(shown)) lines.push_back(*line);
  std::size_t unchanged = c.cases.size() - static_cast<std::size_t>(c.changed);
  if (!all_cases && unchanged > 0 && !shown.empty()) {
    lines.push_back(
        fmt::format("{} case{} unchanged (--all lists every case)", unchanged, unchanged == 1 ? "" : "s"));
  }
  for (std::string& l : lines) l = util::truncate_cells(l, cols);
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

std::string comparison_markdown(const Comparison& c, const std::string& label_a, const std::string& label_b,
                                bool all_cases) {
  std::string md = "# kgym comparison\n\n";
  md += fmt::format("- **A**: `{}`\n- **B**: `{}`\n\n", label_a, label_b);
  md += "## Aggregates\n\n| | A | B | change |\n|---|---:|---:|---:|\n";
  for (const AggregateDelta& d : c.aggregates) {
    md += fmt::format("| {} | {} | {} | {} |\n", md_cell(d.name), value_text(d, d.a), value_text(d, d.b),
                      md_cell(delta_text(d)));
  }
  md += "\n" + md_cell(common_line(c)) + "\n\n";
  auto shown = shown_cases(c, all_cases);
  md += all_cases ? fmt::format("## Cases ({} changed of {})\n\n", c.changed, c.cases.size())
                  : fmt::format("## Changed cases ({} of {})\n\n", c.changed, c.cases.size());
  if (shown.empty()) {
    md += "No case changed.\n";
    return md;
  }
  md += "| case | A | B | speedup A → B | change |\n|---|---|---|---|---|\n";
  for (const CaseChange* cc : shown) {
    md += fmt::format("| `{}` | {} | {} | {} | **{}** |\n", cc->case_id, md_cell(verdict_text(cc->a)),
                      md_cell(verdict_text(cc->b)), speedup_text(*cc), md_cell(change_text(*cc)));
  }
  if (auto line = uncertain_line(shown)) md += "\n" + md_cell(*line) + "\n";
  std::size_t unchanged = c.cases.size() - static_cast<std::size_t>(c.changed);
  if (!all_cases && unchanged > 0) md += fmt::format("\n{} case(s) unchanged.\n", unchanged);
  return md;
}

}  // namespace kgym::report
