#include "history/leaderboard.h"

#include <gtest/gtest.h>

#include "history/history_test_util.h"
#include "history/index.h"
#include "history/schema.h"
#include "util/temp_dir.h"

namespace kgym::history {
namespace {

using testing::FakeRun;
using testing::make_case;
using testing::write_case;
using testing::write_run;

class LeaderboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = open_history(tmp_.path() / "h.db");
    ASSERT_TRUE(opened) << opened.error();
    db_.emplace(std::move(*opened));
  }
  void add(const FakeRun& run, const std::vector<CaseResult>& results) {
    write_run(run);
    for (const CaseResult& r : results) write_case(run.dir, r);
    auto indexed = index_run(*db_, run.dir);
    ASSERT_TRUE(indexed) << indexed.error();
  }
  util::TempDir tmp_{"kgym-history"};
  std::optional<Database> db_;
};

TEST_F(LeaderboardTest, FiguresOverTheCommonCasesWithWilsonIntervals) {
  // model-a: 4 cases, 3 pass (two of them faster than 1 with confidence, one above 2), one cheat.
  add(FakeRun{.dir = tmp_.path() / "a", .model = "model-a"},
      {make_case("level1/1_A", Verdict::kPass, 2.5), make_case("level1/2_B", Verdict::kPass, 1.5),
       make_case("level1/3_C", Verdict::kPass, 1.0), make_case("level1/4_D", Verdict::kFailCheat),
       make_case("level1/5_E", Verdict::kPass, 9.0)});  // not attempted by model-b: left out
  // model-b: the same four cases, one pass.
  add(FakeRun{.dir = tmp_.path() / "b", .model = "model-b"},
      {make_case("level1/1_A", Verdict::kPass, 1.2), make_case("level1/2_B", Verdict::kFailCorrectness),
       make_case("level1/3_C", Verdict::kFailCorrectness), make_case("level1/4_D", Verdict::kCompileError)});
  auto board = leaderboard(*db_, {});
  ASSERT_TRUE(board) << board.error();
  EXPECT_TRUE(board->case_sets_differ);
  EXPECT_EQ(board->common_cases, 4);
  EXPECT_EQ(board->all_cases, 5);
  EXPECT_NE(common_cases_line(*board).find("4 common cases"), std::string::npos);
  ASSERT_EQ(board->entries.size(), 2u);
  const LeaderboardEntry& a = board->entries[0];
  EXPECT_EQ(a.key, "model-a");
  EXPECT_EQ(a.cases, 4);
  EXPECT_DOUBLE_EQ(a.pass_at_1, 0.75);
  EXPECT_DOUBLE_EQ(a.correct.rate, 0.75);
  EXPECT_DOUBLE_EQ(a.cheat.rate, 0.25);
  EXPECT_EQ(a.fast_1.count, 2);  // 2.5 [2.25, 2.75] and 1.5 [1.35, 1.65]; 1.0 [0.9, 1.1] is not
  EXPECT_EQ(a.fast_2.count, 1);
  // Wilson 95 % of 2/4: [0.150, 0.850].
  ASSERT_TRUE(a.fast_1.ci95);
  EXPECT_NEAR(a.fast_1.ci95->lo, 0.1500, 1e-3);
  EXPECT_NEAR(a.fast_1.ci95->hi, 0.8500, 1e-3);
  ASSERT_TRUE(a.geomean.value);
  EXPECT_NEAR(*a.geomean.value, std::cbrt(2.5 * 1.5 * 1.0), 1e-9);
  EXPECT_EQ(a.geomean.cases, 3);
  ASSERT_TRUE(a.tokens_per_solve);
  EXPECT_DOUBLE_EQ(*a.tokens_per_solve, 4 * 1200.0 / 3);
  ASSERT_TRUE(a.cost_per_solve);
  EXPECT_DOUBLE_EQ(*a.cost_per_solve, 4 * 0.5 / 3);
  const LeaderboardEntry& b = board->entries[1];
  EXPECT_EQ(b.key, "model-b");
  EXPECT_DOUBLE_EQ(b.pass_at_1, 0.25);
  EXPECT_EQ(b.fast_1.count, 1);

  std::string table = leaderboard_table(*board);
  EXPECT_NE(table.find("model-a"), std::string::npos);
  EXPECT_NE(leaderboard_markdown(*board).find("| model-a |"), std::string::npos);
  std::string html = leaderboard_html(*board, "now");
  EXPECT_NE(html.find("<style>"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);  // self-contained
}

TEST_F(LeaderboardTest, TheMedianSolOverPassingCasesWithASoundOne) {
  auto placed = [](const std::string& id, Verdict verdict, double candidate_ms) {
    CaseResult r = make_case(id, verdict, 1.0);
    if (!r.performance) r.performance.emplace();
    WorkCount w;
    w.input_bytes = w.output_bytes = 5'000'000;  // 1 ms at 10 GB/s
    RoofsUsed roofs{.cores = "0",
                    .bandwidth_gbs = 10,
                    .memory_level = "main memory",
                    .peak_gflops = 100,
                    .precision = "float32"};
    r.performance->roofline = place_on_roofline(w, roofs, candidate_ms, 4.0);
    return r;
  };
  // 0.5, 0.25 and 0.1 count; 2.0 is above the roof (an error) and a failure none.
  add(FakeRun{.dir = tmp_.path() / "a", .model = "model-a"},
      {placed("level1/1_A", Verdict::kPass, 2), placed("level1/2_B", Verdict::kPass, 4),
       placed("level1/3_C", Verdict::kPass, 10), placed("level1/4_D", Verdict::kPass, 0.5),
       placed("level1/5_E", Verdict::kFailCorrectness, 1)});
  auto board = leaderboard(*db_, {});
  ASSERT_TRUE(board) << board.error();
  const LeaderboardEntry& a = board->entries.at(0);
  ASSERT_TRUE(a.median_sol);
  EXPECT_DOUBLE_EQ(*a.median_sol, 0.25);
  EXPECT_EQ(a.sol_cases, 3);
  EXPECT_NE(leaderboard_markdown(*board).find("| 0.250 (3) |"), std::string::npos)
      << leaderboard_markdown(*board);
}

TEST_F(LeaderboardTest, TheNewestRunOfACaseCountsAndFiltersApply) {
  add(FakeRun{.dir = tmp_.path() / "old", .level = "level1", .started_at = 1'700'000'000},
      {make_case("level1/1_A", Verdict::kFailCorrectness), make_case("level2/1_X", Verdict::kPass, 1.2)});
  add(FakeRun{.dir = tmp_.path() / "new", .started_at = 1'780'000'000},
      {make_case("level1/1_A", Verdict::kPass, 3.0)});
  auto board = leaderboard(*db_, {.level = "level1"});
  ASSERT_TRUE(board);
  ASSERT_EQ(board->entries.size(), 1u);
  EXPECT_EQ(board->entries[0].cases, 1);
  EXPECT_DOUBLE_EQ(board->entries[0].pass_at_1, 1.0);
  EXPECT_FALSE(board->case_sets_differ);
  auto since = leaderboard(*db_, {.since = parse_date("2026-01-01")});
  ASSERT_TRUE(since);
  ASSERT_EQ(since->entries.size(), 1u);
  EXPECT_EQ(since->entries[0].runs, 1);
  EXPECT_EQ(since->entries[0].cases, 1);
}

TEST_F(LeaderboardTest, PassAtKFromSamples) {
  CaseResult a = make_case("level1/1_A", Verdict::kPass, 2.0);
  a.samples = SamplesSummary{.n = 4, .passed = 1};
  CaseResult b = make_case("level1/2_B", Verdict::kPass, 2.0);
  b.samples = SamplesSummary{.n = 4, .passed = 4};
  add(FakeRun{.dir = tmp_.path() / "s"}, {a, b});
  auto board = leaderboard(*db_, {.by = GroupBy::kAgent});
  ASSERT_TRUE(board);
  ASSERT_EQ(board->entries.size(), 1u);
  EXPECT_EQ(board->entries[0].key, "command");
  EXPECT_DOUBLE_EQ(board->entries[0].pass_at_1, (0.25 + 1.0) / 2);
  EXPECT_EQ(board->entries[0].pass_k, 4);
  ASSERT_TRUE(board->entries[0].pass_at_k);
  EXPECT_DOUBLE_EQ(*board->entries[0].pass_at_k, 1.0);
}

// --round R: each case at its round R (its last when it ended earlier),
// with what its agent spent in rounds 1..R.
TEST_F(LeaderboardTest, ARoundRestrictsEachCaseToThatRound) {
  CaseResult a = make_case("level1/1_A", Verdict::kPass, 3.0);
  a.rounds = {RoundRecord{.round = 1, .verdict = Verdict::kFailCorrectness, .tokens = 100, .cost = 1.0},
              RoundRecord{.round = 2,
                          .verdict = Verdict::kPass,
                          .speedup = 3.0,
                          .speedup_ci95 = Interval{2.5, 3.5},
                          .tokens = 50,
                          .cost = 0.5}};
  CaseResult b = make_case("level1/2_B", Verdict::kPass, 2.0);
  b.rounds = {RoundRecord{.round = 1,
                          .verdict = Verdict::kPass,
                          .speedup = 2.0,
                          .speedup_ci95 = Interval{1.8, 2.2},
                          .tokens = 70,
                          .cost = 0.25}};
  add(FakeRun{.dir = tmp_.path() / "r"}, {a, b});
  auto last = leaderboard(*db_, {.by = GroupBy::kAgent});
  ASSERT_TRUE(last) << last.error();
  EXPECT_EQ(last->entries[0].correct.count, 2);
  auto first = leaderboard(*db_, {.by = GroupBy::kAgent, .round = 1});
  ASSERT_TRUE(first) << first.error();
  const LeaderboardEntry& e = first->entries[0];
  EXPECT_EQ(e.correct.count, 1) << "1_A failed its first round";
  EXPECT_EQ(e.fast_1.count, 1);
  ASSERT_TRUE(e.cost_per_solve);
  EXPECT_DOUBLE_EQ(*e.cost_per_solve, 1.25) << "rounds 1 of both cases, over one solve";
  ASSERT_TRUE(e.tokens_per_solve);
  EXPECT_DOUBLE_EQ(*e.tokens_per_solve, 170.0);
  auto later = leaderboard(*db_, {.by = GroupBy::kAgent, .round = 5});
  ASSERT_TRUE(later);
  EXPECT_EQ(later->entries[0].correct.count, 2) << "past their last round, cases stand as they ended";
  EXPECT_DOUBLE_EQ(*later->entries[0].cost_per_solve, 1.75 / 2);
}

TEST(LeaderboardDates, ParsesDaysAndTimes) {
  EXPECT_EQ(parse_date("1970-01-02"), 86400.0);
  EXPECT_EQ(parse_date("1970-01-01T01:00:00"), 3600.0);
  EXPECT_FALSE(parse_date("yesterday"));
  EXPECT_FALSE(parse_date("2026-02-30"));
}

}  // namespace
}  // namespace kgym::history
