#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "agent/command_agent.h"
#include "util/temp_dir.h"

namespace kgym::agent {
namespace {

namespace fs = std::filesystem;

// An npm install as `npm install --prefix DIR @openai/codex` leaves it: a
// launcher script linked from node_modules/.bin and the platform package
// whose binary it runs.
fs::path fake_npm_install(const fs::path& prefix) {
  fs::path modules = prefix / "node_modules";
  fs::create_directories(modules / "@openai/codex/bin");
  fs::create_directories(modules / "@openai/codex-linux-x64/vendor");
  fs::create_directories(modules / ".bin");
  std::ofstream(modules / "@openai/codex/bin/codex.js") << "#!/usr/bin/env node\n";
  std::ofstream(modules / "@openai/codex-linux-x64/vendor/codex") << "binary\n";
  fs::permissions(modules / "@openai/codex/bin/codex.js", fs::perms::owner_all);
  fs::create_symlink("../@openai/codex/bin/codex.js", modules / ".bin/codex");
  return modules / ".bin/codex";
}

TEST(ProfileBoxFiles, AnNpmInstalledCliBringsItsWholeNodeModulesTree) {
  util::TempDir dir("kgym-profiles");
  fs::path cli = fake_npm_install(dir.path());
  AgentConfig config;
  config.kind = "codex";
  config.binary = cli.string();
  auto agent = make_profile_agent(config);
  ASSERT_NE(agent, nullptr);
  auto files = agent->box_files({});
  ASSERT_EQ(files.size(), 1U);
  EXPECT_EQ(files[0].first, fs::canonical(dir.path() / "node_modules"));
  EXPECT_TRUE(files[0].second.empty());  // at its own path
}

TEST(ProfileBoxFiles, ACliOutsideNodeModulesIsShownAlone) {
  util::TempDir dir("kgym-profiles");
  fs::path cli = dir.path() / "claude";
  std::ofstream(cli) << "#!/bin/sh\n";
  fs::permissions(cli, fs::perms::owner_all);
  AgentConfig config;
  config.kind = "claude";
  config.binary = cli.string();
  auto files = make_profile_agent(config)->box_files({});
  ASSERT_EQ(files.size(), 1U);
  EXPECT_EQ(files[0].first, cli);
}

// A refinement round after the first continues the CLI's own session; the
// prompt stays last, after the profile's and the user's flags.
TEST(ProfileRounds, ALaterRoundContinuesTheSession) {
  util::TempDir dir("kgym-profiles");
  std::ofstream(dir.path() / "prompt.md") << "fix it";
  AgentTask task;
  task.case_id = "level1/1_ReLU";
  task.case_dir = dir.path();
  task.workspace = dir.path();
  task.prompt_file = dir.path() / "prompt.md";
  auto argv_of = [&](const std::string& kind, int round) {
    AgentConfig config;
    config.kind = kind;
    config.binary = kind;
    config.extra_args = {"--extra"};
    task.round = round;
    auto launch = make_profile_agent(config)->prepare(task);
    EXPECT_TRUE(launch && launch->process);
    return launch->process->argv;
  };
  auto tail = [](const std::vector<std::string>& argv, std::size_t n) {
    return std::vector<std::string>(argv.end() - static_cast<std::ptrdiff_t>(n), argv.end());
  };
  EXPECT_EQ(tail(argv_of("claude", 1), 3), (std::vector<std::string>{"-p", "--extra", "fix it"}));
  EXPECT_EQ(tail(argv_of("claude", 2), 4),
            (std::vector<std::string>{"-p", "--extra", "--continue", "fix it"}));
  EXPECT_EQ(tail(argv_of("codex", 2), 4),
            (std::vector<std::string>{"--extra", "resume", "--last", "fix it"}));
  EXPECT_EQ(tail(argv_of("opencode", 2), 3), (std::vector<std::string>{"--extra", "--continue", "fix it"}));
  EXPECT_EQ(std::ranges::count(argv_of("codex", 1), "resume"), 0);
}

}  // namespace
}  // namespace kgym::agent
