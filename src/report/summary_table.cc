// The plain-text summary printed at the end of `kgym run` and by
// `kgym report`: a headline wrapped to the width, then one aligned row per
// case. No escape codes; every line fits `width` cells.
#include <algorithm>

#include <fmt/format.h>

#include "report/format.h"
#include "report/summary.h"
#include "util/text_cells.h"

namespace kgym::report {
namespace {

constexpr int kMinWidth = 40;
constexpr std::size_t kGap = 2;
constexpr std::size_t kMinIdCells = 20;
constexpr std::size_t kMinReasonCells = 12;

struct Column {
  std::string title;
  std::size_t width;
  bool align_right;
  int keep_priority;  // columns with the lowest priority are dropped first
};

// Joins items with two spaces, starting a new line when one would overflow.
std::string wrap_items(const std::vector<std::string>& items, std::size_t width) {
  std::string out;
  std::string line;
  for (const std::string& item : items) {
    std::size_t needed = util::display_width(line) + (line.empty() ? 0 : kGap) + util::display_width(item);
    if (!line.empty() && needed > width) {
      out += line + "\n";
      line.clear();
    }
    if (!line.empty()) line += "  ";
    line += util::truncate_cells(item, width);
  }
  if (!line.empty()) out += line + "\n";
  return out;
}

std::vector<std::string> headline_items(const Summary& s) {
  if (s.baseline && s.total.selected == 0) {
    std::vector<std::string> items = {baseline_line(*s.baseline)};
    if (s.roofline) items.push_back(roofline_line(*s.roofline));
    return items;
  }
  std::vector<std::string> items = {
      fmt::format("cases {}", s.total.selected),
      fmt::format("pass {}", s.total.passed()),
      fmt::format("correctness {}", format_rate(s.total.correctness_rate())),
      fmt::format("cheat {}", format_rate(s.total.cheat_rate())),
  };
  for (const FastP& f : s.fast_p) {
    if (f.threshold == 0.0) continue;
    items.push_back(fmt::format("fast_{} {} ({})", f.threshold, f.count, format_rate(f.rate)));
  }
  items.push_back(s.geomean_speedup
                      ? fmt::format("geomean {} over {}", format_speedup(s.geomean_speedup), s.speedup_cases)
                      : fmt::format("geomean {}", kAbsent));
  if (s.baseline) items.push_back(baseline_line(*s.baseline));
  if (s.host_interpreter) items.push_back(host_interpreter_line(*s.host_interpreter));
  if (s.roofline) items.push_back(roofline_line(*s.roofline));
  if (s.pass_at_k) {
    for (const auto& [k, rate] : s.pass_at_k->rate) {
      if (k == 1 || k == s.pass_at_k->samples)
        items.push_back(fmt::format("pass@{} {}", k, format_rate(rate)));
    }
    items.push_back(fmt::format("(best of {} samples)", s.pass_at_k->samples));
  }
  if (s.rounds) {
    const RoundPoint& first = s.rounds->by_round.front();
    const RoundPoint& last = s.rounds->by_round.back();
    items.push_back(fmt::format("solved {} after round 1, {} after round {}", format_rate(first.solve_rate),
                                format_rate(last.solve_rate), last.round));
  }
  return items;
}

std::vector<std::string> verdict_items(const Tally& t) {
  std::vector<std::string> items;
  for (const auto& [verdict, count] : t.verdicts) {
    if (count > 0) items.push_back(fmt::format("{} {}", to_string(verdict), count));
  }
  if (t.not_run > 0) items.push_back(fmt::format("not run {}", t.not_run));
  return items;
}

std::vector<std::string> row_cells(const CaseRow& row) {
  std::string verdict = row.verdict ? std::string(to_string(*row.verdict)) : "not run";
  if (row.samples) verdict += fmt::format(" {}/{}", row.samples_passed, *row.samples);  // samples that passed
  if (row.baseline) verdict += " (baseline)";
  return {row.case_id,
          verdict,
          speedup_cell(row),
          format_ms(row.reference_ms),
          format_ms(row.candidate_ms),
          one_line(row.reason, 400)};
}

std::string render_line(const std::vector<Column>& columns, const std::vector<std::string>& cells,
                        const std::vector<std::size_t>& shown) {
  std::string line;
  for (std::size_t k = 0; k < shown.size(); ++k) {
    const Column& c = columns[shown[k]];
    if (k > 0) line += std::string(kGap, ' ');
    line += util::fit_cells(cells[shown[k]], c.width, c.align_right);
  }
  return util::trim_right(std::move(line));
}

std::string case_table(const Summary& s, std::size_t width) {
  std::size_t longest_id = 4;
  for (const CaseRow& row : s.cases) longest_id = std::max(longest_id, util::display_width(row.case_id));
  const std::size_t min_id = std::min(longest_id, kMinIdCells);
  // CASE first, REASON last; the two share what the fixed columns leave.
  std::vector<Column> columns = {{"CASE", 0, false, 9},  {"VERDICT", 17, false, 8}, {"SPEEDUP", 8, true, 7},
                                 {"REF MS", 9, true, 4}, {"CAND MS", 9, true, 5},   {"REASON", 0, false, 6}};
  const std::size_t reason = columns.size() - 1;
  std::vector<std::size_t> shown = {0, 1, 2, 3, 4, 5};
  while (true) {
    bool has_reason = shown.back() == reason;
    std::size_t used = 0;
    for (std::size_t k : shown) {
      if (k != 0 && k != reason) used += columns[k].width + kGap;
    }
    std::size_t room = width > used ? width - used : 0;
    std::size_t reason_need = has_reason ? kMinReasonCells + kGap : 0;
    if (room >= min_id + reason_need || shown.size() == 1) {
      columns[0].width = std::min(longest_id, room > reason_need ? room - reason_need : 0);
      if (has_reason) columns[reason].width = room - columns[0].width - kGap;
      break;
    }
    auto victim = std::min_element(shown.begin() + 1, shown.end(), [&](std::size_t a, std::size_t b) {
      return columns[a].keep_priority < columns[b].keep_priority;
    });
    shown.erase(victim);
  }
  std::vector<std::string> titles;
  for (const Column& c : columns) titles.push_back(c.title);
  std::string out = render_line(columns, titles, shown) + "\n";
  for (const CaseRow& row : s.cases) out += render_line(columns, row_cells(row), shown) + "\n";
  return out;
}

}  // namespace

std::string summary_table(const Summary& summary, int width) {
  auto cells = static_cast<std::size_t>(std::max(width, kMinWidth));
  std::string out = wrap_items(headline_items(summary), cells);
  std::vector<std::string> verdicts = verdict_items(summary.total);
  if (!verdicts.empty()) out += wrap_items(verdicts, cells);
  if (summary.total.not_run > 0) {
    out += util::truncate_cells(
               fmt::format("{} case(s) did not run; they are not counted as passed.", summary.total.not_run),
               cells) +
           "\n";
  }
  if (!summary.cases.empty()) out += "\n" + case_table(summary, cells);
  return out;
}

}  // namespace kgym::report
