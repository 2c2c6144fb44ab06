// `kgym monitor STATE_DIR [--once] [--interval SEC]`: live view of a run
// from its state.json.
#include <chrono>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "app/command.h"
#include "monitor/monitor_loop.h"

namespace kgym::app {
namespace {

struct MonitorArgs {
  std::string state_dir;
  bool once = false;
  std::optional<double> interval_s;  // default: the run's monitor.poll_sec
};

int run_monitor_command(const MonitorArgs& args) {
  std::filesystem::path state_file = monitor::resolve_state_path(args.state_dir);
  if (args.once) return monitor::print_one_frame(state_file, stdout, stderr);
  monitor::MonitorOptions options;
  options.state_file = state_file;
  double interval_s = 1.0;
  if (args.interval_s) {
    interval_s = *args.interval_s;
  } else if (auto state = monitor::read_state(state_file); state && state->monitor_poll_sec > 0) {
    interval_s = state->monitor_poll_sec;
  }
  options.interval = std::chrono::milliseconds(static_cast<long long>(interval_s * 1000));
  switch (monitor::run_monitor(options)) {
    case monitor::MonitorEnd::kRunEnded: return kExitOk;
    case monitor::MonitorEnd::kQuit: return kExitOk;
    case monitor::MonitorEnd::kSignal: return kExitInterrupted;
    case monitor::MonitorEnd::kNoState: return kExitUsage;
  }
  return kExitUsage;
}

}  // namespace

Command add_monitor_command(CLI::App& root) {
  auto args = std::make_shared<MonitorArgs>();
  CLI::App* app =
      root.add_subcommand("monitor", "Show the live state of a run (reads RUN_DIR/state.json only)");
  app->add_option("STATE_DIR", args->state_dir, "Run directory, or the path of its state.json")->required();
  app->add_flag("--once", args->once, "Print one frame and exit (2 if the state cannot be read)");
  app->add_option("--interval", args->interval_s,
                  "Seconds between redraws (default: the run's monitor.poll_sec)")
      ->check(CLI::Range(0.1, 3600.0));
  return {app, [args] { return run_monitor_command(*args); }};
}

}  // namespace kgym::app
