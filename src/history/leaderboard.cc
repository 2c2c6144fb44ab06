#include "history/leaderboard.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/pass_at_k.h"

namespace kgym::history {
namespace {

struct CaseRecord {
  std::int64_t run_id = 0;
  std::string verdict;
  std::optional<double> speedup, lo, hi, cost, sol;
  std::optional<std::int64_t> tokens_in, tokens_out, samples_n, samples_passed;
};

std::string group_column(GroupBy by) {
  switch (by) {
    case GroupBy::kModel: return "coalesce(r.model, '(none)')";
    case GroupBy::kAgent: return "coalesce(r.agent, '(unknown)')";
    case GroupBy::kWorkflow: return "coalesce(r.workflow, 'none')";
    case GroupBy::kConfig: return "coalesce(substr(r.config_hash, 1, 12), '(unknown)')";
  }
  return "''";
}

Rate rate_of(int count, int cases) {
  Rate r{.count = count};
  if (cases > 0) r.rate = static_cast<double>(count) / cases;
  r.ci95 = report::wilson_ci95(count, cases);
  return r;
}

LeaderboardEntry entry_of(const std::string& key, const std::map<std::string, CaseRecord>& cases,
                          const std::set<std::string>& common) {
  LeaderboardEntry e{.key = key};
  std::set<std::int64_t> runs;
  int passed = 0, cheats = 0, fast1 = 0, fast2 = 0, min_samples = 0;
  bool all_sampled = true;
  double pass1_sum = 0, tokens = 0, cost = 0;
  bool any_tokens = false, any_cost = false;
  std::vector<double> speedups, sols;
  for (const std::string& id : common) {
    const CaseRecord& c = cases.at(id);
    runs.insert(c.run_id);
    bool pass = c.verdict == "pass";
    passed += pass;
    cheats += c.verdict == "fail_cheat";
    if (c.samples_n && *c.samples_n > 1) {
      pass1_sum += static_cast<double>(c.samples_passed.value_or(0)) / static_cast<double>(*c.samples_n);
      min_samples = min_samples == 0 ? static_cast<int>(*c.samples_n)
                                     : std::min(min_samples, static_cast<int>(*c.samples_n));
    } else {
      pass1_sum += pass ? 1 : 0;
      all_sampled = false;
    }
    if (pass && c.lo && *c.lo > 1) ++fast1;
    if (pass && c.lo && *c.lo > 2) ++fast2;
    if (pass && c.speedup && std::isfinite(*c.speedup) && *c.speedup > 0) speedups.push_back(*c.speedup);
    if (pass && c.sol) sols.push_back(*c.sol);
    if (c.tokens_in || c.tokens_out) {
      any_tokens = true;
      tokens += static_cast<double>(c.tokens_in.value_or(0) + c.tokens_out.value_or(0));
    }
    if (c.cost) {
      any_cost = true;
      cost += *c.cost;
    }
  }
  int n = static_cast<int>(common.size());
  e.runs = static_cast<int>(runs.size());
  e.cases = n;
  e.pass_at_1 = n > 0 ? pass1_sum / n : 0;
  if (n > 0 && all_sampled && min_samples > 1) {
    double sum = 0;
    for (const std::string& id : common) {
      const CaseRecord& c = cases.at(id);
      sum += pass_at_k(static_cast<int>(*c.samples_n), static_cast<int>(c.samples_passed.value_or(0)),
                       min_samples);
    }
    e.pass_k = min_samples;
    e.pass_at_k = sum / n;
  }
  e.correct = rate_of(passed, n);
  e.cheat = rate_of(cheats, n);
  e.fast_1 = rate_of(fast1, n);
  e.fast_2 = rate_of(fast2, n);
  e.geomean = report::geomean_of(speedups);
  e.median_sol = report::percentile(sols, 0.5);
  e.sol_cases = static_cast<int>(sols.size());
  if (passed > 0 && any_tokens) e.tokens_per_solve = tokens / passed;
  if (passed > 0 && any_cost) e.cost_per_solve = cost / passed;
  return e;
}

}  // namespace

std::optional<GroupBy> parse_group_by(std::string_view name) {
  if (name == "model") return GroupBy::kModel;
  if (name == "agent") return GroupBy::kAgent;
  if (name == "workflow") return GroupBy::kWorkflow;
  if (name == "config") return GroupBy::kConfig;
  return std::nullopt;
}

std::string_view to_string(GroupBy by) {
  switch (by) {
    case GroupBy::kModel: return "model";
    case GroupBy::kAgent: return "agent";
    case GroupBy::kWorkflow: return "workflow";
    case GroupBy::kConfig: return "config";
  }
  return "?";
}

std::optional<double> parse_date(std::string_view text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  std::string copy(text);
  int fields = std::sscanf(copy.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &s);
  if (fields != 3 && fields != 6) return std::nullopt;
  std::chrono::year_month_day ymd{std::chrono::year(y), std::chrono::month(static_cast<unsigned>(mo)),
                                  std::chrono::day(static_cast<unsigned>(d))};
  if (!ymd.ok() || h > 23 || mi > 59 || s > 60) return std::nullopt;
  auto days = std::chrono::sys_days(ymd).time_since_epoch();
  return static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(days).count() + h * 3600 +
                             mi * 60 + s);
}

std::expected<Leaderboard, std::string> leaderboard(Database& db, const LeaderboardQuery& query) {
  try {
    // With --round, q is the case's round min(R, its last): its verdict and
    // speedup stand for the case's, and its spending is that of rounds 1..R
    // (tokens in + out as tokens_in).
    std::string sql = fmt::format(R"sql(
SELECT {}, x.case_id, x.run_id,
       CASE WHEN q.run_id IS NULL THEN x.verdict ELSE q.verdict END,
       CASE WHEN q.run_id IS NULL THEN x.speedup ELSE q.speedup END,
       CASE WHEN q.run_id IS NULL THEN x.speedup_lo ELSE q.speedup_lo END,
       CASE WHEN q.run_id IS NULL THEN x.speedup_hi ELSE q.speedup_hi END,
       CASE WHEN q.run_id IS NULL THEN x.cost ELSE
         (SELECT SUM(s.cost) FROM result_rounds s
          WHERE s.run_id = x.run_id AND s.case_id = x.case_id AND s.round <= ?3) END,
       CASE WHEN q.run_id IS NULL THEN x.tokens_in ELSE
         (SELECT SUM(s.tokens) FROM result_rounds s
          WHERE s.run_id = x.run_id AND s.case_id = x.case_id AND s.round <= ?3) END,
       CASE WHEN q.run_id IS NULL THEN x.tokens_out ELSE NULL END,
       x.samples_n, x.samples_passed,
       CASE WHEN q.run_id IS NULL THEN x.sol ELSE NULL END
FROM results x JOIN runs r ON r.id = x.run_id
LEFT JOIN result_rounds q ON ?3 IS NOT NULL AND q.run_id = x.run_id AND q.case_id = x.case_id AND
  q.round = (SELECT MIN(?3, MAX(m.round)) FROM result_rounds m
             WHERE m.run_id = x.run_id AND m.case_id = x.case_id)
WHERE x.baseline = 0 AND (?1 IS NULL OR x.level = ?1) AND (?2 IS NULL OR r.started_at >= ?2)
ORDER BY r.started_at, r.id)sql",
                                  group_column(query.by));
    Statement select = db.prepare(sql);
    select.bind(1, query.level).bind(2, query.since).bind(3, query.round);
    std::map<std::string, std::map<std::string, CaseRecord>> groups;  // newest run last: it wins
    while (select.step()) {
      CaseRecord c{.run_id = select.integer(2),
                   .verdict = select.text(3),
                   .speedup = select.optional_real(4),
                   .lo = select.optional_real(5),
                   .hi = select.optional_real(6),
                   .cost = select.optional_real(7),
                   .tokens_in = select.optional_integer(8),
                   .tokens_out = select.optional_integer(9),
                   .samples_n = select.optional_integer(10),
                   .samples_passed = select.optional_integer(11)};
      c.sol = select.optional_real(12);
      groups[select.text(0)][select.text(1)] = std::move(c);
    }
    Leaderboard board{.by = query.by};
    std::set<std::string> all, common;
    bool first = true;
    for (const auto& [key, cases] : groups) {
      std::set<std::string> ids;
      for (const auto& [id, record] : cases) ids.insert(id);
      all.insert(ids.begin(), ids.end());
      if (first) {
        common = ids;
        first = false;
      } else {
        std::set<std::string> both;
        std::ranges::set_intersection(common, ids, std::inserter(both, both.end()));
        if (both != common || both != ids) board.case_sets_differ = true;
        common = std::move(both);
      }
    }
    board.common_cases = static_cast<int>(common.size());
    board.all_cases = static_cast<int>(all.size());
    for (const auto& [key, cases] : groups) board.entries.push_back(entry_of(key, cases, common));
    std::ranges::sort(board.entries, [](const LeaderboardEntry& a, const LeaderboardEntry& b) {
      if (a.pass_at_1 != b.pass_at_1) return a.pass_at_1 > b.pass_at_1;
      double ga = a.geomean.value.value_or(0), gb = b.geomean.value.value_or(0);
      if (ga != gb) return ga > gb;
      return a.key < b.key;
    });
    return board;
  } catch (const SqlError& e) {
    return std::unexpected(std::string(e.what()));
  }
}

std::string common_cases_line(const Leaderboard& board) {
  if (!board.case_sets_differ) return "";
  return fmt::format(
      "note: the entries attempted different cases ({} in all); every figure counts only the {} common "
      "case{} every entry attempted",
      board.all_cases, board.common_cases, board.common_cases == 1 ? "" : "s");
}

}  // namespace kgym::history
