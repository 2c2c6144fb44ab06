#include "core/record_files.h"

#include <system_error>

#include <fmt/format.h>

#include "core/case_paths.h"
#include "util/fs.h"

namespace kgym {

using nlohmann::json;

std::string newer_schema_message(const std::filesystem::path& file, const json& record, int understood) {
  auto it = record.find("schema_version");
  if (!record.is_object() || it == record.end() || !it->is_number_integer() ||
      it->get<long long>() <= understood)
    return "";
  return fmt::format(
      "{} was written by a newer kgym (schema_version {}; this kgym reads up to {}): open the run with "
      "that kgym or a newer one (`kgym --version` says which this is)",
      file.string(), it->get<long long>(), understood);
}

std::expected<json, std::string> read_run_record(const std::filesystem::path& run_dir) {
  std::filesystem::path file = RunPaths{run_dir}.run_record();
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    return std::unexpected(
        fmt::format("{} is not a kgym run directory: it has no run.json", run_dir.string()));
  auto text = util::read_file(file);
  if (!text) return std::unexpected(text.error());
  json record = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object() || !record.contains("schema_version")) {
    return std::unexpected(fmt::format(
        "{} is damaged ({}); it records how the run was started (configuration, seed), so the run cannot be "
        "resumed without it: restore it from a copy, or start a new run; `kgym report {}` still "
        "summarizes the results already written",
        file.string(),
        record.is_discarded() ? "not valid JSON: truncated or overwritten" : "not a run record",
        run_dir.string()));
  }
  if (std::string newer = newer_schema_message(file, record, kRunRecordSchemaVersion); !newer.empty())
    return std::unexpected(newer);
  return record;
}

std::expected<CaseResult, std::string> read_result_record(const std::filesystem::path& file) {
  auto text = util::read_file(file);
  if (!text) return std::unexpected(text.error());
  try {
    return result_from_json(nlohmann::json::parse(*text));
  } catch (const nlohmann::json::exception& e) {
    return std::unexpected(fmt::format("not a valid result record: {}", e.what()));
  }
}

std::string damaged_result_message(const std::filesystem::path& file, const std::string& problem) {
  return fmt::format("{}: {}; {}", file.string(), problem, damaged_result_fix(file));
}

std::string damaged_result_fix(const std::filesystem::path& file) {
  return fmt::format(
      "move it aside (mv {0} {0}.damaged) and `kgym run --resume RUN_DIR` runs its case again, or restore "
      "it from a copy",
      file.string());
}

std::string damaged_state_fix(const std::filesystem::path& run_dir) {
  return fmt::format(
      "state.json is rebuilt from the results: `kgym run --resume {0}` rewrites it (a finished run ends at "
      "once), and `kgym report {0}` summarizes the results without it",
      run_dir.string());
}

}  // namespace kgym
