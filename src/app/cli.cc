#include "app/cli.h"

#include <clocale>
#include <csignal>
#include <cstdio>
#include <exception>
#include <vector>

#include <fmt/format.h>

#include "app/command.h"
#include "core/build_info.h"

namespace kgym::app {

int run_cli(int argc, char** argv, const CliSeams& seams) {
  std::setlocale(LC_ALL, "C");  // numbers in files and output are locale-proof
  // A write past RLIMIT_FSIZE then fails with EFBIG, which every writer
  // reports, instead of killing kgym mid-run (children get the default back).
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App root{"kgym: benchmark gym for compute kernels written by coding agents", "kgym"};
  root.require_subcommand(1);
  root.set_version_flag("--version", fmt::format("kgym {} (commit {})", kgym_version(), kgym_commit()));
  std::vector<Command> commands = {
      add_run_command(root),         add_cases_command(root),
      add_verify_command(root, seams.verify), add_build_command(root, seams.verify),
      add_monitor_command(root),     add_report_command(root),
      add_compare_command(root),     add_lint_command(root),
      add_zygote_run_command(root),  add_slurm_task_command(root),
      add_repro_command(root),       add_history_command(root),
      add_leaderboard_command(root),
  };
  try {
    root.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = root.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  try {
    for (auto& cmd : commands) {
      if (cmd.app->parsed()) return cmd.run();
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "kgym: internal error: {}\n", e.what());
    return kExitUsage;
  }
  return kExitUsage;
}

}  // namespace kgym::app
