// A damaged or foreign record in a run directory: a resume refuses before
// any work and names the file and the fix; the run.json reader says what is
// wrong with run.json. And a result that cannot be written stops the run.
#include "run/resume_check.h"

#include <fstream>

#include <gtest/gtest.h>

#include "core/case_paths.h"
#include "core/record_files.h"
#include "run/scheduler_test_fixture.h"
#include "util/temp_dir.h"

namespace kgym::run {
namespace {

namespace fs = std::filesystem;

class ResumeCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = dir_.path() / "run";
    fs::create_directories(run_);
    cases_ = {Case{"level1", 1, "ReLU", "/b/1_ReLU.py"}, Case{"level1", 4, "Softmax", "/b/4_Softmax.py"}};
  }
  CasePaths paths(std::size_t i) const { return CasePaths::of(run_, cases_[i].level, cases_[i].stem()); }
  void write(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  std::string result_of(const std::string& case_id, int schema = kResultSchemaVersion, bool lost = false) {
    CaseResult r;
    r.case_id = case_id;
    r.verdict = Verdict::kPass;
    if (lost) r.lost_task = LostTask{};
    nlohmann::json j = to_json(r);
    j["schema_version"] = schema;
    return j.dump(2);
  }
  std::string problems(int samples = 1) {
    auto ok = check_resumable(run_, cases_, samples);
    return ok ? "" : ok.error();
  }

  util::TempDir dir_{"kgym-resume-check"};
  fs::path run_;
  std::vector<Case> cases_;
};

TEST_F(ResumeCheck, ReadableResultsAndNoneAtAllPass) {
  EXPECT_EQ(problems(), "");
  write(paths(0).result(), result_of("level1/1_ReLU"));
  EXPECT_EQ(problems(), "");
  write(paths(1).result(), result_of("level1/4_Softmax", kResultSchemaVersion, /*lost=*/true));
  EXPECT_EQ(problems(), "") << "a lost cluster task's record is run again";
}

TEST_F(ResumeCheck, ATruncatedResultIsRefusedWithItsFileAndTheFix) {
  std::string whole = result_of("level1/1_ReLU");
  write(paths(0).result(), whole.substr(0, whole.size() / 2));
  std::string why = problems();
  EXPECT_NE(why.find(paths(0).result().string() + ": not a valid result record"), std::string::npos)
      << why;
  EXPECT_NE(why.find("move it aside"), std::string::npos) << why;
  EXPECT_NE(why.find("runs its case again"), std::string::npos) << why;
  EXPECT_FALSE(load_result(paths(0), "level1/1_ReLU").has_value());
}

TEST_F(ResumeCheck, GarbageAnotherCasesRecordAndANewerOneAreAllListed) {
  write(paths(0).result(), "\x01\x02 garbage");
  write(paths(1).result(), result_of("level1/1_ReLU"));
  std::string why = problems();
  EXPECT_NE(why.find("2 record(s) cannot be read"), std::string::npos) << why;
  EXPECT_NE(why.find("it records the case 'level1/1_ReLU', not 'level1/4_Softmax'"), std::string::npos)
      << why;
  write(paths(1).result(), result_of("level1/4_Softmax", kResultSchemaVersion + 1));
  why = problems();
  EXPECT_NE(why.find("written by a newer kgym"), std::string::npos) << why;
}

TEST_F(ResumeCheck, AnUnfinishedCasesSamplesAreChecked) {
  write(paths(0).sample(2).result(), "{\"schema_version\": 1, \"case_");
  EXPECT_EQ(problems(/*samples=*/1), "");
  std::string why = problems(/*samples=*/3);
  EXPECT_NE(why.find(paths(0).sample(2).result().string()), std::string::npos) << why;
}

TEST_F(ResumeCheck, AStateFileFromANewerKgymIsRefusedADamagedOneIsRebuilt) {
  write(RunPaths{run_}.state(), "{\"schema_version\": 1, \"sta");
  EXPECT_EQ(problems(), "");
  write(RunPaths{run_}.state(), "{\"schema_version\": 7, \"status\": \"running\"}");
  std::string why = problems();
  EXPECT_NE(why.find("state.json was written by a newer kgym (schema_version 7"), std::string::npos) << why;
}

TEST_F(ResumeCheck, RunRecordMissingDamagedOrNewer) {
  auto missing = read_run_record(run_);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().find("is not a kgym run directory: it has no run.json"), std::string::npos);
  write(RunPaths{run_}.run_record(), "{\"schema_version\": 1, \"conf");
  auto damaged = read_run_record(run_);
  ASSERT_FALSE(damaged.has_value());
  EXPECT_NE(damaged.error().find("run.json is damaged (not valid JSON"), std::string::npos)
      << damaged.error();
  EXPECT_NE(damaged.error().find("restore it from a copy, or start a new run"), std::string::npos);
  write(RunPaths{run_}.run_record(), "[1, 2]");
  EXPECT_FALSE(read_run_record(run_).has_value());
  write(RunPaths{run_}.run_record(), "{\"schema_version\": 2}");
  auto newer = read_run_record(run_);
  ASSERT_FALSE(newer.has_value());
  EXPECT_NE(newer.error().find("newer kgym (schema_version 2; this kgym reads up to 1)"), std::string::npos)
      << newer.error();
  write(RunPaths{run_}.run_record(), "{\"schema_version\": 1}");
  EXPECT_TRUE(read_run_record(run_).has_value());
}

using sched_test::SchedulerTest;

// A result that cannot be written (here: a directory stands where
// result.json goes, as ENOSPC or EFBIG would fail it) stops the run: the
// cases after it do not run, and the outcome says why.
TEST_F(SchedulerTest, AResultThatCannotBeWrittenStopsTheRun) {
  config_.concurrency = 1;
  fs::create_directories(CasePaths::of(options_.run_dir, "level1", "2_Op").result());
  RunOutcome outcome = run_all();
  ASSERT_TRUE(outcome.write_failure.has_value());
  EXPECT_NE(outcome.write_failure->find("result.json"), std::string::npos) << *outcome.write_failure;
  EXPECT_TRUE(outcome.interrupted);
  ASSERT_EQ(outcome.results.size(), 1u);
  EXPECT_EQ(outcome.results[0].case_id, "level1/1_Op");
  EXPECT_EQ(outcome.not_run, 3u);
  EXPECT_TRUE(fs::exists(CasePaths::of(options_.run_dir, "level1", "1_Op").result()));
  EXPECT_FALSE(fs::exists(CasePaths::of(options_.run_dir, "level1", "3_Op").result()));
  bool told = std::ranges::any_of(printer_.lines, [](const std::string& line) {
    return line.find("cannot write a result") != std::string::npos;
  });
  EXPECT_TRUE(told);
  auto events = util::read_file(RunPaths{options_.run_dir}.events()).value_or("");
  EXPECT_NE(events.find("\"write_failure\""), std::string::npos);
}

}  // namespace
}  // namespace kgym::run
