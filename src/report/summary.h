#pragma once
// Run-level statistics computed from per-case result records. Pure
// functions over plain data (no I/O): the JSON, Markdown and plain-text
// reporters only read a Summary. Rates are fractions in [0, 1]; a rate or
// a mean that has no cases to stand on is std::nullopt, never 0.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/verdict.h"

namespace kgym::report {

inline constexpr int kSummarySchemaVersion = 1;

// Thresholds of fast_p: p = 0 counts every passing case ("correct"); p > 0
// counts passing cases that are faster than p: the lower end of the speedup's
// 95% interval is above p (`count`), or, less strictly, the median speedup
// is above p (`point_count`).
inline constexpr double kFastThresholds[] = {0.0, 1.0, 1.2, 1.5, 2.0};

// What the reporters say about the run itself. Every field is optional in
// practice: a report regenerated from a bare run directory knows little.
struct RunInfo {
  std::string run_dir;
  std::optional<std::string> started_at_iso;  // "2025-01-31T12:00:00Z"
  std::optional<std::string> finished_at_iso;
  std::optional<std::string> config_path;
  std::string backend;              // "" when unknown
  std::string mode;                 // "correctness" | "performance" | ""
  std::string status = "finished";  // finished | interrupted | running
  // Every case the run selected, finished or not; cases listed here without
  // a result are reported as "not run". Empty = only the given results.
  std::vector<std::string> selected_case_ids;
  nlohmann::json machine;  // CPU, cores, versions...; null when unknown
};

// Counts over a set of cases (the whole run, or one level).
struct Tally {
  int selected = 0;                 // finished + not_run
  int finished = 0;                 // cases with a result
  int not_run = 0;                  // selected, no result (interrupted run)
  std::map<Verdict, int> verdicts;  // every Verdict present, zero included

  int count(Verdict v) const;
  int passed() const { return count(Verdict::kPass); }
  // passed / selected; nullopt when nothing was selected.
  std::optional<double> correctness_rate() const;
  // fail_cheat / selected; nullopt when nothing was selected.
  std::optional<double> cheat_rate() const;
};

struct FastP {
  double threshold = 0;               // p
  int count = 0;                      // passing cases whose speedup interval lies above p
  std::optional<double> rate;         // count / selected cases; nullopt if none
  std::optional<Interval> rate_ci95;  // Wilson score interval of `rate`
  int point_count = 0;                // passing cases whose median speedup is above p
  std::optional<double> point_rate;   // point_count / selected cases
};

// The geometric mean of the median speedup over passing cases that have one,
// with a deterministic 95% bootstrap interval over those cases.
struct Geomean {
  std::optional<double> value;   // nullopt when no case has a speedup
  std::optional<Interval> ci95;  // nullopt for fewer than 2 cases
  int cases = 0;
};

// pass@k over the cases that ran several samples each (config `samples`):
// for every k, the mean over those cases of the case's unbiased pass@k
// (core/pass_at_k.h). Such a case reports its best sample, so the geometric
// mean speedup beside it is the best-of-k speedup.
struct PassAtK {
  int cases = 0;    // cases with samples
  int samples = 0;  // samples per case (the fewest, when cases differ: every k up to it is defined for all)
  int samples_run = 0;
  int samples_passed = 0;
  std::map<int, double> rate;  // k -> mean pass@k, k = 1..samples
};

struct LevelSummary {
  std::string level;
  Tally tally;
  std::vector<FastP> fast_p;  // one per kFastThresholds
  Geomean geomean;
  std::optional<PassAtK> pass_at_k;  // nullopt when no case of the level has samples
};

// One row per selected case. `verdict` is nullopt for a case that did not
// run; measurements are nullopt when the result has none.
struct CaseRow {
  std::string case_id;
  std::string level;
  std::optional<Verdict> verdict;
  std::optional<std::string> cheat_rule;  // the rule that fired, for fail_cheat
  // Rule ids of the flags the agent's transcript raised (one per flag).
  std::vector<std::string> transcript_flags;
  std::optional<double> speedup;  // median, reference / candidate
  std::optional<Interval> speedup_ci95;
  std::optional<double> reference_ms;
  std::optional<double> candidate_ms;
  std::vector<std::string> timing_flags;  // performance.flags (contended, within_noise, ...)
  // How far (a factor >= 1) the case's two A/A noise floors reach from 1:
  // the largest of their medians and interval ends, or its reciprocal.
  // nullopt without a noise floor (kgym compare's threshold, compare.h).
  std::optional<double> noise_factor;
  std::string reason;
  std::optional<int> samples;  // samples run, for a case with several
  int samples_passed = 0;
  bool baseline = false;  // agent.kind: reference (an A/A run), never a solve
  // "host_interpreter": checked by the kernel language's interpreter on
  // the host (correctness only; never in fast_p or the geomean), with the
  // performance model's estimate where it has one.
  std::string execution = "device";
  std::optional<SimulatedTime> simulated;
  // performance.speedup_vs: against the other baselines asked for (e.g.
  // "compile"); `speedup` nullopt where that baseline was unavailable.
  struct Versus {
    std::string baseline;
    std::optional<double> speedup;
    std::optional<Interval> speedup_ci95;
  };
  std::vector<Versus> versus;
  // Refinement rounds (agent.feedback): every round of the case's sample,
  // its last being this row's result; empty without feedback.
  std::vector<RoundRecord> rounds;
  // performance.roofline: the problem's work and both sides against the
  // machine's roofs (core/roofline.h); nullopt where it was not counted.
  std::optional<Roofline> roofline;
  // The one command that reproduces the case's verification (docs/repro.md):
  // `kgym verify --bundle <case dir>/repro.tar.gz` when the bundle exists,
  // else `kgym repro <case dir>`; nullopt for a case never verified.
  std::optional<std::string> repro_command;
};

// fast_p and the geomean against another baseline than the reference as
// written (verifier.baselines), over the same cases and denominator.
struct VersusSummary {
  std::string baseline;  // "compile"
  int timed = 0;         // passing cases timed against it
  int unavailable = 0;   // passing cases where it could not be timed
  std::vector<FastP> fast_p;
  Geomean geomean;
};

// The baseline cases of a run (agent.kind: reference): the problem's own
// Model verified against itself, the instrument's calibration. Every case
// that runs should pass with a speedup interval containing 1.
struct BaselineSummary {
  int cases = 0;
  int passed = 0;
  int timed = 0;                         // passed with a speedup and its interval
  int contains_one = 0;                  // of those, intervals containing 1
  std::optional<double> median_speedup;  // over the timed cases
  // Half the distance between the 10th and 90th percentiles of their medians.
  std::optional<double> spread;
};

// What the agents reported over the run (figures a CLI did not report stay
// nullopt). Cost per passed case: total cost / passing cases.
struct AgentTotals {
  std::optional<std::int64_t> tokens_in;
  std::optional<std::int64_t> tokens_out;
  std::optional<std::int64_t> tool_calls;
  std::optional<double> cost;
  int cases_with_cost = 0;
  std::optional<double> cost_per_pass;  // nullopt without cost or without a passing case
};

// The cases checked on a host interpreter (verifier.execution): counted in
// the tallies, never in fast_p or the geomean, which no device measured.
struct HostInterpreterSummary {
  int cases = 0;
  int passed = 0;
  int simulated = 0;  // passing cases with a performance model's estimate
};

// Refinement rounds (agent.feedback, docs/results.md "Rounds"): the run as
// it stood after each round r, every case at its round r (a case that
// ended earlier at its last). Rates over the selected cases.
struct RoundPoint {
  int round = 1;
  int solved = 0;  // pass
  std::optional<double> solve_rate;
  int fast_1 = 0;  // pass with the speedup's 95 % interval above 1 (fast_p's count)
  std::optional<double> fast_1_rate;
  // What the agents spent in rounds 1..r, summed over the cases that
  // reported it, and per case solved by then.
  std::optional<std::int64_t> tokens;
  std::optional<double> cost;
  std::optional<double> tokens_per_solve;
  std::optional<double> cost_per_solve;
};
struct RoundsSummary {
  int cases = 0;       // cases with rounds
  int max_rounds = 0;  // the most rounds any case ran
  std::vector<RoundPoint> by_round;
};

// What `result` was after round `round` (`kgym compare --round`): the
// verdict, reason and speedup of that round (its last, for a sample that
// ended earlier). A round before the last keeps only what its record
// holds: no timing sides, noise floors, flags or other baselines.
CaseResult at_round(const CaseResult& result, int round);

// The passing cases on the roofline (docs/roofline.md). A sol above 1 is an
// error of the count or the roof: such a case is counted in `above_roof`
// and left out of both medians.
struct RooflineSummary {
  int cases = 0;  // passing solves with a sound sol
  std::optional<double> median_sol;
  int reference_cases = 0;  // passing cases (baselines too) with a sound reference sol
  std::optional<double> median_reference_sol;
  int above_roof = 0;
  int plotted = 0;             // passing cases with FLOPs on the roofline plot (roofline.svg)
  int missing = 0;             // passing timed cases without roofs
  std::string missing_reason;  // the first such case's
};

struct Summary {
  Tally total;
  std::optional<HostInterpreterSummary> host_interpreter;
  AgentTotals agent;
  // One per kFastThresholds, same order; over the cases run on a device
  // (`device_selected` of them: every selected case but those checked on a
  // host interpreter).
  std::vector<FastP> fast_p;
  int device_selected = 0;
  // Geometric mean of the median speedup over passing cases that have one;
  // nullopt when there are none.
  std::optional<double> geomean_speedup;
  std::optional<Interval> geomean_ci95;  // bootstrap over cases
  int speedup_cases = 0;                 // passing cases that entered the geometric mean
  // Passing cases whose speedup confidence interval lies entirely above 1.
  int faster_with_confidence = 0;
  std::vector<LevelSummary> levels;           // natural level order
  std::vector<CaseRow> cases;                 // case id order (see case_order.h)
  std::map<std::string, int> cheats_by_rule;  // rule id -> fail_cheat cases it decided
  // Transcript rule id -> cases whose agent transcript raised it, and how
  // many cases raised any (docs/anti-cheat.md "Transcripts").
  std::map<std::string, int> transcript_flags;
  int transcript_flagged_cases = 0;
  std::map<std::string, int> timing_flags;  // performance flag -> cases that raised it
  std::optional<PassAtK> pass_at_k;         // nullopt when no case has samples
  // Baseline cases are listed in `cases` but counted only here, not in
  // `total`, the levels, fast_p or the geomean.
  std::optional<BaselineSummary> baseline;
  // One per other baseline any case was timed against, in first-seen order.
  std::vector<VersusSummary> versus;
  std::optional<RoundsSummary> rounds;  // nullopt when no case ran with agent.feedback
  std::optional<RooflineSummary> roofline;  // nullopt when no passing case has a work count
};

// What a report shows in a case's speedup column: the measured speedup,
// "1.42× (uncertain)" when flagged so (docs/results.md);
// for a case checked on a host interpreter, "sim 2.34 us" (its performance
// model's estimate, never a speedup) or "host interpreter".
std::string speedup_cell(const CaseRow& row);

// The q-quantile (0..1) of `values`, linearly interpolated; nullopt when empty.
std::optional<double> percentile(std::vector<double> values, double q);

// A case's sol against the roofline (docs/roofline.md): "0.412", "error:
// 2.14 > 1" where a side ran above the roof, "–" without one.
std::string sol_cell(const CaseRow& row);
// One line for the run's roofline: median sols, cases above the roof, cases
// without roofs.
std::string roofline_line(const RooflineSummary& r);

// The case's speedup is flagged `uncertain` (performance.flags).
bool is_uncertain(const CaseRow& row);

// "3 cases checked on a host interpreter (verifier.execution): 3 pass, 3
// with a simulated time; correctness only, not in fast_p or the geomean".
std::string host_interpreter_line(const HostInterpreterSummary& h);

// The entry of `s.fast_p` at `threshold`, or nullptr.
const FastP* fast_at(const Summary& s, double threshold);

// Summarizes `results`. Ids in `selected_case_ids` without a result become
// "not run" rows; results for ids not in the list are still counted (the
// selection is then the union). Duplicate results for one id: the last wins.
Summary summarize(const std::vector<CaseResult>& results,
                  const std::vector<std::string>& selected_case_ids = {});

// "baseline (A/A): 9 cases, 9 pass, 8 of 9 timed intervals contain 1, median 1.003x (spread 0.012)"
std::string baseline_line(const BaselineSummary& b);

// Wilson score interval (95%) of successes / trials; nullopt for no trials.
std::optional<Interval> wilson_ci95(int successes, int trials);

// Geometric mean of `speedups` (each > 0) with a deterministic percentile
// bootstrap interval over them (fixed seed: the same input, the same interval).
Geomean geomean_of(const std::vector<double>& speedups);

// The speedup a report shows for a result: the performance median, if any.
std::optional<double> speedup_of(const CaseResult& result);

// Reporters (summary_json.cc, summary_markdown.cc, summary_table.cc).
nlohmann::json summary_json(const Summary& summary, const RunInfo& info);
std::string summary_markdown(const Summary& summary, const RunInfo& info);
// Plain text (no escape codes), every line at most `width` cells (min 40).
std::string summary_table(const Summary& summary, int width);

}  // namespace kgym::report
