#include "report/compare.h"

#include <gtest/gtest.h>

#include "report/report_test_util.h"
#include "util/text_cells.h"

namespace kgym::report {
namespace {

using testing::make_result;

class CompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // make_result gives every speedup a ±10% interval.
    before_ = {make_result("level1/1_Same", Verdict::kPass, 2.0),
               make_result("level1/2_Fixed", Verdict::kFailCorrectness, std::nullopt, "wrong"),
               make_result("level1/3_Broken", Verdict::kPass, 1.5),
               make_result("level1/4_Faster", Verdict::kPass, 1.0),
               make_result("level1/5_Slower", Verdict::kPass, 4.0),
               make_result("level1/6_Other", Verdict::kCompileError),
               make_result("level1/10_Gone", Verdict::kTimeout)};
    after_ = {make_result("level1/1_Same", Verdict::kPass, 2.1),
              make_result("level1/2_Fixed", Verdict::kPass, 1.2),
              make_result("level1/3_Broken", Verdict::kFailCheat),
              make_result("level1/4_Faster", Verdict::kPass, 2.0),
              make_result("level1/5_Slower", Verdict::kPass, 2.0),
              make_result("level1/6_Other", Verdict::kRuntimeError),
              make_result("level2/1_New", Verdict::kPass, 3.0)};
    a_ = summarize(before_);
    b_ = summarize(after_);
  }

  const CaseChange& change_of(const Comparison& c, const std::string& id) {
    for (const CaseChange& cc : c.cases) {
      if (cc.case_id == id) return cc;
    }
    static CaseChange none;
    ADD_FAILURE() << "no row for " << id;
    return none;
  }

  std::vector<CaseResult> before_, after_;
  Summary a_, b_;
};

TEST_F(CompareTest, ClassifiesEveryKindOfChange) {
  Comparison c = compare_runs(a_, b_);
  ASSERT_EQ(c.cases.size(), 8u);
  EXPECT_EQ(c.cases.front().case_id, "level1/1_Same");  // case id order: 10 after 6
  EXPECT_EQ(c.cases[6].case_id, "level1/10_Gone");
  EXPECT_EQ(change_of(c, "level1/1_Same").change, Change::kSame);  // intervals overlap
  EXPECT_EQ(change_of(c, "level1/2_Fixed").change, Change::kFixed);
  EXPECT_EQ(change_of(c, "level1/3_Broken").change, Change::kBroken);
  EXPECT_EQ(change_of(c, "level1/4_Faster").change, Change::kFaster);
  EXPECT_DOUBLE_EQ(*change_of(c, "level1/4_Faster").speedup_ratio, 2.0);
  EXPECT_EQ(change_of(c, "level1/5_Slower").change, Change::kSlower);
  EXPECT_EQ(change_of(c, "level1/6_Other").change, Change::kVerdictChanged);
  EXPECT_EQ(change_of(c, "level1/10_Gone").change, Change::kOnlyInA);
  EXPECT_EQ(change_of(c, "level2/1_New").change, Change::kOnlyInB);
  EXPECT_EQ(c.changed, 7);
  // Like for like: 1_Same (×1.05), 4_Faster (×2), 5_Slower (×0.5).
  EXPECT_EQ(c.common_cases, 3);
  EXPECT_NEAR(*c.common_speedup_ratio, std::cbrt(1.05), 1e-9);
}

TEST_F(CompareTest, WithoutIntervalsTenPercentDecides) {
  for (auto* results : {&before_, &after_}) {
    for (CaseResult& r : *results) {
      if (r.performance) r.performance->speedup.ci95.reset();
    }
  }
  Summary a = summarize(before_), b = summarize(after_);  // the comparison points into their rows
  Comparison c = compare_runs(a, b);
  EXPECT_EQ(change_of(c, "level1/1_Same").change, Change::kSame);  // +5%
  EXPECT_EQ(change_of(c, "level1/4_Faster").change, Change::kFaster);
}

TEST_F(CompareTest, OnlyBeyondBothRunsNoiseFloorsIsAChange) {
  // 4_Faster doubles with disjoint intervals; a noise floor that itself
  // reads 0.45-2.2 in run B says a side against itself moved that much.
  for (CaseResult& r : after_) {
    if (r.case_id == "level1/4_Faster")
      r.performance->noise_floor = SpeedupEstimate{1.0, Interval{0.45, 2.2}};
  }
  Summary b = summarize(after_);  // the comparison points into its rows
  Comparison c = compare_runs(a_, b);
  EXPECT_EQ(change_of(c, "level1/4_Faster").change, Change::kSame);
  EXPECT_EQ(change_of(c, "level1/5_Slower").change, Change::kSlower);  // its floors are unknown
  ASSERT_TRUE(change_of(c, "level1/4_Faster").b->noise_factor);
  EXPECT_NEAR(*change_of(c, "level1/4_Faster").b->noise_factor, 1 / 0.45, 1e-9);

  // A narrow floor (0.98-1.03) leaves the change standing; the candidate's
  // own floor in run A counts too.
  for (CaseResult& r : after_) {
    if (r.case_id == "level1/4_Faster")
      r.performance->noise_floor = SpeedupEstimate{1.0, Interval{0.98, 1.03}};
  }
  for (CaseResult& r : before_) {
    if (r.case_id == "level1/4_Faster")
      r.performance->candidate_noise_floor = SpeedupEstimate{1.1, Interval{0.9, 1.5}};
  }
  Summary a = summarize(before_);
  b = summarize(after_);
  c = compare_runs(a, b);
  EXPECT_EQ(change_of(c, "level1/4_Faster").change, Change::kFaster);  // x2 beyond x1.5
}

TEST_F(CompareTest, UncertainSpeedupsAreMarked) {
  for (CaseResult& r : after_) {
    if (r.case_id == "level1/4_Faster") r.performance->flags.push_back("uncertain");
  }
  Summary b = summarize(after_);
  Comparison c = compare_runs(a_, b);
  std::string table = comparison_table(c, "a", "b", 200);
  EXPECT_NE(table.find("2.00× (uncertain)"), std::string::npos) << table;
  EXPECT_NE(table.find("(uncertain): the speedup's 95% interval spans more than 2x"), std::string::npos);
  std::string md = comparison_markdown(c, "a", "b");
  EXPECT_NE(md.find("(uncertain)"), std::string::npos);
  std::string plain = comparison_table(compare_runs(a_, b_), "a", "b", 200);  // b_ outlives it
  EXPECT_EQ(plain.find("uncertain"), std::string::npos);
}

TEST_F(CompareTest, AggregateDeltas) {
  Comparison c = compare_runs(a_, b_);
  std::string text = comparison_table(c, "runs/a", "runs/b", 100);
  // A: 4 of 7 pass; B: 5 of 7 pass.
  EXPECT_NE(text.find("correct          57.1%  71.4%  +14.3 pp"), std::string::npos) << text;
  EXPECT_NE(text.find("cheat             0.0%  14.3%  +14.3 pp"), std::string::npos) << text;
  EXPECT_NE(text.find("cases                7      7         ="), std::string::npos) << text;
  EXPECT_NE(text.find("geomean speedup"), std::string::npos);
  EXPECT_NE(
      text.find("like for like: B/A speedup \u00d71.02 (geometric mean over the 3 cases passing in both)"),
      std::string::npos)
      << text;
}

TEST_F(CompareTest, TerminalTableListsChangesAndFitsTheWidth) {
  Comparison c = compare_runs(a_, b_);
  std::string text = comparison_table(c, "runs/a", "runs/b", 100);
  EXPECT_NE(text.find("7 of 8 cases changed:"), std::string::npos) << text;
  EXPECT_NE(
      text.find("level1/4_Faster  pass              pass           1.00\u00d7 \u2192 2.00\u00d7  faster "
                "\u00d72.00"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("level1/10_Gone   timeout           \u2014"), std::string::npos) << text;
  EXPECT_EQ(text.find("level1/1_Same "), std::string::npos);  // unchanged: counted, not listed
  EXPECT_NE(text.find("1 case unchanged (--all lists every case)"), std::string::npos);
  EXPECT_NE(comparison_table(c, "a", "b", 100, true).find("level1/1_Same "), std::string::npos);
  for (int width : {40, 60, 100}) {
    std::string narrow = comparison_table(c, "runs/a", "runs/b", width);
    EXPECT_EQ(narrow.find('\x1b'), std::string::npos);
    std::size_t start = 0;
    for (std::size_t end; (end = narrow.find('\n', start)) != std::string::npos; start = end + 1) {
      EXPECT_LE(util::display_width(std::string_view(narrow).substr(start, end - start)),
                static_cast<std::size_t>(width));
    }
  }
}

TEST_F(CompareTest, MarkdownTables) {
  Comparison c = compare_runs(a_, b_);
  std::string md = comparison_markdown(c, "runs/a", "runs/b");
  EXPECT_NE(md.find("| correct | 57.1% | 71.4% | +14.3 pp |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `level1/3_Broken` | pass | fail\\_cheat | 1.50\u00d7 \u2192 \u2014 | **broken** |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("## Changed cases (7 of 8)"), std::string::npos);
  EXPECT_EQ(md.find('{'), std::string::npos);  // no raw JSON
}

TEST(Compare, IdenticalRunsChangeNothing) {
  std::vector<CaseResult> results = {make_result("level1/1_A", Verdict::kPass, 1.5)};
  Summary s = summarize(results);
  Comparison c = compare_runs(s, s);
  EXPECT_EQ(c.changed, 0);
  EXPECT_NE(comparison_table(c, "a", "a", 80).find("no case changed (1 compared)"), std::string::npos);
  EXPECT_NE(comparison_markdown(c, "a", "a").find("No case changed."), std::string::npos);
}

}  // namespace
}  // namespace kgym::report
