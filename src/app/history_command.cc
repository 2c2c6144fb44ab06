// `kgym history index [ROOT...]`, `kgym history case CASE_ID`, `kgym history
// regressions RUN`: the run history database (docs/history.md), and the
// database options they share with `kgym leaderboard`.
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "app/command.h"
#include "app/history_options.h"
#include "core/config.h"
#include "history/index.h"
#include "history/location.h"
#include "history/queries.h"
#include "history/schema.h"
#include "util/json_text.h"

namespace kgym::app {

void add_history_db_options(CLI::App& app, HistoryDbOptions& options) {
  app.add_option("--db", options.db,
                 "The history database (default: the config's history.db, else "
                 "$XDG_DATA_HOME/kgym/history.db)");
  app.add_option("--config,-c", options.config, "A config file whose history.db names the database");
}

std::optional<history::Database> open_history_db(const HistoryDbOptions& options, std::string_view command) {
  std::optional<std::filesystem::path> flag, configured;
  if (!options.db.empty()) flag = options.db;
  if (flag == std::nullopt && !options.config.empty()) {
    auto config = load_config(ConfigSource{.file = options.config});
    if (!config) {
      fmt::print(stderr, "kgym {}: invalid configuration:\n{}\n", command, config.error().message);
      return std::nullopt;
    }
    configured = config->history_db;
  }
  auto db = history::open_history(history::history_db_path(flag, configured));
  if (!db) {
    fmt::print(stderr, "kgym {}: {}\n", command, db.error());
    return std::nullopt;
  }
  return std::move(*db);
}

namespace {

struct HistoryArgs {
  HistoryDbOptions db;
  std::vector<std::string> roots;
  std::string case_id;
  std::string run;
  bool json = false;
  CLI::App* index = nullptr;
  CLI::App* case_cmd = nullptr;
  CLI::App* regressions = nullptr;
};

nlohmann::json entry_json(const history::CaseEntry& e) {
  auto number = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  return {{"run_name", e.run_name},
          {"run_dir", e.run_dir},
          {"model", e.model ? nlohmann::json(*e.model) : nlohmann::json()},
          {"started_at", number(e.started_at)},
          {"verdict", e.verdict},
          {"speedup", number(e.speedup)},
          {"speedup_ci95", e.speedup_lo && e.speedup_hi ? nlohmann::json({*e.speedup_lo, *e.speedup_hi})
                                                        : nlohmann::json()}};
}

int run_index(HistoryArgs& args) {
  auto db = open_history_db(args.db, "history index");
  if (!db) return kExitUsage;
  std::vector<std::filesystem::path> roots(args.roots.begin(), args.roots.end());
  if (roots.empty()) roots.push_back("runs");
  std::vector<std::filesystem::path> runs = history::find_runs(roots);
  int added = 0, updated = 0, unchanged = 0, failed = 0, results = 0;
  for (const auto& dir : runs) {
    auto indexed = history::index_run(*db, dir);
    if (!indexed) {
      fmt::print(stderr, "kgym history index: {}\n", indexed.error());
      ++failed;
      continue;
    }
    for (const std::string& skipped : indexed->skipped)
      fmt::print(stderr, "kgym history index: skipped {}\n", skipped);
    results += indexed->results;
    switch (indexed->action) {
      case history::IndexAction::kAdded: ++added; break;
      case history::IndexAction::kUpdated: ++updated; break;
      case history::IndexAction::kUnchanged: ++unchanged; break;
    }
    if (indexed->action != history::IndexAction::kUnchanged)
      fmt::print("{} {} ({} results)\n", history::to_string(indexed->action), indexed->run_dir.string(),
                 indexed->results);
  }
  fmt::print("indexed {} run{}: {} added, {} updated, {} unchanged{}; {} results\n", runs.size(),
             runs.size() == 1 ? "" : "s", added, updated, unchanged,
             failed > 0 ? fmt::format(", {} failed", failed) : std::string(), results);
  if (runs.empty())
    fmt::print(stderr, "kgym history index: no run directory (one holding run.json) under {}\n",
               fmt::join(args.roots.empty() ? std::vector<std::string>{"runs"} : args.roots, ", "));
  return failed > 0 ? kExitNotAllPassed : kExitOk;
}

int run_case(HistoryArgs& args) {
  auto db = open_history_db(args.db, "history case");
  if (!db) return kExitUsage;
  auto entries = history::case_history(*db, args.case_id);
  if (!entries) {
    fmt::print(stderr, "kgym history case: {}\n", entries.error());
    return kExitUsage;
  }
  if (args.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& e : *entries) list.push_back(entry_json(e));
    fmt::print("{}\n", util::json_text({{"kgym_json", 1}, {"command", "history case"}, {"case", args.case_id},
                                         {"results", std::move(list)}},
                                        2));
    return kExitOk;
  }
  fmt::print("{}", history::case_history_table(args.case_id, *entries));
  return kExitOk;
}

int run_regressions(HistoryArgs& args) {
  auto db = open_history_db(args.db, "history regressions");
  if (!db) return kExitUsage;
  auto report = history::regressions(*db, args.run);
  if (!report) {
    fmt::print(stderr, "kgym history regressions: {}\n", report.error());
    return kExitUsage;
  }
  if (args.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& r : report->regressions)
      list.push_back({{"case", r.case_id}, {"kind", r.kind}, {"before", entry_json(r.before)}, {"now", entry_json(r.now)}});
    fmt::print("{}\n", util::json_text({{"kgym_json", 1},
                                         {"command", "history regressions"},
                                         {"run_name", report->run_name},
                                         {"run_dir", report->run_dir},
                                         {"config_hash", report->config_hash},
                                         {"earlier_runs", report->earlier_runs},
                                         {"regressions", std::move(list)}},
                                        2));
  } else {
    fmt::print("{}", history::regressions_text(*report));
  }
  return report->regressions.empty() ? kExitOk : kExitNotAllPassed;
}

}  // namespace

Command add_history_command(CLI::App& root) {
  auto args = std::make_shared<HistoryArgs>();
  CLI::App* app = root.add_subcommand("history", "The history of every indexed run (docs/history.md)");
  app->require_subcommand(1);
  args->index = app->add_subcommand("index", "Index the runs under output roots into the history database");
  args->index->add_option("ROOT", args->roots, "Output roots or run directories (default: ./runs)");
  add_history_db_options(*args->index, args->db);
  args->case_cmd = app->add_subcommand("case", "One case across the indexed runs, newest first");
  args->case_cmd->add_option("CASE_ID", args->case_id, "<level>/<N>_<Name>")->required();
  add_history_db_options(*args->case_cmd, args->db);
  args->regressions = app->add_subcommand(
      "regressions", "Cases that passed in an earlier run of the same config and now fail or are slower");
  args->regressions->add_option("RUN", args->run, "A run directory or run name")->required();
  args->regressions->add_flag("--json", args->json, "print one JSON object instead of the text");
  args->case_cmd->add_flag("--json", args->json, "print one JSON object instead of the table");
  add_history_db_options(*args->regressions, args->db);
  return {app, [args] {
            if (args->index->parsed()) return run_index(*args);
            if (args->case_cmd->parsed()) return run_case(*args);
            if (args->regressions->parsed()) return run_regressions(*args);
            return kExitUsage;
          }};
}

}  // namespace kgym::app
