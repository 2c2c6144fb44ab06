#pragma once
// `kgym leaderboard`: indexed runs grouped by model, agent kind, workflow
// or configuration, each entry's figures computed only over the cases
// every entry attempted (docs/history.md "Commands", `leaderboard`). Pure reads.
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "history/sqlite.h"
#include "report/summary.h"

namespace kgym::history {

enum class GroupBy { kModel, kAgent, kWorkflow, kConfig };
std::optional<GroupBy> parse_group_by(std::string_view name);
std::string_view to_string(GroupBy by);

// "2026-05-01" or "2026-05-01T12:30:00Z" (UTC) -> unix seconds.
std::optional<double> parse_date(std::string_view text);

struct LeaderboardQuery {
  GroupBy by = GroupBy::kModel;
  std::optional<std::string> level;  // only cases of this level
  std::optional<double> since;       // only runs started at or after (unix seconds)
  // Refinement rounds (agent.feedback): each case as it stood after this
  // round (its last, when it ended earlier), with what its agent spent in
  // rounds 1..round; a case without rounds as it ended.
  std::optional<int> round;
};

struct Rate {
  int count = 0;
  double rate = 0;               // count / cases
  std::optional<Interval> ci95;  // Wilson score interval
};

struct LeaderboardEntry {
  std::string key;  // the model, agent kind, workflow ("none") or config hash (12 hex digits)
  int runs = 0;     // runs that contributed a result on a common case
  int cases = 0;    // common cases (the same for every entry)
  // Mean over cases of the case's pass rate (samples passed / samples run;
  // 0 or 1 without samples).
  double pass_at_1 = 0;
  int pass_k = 0;  // k of pass_at_k: the fewest samples of any case; 0 = none
  std::optional<double> pass_at_k;
  Rate correct;                            // verdict pass
  Rate cheat;                              // verdict fail_cheat
  Rate fast_1, fast_2;                     // passing cases whose speedup interval lies above 1 / 2
  report::Geomean geomean;                 // over passing cases with a measured speedup
  // Median sol (docs/roofline.md) over passing cases with a sound one; a
  // round of --round R before the last has none.
  std::optional<double> median_sol;
  int sol_cases = 0;
  std::optional<double> tokens_per_solve;  // (in + out) over every case / passing cases
  std::optional<double> cost_per_solve;    // USD over every case / passing cases
};

struct Leaderboard {
  GroupBy by = GroupBy::kModel;
  std::vector<LeaderboardEntry> entries;  // best pass@1 first, then geomean, then key
  int common_cases = 0;
  int all_cases = 0;  // cases any entry attempted
  bool case_sets_differ = false;
};

// The newest result of each case per entry (by run start) counts.
std::expected<Leaderboard, std::string> leaderboard(Database& db, const LeaderboardQuery& query);

// One line when the entries attempted different cases, else "".
std::string common_cases_line(const Leaderboard& board);
std::string leaderboard_table(const Leaderboard& board);
std::string leaderboard_markdown(const Leaderboard& board);
std::string leaderboard_html(const Leaderboard& board, std::string_view generated_at);

}  // namespace kgym::history
