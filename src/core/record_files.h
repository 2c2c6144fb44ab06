#pragma once
// The records of a run directory that outlive a run — run.json, state.json,
// result.json — as every command reads them back, and what the user is told
// when one cannot be read: each message names the file, says what is wrong
// with it and how to get past it (docs/robustness.md). A record from a
// newer kgym is refused rather than misread.
#include <expected>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace kgym {

// run.json's layout (run/campaign.cc writes it); newer ones are refused.
inline constexpr int kRunRecordSchemaVersion = 1;

// RUN_DIR/run.json as an object. The error names the file and the fix when
// it is missing (not a run directory), not valid JSON, or from a newer kgym.
std::expected<nlohmann::json, std::string> read_run_record(const std::filesystem::path& run_dir);

// The message for a record whose "schema_version" is above `understood`,
// e.g. "FILE was written by a newer kgym (schema_version 2; this kgym reads
// up to 1): open the run with that kgym or a newer one"; "" when it is not.
std::string newer_schema_message(const std::filesystem::path& file, const nlohmann::json& record,
                                 int understood);

// A result record read back: a case's result.json, or the build_result.json
// or verify_result.json a build or a verification left. The error says what
// is wrong ("not a valid result record: ..."), not which file.
std::expected<CaseResult, std::string> read_result_record(const std::filesystem::path& file);

// The fix appended after "FILE: <what is wrong>" for a result.json that
// cannot be read: move it aside, and a resume runs its case again.
std::string damaged_result_fix(const std::filesystem::path& file);

// "FILE: PROBLEM; FIX": how every command tells of a result.json it cannot use.
std::string damaged_result_message(const std::filesystem::path& file, const std::string& problem);

// The same for state.json: it is derived, and a resume rebuilds it.
std::string damaged_state_fix(const std::filesystem::path& run_dir);

}  // namespace kgym
