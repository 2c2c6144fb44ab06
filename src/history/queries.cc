#include "history/queries.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>

#include <fmt/format.h>

#include "report/case_order.h"
#include "util/clock.h"

namespace kgym::history {
namespace {

std::string date(std::optional<double> unix_seconds) {
  return unix_seconds ? util::iso8601_utc(*unix_seconds) : std::string("-");
}

std::string speedup_text(const CaseEntry& e) {
  if (!e.speedup) return "-";
  if (!e.speedup_lo || !e.speedup_hi) return fmt::format("{:.2f}x", *e.speedup);
  return fmt::format("{:.2f}x [{:.2f}-{:.2f}]", *e.speedup, *e.speedup_lo, *e.speedup_hi);
}

// Columns of `results x JOIN runs r` read into a CaseEntry, from `first`.
constexpr std::string_view kEntryColumns =
    "r.name, r.run_dir, r.model, r.started_at, x.verdict, x.speedup, x.speedup_lo, x.speedup_hi";

CaseEntry entry_at(const Statement& s, int first) {
  return CaseEntry{.run_name = s.text(first),
                   .run_dir = s.text(first + 1),
                   .model = s.optional_text(first + 2),
                   .started_at = s.optional_real(first + 3),
                   .verdict = s.text(first + 4),
                   .speedup = s.optional_real(first + 5),
                   .speedup_lo = s.optional_real(first + 6),
                   .speedup_hi = s.optional_real(first + 7)};
}

struct RunRef {
  std::int64_t id = 0;
  std::string name, dir;
  std::optional<std::string> config_hash;
  std::optional<double> started_at;
};

std::optional<RunRef> find_run(Database& db, const std::string& run) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::weakly_canonical(std::filesystem::absolute(run, ec), ec);
  Statement s = db.prepare(
      "SELECT id, name, run_dir, config_hash, started_at FROM runs WHERE run_dir = ?1 OR name = ?2 "
      "ORDER BY run_dir = ?1 DESC, started_at DESC, id DESC LIMIT 1");
  s.bind(1, dir.string()).bind(2, run);
  if (!s.step()) return std::nullopt;
  return RunRef{s.integer(0), s.text(1), s.text(2), s.optional_text(3), s.optional_real(4)};
}

}  // namespace

std::expected<std::vector<CaseEntry>, std::string> case_history(Database& db, const std::string& case_id) {
  try {
    Statement s =
        db.prepare(fmt::format("SELECT {} FROM results x JOIN runs r ON r.id = x.run_id WHERE x.case_id = ? "
                               "ORDER BY r.started_at DESC, r.id DESC",
                               kEntryColumns));
    s.bind(1, case_id);
    std::vector<CaseEntry> out;
    while (s.step()) out.push_back(entry_at(s, 0));
    return out;
  } catch (const SqlError& e) {
    return std::unexpected(std::string(e.what()));
  }
}

std::string case_history_table(const std::string& case_id, const std::vector<CaseEntry>& entries) {
  if (entries.empty()) return fmt::format("{}: no indexed result\n", case_id);
  std::string out =
      fmt::format("{}: {} result{}, newest first\n", case_id, entries.size(), entries.size() == 1 ? "" : "s");
  out += fmt::format("{:<20}  {:<17}  {:<26}  {:<20}  {}\n", "started", "verdict", "speedup [95% CI]",
                     "model", "run");
  for (const CaseEntry& e : entries) {
    out += fmt::format("{:<20}  {:<17}  {:<26}  {:<20}  {}\n", date(e.started_at), e.verdict, speedup_text(e),
                       e.model.value_or("-"), e.run_name);
  }
  return out;
}

std::expected<RegressionReport, std::string> regressions(Database& db, const std::string& run) {
  try {
    auto target = find_run(db, run);
    if (!target)
      return std::unexpected(fmt::format(
          "no indexed run is named or lies at '{}'; index it first: kgym history index RUN_DIR", run));
    RegressionReport report{
        .run_name = target->name, .run_dir = target->dir, .config_hash = target->config_hash.value_or("")};
    if (!target->config_hash) return report;
    Statement earlier = db.prepare(
        "SELECT count(*) FROM runs WHERE config_hash = ?1 AND id != ?2 AND "
        "(started_at < ?3 OR (started_at = ?3 AND id < ?2))");
    earlier.bind(1, *target->config_hash).bind(2, target->id).bind(3, target->started_at);
    if (earlier.step()) report.earlier_runs = static_cast<int>(earlier.integer(0));

    // For each of this run's cases, the newest earlier result in a run of the same config.
    Statement s = db.prepare(fmt::format(R"sql(
SELECT x.case_id, {0}, (SELECT p.rowid FROM results p JOIN runs q ON q.id = p.run_id
   WHERE p.case_id = x.case_id AND q.config_hash = ?1 AND q.id != ?2
     AND (q.started_at < ?3 OR (q.started_at = ?3 AND q.id < ?2))
   ORDER BY q.started_at DESC, q.id DESC LIMIT 1)
FROM results x JOIN runs r ON r.id = x.run_id WHERE x.run_id = ?2)sql",
                                         kEntryColumns));
    s.bind(1, *target->config_hash).bind(2, target->id).bind(3, target->started_at);
    Statement previous = db.prepare(fmt::format(
        "SELECT {} FROM results x JOIN runs r ON r.id = x.run_id WHERE x.rowid = ?", kEntryColumns));
    while (s.step()) {
      if (s.is_null(9)) continue;
      CaseEntry now = entry_at(s, 1);
      previous.bind(1, s.integer(9));
      if (!previous.step()) {
        previous.reset();
        continue;
      }
      CaseEntry before = entry_at(previous, 0);
      previous.reset();
      std::string kind;
      if (before.verdict == "pass" && now.verdict != "pass") {
        kind = "now fails";
      } else if (before.verdict == "pass" && now.verdict == "pass" && before.speedup_lo && now.speedup_hi &&
                 *now.speedup_hi < *before.speedup_lo) {
        kind = "slower";
      }
      if (!kind.empty()) report.regressions.push_back({s.text(0), kind, std::move(before), std::move(now)});
    }
    std::ranges::sort(report.regressions, [](const Regression& a, const Regression& b) {
      return report::case_id_less(a.case_id, b.case_id);
    });
    return report;
  } catch (const SqlError& e) {
    return std::unexpected(std::string(e.what()));
  }
}

std::string regressions_text(const RegressionReport& report) {
  std::string hash = report.config_hash.substr(0, 12);
  if (report.config_hash.empty())
    return fmt::format("{}: its run.json records no configuration; nothing to compare with\n",
                       report.run_name);
  if (report.earlier_runs == 0)
    return fmt::format("{}: no earlier run of the same configuration (config {}); nothing to compare with\n",
                       report.run_name, hash);
  std::string out =
      fmt::format("{}: {} regression{} against {} earlier run{} of config {}\n", report.run_name,
                  report.regressions.size(), report.regressions.size() == 1 ? "" : "s", report.earlier_runs,
                  report.earlier_runs == 1 ? "" : "s", hash);
  for (const Regression& r : report.regressions) {
    out += fmt::format("  {:<40}  {:<9}  {} {} (run {})  ->  {} {}\n", r.case_id, r.kind, r.before.verdict,
                       speedup_text(r.before), r.before.run_name, r.now.verdict, speedup_text(r.now));
  }
  return out;
}

}  // namespace kgym::history
