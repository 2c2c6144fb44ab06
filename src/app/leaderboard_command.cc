// `kgym leaderboard [--by model|agent|workflow|config] [--level L] [--since
// DATE] [--md FILE] [--html FILE] [--json]`: the indexed runs ranked (docs/history.md).
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/command.h"
#include "app/history_options.h"
#include "history/leaderboard.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/json_text.h"

namespace kgym::app {
namespace {

struct LeaderboardArgs {
  HistoryDbOptions db;
  std::string by = "model";
  std::string level, since, markdown_file, html_file;
  bool json = false;
  int round = 0;  // --round R; 0: each case as it ended
};

nlohmann::json optional_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }
nlohmann::json interval_json(const std::optional<Interval>& i) {
  return i ? nlohmann::json({i->lo, i->hi}) : nlohmann::json();
}
nlohmann::json rate_json(const history::Rate& r) {
  return {{"count", r.count}, {"rate", r.rate}, {"ci95", interval_json(r.ci95)}};
}

// The leaderboard as one object (docs/results.md "Machine-readable output").
nlohmann::json leaderboard_json(const history::Leaderboard& board, std::optional<int> round) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : board.entries) {
    entries.push_back({{"key", e.key},
                       {"runs", e.runs},
                       {"cases", e.cases},
                       {"pass_at_1", e.pass_at_1},
                       {"pass_k", e.pass_k},
                       {"pass_at_k", optional_json(e.pass_at_k)},
                       {"correct", rate_json(e.correct)},
                       {"cheat", rate_json(e.cheat)},
                       {"fast_1", rate_json(e.fast_1)},
                       {"fast_2", rate_json(e.fast_2)},
                       {"geomean_speedup", {{"value", optional_json(e.geomean.value)},
                                            {"ci95", interval_json(e.geomean.ci95)},
                                            {"cases", e.geomean.cases}}},
                       {"tokens_per_solve", optional_json(e.tokens_per_solve)},
                       {"cost_per_solve", optional_json(e.cost_per_solve)}});
  }
  return {{"kgym_json", 1},
          {"command", "leaderboard"},
          {"by", history::to_string(board.by)},
          {"round", round ? nlohmann::json(*round) : nlohmann::json(nullptr)},
          {"common_cases", board.common_cases},
          {"all_cases", board.all_cases},
          {"case_sets_differ", board.case_sets_differ},
          {"entries", std::move(entries)}};
}

bool write(std::string_view option, const std::string& file, const std::string& text) {
  if (file.empty()) return true;
  if (auto ok = util::write_file_atomic(file, text); !ok) {
    fmt::print(stderr, "kgym leaderboard: {} {}: {}\n", option, file, ok.error());
    return false;
  }
  fmt::print("wrote {}\n", file);
  return true;
}

int run_leaderboard(const LeaderboardArgs& args) {
  history::LeaderboardQuery query;
  auto by = history::parse_group_by(args.by);
  if (!by) {
    fmt::print(stderr, "kgym leaderboard: --by {}: use model, agent, workflow or config\n", args.by);
    return kExitUsage;
  }
  query.by = *by;
  if (!args.level.empty()) query.level = args.level;
  if (args.round > 0) query.round = args.round;
  if (!args.since.empty()) {
    query.since = history::parse_date(args.since);
    if (!query.since) {
      fmt::print(stderr,
                 "kgym leaderboard: --since {}: use a UTC date, e.g. 2026-05-01 or 2026-05-01T12:00:00\n",
                 args.since);
      return kExitUsage;
    }
  }
  auto db = open_history_db(args.db, "leaderboard");
  if (!db) return kExitUsage;
  auto board = history::leaderboard(*db, query);
  if (!board) {
    fmt::print(stderr, "kgym leaderboard: {}\n", board.error());
    return kExitUsage;
  }
  if (args.json) {
    fmt::print("{}\n", util::json_text(leaderboard_json(*board, query.round), 2));
    return kExitOk;
  }
  if (query.round) fmt::print("each case as it stood after refinement round {}\n", *query.round);
  fmt::print("{}", history::leaderboard_table(*board));
  bool ok = write("--md", args.markdown_file, history::leaderboard_markdown(*board));
  ok = write("--html", args.html_file,
             history::leaderboard_html(*board, util::iso8601_utc(util::unix_now()))) &&
       ok;
  return ok ? kExitOk : kExitUsage;
}

}  // namespace

Command add_leaderboard_command(CLI::App& root) {
  auto args = std::make_shared<LeaderboardArgs>();
  CLI::App* app = root.add_subcommand(
      "leaderboard", "Rank the indexed runs by model, agent, workflow or config over their common cases");
  app->add_option("--by", args->by, "Group by model (default), agent, workflow or config");
  app->add_option("--level", args->level, "Only cases of this level");
  app->add_option("--since", args->since, "Only runs started on or after this UTC date (YYYY-MM-DD)");
  app->add_option("--round", args->round,
                  "Each case as it stood after this refinement round (agent.feedback; a case that ended "
                  "earlier at its last round), with what its agent spent until then")
      ->check(CLI::Range(1, 20));
  app->add_option("--md", args->markdown_file, "Also write the leaderboard as Markdown to this file");
  app->add_option("--html", args->html_file, "Also write it as a self-contained HTML page to this file");
  app->add_flag("--json", args->json, "print the leaderboard as one JSON object instead of the table")
      ->excludes(app->get_option("--md"))
      ->excludes(app->get_option("--html"));
  add_history_db_options(*app, args->db);
  return {app, [args] { return run_leaderboard(*args); }};
}

}  // namespace kgym::app
