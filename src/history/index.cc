#include "history/index.h"

#include <algorithm>
#include <set>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/case_paths.h"
#include "core/record_files.h"
#include "core/run_state.h"
#include "history/schema.h"
#include "report/case_order.h"
#include "report/load_results.h"
#include "report/summary.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/sha256.h"

namespace kgym::history {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kSearchDepth = 4;

// "name size mtime_ns;" of `file`, "" when it does not exist.
std::string stamp(const fs::path& file, const fs::path& base) {
  std::error_code ec;
  auto size = fs::file_size(file, ec);
  if (ec) return "";
  auto mtime = fs::last_write_time(file, ec);
  if (ec) return "";
  return fmt::format("{} {} {};", file.lexically_relative(base).string(), size,
                     mtime.time_since_epoch().count());
}

std::string fingerprint(const fs::path& run_dir) {
  RunPaths paths{run_dir};
  std::string text = stamp(paths.run_record(), run_dir) + stamp(paths.state(), run_dir);
  std::vector<std::string> parts;
  std::error_code ec;
  fs::path cases = CasePaths::cases_dir(run_dir);
  for (fs::directory_iterator level(cases, ec), end; !ec && level != end; level.increment(ec)) {
    if (!level->is_directory(ec)) continue;
    std::error_code inner;
    for (fs::directory_iterator c(level->path(), inner); !inner && c != end; c.increment(inner)) {
      std::string s = stamp(CasePaths{c->path()}.result(), run_dir);
      if (!s.empty()) parts.push_back(std::move(s));
    }
  }
  std::sort(parts.begin(), parts.end());
  for (const std::string& p : parts) text += p;
  return util::sha256_hex(text);
}

json read_json(const fs::path& file) {
  auto text = util::read_file(file);
  if (!text) return json();
  json j = json::parse(*text, nullptr, false);
  return j.is_discarded() ? json() : j;
}

template <typename T>
std::optional<T> field(const json& j, std::string_view key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

struct RunRow {
  std::string run_dir, name, status = "unknown", fingerprint;
  std::optional<std::string> model, agent, workflow, config_hash, torch_version, torch_build, machine,
      backend, mode;
  std::optional<double> started_at, ended_at;
};

RunRow run_row(const fs::path& run_dir, const json& run, const json& state,
               const std::vector<CaseResult>& results) {
  RunRow row;
  row.run_dir = run_dir.string();
  row.name = run_dir.filename().string();
  const json config = run.value("config", json());
  json agent = config.is_object() ? config.value("agent", json()) : json();
  row.model = field<std::string>(agent, "model");
  row.agent = field<std::string>(agent, "kind");
  std::set<std::string> stage_lists;
  for (const CaseResult& r : results) {
    if (!r.generation) continue;
    if (!row.model && r.generation->model) row.model = r.generation->model;
    std::vector<std::string> names;
    for (const StageRecord& s : r.generation->stages) names.push_back(s.name);
    if (!names.empty()) stage_lists.insert(fmt::format("{}", fmt::join(names, "+")));
  }
  if (!stage_lists.empty()) row.workflow = *stage_lists.begin();
  if (config.is_object()) row.config_hash = config_hash(config);
  row.torch_version = field<std::string>(run, "torch_version");
  row.torch_build = field<std::string>(run, "torch_build");
  row.backend = field<std::string>(run, "backend");
  row.mode = field<std::string>(run, "mode");
  json machine = run.value("machine", json());
  auto host = field<std::string>(machine, "hostname");
  auto cpu = field<std::string>(machine, "cpu_model");
  if (host || cpu) row.machine = fmt::format("{} ({})", host.value_or("?"), cpu.value_or("?"));
  row.started_at = field<double>(run, "started_at");
  if (auto status = field<std::string>(state, "status")) row.status = *status;
  if (row.status != "running") row.ended_at = field<double>(state, "updated_at");
  return row;
}

}  // namespace

std::string_view to_string(IndexAction a) {
  switch (a) {
    case IndexAction::kAdded: return "added";
    case IndexAction::kUpdated: return "updated";
    case IndexAction::kUnchanged: return "unchanged";
  }
  return "?";
}

std::string config_hash(const json& config_record) {
  if (!config_record.is_object()) return "";
  json kept = config_record;
  for (const char* key : {"concurrency", "monitor", "executor", "output"}) kept.erase(key);
  return util::sha256_hex(kept.dump());
}

std::vector<fs::path> find_runs(const std::vector<fs::path>& roots) {
  std::set<fs::path> found;
  for (const fs::path& root : roots) {
    std::error_code ec;
    fs::path base = fs::weakly_canonical(fs::absolute(root, ec), ec);
    if (fs::is_regular_file(RunPaths{base}.run_record(), ec)) {
      found.insert(base);
      continue;
    }
    fs::recursive_directory_iterator it(base, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      std::error_code type_ec;
      if (it->symlink_status(type_ec).type() != fs::file_type::directory) continue;
      if (fs::is_regular_file(RunPaths{it->path()}.run_record(), type_ec)) {
        found.insert(it->path());
        it.disable_recursion_pending();
      } else if (it.depth() + 1 >= kSearchDepth) {
        it.disable_recursion_pending();
      }
    }
  }
  return {found.begin(), found.end()};
}

std::expected<IndexedRun, std::string> index_run(Database& db, const fs::path& dir) {
  std::error_code ec;
  fs::path run_dir = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  IndexedRun out{.run_dir = run_dir};
  auto recorded = read_run_record(run_dir);
  if (!recorded) return std::unexpected(recorded.error());
  json run = std::move(*recorded);
  json state = read_json(RunPaths{run_dir}.state());
  if (std::string newer = newer_schema_message(RunPaths{run_dir}.state(), state, kStateSchemaVersion);
      !newer.empty())
    return std::unexpected(newer);
  try {
    std::string print = fingerprint(run_dir);
    Statement find = db.prepare("SELECT id, fingerprint FROM runs WHERE run_dir = ?");
    find.bind(1, run_dir.string());
    std::optional<std::int64_t> existing;
    if (find.step()) {
      existing = find.integer(0);
      if (find.text(1) == print) {
        Statement count = db.prepare("SELECT count(*) FROM results WHERE run_id = ?");
        count.bind(1, *existing);
        out.results = count.step() ? static_cast<int>(count.integer(0)) : 0;
        return out;
      }
    }
    find.reset();
    report::LoadedResults loaded = report::load_results(run_dir);
    // A run indexed without a damaged result would count its case as not
    // attempted, and stay so (the fingerprint would not change once the
    // file is repaired): it is not indexed until every result reads.
    std::vector<std::string> damaged;
    for (const report::LoadError& e : loaded.errors) {
      if (e.path.filename() == CasePaths::kResult)
        damaged.push_back(damaged_result_message(e.path, e.message));
      else if (e.path != CasePaths::cases_dir(run_dir))
        out.skipped.push_back(fmt::format("{}: {}", e.path.string(), e.message));
    }
    if (!damaged.empty()) return std::unexpected(fmt::format("{}", fmt::join(damaged, "\n")));
    // A result.json of a case the run did not select is not indexed.
    out.skipped.insert(out.skipped.end(), loaded.warnings.begin(), loaded.warnings.end());
    RunRow row = run_row(run_dir, run, state, loaded.results);
    row.fingerprint = print;

    Transaction tx(db);
    Statement upsert = db.prepare(R"sql(
INSERT INTO runs (run_dir, name, model, agent, workflow, config_hash, torch_version, torch_build, machine,
                  backend, mode, started_at, ended_at, status, fingerprint, indexed_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)
ON CONFLICT (run_dir) DO UPDATE SET name = ?2, model = ?3, agent = ?4, workflow = ?5, config_hash = ?6,
  torch_version = ?7, torch_build = ?8, machine = ?9, backend = ?10, mode = ?11, started_at = ?12,
  ended_at = ?13, status = ?14, fingerprint = ?15, indexed_at = ?16)sql");
    upsert.bind(1, row.run_dir).bind(2, row.name).bind(3, row.model).bind(4, row.agent).bind(5, row.workflow);
    upsert.bind(6, row.config_hash).bind(7, row.torch_version).bind(8, row.torch_build).bind(9, row.machine);
    upsert.bind(10, row.backend).bind(11, row.mode).bind(12, row.started_at).bind(13, row.ended_at);
    upsert.bind(14, row.status).bind(15, row.fingerprint).bind(16, util::unix_now());
    upsert.run();
    Statement id_of = db.prepare("SELECT id FROM runs WHERE run_dir = ?");
    id_of.bind(1, row.run_dir);
    if (!id_of.step()) throw SqlError("the run's row vanished inside its transaction");
    std::int64_t run_id = id_of.integer(0);
    Statement clear = db.prepare("DELETE FROM results WHERE run_id = ?");
    clear.bind(1, run_id).run();
    Statement clear_rounds = db.prepare("DELETE FROM result_rounds WHERE run_id = ?");
    clear_rounds.bind(1, run_id).run();
    Statement insert_round = db.prepare(R"sql(
INSERT INTO result_rounds (run_id, case_id, round, verdict, speedup, speedup_lo, speedup_hi, tokens, cost)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9))sql");
    Statement insert = db.prepare(R"sql(
INSERT INTO results (run_id, case_id, level, verdict, speedup, speedup_lo, speedup_hi, cost, tokens_in,
                     tokens_out, cheat_rule, execution, samples_n, samples_passed, baseline, sol)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16))sql");
    for (const CaseResult& r : loaded.results) {
      insert.bind(1, run_id).bind(2, r.case_id).bind(3, std::string(report::level_of(r.case_id)));
      insert.bind(4, std::string(to_string(r.verdict)));
      if (r.execution == "device" && r.performance) {
        insert.bind(5, r.performance->speedup.median);
        if (const auto& ci = r.performance->speedup.ci95) insert.bind(6, ci->lo).bind(7, ci->hi);
        if (const auto& roof = r.performance->roofline; roof && roof->sound() && roof->sol)
          insert.bind(16, *roof->sol);
      }
      std::optional<double> cost;
      std::optional<std::int64_t> tokens_in, tokens_out;
      if (r.generation) {
        cost = r.generation->cost;
        tokens_in = r.generation->tokens_in;
        tokens_out = r.generation->tokens_out;
      }
      if (r.samples) {  // every sample's agent, not only the chosen one
        cost = r.samples->cost;
        tokens_in = r.samples->tokens_in;
        tokens_out = r.samples->tokens_out;
        insert.bind(13, r.samples->n).bind(14, r.samples->passed);
      }
      insert.bind(8, cost).bind(9, tokens_in).bind(10, tokens_out);
      if (r.cheat) insert.bind(11, r.cheat->rule);
      insert.bind(12, r.execution).bind(15, r.baseline ? 1 : 0);
      insert.run();
      for (const RoundRecord& round : r.rounds) {
        insert_round.bind(1, run_id).bind(2, r.case_id).bind(3, round.round);
        insert_round.bind(4, std::string(to_string(round.verdict)));
        if (r.execution == "device" && round.speedup) {
          insert_round.bind(5, *round.speedup);
          if (round.speedup_ci95)
            insert_round.bind(6, round.speedup_ci95->lo).bind(7, round.speedup_ci95->hi);
        }
        insert_round.bind(8, round.tokens).bind(9, round.cost);
        insert_round.run();
      }
    }
    tx.commit();
    out.action = existing ? IndexAction::kUpdated : IndexAction::kAdded;
    out.results = static_cast<int>(loaded.results.size());
    return out;
  } catch (const SqlError& e) {
    return std::unexpected(fmt::format("{}: {}", run_dir.string(), e.what()));
  }
}

}  // namespace kgym::history

namespace kgym::history {

std::string index_after_run(const std::filesystem::path& db_file, const std::filesystem::path& run_dir) {
  auto db = open_history(db_file);
  if (!db) return fmt::format("kgym: warning: the run was not indexed: {}", db.error());
  auto indexed = index_run(*db, run_dir);
  if (!indexed)
    return fmt::format("kgym: warning: the run was not indexed into {}: {}", db_file.string(),
                       indexed.error());
  return fmt::format("history: {} results of this run indexed into {}", indexed->results, db_file.string());
}

}  // namespace kgym::history
