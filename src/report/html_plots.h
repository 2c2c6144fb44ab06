#pragma once
// The four figures of report.html, each an inline <svg> string drawn with
// report/svg.h from plain records. A figure with nothing to show is a short
// <p class="empty"> saying so, never an empty frame.
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "report/summary.h"

namespace kgym::report {

// Fill colour of a verdict (and of "not_run") in every figure and table.
std::string_view verdict_color(std::string_view verdict);

// Median speedup per passing case (log scale) with its 95% interval as a
// whisker; the line at 1× is the reference.
std::string speedup_plot(const Summary& summary);

// fast_p over p from 0 to max(2.5, largest speedup): the share of selected
// cases that pass and are faster than p, by median (solid) and by the lower
// end of the interval (dashed).
std::string fast_p_plot(const Summary& summary);
// Refinement rounds: solve rate and fast_1 after each round, like fast_p over p.
std::string rounds_plot(const RoundsSummary& rounds);

// The roofline (docs/roofline.md): achieved GFLOP/s over FLOP per byte, log
// both; the memory roof of each level some case was bounded by and the
// peak; each passing case's candidate and reference joined by a line.
std::string roofline_plot(const Summary& summary);

// One stacked bar per level (and one for all), verdict counts with a legend.
std::string verdicts_plot(const Summary& summary);

// Seconds spent per phase (generate, build, verify, and the rest: waiting
// for a build slot or a device, the probe) per case as stacked bars, totals
// in the legend.
std::string phase_time_plot(const std::vector<CaseResult>& results);

}  // namespace kgym::report
