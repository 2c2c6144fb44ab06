// Scheduler throughput: N fake-agent cases through the real Scheduler, with
// the real state store, result files and replay agent on disk, but with
// every child (probe, build, verifier) a FakeProcessRunner script on a
// FakeClock — so the wall time measured is the harness's own overhead per
// case. Prints cases, wall seconds, cases/s, the max RSS (the fake runner's
// copy of every child's spec included: a few KB per case), the bytes of
// state.json/events.jsonl and what the state.json rewrites cost.
// Usage: [KGYM_BENCH_LIVE=1] kgym_bench_scheduler [CASES] [CONCURRENCY]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "agent/agent.h"
#include "core/result.h"
#include "run/scheduler.h"
#include "util/clock.h"
#include "util/fake_process_runner.h"
#include "util/temp_dir.h"

namespace fs = std::filesystem;
using namespace kgym;

namespace {

// Case lines are dropped; with KGYM_BENCH_LIVE=1 the status line is drawn
// (to /dev/null) as on a terminal, so its cost is measured too.
class QuietPrinter : public run::Printer {
 public:
  QuietPrinter(std::FILE* out, bool live, const util::Clock& clock)
      : Printer(out, stderr, run::PrinterOptions{.live = live, .color = false, .width = 100}, clock) {}
  void line(const std::string&) override {}
  void error(const std::string& text) override { fmt::print(stderr, "{}\n", text); }
};

std::string arg_after(const util::ProcessSpec& spec, const std::string& flag) {
  auto it = std::find(spec.argv.begin(), spec.argv.end(), flag);
  return it != spec.argv.end() && it + 1 != spec.argv.end() ? *(it + 1) : "";
}

bool has_arg(const util::ProcessSpec& spec, const std::string& arg) {
  return std::find(spec.argv.begin(), spec.argv.end(), arg) != spec.argv.end();
}

util::FakeOutcome script(const util::ProcessSpec& spec) {
  util::FakeOutcome out;
  out.runs_for = std::chrono::milliseconds(500);
  if (has_arg(spec, "probe")) {
    fs::path target = arg_after(spec, "--out");
    out.side_effect = [target] {
      std::ofstream(target) << R"({"inputs": [{"kind": "tensor", "dtype": "float32", "shape": [4]}],
                                  "outputs": [{"kind": "tensor", "dtype": "float32", "shape": [4]}]})";
    };
  } else if (has_arg(spec, "build") || has_arg(spec, "verify")) {
    // The build stage's child (kgym build) and verification both answer
    // with a CaseResult in --json.
    fs::path target = arg_after(spec, "--json");
    bool build = has_arg(spec, "build");
    out.side_effect = [target, build] {
      CaseResult r;
      r.verdict = Verdict::kPass;
      r.reason = build ? "built" : "all trials match";
      std::ofstream(target) << to_json(r).dump();
    };
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int count = argc > 1 ? std::atoi(argv[1]) : 1000;
  int concurrency = argc > 2 ? std::atoi(argv[2]) : 8;
  util::TempDir temp("kgym-bench");
  fs::path root = temp.path();
  std::vector<Case> cases;
  for (int n = 1; n <= count; ++n) {
    std::string stem = fmt::format("{}_Op", n);
    fs::create_directories(root / "bench" / "level1");
    std::ofstream(root / "bench" / "level1" / (stem + ".py")) << "class Model: pass\n";
    fs::create_directories(root / "solutions" / "level1" / stem);
    std::ofstream(root / "solutions" / "level1" / stem / "model_new.py") << "class ModelNew: pass\n";
    cases.push_back(Case{"level1", n, "Op", root / "bench" / "level1" / (stem + ".py")});
  }
  Config config;
  config.agent.kind = "replay";
  config.agent.replay_dir = root / "solutions";
  config.concurrency = concurrency;
  for (int d = 0; d < concurrency; ++d) config.devices.push_back(std::to_string(d));
  config.devices.erase(config.devices.begin());  // drop the default "all"
  run::SchedulerOptions options;
  options.run_dir = root / "run";
  fs::create_directories(options.run_dir);
  options.kgym_argv0 = {"kgym"};
  options.worker_script = root / "worker.py";
  options.python = "python3";

  util::FakeClock clock;
  util::FakeProcessRunner runner(clock, script);
  auto agent = agent::make_agent(config.agent);
  const char* live = std::getenv("KGYM_BENCH_LIVE");
  std::FILE* devnull = std::fopen("/dev/null", "w");
  util::SteadyClock wall_clock;
  QuietPrinter printer(devnull, live && std::string(live) == "1", wall_clock);
  run::StateStore store(options.run_dir);
  auto start = std::chrono::steady_clock::now();
  run::Scheduler scheduler(config, options, cases, runner, clock, *agent, printer, store);
  run::RunOutcome outcome = scheduler.run();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  std::size_t passed = std::count_if(outcome.results.begin(), outcome.results.end(),
                                     [](const CaseResult& r) { return r.verdict == Verdict::kPass; });
  fmt::print("cases:            {} ({} passed), concurrency {}\n", count, passed, concurrency);
  fmt::print("wall:             {:.2f} s ({:.0f} cases/s, {:.2f} ms/case)\n", wall, count / wall,
             1000 * wall / count);
  fmt::print("harness max RSS:  {:.1f} MB\n", usage.ru_maxrss / 1024.0);
  std::error_code ec;
  auto fds = std::distance(fs::directory_iterator("/proc/self/fd", ec), fs::directory_iterator());
  fmt::print("open fds at end:  {}\n", fds);
  fmt::print("state.json:       {:.1f} KB, events.jsonl {:.1f} KB\n",
             fs::file_size(options.run_dir / "state.json") / 1024.0,
             fs::file_size(options.run_dir / "events.jsonl") / 1024.0);
  const run::StateWriteStats& writes = store.write_stats();
  fmt::print("state.json writes: {} ({:.2f} s in all, the last {:.1f} ms)\n", writes.writes,
             writes.total.count(), 1000 * writes.last.count());
  for (const CaseResult& r : outcome.results) {
    if (r.verdict == Verdict::kPass) continue;
    fmt::print("first failure:    {} {}: {}\n", r.case_id, to_string(r.verdict), r.reason);
    break;
  }
  return passed == static_cast<std::size_t>(count) ? 0 : 1;
}
