// The build stage in the event loop (docs/build.md): every candidate is
// built by a `kgym build` child before its sample asks for a device, on
// cores no verification holds; a failed build never leases one.
#include <gtest/gtest.h>

#include <fstream>

#include "run/build_slots.h"
#include "run/scheduler_test_fixture.h"
#include "util/fs.h"

namespace kgym::run {
namespace {

using namespace sched_test;
using util::ProcessSpec;
namespace fs = std::filesystem;

// The events of events.jsonl named `name`, with the case they concern.
std::vector<std::pair<std::string, nlohmann::json>> events_of(const fs::path& run_dir) {
  std::vector<std::pair<std::string, nlohmann::json>> events;
  std::ifstream in(run_dir / "events.jsonl");
  for (std::string line; std::getline(in, line);) {
    auto e = nlohmann::json::parse(line, nullptr, false);
    if (!e.is_discarded()) events.emplace_back(e.value("event", ""), e);
  }
  return events;
}

TEST_F(SchedulerTest, EachCaseBuildsBeforeItsDeviceIsLeased) {
  config_.devices = {"0", "1"};
  config_.concurrency = 4;
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 4u);
  for (const CaseResult& r : out.results) {
    EXPECT_EQ(r.verdict, Verdict::kPass);
    EXPECT_EQ(r.timings.compile_s, 0.5) << "the build stage's compile time reaches the result";
  }
  // Per case: its build started, then its device was leased, then it was verified.
  for (const Case& c : cases_) {
    std::vector<std::string> order;
    for (const auto& [name, e] : events_of(options_.run_dir)) {
      if (e.value("case", "") != c.id()) continue;
      if (name == "build" || name == "built" || name == "device_leased") order.push_back(name);
    }
    EXPECT_EQ(order, (std::vector<std::string>{"build", "built", "device_leased"})) << c.id();
  }
  std::size_t builds = 0;
  for (const ProcessSpec& s : runner_->started()) {
    if (!has_arg(s, "build")) continue;
    ++builds;
    EXPECT_FALSE(s.cpus.empty()) << "a build is pinned to its core";
    auto request = nlohmann::json::parse(util::read_file(arg_after(s, "--request")).value_or("{}"));
    EXPECT_EQ(request.value("stage", ""), "build");
  }
  EXPECT_EQ(builds, 4u);
}

TEST_F(SchedulerTest, AFailedBuildNeverLeasesADevice) {
  build_fails = true;
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 4u);
  for (const CaseResult& r : out.results) {
    EXPECT_EQ(r.verdict, Verdict::kCompileError);
    EXPECT_NE(r.reason.find("expected ';'"), std::string::npos) << r.reason;
  }
  for (const auto& [name, e] : events_of(options_.run_dir)) EXPECT_NE(name, "device_leased");
  for (const ProcessSpec& s : runner_->started()) EXPECT_FALSE(has_arg(s, "verify"));
}

// With devices: [all] every core is the device's: a build and a
// verification never run at the same time, whatever the concurrency.
TEST_F(SchedulerTest, BuildsNeverShareACoreWithAVerification) {
  config_.concurrency = 4;
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 4u);
  for (const CaseResult& r : out.results) EXPECT_EQ(r.verdict, Verdict::kPass);
  EXPECT_EQ(builds_during_verification, 0);
  EXPECT_EQ(verifications_during_build, 0);
  EXPECT_GE(max_builds_live, 1);
}

// Dedicated build cores (build.cores, away from the devices): builds go on
// while the devices verify.
TEST_F(SchedulerTest, BuildCoresAwayFromTheDevicesBuildDuringVerifications) {
  config_.devices = {"0"};
  config_.build.cores = "1";
  config_.concurrency = 4;
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 4u);
  for (const ProcessSpec& s : runner_->started()) {
    if (has_arg(s, "build")) EXPECT_EQ(s.cpus, "1");
  }
  EXPECT_GT(builds_during_verification, 0);
  EXPECT_EQ(max_builds_live, 1) << "one job per build core by default";
  for (const ProcessSpec& s : runner_->started()) {
    if (has_arg(s, "probe")) EXPECT_EQ(s.cpus, "1") << "probes keep off the device's core";
    if (has_arg(s, "verify")) EXPECT_EQ(s.cpus, "") << "the verification pins itself to its device";
  }
}

// A run stopped during a build (kgym run --resume): the generated candidate
// is built again from scratch, never taken from the half-made build.
TEST_F(SchedulerTest, ResumeAfterAKillDuringABuildBuildsAgain) {
  config_.agent.kind = "command";
  config_.agent.argv = {"agent"};
  fs::path dir = options_.run_dir / "cases" / "level1" / "3_Op";
  fs::create_directories(dir / "candidate");
  fs::create_directories(dir / "build" / "prebuilt");
  std::ofstream(dir / "candidate" / "model_new.py") << "class ModelNew: pass\n";
  std::ofstream(dir / "generation.json") << R"({"outcome": "ok", "agent": "command"})";
  std::ofstream(dir / "build" / "prebuilt" / "manifest.json") << R"({"extensions": []})";
  std::ofstream(dir / "build_request.json") << "{}";
  script = [this](const ProcessSpec& s) {
    if (s.argv[0] == "agent")
      return util::FakeOutcome{std::chrono::milliseconds(10), {util::ProcessExit::Kind::kExited, 1}, {}};
    return default_script(s);
  };
  RunOutcome out = run_all();
  ASSERT_EQ(out.results.size(), 4u);
  EXPECT_EQ(out.results[2].verdict, Verdict::kPass);
  int builds_of_3 = 0;
  for (const ProcessSpec& s : runner_->started()) {
    if (has_arg(s, "build") && s.cwd == dir) ++builds_of_3;
  }
  EXPECT_EQ(builds_of_3, 1);
  EXPECT_FALSE(fs::exists(dir / "build" / "prebuilt" / "manifest.json")) << "the old build was cleared";
}

TEST(BuildSlots, OneBuildPerCoreAndNoneOnABlockedDevice) {
  BuildSlots slots({0, 1}, 0, {{0}, {1}});
  EXPECT_EQ(slots.jobs(), 2);
  EXPECT_EQ(slots.acquire({true, false}), 1) << "device 0 is leased";
  EXPECT_EQ(slots.acquire({false, false}), 0);
  EXPECT_EQ(slots.acquire({false, false}), std::nullopt) << "both cores build";
  EXPECT_FALSE(slots.device_clear(0));
  slots.release(0);
  EXPECT_TRUE(slots.device_clear(0));
  EXPECT_FALSE(slots.device_clear(1));
  EXPECT_EQ(slots.acquire({true, true}), std::nullopt);
  EXPECT_EQ(slots.running(), 1);
}

TEST(BuildSlots, MoreJobsThanCoresShareThemEvenly) {
  BuildSlots slots({4, 5}, 4, {});
  std::vector<int> got;
  while (auto core = slots.acquire({})) got.push_back(*core);
  EXPECT_EQ(got, (std::vector<int>{4, 5, 4, 5}));
}

TEST(BuildSlots, BuildCoresAreTheFreeOnesUnlessConfigured) {
  std::set<int> all{0, 1, 2, 3};
  EXPECT_EQ(build_cores(std::nullopt, all, {{0, 1}}), (std::set<int>{2, 3}));
  EXPECT_EQ(build_cores(std::nullopt, all, {{0, 1, 2, 3}}), all) << "every core is a device's: shared";
  EXPECT_EQ(build_cores(std::set<int>{1}, all, {{0, 1}}), (std::set<int>{1}));
  EXPECT_EQ(build_cores(std::nullopt, all, {{}, {}}), all) << "GPU devices hold no cores";
  EXPECT_EQ(BuildSlots({2, 3}, 0, {{0, 1}}).host_cores(), (std::set<int>{2, 3}));
  EXPECT_TRUE(BuildSlots({0, 1}, 0, {{0}, {1}}).host_cores().empty()) << "every core is a device's";
}

}  // namespace
}  // namespace kgym::run
