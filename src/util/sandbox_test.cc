#include "util/sandbox.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace kgym::util {
namespace {

bool contains(const std::vector<std::string>& argv, const std::string& item) {
  return std::find(argv.begin(), argv.end(), item) != argv.end();
}

TEST(Sandbox, NoneWithoutLimitsLeavesTheCommandAlone) {
  SandboxPolicy p;
  p.limits.no_core_dumps = false;
  EXPECT_EQ(sandboxed_argv(p, {"python3", "x.py"}), (std::vector<std::string>{"python3", "x.py"}));
}

TEST(Sandbox, LimitsComeFirstThroughPrlimit) {
  SandboxPolicy p;
  p.limits = {.address_space_bytes = 1 << 30, .cpu_seconds = 60, .file_size_bytes = 1 << 20, .processes = 64};
  auto argv = sandboxed_argv(p, {"python3"});
  EXPECT_EQ(argv, (std::vector<std::string>{"prlimit", "--as=1073741824", "--cpu=60", "--fsize=1048576",
                                            "--nproc=64", "--core=0", "--", "python3"}));
}

TEST(Sandbox, BwrapMountsInOrderAndCutsTheNetwork) {
  SandboxPolicy p;
  p.mode = SandboxMode::kBwrap;
  p.limits.no_core_dumps = false;
  p.hidden = {"/data"};
  p.read_only = {"/data/agent.sh"};
  p.read_only_at = {{"/scratch", "/tmp/kgym"}};
  p.writable = {{"/scratch/candidate", "/tmp/kgym/candidate"}, {"/work", ""}};
  p.cwd = "/tmp/kgym/candidate";
  auto argv = sandboxed_argv(p, {"python3"});
  std::vector<std::string> want{"bwrap",
                                "--ro-bind",
                                "/",
                                "/",
                                "--dev",
                                "/dev",
                                "--proc",
                                "/proc",
                                "--perms",
                                "1777",
                                "--tmpfs",
                                "/tmp",
                                "--tmpfs",
                                "/data",
                                "--ro-bind-try",
                                "/data/agent.sh",
                                "/data/agent.sh",
                                "--ro-bind",
                                "/scratch",
                                "/tmp/kgym",
                                "--bind",
                                "/scratch/candidate",
                                "/tmp/kgym/candidate",
                                "--bind",
                                "/work",
                                "/work",
                                "--unshare-pid",
                                "--unshare-ipc",
                                "--unshare-uts",
                                "--die-with-parent",
                                "--unshare-net",
                                "--chdir",
                                "/tmp/kgym/candidate",
                                "--",
                                "python3"};
  EXPECT_EQ(argv, want);
  p.network = true;
  EXPECT_FALSE(contains(sandboxed_argv(p, {"python3"}), "--unshare-net"));
}

TEST(Sandbox, ReadOnlyFilesOverWritableDirsAreMountedAfterThem) {
  SandboxPolicy p;
  p.mode = SandboxMode::kBwrap;
  p.limits.no_core_dumps = false;
  p.writable = {{"/case/agent_home", ""}};
  p.read_only_over_writable = {
      {"/root/.local/share/x/auth.json", "/case/agent_home/.local/share/x/auth.json"}};
  auto argv = sandboxed_argv(p, {"cli"});
  auto home = std::find(argv.begin(), argv.end(), "/case/agent_home");
  auto auth = std::find(argv.begin(), argv.end(), "/root/.local/share/x/auth.json");
  ASSERT_NE(home, argv.end());
  ASSERT_NE(auth, argv.end());
  EXPECT_LT(home, auth);  // a later mount covers an earlier one
  EXPECT_EQ(*(auth - 1), "--ro-bind");
  EXPECT_EQ(*(auth + 1), "/case/agent_home/.local/share/x/auth.json");
}

TEST(Sandbox, PrivateHomePutsHomeAndTheXdgDirsBelowIt) {
  auto env = private_home_env("/case/agent_home");
  EXPECT_EQ(env.at("HOME"), "/case/agent_home");
  EXPECT_EQ(env.at("XDG_CONFIG_HOME"), "/case/agent_home/.config");
  EXPECT_EQ(env.at("XDG_DATA_HOME"), "/case/agent_home/.local/share");
  EXPECT_EQ(env.at("XDG_CACHE_HOME"), "/case/agent_home/.cache");
  EXPECT_EQ(env.at("XDG_STATE_HOME"), "/case/agent_home/.local/state");
  EXPECT_EQ(env.size(), 5u);
}

TEST(Sandbox, UnshareKeepsTheNetworkOnlyWhenAsked) {
  SandboxPolicy p;
  p.mode = SandboxMode::kUnshare;
  auto argv = sandboxed_argv(p, {"sh"});
  EXPECT_TRUE(contains(argv, "--net"));
  EXPECT_TRUE(contains(argv, "--pid"));
  EXPECT_TRUE(contains(argv, "--kill-child"));
  p.network = true;
  EXPECT_FALSE(contains(sandboxed_argv(p, {"sh"}), "--net"));
}

TEST(Sandbox, UnknownModeIsRefusedWithTheChoices) {
  auto mode = resolve_sandbox_mode("docker");
  ASSERT_FALSE(mode);
  EXPECT_NE(mode.error().find("auto, bwrap, unshare or none"), std::string::npos);
  EXPECT_EQ(resolve_sandbox_mode("none"), SandboxMode::kNone);
}

}  // namespace
}  // namespace kgym::util
