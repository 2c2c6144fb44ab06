#include "worker/candidate_sandbox.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "util/temp_dir.h"

namespace kgym::worker {
namespace {

namespace fs = std::filesystem;

TEST(CandidateBox, PathsUnderScratchAreMappedIntoTheBox) {
  CandidateBox box;
  box.scratch_inside = "/tmp/kgym";
  EXPECT_EQ(box.inside("/run/x/verify/candidate/model_new.py", "/run/x/verify"),
            fs::path("/tmp/kgym/candidate/model_new.py"));
  EXPECT_EQ(box.inside("/elsewhere/file.py", "/run/x/verify"), fs::path("/elsewhere/file.py"));
  CandidateBox unboxed;
  EXPECT_EQ(unboxed.inside("/run/x/verify/a.py", "/run/x/verify"), fs::path("/run/x/verify/a.py"));
}

TEST(CandidateBox, AnInterpreterTheCandidatesUidCannotReachIsRefusedWithTheDirectory) {
  if (::geteuid() != 0) GTEST_SKIP() << "the candidate keeps kgym's uid unless kgym runs as root";
  util::TempDir temp("kgym-box");
  fs::path home = temp.path() / "home", venv = home / "venv";
  fs::create_directories(venv / "bin");
  fs::create_symlink("/usr/bin/python3", venv / "bin" / "python");
  std::ofstream(venv / "pyvenv.cfg") << "home = /usr/bin\n";
  fs::permissions(temp.path(), fs::perms::others_exec, fs::perm_options::add);
  fs::permissions(home, fs::perms::owner_all);  // 0700, as root's home is
  SandboxConfig config;
  config.drop_privileges = true;
  std::string python = (venv / "bin" / "python").string();
  auto refused = check_interpreter_reachable(config, util::SandboxMode::kBwrap, python);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("others may not enter " + home.string()), std::string::npos) << refused.error();
  EXPECT_NE(refused.error().find("sandbox.drop_privileges"), std::string::npos);
  // Reachable once others may enter; not judged when nothing drops privileges.
  fs::permissions(home, fs::perms::others_exec, fs::perm_options::add);
  EXPECT_TRUE(check_interpreter_reachable(config, util::SandboxMode::kBwrap, python));
  fs::permissions(venv / "pyvenv.cfg", fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_FALSE(check_interpreter_reachable(config, util::SandboxMode::kBwrap, python));
  EXPECT_TRUE(check_interpreter_reachable(config, util::SandboxMode::kNone, python));
  config.drop_privileges = false;
  EXPECT_TRUE(check_interpreter_reachable(config, util::SandboxMode::kBwrap, python));
}

TEST(CandidateBox, NoneKeepsPathsAndStillLimits) {
  util::TempDir temp("kgym-box");
  fs::create_directories(temp.path() / "candidate");
  SandboxConfig config;
  config.mode = "none";
  config.address_space_mb = 1024;
  config.processes = 0;
  auto box = make_candidate_box(config, {}, temp.path());
  ASSERT_TRUE(box) << box.error();
  EXPECT_EQ(box->policy.mode, util::SandboxMode::kNone);
  EXPECT_FALSE(box->policy.network);
  EXPECT_EQ(box->policy.limits.address_space_bytes, 1024ull << 20);
  EXPECT_FALSE(box->policy.limits.processes.has_value());
  EXPECT_FALSE(box->policy.run_as.has_value());  // no namespaces, no uid switch
  EXPECT_TRUE(box->scratch_inside.empty());
}

TEST(CandidateBox, BwrapShowsScratchReadOnlyAndOnlyTheCandidateDirWritable) {
  util::TempDir temp("kgym-box");
  fs::create_directories(temp.path() / "candidate");
  SandboxConfig config;
  config.mode = "bwrap";
  ::setenv("KGYM_CACHE_DIR", (temp.path() / "cache").c_str(), 1);
  auto box = make_candidate_box(config, {"/data/bench"}, temp.path());
  ::unsetenv("KGYM_CACHE_DIR");
  if (!box) GTEST_SKIP() << "bubblewrap not usable here: " << box.error();
  EXPECT_EQ(box->scratch_inside, fs::path("/tmp/kgym"));
  ASSERT_EQ(box->policy.read_only_at.size(), 1u);
  EXPECT_EQ(box->policy.read_only_at[0].first, temp.path());
  ASSERT_EQ(box->policy.writable.size(), 1u);
  EXPECT_EQ(box->policy.writable[0].first, temp.path() / "candidate");
  // The compile caches are hidden too; ccache is off until a build gets its key's own.
  EXPECT_EQ(box->policy.hidden, (std::vector<fs::path>{"/data/bench", temp.path() / "cache" / "builds",
                                                       temp.path() / "cache" / "ccache-keyed"}));
  EXPECT_NE(std::ranges::find(box->env, "CCACHE_DISABLE=1"), box->env.end());
  EXPECT_NE(std::ranges::find(box->env, "CCACHE_CONFIGPATH=/dev/null"), box->env.end());
  EXPECT_EQ(box->policy.cwd, fs::path("/tmp/kgym/candidate"));
  if (::geteuid() == 0) {
    EXPECT_EQ(box->policy.run_as, 65534u);
    EXPECT_EQ(fs::status(temp.path()).permissions() & fs::perms::others_exec, fs::perms::others_exec);
  }
}

TEST(CandidateBox, ABuildGetsItsKeysOwnCcacheWithNoConfigFileOnlyUnderBwrap) {
  util::TempDir temp("kgym-box");
  fs::create_directories(temp.path() / "candidate");
  fs::create_directories(temp.path() / "ccache-of-key");
  SandboxConfig config;
  config.mode = "none";
  auto plain = make_candidate_box(config, {}, temp.path());
  ASSERT_TRUE(plain) << plain.error();
  EXPECT_FALSE(give_box_ccache(*plain, temp.path() / "ccache-of-key"));
  EXPECT_NE(std::ranges::find(plain->env, "CCACHE_DISABLE=1"), plain->env.end());
  config.mode = "bwrap";
  ::setenv("KGYM_CACHE_DIR", (temp.path() / "cache").c_str(), 1);
  auto box = make_candidate_box(config, {}, temp.path());
  ::unsetenv("KGYM_CACHE_DIR");
  if (!box) GTEST_SKIP() << "bubblewrap not usable here: " << box.error();
  ASSERT_TRUE(give_box_ccache(*box, temp.path() / "ccache-of-key"));
  ASSERT_EQ(box->policy.writable.size(), 2u);
  EXPECT_EQ(box->policy.writable[1],
            std::make_pair(temp.path() / "ccache-of-key", fs::path("/tmp/kgym-ccache")));
  EXPECT_EQ(std::ranges::find(box->env, "CCACHE_DISABLE=1"), box->env.end());
  EXPECT_NE(std::ranges::find(box->env, "CCACHE_DIR=/tmp/kgym-ccache"), box->env.end());
  EXPECT_NE(std::ranges::find(box->env, "CCACHE_CONFIGPATH=/dev/null"), box->env.end());
}

}  // namespace
}  // namespace kgym::worker
