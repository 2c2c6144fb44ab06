#pragma once
// The scheduler tests' fixture: a temp run dir with four level1 cases and
// stored solutions, the fake process runner scripted by `script` (by default
// the probe succeeds and verification passes), and a printer that keeps
// its lines.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <memory>

#include "run/scheduler.h"
#include "util/fake_process_runner.h"
#include "util/fs.h"
#include "util/temp_dir.h"
#include "worker/probe.h"

namespace kgym::run::sched_test {

namespace fs = std::filesystem;
using util::FakeOutcome;
using util::ProcessExit;
using util::ProcessSpec;

// The value following `flag` in argv ("" if absent).
inline std::string arg_after(const ProcessSpec& spec, const std::string& flag) {
  auto it = std::find(spec.argv.begin(), spec.argv.end(), flag);
  return it != spec.argv.end() && it + 1 != spec.argv.end() ? *(it + 1) : "";
}

inline bool has_arg(const ProcessSpec& spec, const std::string& arg) {
  return std::find(spec.argv.begin(), spec.argv.end(), arg) != spec.argv.end();
}

class SilentPrinter : public Printer {
 public:
  void line(const std::string& text) override { lines.push_back(text); }
  void error(const std::string& text) override { lines.push_back(text); }
  std::vector<std::string> lines;
};

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(temp_.path().empty());
    root_ = temp_.path();
    fs::create_directories(root_ / "bench" / "level1");
    fs::create_directories(root_ / "run");
    for (int n = 1; n <= 4; ++n) {
      std::string stem = std::to_string(n) + "_Op";
      std::ofstream(root_ / "bench" / "level1" / (stem + ".py")) << "class Model: pass\n";
      fs::create_directories(root_ / "solutions" / "level1" / stem);
      std::ofstream(root_ / "solutions" / "level1" / stem / "model_new.py") << "class ModelNew: pass\n";
      cases_.push_back(Case{"level1", n, "Op", root_ / "bench" / "level1" / (stem + ".py")});
    }
    config_.agent.kind = "replay";
    config_.agent.replay_dir = root_ / "solutions";
    config_.concurrency = 2;
    config_.devices = {"all"};
    options_.run_dir = root_ / "run";
    options_.kgym_argv0 = {"kgym"};
    options_.worker_script = root_ / "worker.py";
    EXPECT_TRUE(worker::write_worker_script(options_.worker_script));  // the probe checks it is intact
    options_.python = "python3";
  }

  // A fake world where the probe succeeds, and verification ends with
  // `verdict` unless `verify_writes_nothing`.
  FakeOutcome default_script(const ProcessSpec& spec) {
    FakeOutcome out;
    if (has_arg(spec, "probe")) {
      fs::path target = arg_after(spec, "--out");
      out.runs_for = std::chrono::milliseconds(100);
      out.side_effect = [target, this] {
        std::ofstream(target) << (probe_fails
                                      ? R"({"error": "no class Model"})"
                                      : R"({"inputs": [{"kind": "tensor", "dtype": "float32", "shape": [4]}],
                                                   "outputs": [{"kind": "tensor", "dtype": "float32", "shape": [4]}]})");
      };
      if (probe_fails) out.exit.code = 1;
    } else if (has_arg(spec, "build")) {
      ++builds_live;
      max_builds_live = std::max(max_builds_live, builds_live);
      if (verifies_live > 0) ++builds_during_verification;
      fs::path target = arg_after(spec, "--json");
      out.runs_for = std::chrono::milliseconds(500);
      out.side_effect = [target, this] {
        --builds_live;
        CaseResult r;
        r.verdict = build_fails ? Verdict::kCompileError : Verdict::kPass;
        r.reason = build_fails ? "candidate failed to compile: error: expected ';'" : "built";
        r.timings.compile_s = 0.5;
        std::ofstream(target) << to_json(r).dump();
      };
      if (build_fails) out.exit.code = 1;
    } else if (has_arg(spec, "verify")) {
      if (builds_live > 0) ++verifications_during_build;
      ++verifies_live;
      max_verifies_live = std::max(max_verifies_live, verifies_live);
      fs::path target = arg_after(spec, "--json");
      out.runs_for = std::chrono::milliseconds(1000);
      out.side_effect = [target, spec, this] {
        --verifies_live;
        if (verify_writes_nothing) return;
        CaseResult r;
        r.verdict = Verdict::kPass;
        r.reason = "all trials match";
        if (shape_result) shape_result(r, spec);
        std::ofstream(target) << to_json(r).dump();
      };
    }
    max_children_live = std::max<int>(max_children_live, static_cast<int>(runner_->running()) + 1);
    return out;
  }

  RunOutcome run_all() {
    util::FakeClock clock;
    runner_ =
        std::make_unique<util::FakeProcessRunner>(clock, [this](const ProcessSpec& s) { return script(s); });
    auto agent = agent::make_agent(config_.agent);
    StateStore store(options_.run_dir);
    Scheduler scheduler(config_, options_, cases_, *runner_, clock, *agent, printer_, store);
    return scheduler.run();
  }

  std::function<FakeOutcome(const ProcessSpec&)> script = [this](const ProcessSpec& s) {
    return default_script(s);
  };
  util::TempDir temp_{"kgym-sched"};
  fs::path root_;
  std::vector<Case> cases_;
  Config config_;
  SchedulerOptions options_;
  SilentPrinter printer_;
  std::unique_ptr<util::FakeProcessRunner> runner_;
  // Changes the result a verification writes (by default: pass).
  std::function<void(CaseResult&, const ProcessSpec&)> shape_result;
  bool probe_fails = false;
  bool verify_writes_nothing = false;
  bool build_fails = false;
  int builds_live = 0;
  int max_builds_live = 0;
  int builds_during_verification = 0;  // builds started while a verification ran (devices: [all])
  int verifications_during_build = 0;
  int verifies_live = 0;
  int max_verifies_live = 0;
  int max_children_live = 0;
};

}  // namespace kgym::run::sched_test
