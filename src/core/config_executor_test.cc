// executor: local by default; slurm's keys validated like every other key,
// and sbatch missing on PATH is a config error before any work.
#include <cstdlib>
#include <fstream>

#include "core/config_record.h"
#include "core/config_test_fixture.h"

namespace kgym {
namespace {
using testing_config::ConfigTest;
using testing_config::Contains;
using testing_config::kMinimal;

std::string with(std::string_view extra) { return std::string(kMinimal) + std::string(extra); }

// PATH holds a stand-in sbatch while the test runs.
class ExecutorConfigTest : public ConfigTest {
 protected:
  void SetUp() override {
    ConfigTest::SetUp();
    const char* path = std::getenv("PATH");
    saved_path_ = path ? path : "";
    std::filesystem::create_directories(dir_ / "bin");
    std::ofstream(dir_ / "bin" / "sbatch") << "#!/bin/sh\n";
    std::filesystem::permissions(dir_ / "bin" / "sbatch", std::filesystem::perms::owner_all);
    ::setenv("PATH", (dir_ / "bin").c_str(), 1);
  }
  void TearDown() override {
    ::setenv("PATH", saved_path_.c_str(), 1);
    ConfigTest::TearDown();
  }
  std::string saved_path_;
};

TEST_F(ExecutorConfigTest, LocalByDefaultAndSlurmWithEveryKey) {
  auto local = load(kMinimal);
  ASSERT_TRUE(local) << local.error().message;
  EXPECT_EQ(local->executor.kind, "local");
  EXPECT_FALSE(config_record(*local).contains("executor"));
  auto config =
      load(with("executor:\n"
                "  kind: slurm\n"
                "  slurm:\n"
                "    partition: gpu\n"
                "    account: proj\n"
                "    qos: normal\n"
                "    gres_per_task: 'gpu:a100:1'\n"
                "    cpus_per_task: 8\n"
                "    mem: 64G\n"
                "    time_limit: '1-02:00:00'\n"
                "    max_parallel: 32\n"
                "    extra_args: ['--constraint=a100', '--exclusive']\n"
                "    setup: ['module load cuda/12.4', 'source /opt/venv/bin/activate']\n"
                "    poll_sec: 10\n"));
  ASSERT_TRUE(config) << config.error().message;
  const SlurmConfig& s = config->executor.slurm;
  EXPECT_EQ(config->executor.kind, "slurm");
  EXPECT_EQ(s.partition, "gpu");
  EXPECT_EQ(s.gres_per_task, "gpu:a100:1");
  EXPECT_EQ(s.cpus_per_task, 8);
  EXPECT_EQ(s.mem, "64G");
  EXPECT_EQ(s.time_limit, "1-02:00:00");
  EXPECT_EQ(s.max_parallel, 32);
  EXPECT_EQ(s.extra_args, (std::vector<std::string>{"--constraint=a100", "--exclusive"}));
  EXPECT_EQ(s.setup.size(), 2u);
  EXPECT_EQ(s.poll, std::chrono::seconds(10));
  EXPECT_EQ(config_record(*config)["executor"]["slurm"]["partition"], "gpu");
}

TEST_F(ExecutorConfigTest, BadValuesNameTheKeyAndTheFix) {
  std::string message =
      error_of(with("executor:\n"
                    "  kind: slurm\n"
                    "  slurm:\n"
                    "    partiton: gpu\n"
                    "    cpus_per_task: 0\n"
                    "    mem: lots\n"
                    "    time_limit: 2h\n"
                    "    extra_args: ['--array=0-3', 'exclusive']\n"));
  EXPECT_TRUE(Contains(message, at(8, "executor.slurm.partiton") + "unknown key; did you mean 'partition'?"));
  EXPECT_TRUE(Contains(message, at(9, "executor.slurm.cpus_per_task")));
  EXPECT_TRUE(Contains(message, at(10, "executor.slurm.mem") + "'lots' is not a memory size; give a size"));
  EXPECT_TRUE(Contains(message, at(11, "executor.slurm.time_limit") + "'2h' is not a Slurm time limit"));
  EXPECT_TRUE(Contains(message, "'--array' is set by kgym itself"));
  EXPECT_TRUE(Contains(message, "'exclusive' is not an sbatch option"));
}

TEST_F(ExecutorConfigTest, SlurmKeysWithALocalExecutorAreAnError) {
  std::string message = error_of(with("executor:\n  slurm:\n    partition: gpu\n"));
  EXPECT_TRUE(Contains(message, at(6, "executor.slurm") + "is set but executor.kind is local"));
}

TEST_F(ExecutorConfigTest, SbatchMissingFromPathIsAConfigError) {
  ::setenv("PATH", (dir_ / "nowhere").c_str(), 1);
  std::string message = error_of(with("executor:\n  kind: slurm\n"));
  EXPECT_TRUE(Contains(message, at(6, "executor.kind") + "slurm needs sbatch, and sbatch is not on PATH"));
  // The same from the command line.
  message = error_of(kMinimal, {"executor.kind=slurm"});
  EXPECT_TRUE(Contains(message, "slurm needs sbatch"));
}

}  // namespace
}  // namespace kgym
