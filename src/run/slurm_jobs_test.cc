#include "run/slurm_jobs.h"

#include <gtest/gtest.h>

namespace kgym::run {
namespace {

TEST(SlurmJobs, SqueueLinesWithTasksAndPendingRanges) {
  // As squeue -h -r -o '%F|%K|%T|%N|%r|%j' prints them (Slurm 22.05).
  auto tasks = parse_squeue(
      "6|2|PENDING||Resources|kgym-abc-1\n"
      "6|0|RUNNING|vm|None|kgym-abc-1\n"
      "7|3-5%2|PENDING||JobArrayTaskLimit|kgym-abc-2\n"
      "squeue: warning: something\n");
  ASSERT_EQ(tasks.size(), 3u);
  EXPECT_EQ(tasks[0].array_job, "6");
  EXPECT_EQ(tasks[0].task, 2);
  EXPECT_EQ(tasks[0].state, "PENDING");
  EXPECT_EQ(tasks[0].node, "");
  EXPECT_EQ(tasks[1].node, "vm");
  EXPECT_EQ(tasks[1].job_name, "kgym-abc-1");
  EXPECT_EQ(tasks[2].task, -1);
  EXPECT_EQ(tasks[2].pending_range, (std::vector<int>{3, 4, 5}));
}

TEST(SlurmJobs, SacctRecordsKeepTheBaseStateAndSkipSteps) {
  auto tasks = parse_sacct(
      "6_1|CANCELLED by 0|vm|kgym-abc-1\n"
      "6_1.batch|CANCELLED|vm|batch\n"
      "6_2|TIMEOUT|vm|kgym-abc-1\n"
      "6_[3-4]|PENDING|None assigned|kgym-abc-1\n");
  ASSERT_EQ(tasks.size(), 3u);
  EXPECT_EQ(tasks[0].state, "CANCELLED");
  EXPECT_EQ(tasks[0].task, 1);
  EXPECT_EQ(tasks[1].state, "TIMEOUT");
  EXPECT_EQ(tasks[2].pending_range, (std::vector<int>{3, 4}));
  EXPECT_EQ(tasks[2].node, "");
}

TEST(SlurmJobs, ScontrolOneLinePerJobRecord) {
  auto tasks = parse_scontrol(
      "JobId=8 ArrayJobId=6 ArrayTaskId=1 JobName=kgym-abc-1 UserId=root(0) JobState=CANCELLED Reason=None "
      "Dependency=(null) ExitCode=0:15 NodeList=vm BatchHost=vm\n"
      "JobId=6 ArrayJobId=6 ArrayTaskId=3-5%2 ArrayTaskThrottle=2 JobName=kgym-abc-1 JobState=PENDING "
      "Reason=JobArrayTaskLimit NodeList=(null)\n"
      "JobId=9 JobName=plain JobState=RUNNING\n");
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].array_job, "6");
  EXPECT_EQ(tasks[0].task, 1);
  EXPECT_EQ(tasks[0].state, "CANCELLED");
  EXPECT_EQ(tasks[0].node, "vm");
  EXPECT_EQ(tasks[1].pending_range, (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(tasks[1].node, "");
}

TEST(SlurmJobs, FinalStatesAndTheVerdictOfALostTask) {
  for (const char* state :
       {"COMPLETED", "FAILED", "NODE_FAIL", "TIMEOUT", "OUT_OF_MEMORY", "PREEMPTED", "CANCELLED"})
    EXPECT_TRUE(slurm_state_final(state)) << state;
  for (const char* state : {"PENDING", "RUNNING", "COMPLETING", "REQUEUED", "SUSPENDED"})
    EXPECT_FALSE(slurm_state_final(state)) << state;
  EXPECT_EQ(verdict_of_lost_task("TIMEOUT"), Verdict::kTimeout);
  for (const char* state : {"FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "CANCELLED", "COMPLETED"})
    EXPECT_EQ(verdict_of_lost_task(state), Verdict::kHarnessError) << state;
}

TEST(SlurmJobs, ArraySpecsRoundTrip) {
  EXPECT_EQ(array_spec({0, 1, 2, 3, 7, 9, 10}, 0), "0-3,7,9-10");
  EXPECT_EQ(array_spec({5, 4}, 16), "4-5%16");
  EXPECT_EQ(parse_task_ids("0-3,7%2"), (std::vector<int>{0, 1, 2, 3, 7}));
  EXPECT_FALSE(parse_task_ids("0-15:4"));
  EXPECT_FALSE(parse_task_ids("3-1"));
  EXPECT_FALSE(parse_task_ids(""));
}

TEST(SlurmJobs, TheBatchScriptRunsSetupThenTheTaskAndQuotesPaths) {
  SlurmConfig slurm;
  slurm.setup = {"module load cuda/12.4", "source /opt/venv/bin/activate"};
  std::string script = batch_script(slurm, {"/opt/kgym's/kgym"}, "/shared/runs/a b", 3);
  EXPECT_EQ(script.find("#!/bin/bash\n"), 0u);
  auto setup = script.find("module load cuda/12.4\nsource /opt/venv/bin/activate\n");
  auto exec = script.find(
      "exec '/opt/kgym'\\''s/kgym' slurm-task --run-dir '/shared/runs/a b' --submission 3 "
      "--index \"$SLURM_ARRAY_TASK_ID\"\n");
  ASSERT_NE(setup, std::string::npos) << script;
  ASSERT_NE(exec, std::string::npos) << script;
  EXPECT_LT(setup, exec);
}

TEST(SlurmJobs, SbatchArgumentsCarryEveryConfiguredKey) {
  SlurmConfig slurm;
  slurm.partition = "gpu";
  slurm.account = "proj";
  slurm.qos = "high";
  slurm.gres_per_task = "gpu:1";
  slurm.cpus_per_task = 8;
  slurm.mem = "32G";
  slurm.time_limit = "02:00:00";
  slurm.max_parallel = 4;
  slurm.extra_args = {"--constraint=a100"};
  Submission s{.number = 2,
               .job_name = "kgym-t-2",
               .script = "/r/slurm/submission-2.sh",
               .log_pattern = "/r/slurm/logs/%A_%a.log",
               .ids = {0, 1, 2}};
  std::vector<std::string> want{"--parsable",
                                "--job-name=kgym-t-2",
                                "--array=0-2%4",
                                "--output=/r/slurm/logs/%A_%a.log",
                                "--open-mode=append",
                                "--ntasks=1",
                                "--partition=gpu",
                                "--account=proj",
                                "--qos=high",
                                "--gres=gpu:1",
                                "--cpus-per-task=8",
                                "--mem=32G",
                                "--time=02:00:00",
                                "--constraint=a100",
                                "/r/slurm/submission-2.sh"};
  EXPECT_EQ(sbatch_args(slurm, s), want);
}

TEST(SlurmJobs, MaxArraySizeFromTheConfig) {
  EXPECT_EQ(parse_max_array_size("MaxArraySize            = 1001\nMaxJobCount             = 10000\n"), 1001);
  EXPECT_FALSE(parse_max_array_size("MaxJobCount = 10000\n"));
}

TEST(SlurmJobs, RunTagIsStablePerRunDir) {
  EXPECT_EQ(run_tag("/shared/runs/a"), run_tag("/shared/runs/a"));
  EXPECT_NE(run_tag("/shared/runs/a"), run_tag("/shared/runs/b"));
  EXPECT_EQ(run_tag("/x").size(), 10u);
}

}  // namespace
}  // namespace kgym::run
