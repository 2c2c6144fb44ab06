#include "app/cli.h"

#include <clocale>
#include <csignal>
#include <cstdio>
#include <algorithm>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "app/command.h"
#include "core/build_info.h"
#include "util/nearest.h"

namespace kgym::app {

namespace {

CLI::App* find_subcommand(CLI::App& root, const std::string& name) {
  for (CLI::App* sub : root.get_subcommands([](CLI::App*) { return true; }))
    if (sub->check_name(name)) return sub;
  return nullptr;
}

// The first option among argv[from..] that `app` does not have, as "unknown
// option ..." with the nearest it has; nullopt when each is known.
std::optional<std::string> unknown_option(const CLI::App& app, const std::string& command, int from, int argc,
                                          char** argv) {
  std::vector<std::string> flags;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
    for (const std::string& name : option->get_snames()) flags.push_back("-" + name);
  }
  for (int i = from; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") break;
    if (!arg.starts_with("-") || arg == "-") continue;
    std::string name = arg.substr(0, arg.find('='));
    if (std::find(flags.begin(), flags.end(), name) != flags.end()) continue;
    if (name.size() == 2 && name[1] != '-') continue;  // a short flag CLI11 reads its own way
    std::vector<std::string_view> views(flags.begin(), flags.end());
    std::string nearest = util::nearest_name(name, views);
    return fmt::format("unknown option '{}' for {}; {}{} --help lists them", name, command,
                       nearest.empty() ? "" : fmt::format("did you mean '{}'? ", nearest), command);
  }
  return std::nullopt;
}

// What a command line CLI11 refused meant, when a name in it is unknown:
// the unknown command or option, and the nearest known one. Else nullopt
// (CLI11's own message stands).
std::optional<std::string> unknown_name(CLI::App& root, int argc, char** argv) {
  CLI::App* app = &root;
  std::string command = "kgym";
  for (int i = 1; i < argc; ++i) {
    std::string token = argv[i];
    bool has_commands = !app->get_subcommands([](CLI::App*) { return true; }).empty();
    if (token.starts_with("-") || !has_commands) return unknown_option(*app, command, i, argc, argv);
    CLI::App* sub = find_subcommand(*app, token);
    if (sub == nullptr) {
      std::vector<std::string> names;
      for (const CLI::App* visible :
           app->get_subcommands([](const CLI::App* a) { return !a->get_group().empty(); }))
        names.push_back(visible->get_name());
      std::vector<std::string_view> views(names.begin(), names.end());
      std::string nearest = util::nearest_name(token, views);
      return fmt::format("unknown command '{}' for {}; {}the commands: {} ({} --help says more)", token, command,
                         nearest.empty() ? "" : fmt::format("did you mean '{}'? ", nearest), fmt::join(names, ", "),
                         command);
    }
    app = sub;
    command += " " + token;
  }
  return std::nullopt;
}

}  // namespace

int run_cli(int argc, char** argv, const CliSeams& seams) {
  std::setlocale(LC_ALL, "C");  // numbers in files and output are locale-proof
  // A write past RLIMIT_FSIZE then fails with EFBIG, which every writer
  // reports, instead of killing kgym mid-run (children get the default back).
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App root{"kgym: benchmark gym for compute kernels written by coding agents", "kgym"};
  root.require_subcommand(1);
  root.set_version_flag("--version", fmt::format("kgym {} (commit {})", kgym_version(), kgym_commit()));
  std::vector<Command> commands = {
      add_run_command(root),
      add_cases_command(root),
      add_verify_command(root, seams.verify),
      add_build_command(root, seams.verify),
      add_monitor_command(root),
      add_report_command(root),
      add_compare_command(root),
      add_lint_command(root),
      add_zygote_run_command(root),
      add_slurm_task_command(root),
      add_repro_command(root),
      add_history_command(root),
      add_leaderboard_command(root),
      add_self_check_command(root, seams.verify),
      add_roofline_command(root),
  };
  try {
    root.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0) {
      if (auto unknown = unknown_name(root, argc, argv)) {
        fmt::print(stderr, "kgym: {}\n", *unknown);
        return kExitUsage;
      }
    }
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
