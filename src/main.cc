// kgym: a benchmark gym for compute kernels written by coding agents.
#include <clocale>
#include <csignal>
#include <cstdio>
#include <exception>
#include <vector>

#include <fmt/format.h>

#include "app/command.h"
#include "core/build_info.h"

int main(int argc, char** argv) {
  std::setlocale(LC_ALL, "C");  // numbers in files and output are locale-proof
  // A write past RLIMIT_FSIZE then fails with EFBIG, which every writer
  // reports, instead of killing kgym mid-run (children get the default back).
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App root{"kgym: benchmark gym for compute kernels written by coding agents", "kgym"};
  root.require_subcommand(1);
  root.set_version_flag("--version",
                        fmt::format("kgym {} (commit {})", kgym::kgym_version(), kgym::kgym_commit()));
  std::vector<kgym::app::Command> commands = {
      kgym::app::add_run_command(root),         kgym::app::add_cases_command(root),
      kgym::app::add_verify_command(root),      kgym::app::add_build_command(root),
      kgym::app::add_monitor_command(root),     kgym::app::add_report_command(root),
      kgym::app::add_compare_command(root),     kgym::app::add_lint_command(root),
      kgym::app::add_zygote_run_command(root),  kgym::app::add_slurm_task_command(root),
      kgym::app::add_repro_command(root),       kgym::app::add_history_command(root),
      kgym::app::add_leaderboard_command(root),
  };
  try {
    root.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = root.exit(e);
    return code == 0 ? 0 : kgym::app::kExitUsage;
  }
  try {
    for (auto& cmd : commands) {
      if (cmd.app->parsed()) return cmd.run();
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "kgym: internal error: {}\n", e.what());
    return kgym::app::kExitUsage;
  }
  return kgym::app::kExitUsage;
}
