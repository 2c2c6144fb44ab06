#include "util/cgroup.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "util/fs.h"

namespace kgym::util {
namespace {

namespace fs = std::filesystem;

TEST(Cgroup, FindsTheV1Hierarchies) {
  auto mounts = parse_cgroup_mounts(
      "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,cpu,cpuacct 0 0\n"
      "proc /proc proc rw 0 0\n"
      "cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n");
  ASSERT_TRUE(mounts) << mounts.error();
  EXPECT_EQ(mounts->cpuset, "/sys/fs/cgroup/cpuset");
  EXPECT_EQ(mounts->cpuacct, "/sys/fs/cgroup/cpu,cpuacct");
}

TEST(Cgroup, NamesWhatIsMissing) {
  auto v2_only = parse_cgroup_mounts("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n");
  ASSERT_FALSE(v2_only);
  EXPECT_NE(v2_only.error().find("cpuset"), std::string::npos);
  auto no_acct = parse_cgroup_mounts("cgroup /c cgroup rw,cpuset 0 0\n");
  ASSERT_FALSE(no_acct);
  EXPECT_NE(no_acct.error().find("cpuacct"), std::string::npos);
}

TEST(Cgroup, EnteringPrefixesAShellThatJoinsBothGroups) {
  // Exercised for real below where the machine allows; here only its shape.
  auto mounts = usable_cgroup_mounts();
  if (!mounts) GTEST_SKIP() << mounts.error();
  auto group = CpuCgroup::create(*mounts, "test-entering", "all");
  ASSERT_TRUE(group) << group.error();
  auto argv = group->entering({"/bin/true", "x"});
  ASSERT_GE(argv.size(), 8u);
  EXPECT_EQ(argv[0], "/bin/sh");
  EXPECT_EQ(argv[argv.size() - 2], "/bin/true");
}

// A real cgroup: a child started through entering() runs only on the
// group's core even after asking for every core, and its CPU time shows.
TEST(Cgroup, ConfinesWhatRunsInsideAndCountsItsCpuTime) {
  auto mounts = usable_cgroup_mounts();
  if (!mounts) GTEST_SKIP() << mounts.error();
  auto group = CpuCgroup::create(*mounts, "test-confine", "0");
  ASSERT_TRUE(group) << group.error();
  fs::path out = fs::temp_directory_path() / fmt::format("kgym-cgroup-test-{}", ::getpid());
  auto argv = group->entering(
      {"/bin/sh", "-c", "taskset -pc 0-1023 $$ >/dev/null 2>&1; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; "
                        "grep Cpus_allowed_list /proc/self/status > " + out.string()});
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  auto text = read_file(out);
  ASSERT_TRUE(text);
  EXPECT_NE(text->find("\t0\n"), std::string::npos) << *text;
  auto used = read_cgroup_usage_ns(group->usage_file());
  ASSERT_TRUE(used);
  EXPECT_GT(*used, 0u);
  fs::remove(out);
  fs::path dir = group->cpuset_dir();
  group = std::unexpected(std::string("released"));
  EXPECT_FALSE(fs::exists(dir));
}

TEST(Cgroup, SweepsTheGroupsOfEndedOwners) {
  auto mounts = usable_cgroup_mounts();
  if (!mounts) GTEST_SKIP() << mounts.error();
  // A pid that has ended: a child reaped at once.
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  fs::path stale = mounts->cpuacct / "kgym" / fmt::format("{}-stale", gone);
  {
    // Make the kgym root exist first.
    auto group = CpuCgroup::create(*mounts, "test-sweep", "all");
    ASSERT_TRUE(group) << group.error();
  }
  fs::create_directory(stale);
  ASSERT_TRUE(fs::exists(stale));
  EXPECT_GE(sweep_stale_cgroups(*mounts), 1);
  EXPECT_FALSE(fs::exists(stale));
}

}  // namespace
}  // namespace kgym::util
