// `kgym leaderboard [--by model|agent|workflow|config] [--level L] [--since
// DATE] [--md FILE] [--html FILE]`: the indexed runs ranked (docs/history.md).
#include <memory>

#include <fmt/format.h>

#include "app/command.h"
#include "app/history_options.h"
#include "history/leaderboard.h"
#include "util/clock.h"
#include "util/fs.h"

namespace kgym::app {
namespace {

struct LeaderboardArgs {
  HistoryDbOptions db;
  std::string by = "model";
  std::string level, since, markdown_file, html_file;
};

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
  app->add_option("--md", args->markdown_file, "Also write the leaderboard as Markdown to this file");
  app->add_option("--html", args->html_file, "Also write it as a self-contained HTML page to this file");
  add_history_db_options(*app, args->db);
  return {app, [args] { return run_leaderboard(*args); }};
}

}  // namespace kgym::app
