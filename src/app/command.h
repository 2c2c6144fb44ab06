#pragma once
// Each subcommand lives in its own app/<name>_command.cc and registers
// itself on the root CLI11 app. `run` is called after parsing, only for the
// subcommand that was given; it returns the process exit code.
#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/cli.h"

namespace kgym::app {

// Exit codes shared by every subcommand (README.md, "Exit codes").
inline constexpr int kExitOk = 0;
inline constexpr int kExitNotAllPassed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInterrupted = 130;
// The run could not write its results or summary (disk full, file size
// limit); what was written is kept.
inline constexpr int kExitOutputFailed = 3;

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_run_command(CLI::App& root);
Command add_cases_command(CLI::App& root);
// Both decide their request with `verify` (app/cli.h).
Command add_verify_command(CLI::App& root, VerifyFn verify);
Command add_build_command(CLI::App& root, VerifyFn verify);
Command add_self_check_command(CLI::App& root, VerifyFn verify);
Command add_monitor_command(CLI::App& root);
Command add_report_command(CLI::App& root);
Command add_compare_command(CLI::App& root);
Command add_lint_command(CLI::App& root);
Command add_zygote_run_command(CLI::App& root);
Command add_slurm_task_command(CLI::App& root);
Command add_repro_command(CLI::App& root);
Command add_history_command(CLI::App& root);
Command add_leaderboard_command(CLI::App& root);
Command add_roofline_command(CLI::App& root);

}  // namespace kgym::app
