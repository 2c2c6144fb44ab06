// `kgym report RUN_DIR`: rebuilds summary.json, summary.md and report.html from the
// result.json files of a run and prints the summary table.
#include <unistd.h>

#include <memory>
#include <system_error>

#include <fmt/format.h>

#include "app/command.h"
#include "core/case_paths.h"
#include "monitor/terminal.h"
#include "report/load_results.h"
#include "report/run_info.h"

namespace kgym::app {
namespace {

int run_report_command(const std::filesystem::path& run_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(CasePaths::cases_dir(run_dir), ec)) {
    fmt::print(stderr,
               "kgym report: {} is not a kgym run directory: it has no cases/ directory.\n"
               "Pass the directory `kgym run` printed at start (OUTPUT_ROOT/<run name>).\n",
               run_dir.string());
    return kExitUsage;
  }
  report::LoadedResults loaded = report::load_results(run_dir);
  report::RecoveredRunInfo recovered = report::recover_run_info(run_dir, loaded);
  // A summary that silently counted a damaged result's case as not run
  // would be wrong: nothing is written until every record can be read.
  if (!recovered.errors.empty()) {
    for (const std::string& error : recovered.errors) fmt::print(stderr, "kgym report: {}\n", error);
    fmt::print(stderr, "kgym report: nothing written: {} record(s) of {} cannot be read\n",
               recovered.errors.size(), run_dir.string());
    return kExitUsage;
  }
  for (const std::string& note : recovered.notes) fmt::print(stderr, "kgym report: {}\n", note);

  auto summary = report::write_summary(run_dir, loaded.results, recovered.info);
  if (!summary) {
    fmt::print(stderr, "kgym report: cannot write the summary: {}\n", summary.error());
    return kExitUsage;
  }
  // Not a terminal (a log file, a pipe): wide enough that ids and reasons stay whole.
  int width = monitor::terminal_size(STDOUT_FILENO, {160, 40}).columns;
  fmt::print("{}\nwrote {}, {} and {}\n", report::summary_table(*summary, width),
             RunPaths{run_dir}.summary_json().string(), RunPaths{run_dir}.summary_md().string(),
             RunPaths{run_dir}.report_html().string());
  return kExitOk;
}

}  // namespace

Command add_report_command(CLI::App& root) {
  auto run_dir = std::make_shared<std::string>();
  CLI::App* app = root.add_subcommand(
      "report", "Rebuild summary.json, summary.md and report.html of a run from its result.json files");
  app->add_option("RUN_DIR", *run_dir, "Run directory (holds cases/)")->required();
  return {app, [run_dir] { return run_report_command(*run_dir); }};
}

}  // namespace kgym::app
