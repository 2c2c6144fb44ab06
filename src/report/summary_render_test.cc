// The Markdown and plain-text reporters.
#include <sstream>

#include <gtest/gtest.h>

#include "report/report_test_util.h"
#include "report/summary.h"
#include "util/text_cells.h"

namespace kgym::report {
namespace {

using testing::make_result;

Summary render_sample_summary() {
  return summarize(
      {
          make_result("level1/1_Square_matrix_multiplication_", Verdict::kPass, 1.5),
          make_result("level1/19_ReLU", Verdict::kFailCorrectness, std::nullopt,
                      "output 0 differs | max abs err 0.5\nsecond line"),
          make_result("level2/7_Conv", Verdict::kPass, 0.5),
      },
      {"level2/8_Pool"});
}

RunInfo sample_info() {
  RunInfo info;
  info.run_dir = "/runs/2025-01-31_120000";
  info.started_at_iso = "2025-01-31T12:00:00Z";
  info.backend = "cpu";
  info.mode = "performance";
  info.status = "interrupted";
  info.machine = {{"cpu", {{"model", "Test CPU"}, {"cores", 8}}}, {"torch", "2.1.0"}};
  return info;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(SummaryMarkdown, HeadlineAndTables) {
  std::string md = summary_markdown(render_sample_summary(), sample_info());
  EXPECT_TRUE(contains(md, "# kgym run summary\n"));
  EXPECT_TRUE(contains(md,
                       "| Cases | Pass | Correctness rate | Cheat rate | Geomean speedup [95% CI] |\n"
                       "|---:|---:|---:|---:|---:|\n"
                       "| 4 | 2 | 50.0% | 0.0% | 0.87\u00d7 ["));
  EXPECT_TRUE(contains(md, "] over 2 cases |\n"));
  // fast_p counts the 1.5x case (interval 1.35-1.65) above 1 and 1.2, not above 1.5.
  EXPECT_TRUE(contains(md, "| fast_1 | 1 (25.0%) ["));
  EXPECT_TRUE(contains(md, "| fast_1.2 | 1 (25.0%) ["));
  EXPECT_TRUE(contains(md, "| fast_1.5 | 0 (0.0%) [0.0%, "));
  EXPECT_TRUE(contains(md, "**1 of 4 cases did not run**"));
  EXPECT_TRUE(contains(md, "| pass | 2 |\n| fail_correctness | 1 |\n| not run | 1 |\n"));
  EXPECT_TRUE(contains(md, "| level1 | 2 | 1 | 1 | 0 | 50.0% | 1 (50.0%) ["));
  EXPECT_TRUE(contains(md, "| level2 | 2 | 1 | 0 | 1 | 50.0% | 0 (0.0%) ["));
  // A finished case links to its result.json, relative to the run directory.
  EXPECT_TRUE(contains(md,
                       "| [`level1/1_Square_matrix_multiplication_`](cases/level1/"
                       "1_Square_matrix_multiplication_/result.json) | **pass** | 1.50\u00d7 | \u2014 | "
                       "2.000 | 1.333 |  |\n"));
  // Pipes are escaped and the reason is kept on one line.
  EXPECT_TRUE(contains(md,
                       "| [`level1/19_ReLU`](cases/level1/19_ReLU/result.json) | fail_correctness | \u2014 | "
                       "\u2014 | \u2014 | \u2014 | "
                       "output 0 differs \\| max abs err 0.5 second line |\n"));
  EXPECT_TRUE(contains(md, "| `level2/8_Pool` | not run |"));  // no record to link to
  EXPECT_TRUE(contains(md, "[report.html](report.html)"));
  EXPECT_TRUE(contains(md, "1 passing case has a speedup whose interval lies above 1."));
  EXPECT_TRUE(contains(md, "| cpu.model | Test CPU |\n"));
  EXPECT_FALSE(contains(md, "{\""));  // no raw JSON
}

TEST(SummaryMarkdown, LongReasonsAreCut) {
  Summary s = summarize({make_result("level1/1_A", Verdict::kCrash, std::nullopt, std::string(500, 'x'))});
  std::string md = summary_markdown(s, RunInfo{});
  EXPECT_TRUE(contains(md, std::string(99, 'x') + "\u2026 |"));
  EXPECT_FALSE(contains(md, std::string(101, 'x')));
}

TEST(SummaryMarkdown, FastPAgainstTorchCompile) {
  auto result = make_result("level1/1_A", Verdict::kPass, 2.0);
  BaselineSpeedup compiled{.name = "compile", .speedup = SpeedupEstimate{1.4, Interval{1.2, 1.6}}};
  result.performance->speedup_vs.push_back(compiled);
  std::string md = summary_markdown(summarize({result}, {}), sample_info());
  EXPECT_NE(md.find("### Against the reference through torch.compile"), std::string::npos) << md;
  EXPECT_NE(md.find("1 passing case timed against it, 0 where it was unavailable"), std::string::npos) << md;
  // Without the baseline, no such section.
  md = summary_markdown(summarize({make_result("level1/1_A", Verdict::kPass, 2.0)}, {}), sample_info());
  EXPECT_EQ(md.find("Against the reference through torch.compile"), std::string::npos);
}

TEST(SummaryTable, RowsAlignedAndWithinWidth) {
  std::string table = summary_table(render_sample_summary(), 120);
  std::vector<std::string> lines = lines_of(table);
  for (const std::string& line : lines) EXPECT_LE(util::display_width(line), 120u) << line;
  EXPECT_FALSE(contains(table, "\x1b"));
  ASSERT_GE(lines.size(), 9u);
  EXPECT_EQ(lines[0],
            "cases 4  pass 2  correctness 50.0%  cheat 0.0%  fast_1 1 (25.0%)  fast_1.2 1 (25.0%)  fast_1.5 "
            "0 (0.0%)  "
            "fast_2 0 (0.0%)");
  lines.erase(lines.begin());  // the headline wraps: "geomean ..." is on a line of its own
  EXPECT_EQ(lines[0], "geomean 0.87\u00d7 over 2");
  EXPECT_EQ(lines[1], "pass 2  fail_correctness 1  not run 1");
  EXPECT_EQ(lines[2], "1 case(s) did not run; they are not counted as passed.");
  EXPECT_EQ(
      lines[4],
      "CASE                                    VERDICT             SPEEDUP     REF MS    CAND MS  REASON");
  EXPECT_EQ(lines[5],
            "level1/1_Square_matrix_multiplication_  pass                  1.50\u00d7      2.000      1.333");
  EXPECT_EQ(lines[6],
            "level1/19_ReLU                          fail_correctness          \u2014          \u2014        "
            "  \u2014  "
            "output 0 differs | max abs e\u2026");
  EXPECT_EQ(lines[7],
            "level2/7_Conv                           pass                  0.50\u00d7      2.000      4.000");
  EXPECT_EQ(lines[8].substr(0, 13), "level2/8_Pool");
}

TEST(SummaryTable, NarrowWidthDropsColumnsNotRows) {
  std::string table = summary_table(render_sample_summary(), 40);
  std::vector<std::string> lines = lines_of(table);
  for (const std::string& line : lines) EXPECT_LE(util::display_width(line), 40u) << line;
  EXPECT_TRUE(contains(table, "level2/8_Pool"));
  EXPECT_FALSE(contains(table, "REF MS"));
}

}  // namespace
}  // namespace kgym::report

namespace kgym::report {
namespace {

// Passing cases on the roofline: the median sol over the sound ones, a case
// above the roof counted apart (an error, never a score), and the plot.
TEST(SummaryRoofline, MedianSolAnErrorAboveTheRoofAndThePlot) {
  auto placed = [](const std::string& id, double candidate_ms, double reference_ms) {
    CaseResult r = testing::make_result(id, Verdict::kPass, reference_ms / candidate_ms);
    r.performance->candidate.median_ms = candidate_ms;
    r.performance->reference.median_ms = reference_ms;
    WorkCount w;
    w.input_bytes = w.output_bytes = 5'000'000;  // 10 MB: 1 ms at 10 GB/s
    w.flops = 2'500'000;
    RoofsUsed roofs{.cores = "0",
                    .bandwidth_gbs = 10,
                    .memory_level = "main memory",
                    .peak_gflops = 100,
                    .precision = "float32"};
    r.performance->roofline = place_on_roofline(w, roofs, candidate_ms, reference_ms);
    return r;
  };
  Summary s =
      summarize({placed("level1/1_A", 2, 4), placed("level1/2_B", 4, 4), placed("level1/3_C", 0.5, 4)}, {});
  ASSERT_TRUE(s.roofline);
  EXPECT_EQ(s.roofline->cases, 2);
  EXPECT_DOUBLE_EQ(*s.roofline->median_sol, 0.375);  // 0.5 and 0.25
  EXPECT_EQ(s.roofline->above_roof, 1);
  EXPECT_EQ(s.roofline->plotted, 2);
  std::string md = summary_markdown(s, sample_info());
  EXPECT_TRUE(contains(md, "## Roofline")) << md;
  EXPECT_TRUE(contains(md, "**0.375** over 2 passing cases")) << md;
  EXPECT_TRUE(contains(md, "**1 case ran above the roof**")) << md;
  EXPECT_TRUE(contains(md, "![roofline](roofline.svg)"));
  EXPECT_TRUE(contains(md, "| 0.500 |")) << md;
  EXPECT_TRUE(contains(md, "| error: 2.00 > 1 |")) << md;
  EXPECT_NE(roofline_line(*s.roofline).find("median sol 0.375 over 2 passing cases"), std::string::npos);
}

}  // namespace
}  // namespace kgym::report
