// The coordinator against a scripted Slurm (the real one runs in
// tests/e2e/80_slurm.sh): submissions, adoption, lost tasks, requeues.
#include "run/slurm_coordinator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <functional>

#include <fmt/format.h>

#include "run/quiet_printer_test_util.h"
#include "run/sample_flow.h"
#include "util/fs.h"
#include "util/temp_dir.h"

namespace kgym::run {
namespace {

namespace fs = std::filesystem;

// A queue scripted per poll: `step(n)` runs before the n-th queue() answer
// and may finish tasks (writing results as a task would) or drop them.
class FakeSlurm : public SlurmClient {
 public:
  std::expected<std::string, std::string> submit(const std::vector<std::string>& args) override {
    submits.push_back(args);
    if (!submit_error.empty()) return std::unexpected(submit_error);
    std::string name = args[1].substr(std::string("--job-name=").size());
    std::string array = args[2].substr(std::string("--array=").size());
    std::vector<int> ids = parse_task_ids(array).value();
    for (int id : ids)
      queued.push_back(SlurmTask{.array_job = job, .task = id, .state = "PENDING", .job_name = name});
    return job;
  }
  std::expected<std::vector<SlurmTask>, std::string> queue(const std::vector<std::string>& names) override {
    if (step) step(polls);
    ++polls;
    std::vector<SlurmTask> out;
    for (const SlurmTask& t : queued) {
      if (std::find(names.begin(), names.end(), t.job_name) != names.end()) out.push_back(t);
    }
    return out;
  }
  std::expected<std::vector<SlurmTask>, std::string> accounting(const std::vector<std::string>&) override {
    return std::unexpected(std::string("Slurm accounting storage is disabled"));
  }
  std::expected<std::vector<SlurmTask>, std::string> show(const std::string&) override { return shown; }
  std::expected<void, std::string> cancel(const std::vector<std::string>& jobs) override {
    cancelled.push_back(jobs);
    return {};
  }
  std::expected<int, std::string> max_array_size() override {
    if (max_array <= 0) return std::unexpected(std::string("no answer"));
    return max_array;
  }
  void drop(int task) {
    std::erase_if(queued, [&](const SlurmTask& t) { return t.task == task; });
  }

  std::string job = "100";
  std::string submit_error;
  std::vector<std::vector<std::string>> submits;
  std::vector<SlurmTask> queued;
  std::vector<SlurmTask> shown;
  std::vector<std::vector<std::string>> cancelled;
  std::function<void(int)> step;
  int polls = 0;
  int max_array = 0;
};

class SlurmCoordinatorTest : public ::testing::Test {
 protected:
  SlurmCoordinatorTest() : temp_("kgym-slurm") {
    config_.executor.kind = "slurm";
    config_.executor.slurm.poll = std::chrono::milliseconds(1);
    config_.verifier.backend = "cpu";
    for (int n = 1; n <= 3; ++n) cases_.push_back(Case{"level1", n, "Op", temp_.path() / "x.py"});
  }
  fs::path run_dir() const { return temp_.path() / "run"; }
  CasePaths paths(int n, int sample = 0) const {
    CasePaths c = CasePaths::of(run_dir(), "level1", fmt::format("{}_Op", n));
    return sample > 0 ? c.sample(sample) : c;
  }
  // What a task does when its case-sample ends.
  void write_result(int n, Verdict verdict, int sample = 0) const {
    CaseResult r;
    r.case_id = fmt::format("level1/{}_Op", n);
    r.verdict = verdict;
    r.reason = "scripted";
    ASSERT_TRUE(util::make_dirs(paths(n, sample).dir));
    std::ofstream(paths(n, sample).result()) << to_json(r).dump();
  }
  RunOutcome run(FakeSlurm& slurm) {
    StateStore store(run_dir());
    SlurmCoordinator coordinator(config_, {.run_dir = run_dir(), .kgym_argv0 = {"/bin/kgym"}}, cases_, slurm,
                                 printer_, store);
    return coordinator.run();
  }

  util::TempDir temp_;
  Config config_;
  std::vector<Case> cases_;
  QuietPrinter printer_;
};

TEST_F(SlurmCoordinatorTest, OneArrayForTheCasesAndTheirResultsAsTheTasksWroteThem) {
  FakeSlurm slurm;
  slurm.step = [&](int poll) {
    if (poll == 1) {
      for (int n = 1; n <= 3; ++n) write_result(n, n == 2 ? Verdict::kFailCorrectness : Verdict::kPass);
      slurm.queued.clear();
    }
  };
  RunOutcome outcome = run(slurm);
  ASSERT_EQ(slurm.submits.size(), 1u);
  EXPECT_EQ(slurm.submits[0][2], "--array=0-2");
  ASSERT_EQ(outcome.results.size(), 3u);
  EXPECT_EQ(outcome.results[1].verdict, Verdict::kFailCorrectness);
  EXPECT_EQ(outcome.not_run, 0u);
  auto record = util::read_file(RunPaths{run_dir()}.slurm_dir() / "submission-1.json");
  ASSERT_TRUE(record);
  EXPECT_NE(record->find("\"job_id\": \"100\""), std::string::npos) << *record;
  EXPECT_NE(record->find("level1/3_Op"), std::string::npos);
  auto script = util::read_file(RunPaths{run_dir()}.slurm_dir() / "submission-1.sh");
  ASSERT_TRUE(script);
  EXPECT_NE(script->find("slurm-task --run-dir"), std::string::npos);
}

TEST_F(SlurmCoordinatorTest, ATaskGoneWithoutAResultGetsItsStatesVerdictAndRunsAgainOnResume) {
  FakeSlurm slurm;
  slurm.step = [&](int poll) {
    if (poll == 1) {
      write_result(1, Verdict::kPass);
      write_result(3, Verdict::kPass);
      slurm.queued.clear();
      slurm.shown = {SlurmTask{.array_job = "100", .task = 1, .state = "TIMEOUT", .node = "n7"}};
    }
  };
  RunOutcome outcome = run(slurm);
  ASSERT_EQ(outcome.results.size(), 3u);
  const CaseResult& lost = outcome.results[1];
  EXPECT_EQ(lost.verdict, Verdict::kTimeout);
  EXPECT_NE(lost.reason.find("the Slurm task 100_1 ended TIMEOUT without a result (scontrol)"),
            std::string::npos)
      << lost.reason;
  EXPECT_NE(lost.reason.find("slurm/logs/100_1.log"), std::string::npos) << lost.reason;
  ASSERT_TRUE(lost.lost_task);
  EXPECT_EQ(lost.lost_task->node, "n7");
  // On disk, but not final: a resumed run submits that case alone.
  EXPECT_TRUE(fs::exists(paths(2).result()));
  EXPECT_FALSE(load_result(paths(2), "level1/2_Op"));
  FakeSlurm again;
  again.job = "200";
  again.step = [&](int poll) {
    if (poll == 0) return;
    write_result(2, Verdict::kPass);
    again.queued.clear();
  };
  RunOutcome resumed = run(again);
  ASSERT_EQ(again.submits.size(), 1u);
  EXPECT_EQ(again.submits[0][1], "--job-name=kgym-" + run_tag(run_dir().string()) + "-2");
  EXPECT_EQ(again.submits[0][2], "--array=0");
  ASSERT_EQ(resumed.results.size(), 3u);
  EXPECT_EQ(resumed.results[1].verdict, Verdict::kPass);
}

TEST_F(SlurmCoordinatorTest, AResumedCoordinatorAdoptsTheQueuedTasksAndSubmitsNothingTwice) {
  // The first coordinator submitted, then died (before even writing the job id).
  FakeSlurm first;
  first.step = [&](int) { throw std::runtime_error("killed"); };
  EXPECT_THROW(run(first), std::runtime_error);
  std::string name = "kgym-" + run_tag(run_dir().string()) + "-1";
  {
    fs::path file = RunPaths{run_dir()}.slurm_dir() / "submission-1.json";
    auto text = util::read_file(file);
    ASSERT_TRUE(text);
    std::string record = *text;
    record.replace(record.find("\"job_id\": \"100\""), 15, "\"job_id\": \"\"");
    std::ofstream(file) << record;
  }
  write_result(1, Verdict::kPass);  // ended while no coordinator ran
  FakeSlurm second;
  second.queued = {
      SlurmTask{.array_job = "100", .task = 1, .state = "RUNNING", .node = "n1", .job_name = name},
      SlurmTask{.array_job = "100", .task = -1, .state = "PENDING", .job_name = name, .pending_range = {2}}};
  second.step = [&](int poll) {
    if (poll == 2) {
      write_result(2, Verdict::kPass);
      write_result(3, Verdict::kCompileError);
      second.queued.clear();
    }
  };
  RunOutcome outcome = run(second);
  EXPECT_TRUE(second.submits.empty());
  ASSERT_EQ(outcome.results.size(), 3u);
  EXPECT_EQ(outcome.results[2].verdict, Verdict::kCompileError);
  EXPECT_NE(std::find(printer_.lines.begin(), printer_.lines.end(), "  adopted 2 task(s) still in the queue"),
            printer_.lines.end());
}

TEST_F(SlurmCoordinatorTest, ACampaignLargerThanMaxArraySizeIsSeveralArrays) {
  FakeSlurm slurm;
  slurm.max_array = 2;
  slurm.step = [&](int poll) {
    if (poll == 1) {
      for (int n = 1; n <= 3; ++n) write_result(n, Verdict::kPass);
      slurm.queued.clear();
    }
  };
  RunOutcome outcome = run(slurm);
  ASSERT_EQ(slurm.submits.size(), 2u);
  EXPECT_EQ(slurm.submits[0][2], "--array=0-1");
  EXPECT_EQ(slurm.submits[1][2], "--array=0");
  EXPECT_EQ(slurm.submits[1][1], "--job-name=kgym-" + run_tag(run_dir().string()) + "-2");
  auto second = util::read_file(RunPaths{run_dir()}.slurm_dir() / "submission-2.json");
  ASSERT_TRUE(second);
  EXPECT_NE(second->find("level1/3_Op"), std::string::npos);
  EXPECT_EQ(outcome.results.size(), 3u);
}

TEST_F(SlurmCoordinatorTest, ARequeuedTaskCountsOnce) {
  FakeSlurm slurm;
  slurm.step = [&](int poll) {
    // Task 0 runs, is requeued (pending again), then runs and ends.
    if (poll == 1) slurm.queued[0].state = "RUNNING";
    if (poll == 2) slurm.queued[0].state = "PENDING";
    if (poll == 3) {
      for (int n = 1; n <= 3; ++n) write_result(n, Verdict::kPass);
      slurm.queued.clear();
    }
  };
  RunOutcome outcome = run(slurm);
  EXPECT_EQ(outcome.results.size(), 3u);
  auto events = util::read_file(RunPaths{run_dir()}.events());
  ASSERT_TRUE(events);
  std::size_t finished = 0;
  for (std::size_t at = 0; (at = events->find("\"event\":\"finished\"", at)) != std::string::npos; ++at)
    ++finished;
  EXPECT_EQ(finished, 3u);
  EXPECT_EQ(events->find("task_lost"), std::string::npos) << *events;
}

TEST_F(SlurmCoordinatorTest, SamplesAreTasksAndTheCaseIsCombinedWhenTheLastEnds) {
  config_.samples = 2;
  cases_.resize(1);
  FakeSlurm slurm;
  slurm.step = [&](int poll) {
    if (poll == 1) {
      write_result(1, Verdict::kFailCorrectness, 1);
      slurm.drop(0);
    }
    if (poll == 3) {
      write_result(1, Verdict::kPass, 2);
      slurm.queued.clear();
    }
  };
  RunOutcome outcome = run(slurm);
  ASSERT_EQ(slurm.submits.size(), 1u);
  EXPECT_EQ(slurm.submits[0][2], "--array=0-1");
  ASSERT_EQ(outcome.results.size(), 1u);
  EXPECT_EQ(outcome.results[0].verdict, Verdict::kPass) << to_json(outcome.results[0]).dump();
  ASSERT_TRUE(outcome.results[0].samples);
  EXPECT_EQ(outcome.results[0].samples->n, 2);
  EXPECT_TRUE(load_result(paths(1), "level1/1_Op"));
}

TEST_F(SlurmCoordinatorTest, AResultThatCannotBeWrittenStopsTheRunAsLocally) {
  // Case 1's combined result.json has a directory in its place; case 2's
  // tasks are still queued when that is found.
  config_.samples = 2;
  cases_.resize(2);
  FakeSlurm slurm;
  slurm.step = [&](int poll) {
    if (poll == 1) {
      write_result(1, Verdict::kPass, 1);
      write_result(1, Verdict::kPass, 2);
      fs::create_directories(paths(1).result());
      slurm.drop(0);
      slurm.drop(1);
    }
  };
  RunOutcome outcome = run(slurm);
  ASSERT_TRUE(outcome.write_failure);
  EXPECT_NE(outcome.write_failure->find("result.json"), std::string::npos) << *outcome.write_failure;
  EXPECT_TRUE(outcome.interrupted);
  EXPECT_EQ(outcome.results.size(), 0u);
  EXPECT_EQ(outcome.not_run, 2u);
  ASSERT_EQ(slurm.cancelled.size(), 1u) << "case 2's tasks are cancelled";
  EXPECT_EQ(slurm.cancelled[0], std::vector<std::string>{"100"});
}

TEST_F(SlurmCoordinatorTest, AFailedSubmissionIsAHarnessErrorThatResumeRetries) {
  FakeSlurm slurm;
  slurm.submit_error = "sbatch: error: invalid partition specified: gpux";
  RunOutcome outcome = run(slurm);
  ASSERT_EQ(outcome.results.size(), 3u);
  for (const CaseResult& r : outcome.results) {
    EXPECT_EQ(r.verdict, Verdict::kHarnessError);
    EXPECT_NE(r.reason.find("invalid partition"), std::string::npos) << r.reason;
    EXPECT_TRUE(r.lost_task);
  }
}

TEST_F(SlurmCoordinatorTest, AnInterruptCancelsTheArray) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  char byte = 1;
  ASSERT_EQ(::write(fds[1], &byte, 1), 1);
  FakeSlurm slurm;
  StateStore store(run_dir());
  SlurmCoordinator coordinator(config_,
                               {.run_dir = run_dir(), .kgym_argv0 = {"/bin/kgym"}, .interrupt_fd = fds[0]},
                               cases_, slurm, printer_, store);
  RunOutcome outcome = coordinator.run();
  EXPECT_TRUE(outcome.interrupted);
  EXPECT_EQ(outcome.not_run, 3u);
  ASSERT_EQ(slurm.cancelled.size(), 1u);
  EXPECT_EQ(slurm.cancelled[0], std::vector<std::string>{"100"});
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace kgym::run
