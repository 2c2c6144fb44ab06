#include "report/html_plots.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/format.h"
#include "report/svg.h"

namespace kgym::report {
namespace {

constexpr double kLeft = 56, kRight = 16, kTop = 16;
constexpr std::string_view kAxis = "#555", kGrid = "#e3e3e3", kAccent = "#1565c0", kUncertain = "#ff9800";

std::string empty(std::string_view what) {
  return fmt::format("<p class=\"empty\">{}</p>", xml_escape(what));
}

// The part after the level: "19_ReLU" of "level1/19_ReLU".
std::string short_id(const std::string& id) {
  auto slash = id.find('/');
  return slash == std::string::npos ? id : id.substr(slash + 1);
}

void y_axis(Svg& svg, const Scale& y, const std::vector<double>& ticks, double x0, double x1,
            std::string_view suffix) {
  for (double t : ticks) {
    svg.line(x0, y(t), x1, y(t), kGrid);
    svg.text(x0 - 6, y(t) + 4, tick_label(t) + std::string(suffix), "end", 10);
  }
  svg.line(x0, y.pixel_lo, x0, y.pixel_hi, kAxis);
}

void legend(Svg& svg, double x, double y, const std::vector<std::pair<std::string, std::string>>& items) {
  for (const auto& [label, color] : items) {
    svg.rect(x, y - 9, 10, 10, color);
    svg.text(x + 14, y, label, "start", 10);
    x += 24 + 6.2 * static_cast<double>(label.size());
  }
}

}  // namespace

std::string_view verdict_color(std::string_view verdict) {
  if (verdict == "pass") return "#2e7d32";
  if (verdict == "fail_correctness") return "#e53935";
  if (verdict == "fail_cheat") return "#8e24aa";
  if (verdict == "compile_error") return "#fb8c00";
  if (verdict == "runtime_error") return "#f4511e";
  if (verdict == "timeout") return "#fbc02d";
  if (verdict == "crash") return "#6d4c41";
  if (verdict == "generation_failed") return "#757575";
  if (verdict == "reference_error") return "#546e7a";
  if (verdict == "device_unavailable") return "#90a4ae";
  if (verdict == "harness_error") return "#212121";
  return "#cfd8dc";  // not_run
}

std::string speedup_plot(const Summary& summary) {
  std::vector<const CaseRow*> rows;
  for (const CaseRow& r : summary.cases) {
    if (r.verdict == Verdict::kPass && r.speedup && *r.speedup > 0) rows.push_back(&r);
  }
  if (rows.empty()) return empty("No passing case has a measured speedup.");
  double lo = 1, hi = 1;
  for (const CaseRow* r : rows) {
    lo = std::min(lo, r->speedup_ci95 ? r->speedup_ci95->lo : *r->speedup);
    hi = std::max(hi, r->speedup_ci95 ? r->speedup_ci95->hi : *r->speedup);
  }
  lo = std::max(lo / 1.2, 1e-3);
  hi *= 1.2;
  // A narrow range holds few of the log axis' 1-2-5 ticks: then round
  // linear ones, so the axis shows values and not only "1×".
  std::vector<double> ticks = log_ticks(lo, hi);
  if (ticks.size() < 3) {
    ticks.clear();
    for (double t : nice_ticks(lo, hi, 5))
      if (t > 0) ticks.push_back(t);
  }
  // With few cases each point is labelled with its value.
  const bool label_values = rows.size() <= 24;
  const double step = std::clamp(600.0 / static_cast<double>(rows.size()), label_values ? 36.0 : 14.0, 60.0);
  const double plot_w = std::max(step * static_cast<double>(rows.size()), 480.0);
  const double plot_h = 220, bottom = 130;
  Svg svg(kLeft + plot_w + kRight, kTop + plot_h + bottom, "Speedup per passing case with 95% interval");
  Scale y{lo, hi, kTop + plot_h, kTop, true};
  y_axis(svg, y, ticks, kLeft, kLeft + plot_w, "\u00d7");
  svg.line(kLeft, y(1), kLeft + plot_w, y(1), kAxis, 1, true);
  svg.text(kLeft - 44, kTop + plot_h / 2, "speedup", "middle", 10, -90);
  bool any_uncertain = false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const CaseRow& r = *rows[i];
    double x = kLeft + step * (static_cast<double>(i) + 0.5);
    bool uncertain = is_uncertain(r);
    any_uncertain = any_uncertain || uncertain;
    std::string tip = fmt::format("{}: {:.3g}\u00d7", r.case_id, *r.speedup);
    if (r.speedup_ci95) {
      tip += fmt::format(" [{:.3g}, {:.3g}]", r.speedup_ci95->lo, r.speedup_ci95->hi);
      svg.line(x, y(r.speedup_ci95->lo), x, y(r.speedup_ci95->hi), kAccent, 1.5);
      svg.line(x - 4, y(r.speedup_ci95->lo), x + 4, y(r.speedup_ci95->lo), kAccent, 1.5);
      svg.line(x - 4, y(r.speedup_ci95->hi), x + 4, y(r.speedup_ci95->hi), kAccent, 1.5);
    }
    if (uncertain) {
      tip += " (uncertain: the interval spans more than 2\u00d7)";
      svg.circle(x, y(*r.speedup), 7, kUncertain);
    }
    svg.circle(x, y(*r.speedup), 4,
               *r.speedup >= 1 ? verdict_color("pass") : verdict_color("fail_correctness"), tip);
    if (label_values) {
      double top = y(r.speedup_ci95 ? r.speedup_ci95->hi : *r.speedup);
      svg.text(x, std::max(top - 6, kTop - 2), format_speedup(r.speedup), "middle", 9);
    }
    svg.text(x + 3, kTop + plot_h + 10, short_id(r.case_id), "end", 10, -50);
  }
  std::vector<std::pair<std::string, std::string>> items = {
      {"median \u2265 1\u00d7", std::string(verdict_color("pass"))},
      {"median < 1\u00d7", std::string(verdict_color("fail_correctness"))},
      {"95% interval", std::string(kAccent)}};
  if (any_uncertain) items.emplace_back("uncertain (interval > 2\u00d7)", std::string(kUncertain));
  legend(svg, kLeft, kTop + plot_h + bottom - 8, items);
  return svg.str();
}

std::string fast_p_plot(const Summary& summary) {
  const int selected = summary.total.selected;
  if (selected == 0) return empty("No case was selected.");
  double p_max = 2.5;
  for (const CaseRow& r : summary.cases) {
    if (r.verdict == Verdict::kPass && r.speedup) p_max = std::max(p_max, *r.speedup * 1.1);
  }
  p_max = std::min(p_max, 100.0);
  auto share = [&](double p, bool strict) {
    int n = 0;
    for (const CaseRow& r : summary.cases) {
      if (r.verdict != Verdict::kPass) continue;
      if (p <= 0) {
        ++n;
      } else if (strict ? (r.speedup_ci95 && r.speedup_ci95->lo > p) : (r.speedup && *r.speedup > p)) {
        ++n;
      }
    }
    return static_cast<double>(n) / selected;
  };
  const double plot_w = 560, plot_h = 220, bottom = 56;
  Svg svg(kLeft + plot_w + kRight, kTop + plot_h + bottom,
          "fast_p: share of cases correct and faster than p");
  Scale x{0, p_max, kLeft, kLeft + plot_w};
  Scale y{0, 1, kTop + plot_h, kTop};
  y_axis(svg, y, {0, 0.25, 0.5, 0.75, 1}, kLeft, kLeft + plot_w, "");
  for (double t : nice_ticks(0, p_max, 8)) {
    svg.line(x(t), kTop + plot_h, x(t), kTop + plot_h + 4, kAxis);
    svg.text(x(t), kTop + plot_h + 16, tick_label(t), "middle", 10);
  }
  svg.line(kLeft, kTop + plot_h, kLeft + plot_w, kTop + plot_h, kAxis);
  svg.line(x(1), kTop, x(1), kTop + plot_h, kAxis, 1, true);
  svg.text(kLeft + plot_w / 2, kTop + plot_h + 32, "p (speedup threshold)", "middle", 10);
  constexpr int kSteps = 200;
  std::vector<std::pair<double, double>> median_curve, strict_curve;
  for (int k = 0; k <= kSteps; ++k) {
    double p = p_max * k / kSteps;
    median_curve.emplace_back(x(p), y(share(p, false)));
    strict_curve.emplace_back(x(p), y(share(p, true)));
  }
  svg.polyline(strict_curve, "#90a4ae", 1.5);
  svg.polyline(median_curve, kAccent, 2);
  for (const FastP& f : summary.fast_p) {
    if (!f.point_rate) continue;
    svg.circle(
        x(f.threshold), y(*f.point_rate), 3.5, kAccent,
        fmt::format("fast_{} = {:.1f}% (median above p)", tick_label(f.threshold), *f.point_rate * 100));
  }
  legend(svg, kLeft + 8, kTop + plot_h + 50,
         {{"median speedup > p", std::string(kAccent)}, {"95% interval above p", "#90a4ae"}});
  return svg.str();
}

std::string rounds_plot(const RoundsSummary& rounds) {
  const double plot_w = 560, plot_h = 220, bottom = 56;
  Svg svg(kLeft + plot_w + kRight, kTop + plot_h + bottom,
          "solve rate and fast_1 after each refinement round");
  const int n = std::max(rounds.max_rounds, 2);
  Scale x{1, static_cast<double>(n), kLeft + 20, kLeft + plot_w - 20};
  Scale y{0, 1, kTop + plot_h, kTop};
  y_axis(svg, y, {0, 0.25, 0.5, 0.75, 1}, kLeft, kLeft + plot_w, "");
  svg.line(kLeft, kTop + plot_h, kLeft + plot_w, kTop + plot_h, kAxis);
  for (int r = 1; r <= rounds.max_rounds; ++r) {
    svg.line(x(r), kTop + plot_h, x(r), kTop + plot_h + 4, kAxis);
    svg.text(x(r), kTop + plot_h + 16, std::to_string(r), "middle", 10);
  }
  svg.text(kLeft + plot_w / 2, kTop + plot_h + 32, "round", "middle", 10);
  std::vector<std::pair<double, double>> solved, fast;
  for (const RoundPoint& p : rounds.by_round) {
    if (p.solve_rate) solved.emplace_back(x(p.round), y(*p.solve_rate));
    if (p.fast_1_rate) fast.emplace_back(x(p.round), y(*p.fast_1_rate));
  }
  svg.polyline(fast, "#90a4ae", 1.5);
  svg.polyline(solved, kAccent, 2);
  for (const RoundPoint& p : rounds.by_round) {
    if (p.solve_rate)
      svg.circle(x(p.round), y(*p.solve_rate), 3.5, kAccent,
                 fmt::format("after round {}: {} solved ({:.1f}%)", p.round, p.solved, *p.solve_rate * 100));
    if (p.fast_1_rate)
      svg.circle(x(p.round), y(*p.fast_1_rate), 3, "#90a4ae",
                 fmt::format("after round {}: fast_1 {} ({:.1f}%)", p.round, p.fast_1, *p.fast_1_rate * 100));
  }
  legend(svg, kLeft + 8, kTop + plot_h + 50,
         {{"solved (pass)", std::string(kAccent)}, {"fast_1 (95% interval above 1)", "#90a4ae"}});
  return svg.str();
}

std::string verdicts_plot(const Summary& summary) {
  if (summary.total.selected == 0) return empty("No case was selected.");
  std::vector<std::pair<std::string, const Tally*>> bars;
  for (const LevelSummary& l : summary.levels) bars.emplace_back(l.level, &l.tally);
  if (bars.size() != 1) bars.emplace_back("all", &summary.total);
  std::vector<std::string> names;
  for (Verdict v : kAllVerdicts) {
    if (summary.total.count(v) > 0) names.emplace_back(to_string(v));
  }
  if (summary.total.not_run > 0) names.emplace_back("not_run");
  const double bar_h = 22, gap = 10, plot_w = 480, label_w = 70;
  const double height = kTop + static_cast<double>(bars.size()) * (bar_h + gap) + 50;
  Svg svg(label_w + plot_w + 60, height, "Verdicts per level");
  double y = kTop;
  for (const auto& [label, tally] : bars) {
    svg.text(label_w - 8, y + bar_h * 0.7, label, "end", 11);
    double x = label_w;
    const double scale = plot_w / std::max(tally->selected, 1);
    for (const std::string& name : names) {
      int n = name == "not_run" ? tally->not_run : tally->count(*parse_verdict(name));
      if (n == 0) continue;
      svg.rect(x, y, n * scale, bar_h, verdict_color(name), fmt::format("{} {}: {}", label, name, n));
      if (n * scale > 18) {
        bool light = name == "timeout" || name == "not_run";
        svg.text(x + n * scale / 2, y + bar_h * 0.7, std::to_string(n), "middle", 10, 0,
                 light ? "#222" : "#fff");
      }
      x += n * scale;
    }
    svg.text(x + 6, y + bar_h * 0.7, fmt::format("{}", tally->selected), "start", 10);
    y += bar_h + gap;
  }
  std::vector<std::pair<std::string, std::string>> items;
  for (const std::string& name : names) items.emplace_back(name, std::string(verdict_color(name)));
  legend(svg, label_w, y + 16, items);
  return svg.str();
}

std::string phase_time_plot(const std::vector<CaseResult>& results) {
  struct Part {
    std::string name, color;
    double total = 0;
  };
  std::vector<Part> parts = {
      {"generate", "#7986cb"}, {"build", "#ffb74d"}, {"verify", "#4db6ac"}, {"waiting and other", "#bdbdbd"}};
  std::vector<std::pair<std::string, std::array<double, 4>>> rows;
  double longest = 0;
  for (const CaseResult& r : results) {
    const Timings& t = r.timings;
    std::array<double, 4> s = {t.generate_s.value_or(0), t.compile_s.value_or(0), t.verify_s.value_or(0), 0};
    double known = s[0] + s[1] + s[2];
    s[3] = std::max(t.total_s.value_or(known) - known, 0.0);
    if (s[0] + s[1] + s[2] + s[3] <= 0) continue;
    for (std::size_t k = 0; k < 4; ++k) parts[k].total += s[k];
    longest = std::max(longest, s[0] + s[1] + s[2] + s[3]);
    rows.emplace_back(r.case_id, s);
  }
  if (rows.empty()) return empty("No case recorded its timings.");
  const double bar_h = 14, gap = 5, plot_w = 480, label_w = 170;
  const double axis_y = kTop + static_cast<double>(rows.size()) * (bar_h + gap);
  Svg svg(label_w + plot_w + 40, axis_y + 64, "Time spent per phase, per case");
  Scale x{0, longest, label_w, label_w + plot_w};
  for (double t : nice_ticks(0, longest, 6)) {
    svg.line(x(t), kTop - 4, x(t), axis_y, kGrid);
    svg.text(x(t), axis_y + 14, tick_label(t) + " s", "middle", 10);
  }
  double y = kTop;
  for (const auto& [id, s] : rows) {
    svg.text(label_w - 6, y + bar_h * 0.8, short_id(id), "end", 10);
    double at = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      if (s[k] <= 0) continue;
      svg.rect(x(at), y, x(at + s[k]) - x(at), bar_h, parts[k].color,
               fmt::format("{} {}: {:.2f} s", id, parts[k].name, s[k]));
      at += s[k];
    }
    y += bar_h + gap;
  }
  // A phase no case spent time in (generate in a replay run) is left out.
  std::vector<std::pair<std::string, std::string>> items;
  for (const Part& p : parts)
    if (p.total >= 0.05) items.emplace_back(fmt::format("{} {:.1f} s", p.name, p.total), p.color);
  legend(svg, label_w, axis_y + 40, items);
  return svg.str();
}

}  // namespace kgym::report

namespace kgym::report {

std::string roofline_plot(const Summary& summary) {
  struct Point {
    const CaseRow* row;
    double intensity, candidate_gflops, reference_gflops;
  };
  std::vector<Point> points;
  int without_flops = 0;
  // The roofs drawn: each memory level some case was bounded by, and the
  // highest peak (the cases' precisions).
  std::vector<std::pair<std::string, double>> bandwidths;
  double peak = 0;
  for (const CaseRow& row : summary.cases) {
    if (row.verdict != Verdict::kPass || !row.roofline || !row.roofline->roofs) continue;
    const Roofline& r = *row.roofline;
    if (r.work.flops <= 0 || !r.achieved_gflops) {
      ++without_flops;
      continue;
    }
    points.push_back({&row, r.intensity, *r.achieved_gflops, r.reference_achieved_gflops.value_or(0)});
    peak = std::max(peak, r.roofs->peak_gflops);
    auto same = [&](const auto& b) { return b.first == r.roofs->memory_level; };
    if (std::ranges::find_if(bandwidths, same) == bandwidths.end())
      bandwidths.emplace_back(r.roofs->memory_level, r.roofs->bandwidth_gbs);
  }
  if (points.empty())
    return empty(without_flops > 0 ? "No passing case on the roofline has floating-point work to plot."
                                   : "No passing case was placed on the roofline (docs/roofline.md).");
  double x_lo = 1e9, x_hi = 0, y_lo = peak, y_hi = peak;
  for (const Point& p : points) {
    x_lo = std::min(x_lo, p.intensity);
    x_hi = std::max(x_hi, p.intensity);
    for (double g : {p.candidate_gflops, p.reference_gflops}) {
      if (g <= 0) continue;
      y_lo = std::min(y_lo, g);
      y_hi = std::max(y_hi, g);
    }
  }
  for (const auto& [level, gbs] : bandwidths) x_hi = std::max(x_hi, peak / gbs);  // the ridge points
  x_lo /= 3;
  x_hi *= 3;
  y_lo /= 3;
  y_hi *= 1.5;
  const double plot_w = 520, plot_h = 300, bottom = 60;
  Svg svg(kLeft + plot_w + kRight + 40, kTop + plot_h + bottom,
          "Roofline: achieved GFLOP/s over arithmetic intensity, candidate and reference per passing case");
  Scale x{x_lo, x_hi, kLeft, kLeft + plot_w, true};
  Scale y{y_lo, y_hi, kTop + plot_h, kTop, true};
  y_axis(svg, y, log_ticks(y_lo, y_hi), kLeft, kLeft + plot_w, "");
  for (double t : log_ticks(x_lo, x_hi)) {
    svg.line(x(t), kTop, x(t), kTop + plot_h, kGrid);
    svg.text(x(t), kTop + plot_h + 14, tick_label(t), "middle", 10);
  }
  svg.line(kLeft, kTop + plot_h, kLeft + plot_w, kTop + plot_h, kAxis);
  svg.text(kLeft + plot_w / 2, kTop + plot_h + 30, "FLOP per byte", "middle", 10);
  svg.text(kLeft - 44, kTop + plot_h / 2, "GFLOP/s", "middle", 10, -90);
  // Each roof: bandwidth x intensity up to the ridge, then the peak.
  bool first = true;
  for (const auto& [level, gbs] : bandwidths) {
    double ridge = peak / gbs;
    double start = std::max(x_lo, y_lo / gbs);
    svg.polyline({{x(start), y(gbs * start)}, {x(std::min(ridge, x_hi)), y(gbs * std::min(ridge, x_hi))}},
                 kAxis, first ? 2 : 1.5);
    svg.text(x(start) + 4, y(gbs * start) - 6, fmt::format("{} {:.0f} GB/s", level, gbs), "start", 9);
    first = false;
  }
  double ridge =
      peak / std::ranges::max_element(bandwidths, {}, [](const auto& b) { return b.second; })->second;
  svg.line(x(std::max(x_lo, ridge)), y(peak), x(x_hi), y(peak), kAxis, 2);
  svg.text(x(x_hi) - 4, y(peak) - 6, fmt::format("peak {:.0f} GFLOP/s", peak), "end", 9);
  const std::string candidate_color(verdict_color("pass")), reference_color = "#546e7a";
  for (const Point& p : points) {
    const Roofline& r = *p.row->roofline;
    std::string tip =
        fmt::format("{}: {:.3g} FLOP/byte, candidate {:.3g} GFLOP/s (sol {}), reference {:.3g} GFLOP/s",
                    p.row->case_id, p.intensity, p.candidate_gflops, sol_cell(*p.row), p.reference_gflops);
    if (p.reference_gflops > 0) {
      svg.line(x(p.intensity), y(p.reference_gflops), x(p.intensity), y(p.candidate_gflops), kGrid, 1.5);
      svg.circle(x(p.intensity), y(p.reference_gflops), 3.5, reference_color, tip);
    }
    svg.circle(x(p.intensity), y(p.candidate_gflops), 4.5,
               r.errors.empty() ? candidate_color : std::string(verdict_color("fail_correctness")), tip);
  }
  std::vector<std::pair<std::string, std::string>> items = {{"candidate", candidate_color},
                                                            {"reference", reference_color}};
  bool any_error =
      std::ranges::any_of(points, [](const Point& p) { return !p.row->roofline->errors.empty(); });
  if (any_error)
    items.emplace_back("above the roof: an error", std::string(verdict_color("fail_correctness")));
  legend(svg, kLeft, kTop + plot_h + bottom - 8, items);
  std::string out = svg.str();
  if (without_flops > 0)
    out +=
        fmt::format("<p class=\"empty\">{} passing case{} with no floating-point work counted not drawn.</p>",
                    without_flops, without_flops == 1 ? "" : "s");
  return out;
}

}  // namespace kgym::report
