#include "report/run_info.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/case_paths.h"
#include "core/record_files.h"
#include "core/run_state.h"
#include "util/clock.h"
#include "util/fs.h"

namespace kgym::report {
namespace {

using nlohmann::json;

std::optional<std::string> string_field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// A time written either as UNIX seconds or already as an ISO string.
std::optional<std::string> time_field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (it->is_number() && it->get<double>() > 0) return util::iso8601_utc(it->get<double>());
  if (it->is_string()) return it->get<std::string>();
  return std::nullopt;
}

// Parses an optional JSON file: nullopt when absent, a note when damaged.
std::optional<json> read_json(const std::filesystem::path& file, std::vector<std::string>& notes) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return std::nullopt;
  auto text = util::read_file(file);
  if (!text) {
    notes.push_back(text.error());
    return std::nullopt;
  }
  try {
    json j = json::parse(*text);
    if (!j.is_object()) throw json::type_error::create(302, "top level is not an object", &j);
    return j;
  } catch (const json::exception& e) {
    std::string fix =
        file.filename() == RunPaths::kState
            ? damaged_state_fix(file.parent_path())
            : "the report lacks what it recorded (configuration, machine); restore it from a copy";
    notes.push_back(fmt::format("{}: ignored, not valid JSON: {}; {}", file.string(), e.what(), fix));
    return std::nullopt;
  }
}

void apply_run_json(const json& j, RunInfo& info, std::set<std::string>& selected) {
  if (auto v = string_field(j, "run_dir")) info.run_dir = *v;
  info.started_at_iso = time_field(j, "started_at");
  info.finished_at_iso = time_field(j, "finished_at");
  info.config_path = string_field(j, "config_path");
  info.backend = string_field(j, "backend").value_or("");
  info.mode = string_field(j, "mode").value_or("");
  if (auto it = j.find("machine"); it != j.end()) info.machine = *it;
  for (const char* key : {"cases", "case_ids"}) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_array()) continue;
    for (const json& id : *it) {
      if (id.is_string()) selected.insert(id.get<std::string>());
    }
  }
}

}  // namespace

RecoveredRunInfo recover_run_info(const std::filesystem::path& run_dir, const LoadedResults& loaded) {
  RecoveredRunInfo out;
  for (const LoadError& e : loaded.errors) {
    if (e.path.filename() == CasePaths::kResult)
      out.errors.push_back(damaged_result_message(e.path, e.message));
  }
  out.notes = loaded.warnings;  // results of cases the run did not select
  RunInfo& info = out.info;
  info.run_dir = run_dir.string();
  std::set<std::string> selected(loaded.unfinished_case_ids.begin(), loaded.unfinished_case_ids.end());
  for (const CaseResult& r : loaded.results) selected.insert(r.case_id);
  if (auto j = read_json(RunPaths{run_dir}.run_record(), out.notes)) {
    std::string newer = newer_schema_message(RunPaths{run_dir}.run_record(), *j, kRunRecordSchemaVersion);
    if (!newer.empty()) out.errors.push_back(std::move(newer));
    apply_run_json(*j, info, selected);
  }
  if (info.backend.empty() && !loaded.results.empty()) info.backend = loaded.results.front().backend;
  if (info.mode.empty() && !loaded.results.empty()) info.mode = loaded.results.front().mode;

  std::optional<std::string> state_status;
  if (auto j = read_json(RunPaths{run_dir}.state(), out.notes)) {
    std::string newer = newer_schema_message(RunPaths{run_dir}.state(), *j, kStateSchemaVersion);
    if (!newer.empty()) out.errors.push_back(std::move(newer));
    try {
      RunState state = run_state_from_json(*j);
      state_status = state.status;
      for (const CaseState& c : state.cases) selected.insert(c.id);
      if (!info.started_at_iso && state.started_at > 0)
        info.started_at_iso = util::iso8601_utc(state.started_at);
      if (!info.finished_at_iso && state.status != "running" && state.updated_at > 0) {
        info.finished_at_iso = util::iso8601_utc(state.updated_at);
      }
    } catch (const json::exception& e) {
      out.notes.push_back(fmt::format("{}: ignored: {}", RunPaths{run_dir}.state().string(), e.what()));
    }
  }
  info.selected_case_ids.assign(selected.begin(), selected.end());
  std::size_t finished =
      std::count_if(info.selected_case_ids.begin(), info.selected_case_ids.end(), [&](const std::string& id) {
        return std::any_of(loaded.results.begin(), loaded.results.end(),
                           [&](const CaseResult& r) { return r.case_id == id; });
      });
  if (state_status) {
    info.status = *state_status;
  } else {
    info.status = finished < info.selected_case_ids.size() ? "interrupted" : "finished";
  }
  return out;
}

}  // namespace kgym::report
