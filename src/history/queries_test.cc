#include "history/queries.h"

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

class QueriesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = open_history(tmp_.path() / "h.db");
    ASSERT_TRUE(opened) << opened.error();
    db_.emplace(std::move(*opened));
  }
  std::filesystem::path add(const std::string& name, double started_at,
                            const std::vector<CaseResult>& results, const std::string& model = "model-a") {
    FakeRun run{.dir = tmp_.path() / name, .model = model, .started_at = started_at};
    write_run(run);
    for (const CaseResult& r : results) write_case(run.dir, r);
    EXPECT_TRUE(index_run(*db_, run.dir));
    return run.dir;
  }
  util::TempDir tmp_{"kgym-history"};
  std::optional<Database> db_;
};

TEST_F(QueriesTest, CaseHistoryIsNewestFirst) {
  add("r2", 2000, {make_case("level1/1_A", Verdict::kPass, 2.0)});
  add("r1", 1000, {make_case("level1/1_A", Verdict::kFailCorrectness)});
  add("r3", 3000, {make_case("level1/1_A", Verdict::kPass, 3.0), make_case("level1/2_B", Verdict::kPass)});
  auto entries = case_history(*db_, "level1/1_A");
  ASSERT_TRUE(entries);
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].run_name, "r3");
  EXPECT_EQ((*entries)[1].run_name, "r2");
  EXPECT_EQ((*entries)[2].run_name, "r1");
  EXPECT_EQ((*entries)[2].verdict, "fail_correctness");
  std::string table = case_history_table("level1/1_A", *entries);
  EXPECT_LT(table.find("r3"), table.find("r1"));
  EXPECT_NE(table.find("3.00x [2.70-3.30]"), std::string::npos) << table;
}

TEST_F(QueriesTest, RegressionsAgainstTheNewestEarlierRunOfTheSameConfig) {
  add("base", 1000,
      {make_case("level1/1_A", Verdict::kPass, 2.0),
       make_case("level1/2_B", Verdict::kPass, 3.0, Interval{2.8, 3.2}),
       make_case("level1/3_C", Verdict::kPass, 2.0), make_case("level1/4_D", Verdict::kFailCorrectness)});
  // Another config in between (a different model) is not compared.
  add("other", 1500, {make_case("level1/1_A", Verdict::kFailCorrectness)}, "model-b");
  auto now = add("now", 2000,
                 {make_case("level1/1_A", Verdict::kFailCorrectness),                // now fails
                  make_case("level1/2_B", Verdict::kPass, 2.0, Interval{1.9, 2.1}),  // below [2.8, 3.2]
                  make_case("level1/3_C", Verdict::kPass, 1.9),                      // overlapping: noise
                  make_case("level1/4_D", Verdict::kFailCorrectness)});              // never passed
  for (const std::string& run : {now.string(), std::string("now")}) {
    auto report = regressions(*db_, run);
    ASSERT_TRUE(report) << report.error();
    EXPECT_EQ(report->earlier_runs, 1);
    ASSERT_EQ(report->regressions.size(), 2u);
    EXPECT_EQ(report->regressions[0].case_id, "level1/1_A");
    EXPECT_EQ(report->regressions[0].kind, "now fails");
    EXPECT_EQ(report->regressions[0].before.run_name, "base");
    EXPECT_EQ(report->regressions[1].case_id, "level1/2_B");
    EXPECT_EQ(report->regressions[1].kind, "slower");
  }
  auto first = regressions(*db_, "base");
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->regressions.empty());
  EXPECT_NE(regressions_text(*first).find("no earlier run"), std::string::npos);
  EXPECT_FALSE(regressions(*db_, "nonexistent"));
}

}  // namespace
}  // namespace kgym::history
