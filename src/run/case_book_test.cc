#include "run/case_book.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "run/quiet_printer_test_util.h"
#include "run/sample_flow.h"
#include "util/fs.h"
#include "util/temp_dir.h"

namespace kgym::run {
namespace {

namespace fs = std::filesystem;

CaseResult result_of(const std::string& id, Verdict verdict, double speedup = 0) {
  CaseResult r;
  r.case_id = id;
  r.verdict = verdict;
  r.reason = std::string(to_string(verdict));
  if (speedup > 0) {
    r.performance = Performance{};
    r.performance->speedup.median = speedup;
  }
  return r;
}

class CaseBookTest : public ::testing::Test {
 protected:
  fs::path run() const { return temp_.path() / "run"; }
  Case op(int n = 1) const { return Case{"level1", n, "Op", run() / "bench" / "level1" / fmt::format("{}_Op.py", n)}; }
  CasePaths paths(int n = 1) const { return CasePaths::of(run(), "level1", fmt::format("{}_Op", n)); }
  std::string events() const {
    store_.flush(clock_.now(), /*force=*/true);
    std::ifstream in(RunPaths{run()}.events());
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  util::TempDir temp_{"kgym-book"};
  Config config_;
  util::FakeClock clock_;
  mutable StateStore store_{(fs::create_directories(temp_.path() / "run"), temp_.path() / "run")};
  QuietPrinter printer_;
};

TEST_F(CaseBookTest, OneSampleEndsTheCaseAndWritesItsResult) {
  CaseBook book(config_, run(), store_, printer_, clock_);
  EXPECT_FALSE(book.add(op()));
  ASSERT_EQ(book.entry(0).samples, std::vector<int>{0});
  ASSERT_TRUE(book.sample_finished(0, 0, result_of("level1/1_Op", Verdict::kPass, 1.3), /*written=*/false));
  EXPECT_EQ(book.done(), 1u);
  ASSERT_TRUE(book.entry(0).result);
  EXPECT_EQ(book.row(0).phase, "done");
  EXPECT_EQ(book.row(0).verdict, "pass");
  auto on_disk = load_result(paths(), "level1/1_Op");
  ASSERT_TRUE(on_disk) << "the case's result.json";
  EXPECT_EQ(on_disk->verdict, Verdict::kPass);
  EXPECT_NE(events().find(R"("event":"finished")"), std::string::npos) << events();
  EXPECT_EQ(printer_.finished, std::vector<std::string>{"1/1 level1/1_Op"});
}

TEST_F(CaseBookTest, SamplesEndTheCaseWithTheirCombinationOnceAllEnded) {
  config_.samples = 3;
  CaseBook book(config_, run(), store_, printer_, clock_);
  EXPECT_FALSE(book.add(op()));
  ASSERT_EQ(book.entry(0).samples, (std::vector<int>{1, 2, 3}));
  ASSERT_TRUE(book.sample_finished(0, 3, result_of("level1/1_Op", Verdict::kPass, 1.5), false, {{"job", "7_1"}}));
  ASSERT_TRUE(book.sample_finished(0, 1, result_of("level1/1_Op", Verdict::kPass, 1.2), false));
  EXPECT_FALSE(book.entry(0).result);
  EXPECT_EQ(book.done(), 0u);
  EXPECT_EQ(book.row(0).samples_done, 2);
  EXPECT_TRUE(load_result(book.sample_paths(0, 3), "level1/1_Op")) << "each sample's own result.json";
  EXPECT_FALSE(load_result(paths(), "level1/1_Op"));
  ASSERT_TRUE(book.sample_finished(0, 2, result_of("level1/1_Op", Verdict::kFailCorrectness), false));
  ASSERT_TRUE(book.entry(0).result);
  const CaseResult& r = *book.entry(0).result;
  ASSERT_TRUE(r.samples);
  EXPECT_EQ(r.samples->n, 3);
  EXPECT_EQ(r.samples->passed, 2);
  EXPECT_EQ(r.samples->chosen, 3);
  EXPECT_TRUE(load_result(paths(), "level1/1_Op")) << "the combined result.json";
  std::string log = events();
  EXPECT_NE(log.find(R"("job":"7_1")"), std::string::npos) << log;
  EXPECT_NE(log.find(R"("chosen":3)"), std::string::npos) << "the finished event says which sample: " << log;
}

TEST_F(CaseBookTest, AResultFromAnEarlierRunEndsTheCaseAtOnce) {
  ASSERT_TRUE(write_result(paths(2), result_of("level1/2_Op", Verdict::kPass, 2.0)));
  CaseBook book(config_, run(), store_, printer_, clock_);
  EXPECT_FALSE(book.add(op(1)));
  EXPECT_TRUE(book.add(op(2)));
  EXPECT_EQ(book.done(), 1u);
  EXPECT_EQ(book.row(1).phase, "done");
  EXPECT_TRUE(book.entry(1).samples.empty());
  auto results = book.take_results();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].case_id, "level1/2_Op");
}

TEST_F(CaseBookTest, ALostSampleLeavesTheCaseToRunAgain) {
  config_.samples = 2;
  CaseBook book(config_, run(), store_, printer_, clock_);
  book.add(op());
  CaseResult lost = result_of("level1/1_Op", Verdict::kTimeout);
  lost.lost_task = LostTask{.job = "9_0", .state = "NODE_FAIL", .source = "sacct"};
  ASSERT_TRUE(book.sample_finished(0, 1, lost, false));
  ASSERT_TRUE(book.sample_finished(0, 2, result_of("level1/1_Op", Verdict::kPass, 1.1), false));
  ASSERT_TRUE(book.entry(0).result);
  ASSERT_TRUE(book.entry(0).result->lost_task);
  EXPECT_EQ(book.entry(0).result->lost_task->job, "9_0");
  // Written, but not final: a resumed run's books open the case again.
  EXPECT_TRUE(fs::exists(paths().result()));
  CaseBook resumed(config_, run(), store_, printer_, clock_);
  EXPECT_FALSE(resumed.add(op()));
}

TEST_F(CaseBookTest, AResultThatCannotBeWrittenIsAnErrorAndCountsNothing) {
  CaseBook book(config_, run(), store_, printer_, clock_);
  book.add(op());
  fs::create_directories(paths().dir.parent_path());
  std::ofstream(paths().dir) << "a file where the case's directory goes";
  auto ended = book.sample_finished(0, 0, result_of("level1/1_Op", Verdict::kPass), false);
  EXPECT_FALSE(ended);
  EXPECT_EQ(book.done(), 0u);
  EXPECT_FALSE(book.entry(0).result);
  EXPECT_EQ(events().find(R"("event":"finished")"), std::string::npos);
}

TEST_F(CaseBookTest, AResultItsTaskWroteIsNotWrittenAgain) {
  CaseBook book(config_, run(), store_, printer_, clock_);
  book.add(op());
  ASSERT_TRUE(book.sample_finished(0, 0, result_of("level1/1_Op", Verdict::kPass), /*written=*/true));
  EXPECT_EQ(book.done(), 1u);
  EXPECT_FALSE(fs::exists(paths().result())) << "the task's node writes it, not the books";
}

TEST_F(CaseBookTest, WithoutCombiningTheLastSampleLeavesTheCaseOpen) {
  config_.samples = 2;
  CaseBook book(config_, run(), store_, printer_, clock_, /*combine=*/false);
  book.add(op());
  ASSERT_TRUE(book.sample_finished(0, 1, result_of("level1/1_Op", Verdict::kPass), false));
  ASSERT_TRUE(book.sample_finished(0, 2, result_of("level1/1_Op", Verdict::kPass), false));
  EXPECT_FALSE(book.entry(0).result);
  ASSERT_TRUE(book.finish_complete_cases());
  EXPECT_FALSE(book.entry(0).result);
}

TEST_F(CaseBookTest, SamplesThatAllEndedBeforeAStopEndTheCaseOnResume) {
  config_.samples = 2;
  CaseBook book(config_, run(), store_, printer_, clock_);
  book.add(op());
  book.resumed_sample(0, 1, result_of("level1/1_Op", Verdict::kPass, 1.4));
  book.resumed_sample(0, 2, result_of("level1/1_Op", Verdict::kPass, 1.1));
  EXPECT_EQ(book.row(0).samples_done, 2);
  EXPECT_FALSE(book.entry(0).result);
  ASSERT_TRUE(book.finish_complete_cases());
  ASSERT_TRUE(book.entry(0).result);
  EXPECT_EQ(book.entry(0).result->samples->chosen, 1);
  EXPECT_TRUE(load_result(paths(), "level1/1_Op"));
}

}  // namespace
}  // namespace kgym::run
