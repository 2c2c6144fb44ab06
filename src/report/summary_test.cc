#include "report/summary.h"

#include <cmath>

#include <gtest/gtest.h>

#include "report/case_order.h"
#include "report/report_test_util.h"

namespace kgym::report {
namespace {

using testing::make_result;

// Six finished cases over two levels plus two selected cases that never ran.
Summary sample_summary() {
  std::vector<CaseResult> results = {
      make_result("level1/10_Mul", Verdict::kPass, 2.5),
      make_result("level1/2_Add", Verdict::kPass, 1.2),
      make_result("level1/3_Sub", Verdict::kPass),  // correctness mode: no speedup
      make_result("level1/4_Div", Verdict::kFailCorrectness, std::nullopt, "max abs err 0.5"),
      make_result("level2/1_Conv", Verdict::kPass, 0.8),
      make_result("level2/2_Gemm", Verdict::kTimeout),
  };
  return summarize(results, {"level1/2_Add", "level2/3_Pool", "level10/1_Big"});
}

TEST(Summarize, CountsEverySelectedCase) {
  Summary s = sample_summary();
  EXPECT_EQ(s.total.selected, 8);
  EXPECT_EQ(s.total.finished, 6);
  EXPECT_EQ(s.total.not_run, 2);
  EXPECT_EQ(s.total.passed(), 4);
  EXPECT_EQ(s.total.count(Verdict::kFailCorrectness), 1);
  EXPECT_EQ(s.total.count(Verdict::kTimeout), 1);
  EXPECT_EQ(s.total.count(Verdict::kCrash), 0);
  ASSERT_TRUE(s.total.correctness_rate());
  EXPECT_DOUBLE_EQ(*s.total.correctness_rate(), 4.0 / 8.0);  // not-run cases are in the denominator
}

TEST(Summarize, FastPAgainstTorchCompileBesideEager) {
  std::vector<CaseResult> results = {
      make_result("level1/1_A", Verdict::kPass, 2.0),
      make_result("level1/2_B", Verdict::kPass, 3.0),
      make_result("level1/3_C", Verdict::kPass, 1.5),
      make_result("level1/4_D", Verdict::kFailCorrectness),
  };
  auto versus = [](CaseResult& r, std::optional<double> median) {
    BaselineSpeedup b{.name = "compile"};
    if (median) {
      b.speedup = SpeedupEstimate{*median, Interval{*median * 0.9, *median * 1.1}};
    } else {
      b.unavailable = "torch.compile failed: no C++ compiler";
    }
    r.performance->speedup_vs.push_back(b);
  };
  versus(results[0], 1.2);
  versus(results[1], 0.7);
  versus(results[2], std::nullopt);
  Summary s = summarize(results, {});
  ASSERT_EQ(s.versus.size(), 1u);
  const VersusSummary& v = s.versus[0];
  EXPECT_EQ(v.baseline, "compile");
  EXPECT_EQ(v.timed, 2);
  EXPECT_EQ(v.unavailable, 1);
  // Against eager three pass above 1; against compile one (1.2), over the
  // same four cases.
  for (const FastP& f : v.fast_p) {
    if (f.threshold != 1.0) continue;
    EXPECT_EQ(f.count, 1);
    ASSERT_TRUE(f.rate);
    EXPECT_DOUBLE_EQ(*f.rate, 0.25);
  }
  EXPECT_EQ(v.geomean.cases, 2);
  ASSERT_TRUE(v.geomean.value);
  EXPECT_NEAR(*v.geomean.value, std::sqrt(1.2 * 0.7), 1e-9);
  // The result round-trips through result.json.
  CaseResult back = result_from_json(to_json(results[2]));
  ASSERT_TRUE(back.performance);
  ASSERT_NE(back.performance->against("compile"), nullptr);
  EXPECT_FALSE(back.performance->against("compile")->speedup);
  EXPECT_EQ(back.performance->against("compile")->unavailable, "torch.compile failed: no C++ compiler");
  back = result_from_json(to_json(results[0]));
  ASSERT_TRUE(back.performance->against("compile")->speedup);
  EXPECT_DOUBLE_EQ(back.performance->against("compile")->speedup->median, 1.2);
}

TEST(Summarize, CheatsAreCountedPerRuleWithTheirRate) {
  CaseResult a = make_result("level1/1_A", Verdict::kFailCheat);
  a.cheat = CheatFinding{"static.no_kernel", "static", "model_new.py:3: torch.relu"};
  CaseResult b = make_result("level1/2_B", Verdict::kFailCheat);
  b.cheat = CheatFinding{"static.no_kernel", "static", "model_new.py:9: torch.mm"};
  CaseResult c = make_result("level1/3_C", Verdict::kFailCheat);
  c.cheat = CheatFinding{"static.monkeypatch", "static", "model_new.py:4: time.perf_counter ="};
  Summary s = summarize({a, b, c, make_result("level1/4_D", Verdict::kPass, 1.5)});
  EXPECT_EQ(s.cheats_by_rule.at("static.no_kernel"), 2);
  EXPECT_EQ(s.cheats_by_rule.at("static.monkeypatch"), 1);
  ASSERT_TRUE(s.total.cheat_rate());
  EXPECT_DOUBLE_EQ(*s.total.cheat_rate(), 0.75);
  std::string md = summary_markdown(s, RunInfo{});
  EXPECT_NE(md.find("| `static.no_kernel` | 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("75.0%"), std::string::npos) << md;
  nlohmann::json j = summary_json(s, RunInfo{});
  EXPECT_EQ(j["totals"]["cheats_by_rule"]["static.monkeypatch"], 1);
  EXPECT_DOUBLE_EQ(j["totals"]["cheat_rate"].get<double>(), 0.75);
}

TEST(Summarize, TimingFlagsAreCountedAndBusyCoresWarned) {
  CaseResult a = make_result("level1/1_A", Verdict::kPass, 1.5);
  a.performance->flags = {"contended", "within_noise"};
  CaseResult b = make_result("level1/2_B", Verdict::kPass, 0.9);
  b.performance->flags = {"contended"};
  Summary s = summarize({a, b, make_result("level1/3_C", Verdict::kPass, 2.0)});
  EXPECT_EQ(s.timing_flags.at("contended"), 2);
  EXPECT_EQ(s.timing_flags.at("within_noise"), 1);
  std::string md = summary_markdown(s, RunInfo{});
  EXPECT_NE(md.find("| `contended` | 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("Timing ran on busy cores"), std::string::npos) << md;
  nlohmann::json j = summary_json(s, RunInfo{});
  EXPECT_EQ(j["totals"]["timing_flags"]["contended"], 2);
  EXPECT_EQ(j["cases"][0]["timing_flags"], nlohmann::json({"contended", "within_noise"}));
  Summary quiet = summarize({make_result("level1/3_C", Verdict::kPass, 2.0)});
  EXPECT_EQ(summary_markdown(quiet, RunInfo{}).find("Timing flags"), std::string::npos);
}

TEST(Summarize, UncertainSpeedupsAreExplained) {
  CaseResult a = make_result("level1/1_A", Verdict::kPass, 1.4);
  a.performance->flags = {"uncertain"};
  std::string md = summary_markdown(summarize({a}), RunInfo{});
  EXPECT_NE(md.find("| `uncertain` | 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("Uncertain speedups"), std::string::npos) << md;
}

TEST(Summarize, FastPCountsOnlyPassingCasesAboveThreshold) {
  Summary s = sample_summary();
  ASSERT_EQ(s.fast_p.size(), 5u);
  EXPECT_EQ(s.fast_p[0].threshold, 0.0);
  EXPECT_EQ(s.fast_p[0].count, 4);  // every passing case, with or without speedup
  EXPECT_EQ(s.fast_p[1].count, 2);  // 2.5 and 1.2 (intervals from 2.25 and 1.08)
  EXPECT_EQ(s.fast_p[2].threshold, 1.2);
  EXPECT_EQ(s.fast_p[2].count, 1);        // 1.2's interval starts at 1.08: not above 1.2
  EXPECT_EQ(s.fast_p[2].point_count, 1);  // its median is not strictly above 1.2 either
  EXPECT_EQ(s.fast_p[3].count, 1);        // 2.5
  EXPECT_EQ(s.fast_p[4].count, 1);
  EXPECT_DOUBLE_EQ(*s.fast_p[1].rate, 2.0 / 8.0);
  ASSERT_TRUE(s.fast_p[1].rate_ci95);
  EXPECT_LT(s.fast_p[1].rate_ci95->lo, 0.25);
  EXPECT_GT(s.fast_p[1].rate_ci95->hi, 0.25);
}

TEST(Summarize, FastPNeedsTheIntervalAboveP) {
  CaseResult r = make_result("level1/1_A", Verdict::kPass, 1.1);
  r.performance->speedup.ci95 = Interval{0.95, 1.25};  // median above 1, interval not
  Summary s = summarize({r});
  EXPECT_EQ(s.fast_p[1].point_count, 1);
  EXPECT_EQ(s.fast_p[1].count, 0);
  ASSERT_EQ(s.levels.size(), 1u);
  EXPECT_EQ(s.levels[0].fast_p[1].point_count, 1);
  EXPECT_EQ(s.levels[0].geomean.cases, 1);
  EXPECT_FALSE(s.levels[0].geomean.ci95);  // one case: no interval
}

TEST(Summarize, GeomeanOverPassingCasesWithSpeedup) {
  Summary s = sample_summary();
  ASSERT_TRUE(s.geomean_speedup);
  EXPECT_NEAR(*s.geomean_speedup, std::cbrt(2.5 * 1.2 * 0.8), 1e-12);
  EXPECT_EQ(s.speedup_cases, 3);
  EXPECT_EQ(s.faster_with_confidence, 2);  // CI of 0.8 is [0.72, 0.88]
  ASSERT_TRUE(s.geomean_ci95);
  EXPECT_LE(s.geomean_ci95->lo, *s.geomean_speedup);
  EXPECT_GE(s.geomean_ci95->hi, *s.geomean_speedup);
  EXPECT_GE(s.geomean_ci95->lo, 0.8);
  EXPECT_LE(s.geomean_ci95->hi, 2.5);
  Summary again = sample_summary();
  EXPECT_EQ(again.geomean_ci95->lo, s.geomean_ci95->lo);  // deterministic
}

TEST(Summarize, NotRunCasesAreRowsWithoutVerdict) {
  Summary s = sample_summary();
  ASSERT_EQ(s.cases.size(), 8u);
  std::vector<std::string> ids;
  for (const CaseRow& row : s.cases) ids.push_back(row.case_id);
  EXPECT_EQ(ids,
            (std::vector<std::string>{"level1/2_Add", "level1/3_Sub", "level1/4_Div", "level1/10_Mul",
                                      "level2/1_Conv", "level2/2_Gemm", "level2/3_Pool", "level10/1_Big"}));
  const CaseRow& pool = s.cases[6];
  EXPECT_FALSE(pool.verdict);
  EXPECT_FALSE(pool.speedup);
  EXPECT_NE(pool.reason.find("not run"), std::string::npos);
}

TEST(Summarize, PerLevelInNaturalOrder) {
  Summary s = sample_summary();
  ASSERT_EQ(s.levels.size(), 3u);
  EXPECT_EQ(s.levels[0].level, "level1");
  EXPECT_EQ(s.levels[1].level, "level2");
  EXPECT_EQ(s.levels[2].level, "level10");
  EXPECT_EQ(s.levels[0].tally.selected, 4);
  EXPECT_DOUBLE_EQ(*s.levels[0].tally.correctness_rate(), 0.75);
  EXPECT_EQ(s.levels[1].tally.not_run, 1);
  EXPECT_DOUBLE_EQ(*s.levels[1].tally.correctness_rate(), 1.0 / 3.0);
  EXPECT_EQ(s.levels[2].tally.passed(), 0);
  EXPECT_DOUBLE_EQ(*s.levels[2].tally.correctness_rate(), 0.0);
}

TEST(Summarize, EmptyRunHasNoRatesNotZero) {
  Summary s = summarize({});
  EXPECT_EQ(s.total.selected, 0);
  EXPECT_FALSE(s.total.correctness_rate());
  EXPECT_FALSE(s.geomean_speedup);
  for (const FastP& f : s.fast_p) EXPECT_FALSE(f.rate);
}

TEST(Summarize, LastResultForAnIdWins) {
  Summary s =
      summarize({make_result("level1/1_A", Verdict::kCrash), make_result("level1/1_A", Verdict::kPass, 3.0)});
  EXPECT_EQ(s.total.selected, 1);
  EXPECT_EQ(s.total.passed(), 1);
}

TEST(SummaryJson, AbsentValuesAreNull) {
  RunInfo info;
  info.run_dir = "/runs/r1";
  info.status = "interrupted";
  nlohmann::json j = summary_json(sample_summary(), info);
  EXPECT_EQ(j["schema_version"], kSummarySchemaVersion);
  EXPECT_TRUE(j["run"]["started_at"].is_null());
  EXPECT_TRUE(j["run"]["backend"].is_null());
  EXPECT_TRUE(j["run"]["machine"].is_null());
  EXPECT_EQ(j["totals"]["not_run"], 2);
  EXPECT_EQ(j["totals"]["verdicts"]["pass"], 4);
  EXPECT_EQ(j["totals"]["verdicts"]["crash"], 0);
  EXPECT_EQ(j["totals"]["fast_p"][3]["p"], 1.5);
  EXPECT_EQ(j["totals"]["fast_p"][3]["count"], 1);
  EXPECT_EQ(j["totals"]["fast_p"][3]["point_count"], 1);

  const nlohmann::json& sub = j["cases"][1];  // level1/3_Sub: passed, no timing
  EXPECT_EQ(sub["verdict"], "pass");
  EXPECT_TRUE(sub["speedup"].is_null());
  EXPECT_TRUE(sub["reference_ms"].is_null());
  EXPECT_TRUE(sub["speedup_ci95"].is_null());
  const nlohmann::json& pool = j["cases"][6];
  EXPECT_EQ(pool["status"], "not_run");
  EXPECT_TRUE(pool["verdict"].is_null());

  nlohmann::json empty = summary_json(summarize({}), info);
  EXPECT_TRUE(empty["totals"]["correctness_rate"].is_null());
  EXPECT_TRUE(empty["totals"]["geomean_speedup"].is_null());
  EXPECT_TRUE(empty["totals"]["fast_p"][1]["rate"].is_null());
}

TEST(CaseOrder, LevelsAndNumbersCompareNaturally) {
  EXPECT_TRUE(case_id_less("level1/2_B", "level1/10_A"));
  EXPECT_TRUE(case_id_less("level2/99_Z", "level10/1_A"));
  EXPECT_TRUE(case_id_less("level1/33_Gemm_Scale_BatchNorm", "level1/39_Gemm_Scale_BatchNorm"));
  EXPECT_FALSE(case_id_less("level1/1_A", "level1/1_A"));
  EXPECT_TRUE(natural_less("a01", "a1") != natural_less("a1", "a01"));
  EXPECT_EQ(level_of("pto_case/3_X"), "pto_case");
}

// Results of cases run with samples: per-case pass@k averaged over the
// cases, overall and per level; runs without samples have none.
CaseResult with_samples(CaseResult r, int n, int passed) {
  r.samples = SamplesSummary{};
  r.samples->n = n;
  r.samples->passed = passed;
  return r;
}

TEST(Summarize, PassAtKIsTheMeanOverSampledCases) {
  std::vector<CaseResult> results = {
      with_samples(make_result("level1/1_A", Verdict::kPass, 2.0), 4, 1),
      with_samples(make_result("level1/2_B", Verdict::kPass, 1.5), 4, 4),
      with_samples(make_result("level2/1_C", Verdict::kFailCorrectness), 4, 0),
  };
  Summary s = summarize(results);
  ASSERT_TRUE(s.pass_at_k);
  EXPECT_EQ(s.pass_at_k->cases, 3);
  EXPECT_EQ(s.pass_at_k->samples, 4);
  EXPECT_EQ(s.pass_at_k->samples_run, 12);
  EXPECT_EQ(s.pass_at_k->samples_passed, 5);
  EXPECT_DOUBLE_EQ(s.pass_at_k->rate.at(1), (0.25 + 1.0 + 0.0) / 3);
  EXPECT_DOUBLE_EQ(s.pass_at_k->rate.at(2), (0.5 + 1.0 + 0.0) / 3);  // 1 - C(3,2)/C(4,2) = 0.5
  EXPECT_DOUBLE_EQ(s.pass_at_k->rate.at(4), 2.0 / 3);
  ASSERT_EQ(s.levels.size(), 2u);
  ASSERT_TRUE(s.levels[0].pass_at_k);
  EXPECT_DOUBLE_EQ(s.levels[0].pass_at_k->rate.at(1), 0.625);
  EXPECT_DOUBLE_EQ(s.levels[1].pass_at_k->rate.at(4), 0.0);
  nlohmann::json j = summary_json(s, RunInfo{});
  EXPECT_DOUBLE_EQ(j["totals"]["pass_at_k"]["pass_at_1"].get<double>(), (0.25 + 1.0) / 3);
  EXPECT_DOUBLE_EQ(j["totals"]["pass_at_k"]["best_of_k_geomean_speedup"].get<double>(), std::sqrt(3.0));
  EXPECT_EQ(j["cases"][0]["samples"]["passed"], 1);
  EXPECT_NE(summary_markdown(s, RunInfo{}).find("| all | 3 | 5/12 | 41.7% | 50.0% |"), std::string::npos);
  EXPECT_FALSE(sample_summary().pass_at_k);
  results[0].generation = Generation{};
  results[0].generation->cost = 1.0;  // the chosen sample's
  results[0].samples->cost = 3.0;     // all four samples'
  EXPECT_EQ(summarize(results).agent.cost, 3.0);
  EXPECT_FALSE(summary_json(sample_summary(), RunInfo{})["totals"].contains("pass_at_k"));
}

TEST(Summarize, TranscriptFlagsAreCountedByRuleAndCase) {
  std::vector<CaseResult> results = {make_result("level1/1_A", Verdict::kPass, 2.0),
                                     make_result("level1/2_B", Verdict::kPass, 1.0),
                                     make_result("level1/3_C", Verdict::kPass, 1.0)};
  results[0].generation = Generation{};
  results[0].generation->transcript_flags = {
      {"transcript.process_tampering", "shell: ps", "agent.log", 2},
      {"transcript.process_tampering", "shell: kill 1", "agent.log", 3},
      {"transcript.spec_edit", "write: SPEC.md", "agent.log", 4}};
  results[1].generation = Generation{};
  results[1].generation->transcript_flags = {{"transcript.spec_edit", "shell: rm SPEC.md", "agent.log", 1}};
  Summary s = summarize(results, {});
  EXPECT_EQ(s.transcript_flagged_cases, 2);
  EXPECT_EQ(s.transcript_flags.at("transcript.process_tampering"), 1);  // cases, not flags
  EXPECT_EQ(s.transcript_flags.at("transcript.spec_edit"), 2);
  EXPECT_EQ(s.cases[0].transcript_flags.size(), 3u);
  std::string md = summary_markdown(s, RunInfo{});
  EXPECT_NE(md.find("| `transcript.spec_edit` | 2 |"), std::string::npos) << md;
  nlohmann::json j = summary_json(s, RunInfo{});
  EXPECT_EQ(j["totals"]["transcript_flagged_cases"], 2);
}

}  // namespace
}  // namespace kgym::report

namespace kgym::report {
namespace {

// Host-interpreter cases (verifier.execution) count as passes and fails but
// never in fast_p or the geomean: no device measured them, and a simulated
// time is never a speedup.
TEST(Summarize, HostInterpreterCasesStayOutOfFastPAndTheGeomean) {
  std::vector<CaseResult> results = {
      make_result("level1/1_A", Verdict::kPass, 2.0),
      make_result("pto_case/1_B", Verdict::kPass),
      make_result("pto_case/2_C", Verdict::kPass),
      make_result("pto_case/3_D", Verdict::kFailCheat),
  };
  for (std::size_t i = 1; i < results.size(); ++i) results[i].execution = "host_interpreter";
  results[1].simulated = SimulatedTime{2.344, "us", "pypto cost model"};
  Summary s = summarize(results, {});
  EXPECT_EQ(s.total.passed(), 3);
  EXPECT_EQ(s.device_selected, 1);
  ASSERT_TRUE(s.host_interpreter);
  EXPECT_EQ(s.host_interpreter->cases, 3);
  EXPECT_EQ(s.host_interpreter->passed, 2);
  EXPECT_EQ(s.host_interpreter->simulated, 1);
  ASSERT_FALSE(s.fast_p.empty());
  EXPECT_EQ(s.fast_p[0].count, 1);  // fast_0 over the device case alone
  EXPECT_DOUBLE_EQ(*s.fast_p[0].rate, 1.0);
  EXPECT_EQ(s.speedup_cases, 1);
  EXPECT_EQ(speedup_cell(s.cases[1]), "sim 2.344 us");
  EXPECT_EQ(speedup_cell(s.cases[2]), "host interpreter");
  CaseRow flagged;
  flagged.speedup = 1.42;
  flagged.timing_flags = {"uncertain"};
  EXPECT_EQ(speedup_cell(flagged), "1.42\u00d7 (uncertain)");
  auto only_host = summarize({results[1], results[2]}, {});
  EXPECT_EQ(only_host.device_selected, 0);
  EXPECT_FALSE(only_host.fast_p[1].rate);  // no rate over no measured case
  EXPECT_FALSE(only_host.geomean_speedup);
}

// Refinement rounds: each case as it stood after round r (its last when it
// ended earlier); tokens and cost summed over rounds 1..r.
TEST(Summarize, SolvedAndFast1ByRound) {
  auto rounds = [](std::vector<RoundRecord> list) {
    for (std::size_t i = 0; i < list.size(); ++i) list[i].round = static_cast<int>(i) + 1;
    return list;
  };
  RoundRecord wrong{.verdict = Verdict::kFailCorrectness, .tokens = 100, .cost = 0.5};
  RoundRecord slow{
      .verdict = Verdict::kPass, .speedup = 0.9, .speedup_ci95 = Interval{0.8, 1.0}, .tokens = 50};
  RoundRecord fast{
      .verdict = Verdict::kPass, .speedup = 2.0, .speedup_ci95 = Interval{1.8, 2.2}, .tokens = 10};
  CaseResult a = make_result("level1/1_A", Verdict::kPass, 2.0);
  a.rounds = rounds({wrong, fast});  // solved in round 2
  CaseResult b = make_result("level1/2_B", Verdict::kPass, 2.0);
  b.rounds = rounds({fast});  // solved in round 1, then done
  CaseResult c = make_result("level1/3_C", Verdict::kPass, 0.9);
  c.rounds = rounds({wrong, wrong, slow});  // solved in round 3, not fast
  Summary s = summarize({a, b, c}, {"level1/1_A", "level1/2_B", "level1/3_C", "level1/4_D"});
  ASSERT_TRUE(s.rounds);
  EXPECT_EQ(s.rounds->cases, 3);
  EXPECT_EQ(s.rounds->max_rounds, 3);
  ASSERT_EQ(s.rounds->by_round.size(), 3u);
  const RoundPoint& r1 = s.rounds->by_round[0];
  EXPECT_EQ(r1.solved, 1);
  EXPECT_EQ(r1.fast_1, 1);
  EXPECT_DOUBLE_EQ(*r1.solve_rate, 0.25) << "over the selected cases, the one not run included";
  EXPECT_EQ(r1.tokens, 210);
  EXPECT_DOUBLE_EQ(*r1.cost, 1.0);
  EXPECT_DOUBLE_EQ(*r1.tokens_per_solve, 210.0);
  const RoundPoint& r2 = s.rounds->by_round[1];
  EXPECT_EQ(r2.solved, 2);
  EXPECT_EQ(r2.fast_1, 2);
  EXPECT_EQ(r2.tokens, 320);
  const RoundPoint& r3 = s.rounds->by_round[2];
  EXPECT_EQ(r3.solved, 3);
  EXPECT_EQ(r3.fast_1, 2);
  EXPECT_EQ(r3.tokens, 370);
  EXPECT_DOUBLE_EQ(*r3.cost_per_solve, 1.5 / 3);

  EXPECT_FALSE(summarize({make_result("level1/1_A", Verdict::kPass, 2.0)}).rounds);
  std::string md = summary_markdown(s, RunInfo{});
  EXPECT_NE(md.find("## Refinement rounds"), std::string::npos);
  EXPECT_NE(md.find("| 1 | 1 (25.0%) | 1 (25.0%) | 210 | $1.0000 | 210 | $1.0000 |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("(round 3)"), std::string::npos);
  nlohmann::json j = summary_json(s, RunInfo{});
  EXPECT_EQ(j["totals"]["rounds"]["by_round"][1]["solved"], 2);

  // kgym compare --round 1: each case as it was after round 1.
  CaseResult first = at_round(c, 1);
  EXPECT_EQ(first.verdict, Verdict::kFailCorrectness);
  EXPECT_FALSE(first.performance);
  EXPECT_EQ(first.rounds.size(), 1u);
  EXPECT_EQ(at_round(b, 2).verdict, Verdict::kPass) << "ended in round 1: its last";
  EXPECT_EQ(at_round(a, 2).performance->speedup.median, 2.0) << "its last round keeps its whole result";
}

}  // namespace
}  // namespace kgym::report
