// The leaderboard as a text table, Markdown and a self-contained HTML page.
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "history/leaderboard.h"
#include "report/svg.h"

namespace kgym::history {
namespace {

constexpr std::string_view kStyle = R"css(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; margin: 24px auto; max-width: 1180px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 4px; } .sub { color: #666; margin: 0 0 16px; } .note { color: #8a5a00; }
table { border-collapse: collapse; font-size: 13px; } th, td { border-bottom: 1px solid #e5e5e5; padding: 4px 8px; text-align: left; }
th { background: #f6f6f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.ci { color: #777; font-size: 12px; }
)css";

std::string percent(double rate) { return fmt::format("{:.1f}%", 100 * rate); }

std::string rate_cell(const Rate& r) {
  if (!r.ci95) return percent(r.rate);
  return fmt::format("{} [{:.0f}-{:.0f}]", percent(r.rate), 100 * r.ci95->lo, 100 * r.ci95->hi);
}

std::string geomean_cell(const report::Geomean& g) {
  if (!g.value) return "-";
  if (!g.ci95) return fmt::format("{:.2f}x", *g.value);
  return fmt::format("{:.2f}x [{:.2f}-{:.2f}]", *g.value, g.ci95->lo, g.ci95->hi);
}

std::string pass_k_cell(const LeaderboardEntry& e) {
  return e.pass_at_k ? fmt::format("{} (k={})", percent(*e.pass_at_k), e.pass_k) : "-";
}

std::vector<std::string> header(const Leaderboard& board) {
  return {std::string(to_string(board.by)),
          "runs",
          "cases",
          "pass@1",
          "pass@k",
          "correct",
          "cheat",
          "fast_1 [95% CI]",
          "fast_2 [95% CI]",
          "geomean [95% CI]",
          "median sol",
          "tokens/solve",
          "cost/solve"};
}

std::vector<std::string> cells(const LeaderboardEntry& e) {
  return {e.key,
          fmt::format("{}", e.runs),
          fmt::format("{}", e.cases),
          percent(e.pass_at_1),
          pass_k_cell(e),
          percent(e.correct.rate),
          percent(e.cheat.rate),
          rate_cell(e.fast_1),
          rate_cell(e.fast_2),
          geomean_cell(e.geomean),
          e.median_sol ? fmt::format("{:.3f} ({})", *e.median_sol, e.sol_cases) : "-",
          e.tokens_per_solve ? fmt::format("{:.0f}", *e.tokens_per_solve) : "-",
          e.cost_per_solve ? fmt::format("${:.4f}", *e.cost_per_solve) : "-"};
}

std::string markdown_cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string leaderboard_table(const Leaderboard& board) {
  if (board.entries.empty()) return "no indexed results match (run `kgym history index ROOT` first)\n";
  std::vector<std::vector<std::string>> rows{header(board)};
  for (const LeaderboardEntry& e : board.entries) rows.push_back(cells(e));
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::string out;
  if (std::string line = common_cases_line(board); !line.empty()) out += line + "\n\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    for (std::size_t i = 0; i < rows[r].size(); ++i) {
      if (i > 0) line += "  ";
      line +=
          i == 0 ? fmt::format("{:<{}}", rows[r][i], width[i]) : fmt::format("{:>{}}", rows[r][i], width[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (r == 0) out += std::string(line.size(), '-') + "\n";
  }
  return out;
}

std::string leaderboard_markdown(const Leaderboard& board) {
  std::string out = fmt::format("# kgym leaderboard (by {})\n\n", to_string(board.by));
  if (std::string line = common_cases_line(board); !line.empty()) out += "> " + line + "\n\n";
  out += fmt::format("{} common case{}; intervals are 95% (Wilson for rates, bootstrap for the geomean).\n\n",
                     board.common_cases, board.common_cases == 1 ? "" : "s");
  std::vector<std::string> head = header(board);
  out += "|";
  for (const std::string& h : head) out += " " + markdown_cell(h) + " |";
  out += "\n|";
  for (std::size_t i = 0; i < head.size(); ++i) out += i == 0 ? "---|" : "---:|";
  out += "\n";
  for (const LeaderboardEntry& e : board.entries) {
    out += "|";
    for (const std::string& c : cells(e)) out += " " + markdown_cell(c) + " |";
    out += "\n";
  }
  return out;
}

std::string leaderboard_html(const Leaderboard& board, std::string_view generated_at) {
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += fmt::format("<title>kgym leaderboard by {}</title>\n<style>{}</style>\n</head>\n<body>\n",
                      to_string(board.by), kStyle);
  html += fmt::format(
      "<h1>kgym leaderboard by {}</h1>\n<p class=\"sub\">{} common case{}, generated {}; "
      "intervals are 95% (Wilson for rates, bootstrap for the geomean)</p>\n",
      to_string(board.by), board.common_cases, board.common_cases == 1 ? "" : "s",
      report::xml_escape(generated_at));
  if (std::string line = common_cases_line(board); !line.empty())
    html += fmt::format("<p class=\"note\">{}</p>\n", report::xml_escape(line));
  html += "<table>\n<thead><tr>";
  for (const std::string& h : header(board)) html += fmt::format("<th>{}</th>", report::xml_escape(h));
  html += "</tr></thead>\n<tbody>\n";
  for (const LeaderboardEntry& e : board.entries) {
    html += "<tr>";
    std::vector<std::string> row = cells(e);
    for (std::size_t i = 0; i < row.size(); ++i)
      html += fmt::format("<td{}>{}</td>", i == 0 ? "" : " class=\"num\"", report::xml_escape(row[i]));
    html += "</tr>\n";
  }
  html += "</tbody>\n</table>\n</body>\n</html>\n";
  return html;
}

}  // namespace kgym::history
