#include "util/sandbox.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "util/fs.h"
#include "util/spawn.h"
#include "util/temp_dir.h"

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
                                "--ro-bind",
                                box_launcher().value_or("kgym-box").string(),
                                "/tmp/.kgym-box",
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
                                "/tmp/.kgym-box",
                                "--die-with-parent",
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

TEST(Sandbox, HiddenDirectoriesAreCoveredOuterFirst) {
  SandboxPolicy p;
  p.mode = SandboxMode::kBwrap;
  p.limits.no_core_dumps = false;
  p.hidden = {"/root/kgym/runs", "/root"};
  auto argv = sandboxed_argv(p, {"sh"});
  auto outer = std::find(argv.begin(), argv.end(), "/root");
  auto inner = std::find(argv.begin(), argv.end(), "/root/kgym/runs");
  ASSERT_NE(outer, argv.end());
  ASSERT_NE(inner, argv.end());
  EXPECT_LT(outer, inner);
}

TEST(Sandbox, TheBoxDropsToItsUidOnlyAsRoot) {
  SandboxPolicy p;
  p.mode = SandboxMode::kUnshare;
  p.run_as = kBoxUid;
  auto argv = sandboxed_argv(p, {"sh"});
  EXPECT_EQ(contains(argv, "--uid"), ::geteuid() == 0);
  EXPECT_EQ(argv.back(), "sh");
  EXPECT_EQ(*(argv.end() - 2), "--");
}

TEST(Sandbox, TheRelayHoldsTheLogOutsideTheBox) {
  SandboxPolicy p;
  p.relay_output_bytes = 100;
  auto argv = sandboxed_argv(p, {"sh"});
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(argv[0], "bash");
  EXPECT_NE(argv[2].find("head -c 100"), std::string::npos);
}

TEST(Sandbox, UnreachableNamesTheFirstDirectoryTheUidCannotEnter) {
  TempDir dir("kgym-reach");
  ASSERT_TRUE(make_dirs(dir.path() / "a" / "b"));
  ::chmod(dir.path().c_str(), 0755);
  ::chmod((dir.path() / "a").c_str(), 0700);
  EXPECT_EQ(unreachable_for(kBoxUid, dir.path() / "a" / "b" / "c"), dir.path() / "a");
  ::chmod((dir.path() / "a").c_str(), 0711);
  EXPECT_EQ(unreachable_for(kBoxUid, dir.path() / "a" / "b" / "c"), std::nullopt);
  std::ofstream(dir.path() / "a" / "b" / "f") << "x";
  ::chmod((dir.path() / "a" / "b" / "f").c_str(), 0600);
  EXPECT_EQ(unreachable_for(kBoxUid, dir.path() / "a" / "b" / "f", /*need_read=*/true),
            dir.path() / "a" / "b" / "f");
}

// Runs `script` in a real box of `mode`; its output, or nullopt when such
// a box cannot start here.
std::optional<std::string> in_box(SandboxMode mode, const std::string& script, bool relay = false) {
  if (mode == SandboxMode::kBwrap && resolve_sandbox_mode("bwrap") != SandboxMode::kBwrap)
    return std::nullopt;
  if (mode == SandboxMode::kUnshare && resolve_sandbox_mode("unshare") != SandboxMode::kUnshare)
    return std::nullopt;
  TempDir dir("kgym-box-test");
  SandboxPolicy p;
  p.mode = mode;
  p.run_as = box_uid(true, mode);
  p.relay_output_bytes = relay ? 4096 : 0;
  auto log = dir.path() / "out.log";
  auto pid = spawn_in_new_group(SpawnSpec{
      .argv = sandboxed_argv(p, {"sh", "-c", script}), .env = environment_with({}), .log_path = log});
  if (!pid) return std::nullopt;
  int status = 0;
  ::waitpid(*pid, &status, 0);
  return read_file(log).value_or("");
}

// Exits 0 when perf_event_open of a user-only software counter on itself
// works (it does for any uid at perf_event_paranoid 2).
constexpr const char* kPerfEventOpenOfItself =
    "import ctypes,platform,struct,sys;"
    "a=ctypes.create_string_buffer(struct.pack(\"IIQQQQQ\",1,128,0,0,0,0,97)+bytes(80));"
    "sys.exit(ctypes.CDLL(None).syscall({\"x86_64\":298,\"aarch64\":241}[platform.machine()],a,0,-1,-1,0)<0)";

TEST(SandboxBox, NoCapabilityNoNamespaceNoMountNoChroot) {
  for (SandboxMode mode : {SandboxMode::kBwrap, SandboxMode::kUnshare}) {
    auto out = in_box(mode,
                      "grep -E '^Cap(Eff|Prm|Bnd|Amb)|^NoNewPrivs' /proc/self/status; id -u;"
                      "unshare -Ur true 2>/dev/null && echo ESCAPED-userns;"
                      "unshare -m true 2>/dev/null && echo ESCAPED-mountns;"
                      "mount -t tmpfs none /mnt 2>/dev/null && echo ESCAPED-mount;"
                      "chroot / true 2>/dev/null && echo ESCAPED-chroot;"
                      "python3 -c '" + std::string(kPerfEventOpenOfItself) + "' && echo ESCAPED-perf; echo end");
    if (!out) continue;
    SCOPED_TRACE(std::string(to_string(mode)) + ": " + *out);
    EXPECT_NE(out->find("CapEff:\t0000000000000000"), std::string::npos);
    EXPECT_NE(out->find("CapPrm:\t0000000000000000"), std::string::npos);
    EXPECT_NE(out->find("CapBnd:\t0000000000000000"), std::string::npos);
    EXPECT_NE(out->find("NoNewPrivs:\t1"), std::string::npos);
    EXPECT_EQ(out->find("ESCAPED"), std::string::npos);
    EXPECT_NE(out->find("end"), std::string::npos);
    if (::geteuid() == 0) EXPECT_NE(out->find("\n65534\n"), std::string::npos);
  }
}

TEST(SandboxBox, TheBoxCannotTruncateWhatItPrintedThroughTheRelay) {
  auto out = in_box(
      SandboxMode::kBwrap,
      "echo first; (: >/proc/self/fd/1) 2>/dev/null; truncate -s 0 /proc/self/fd/1 2>/dev/null; echo last",
      /*relay=*/true);
  if (!out) GTEST_SKIP() << "bubblewrap cannot run here";
  EXPECT_NE(out->find("first"), std::string::npos);
  EXPECT_NE(out->find("last"), std::string::npos);
}

}  // namespace
}  // namespace kgym::util
