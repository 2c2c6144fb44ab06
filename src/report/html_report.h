#pragma once
// report.html: one self-contained page per run — inline CSS and SVG, no
// script, no font, no network reference — for people to look at and share.
// Sections (element ids): #headline (correct %, cheat %, fast_1/1.5/2 with
// their 95% intervals, geomean speedup), #plots (speedup per case, fast_p
// curve, verdicts per level, time per phase), #cases (one row per case with
// relative links to its files), #provenance (machine, versions, config,
// seeds). Every text from a record is escaped.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "report/summary.h"

namespace kgym::report {

struct CaseFile {
  std::string label;          // "SPEC.md", "agent log", "candidate"...
  std::string relative_path;  // from the run directory, '/'-separated
};

struct HtmlReportInput {
  const Summary* summary = nullptr;
  const RunInfo* info = nullptr;
  const std::vector<CaseResult>* results = nullptr;    // for timings
  std::map<std::string, std::vector<CaseFile>> files;  // case id -> files that exist
  nlohmann::json run_record;                           // RUN_DIR/run.json, null when unreadable
  std::string config_text;                             // the configuration file, "" when unreadable
};

// The files of each case that exist under `run_dir` (SPEC.md, prompt.md,
// agent.log, candidate/model_new.py, generation.json, verify.log,
// result.json), in that order.
std::map<std::string, std::vector<CaseFile>> find_case_files(const std::filesystem::path& run_dir,
                                                             const std::vector<std::string>& case_ids);

// The page, as UTF-8 text (also well-formed XML). The page is meant to be
// shared, so the values of `agent.env` (often API keys) are redacted from
// the configuration file and from `--set agent.env.NAME=VALUE` in run.json.
std::string html_report(const HtmlReportInput& input);

// `yaml_text` with every value below an `env:` key replaced by
// "<redacted>" (block and flow style); other lines unchanged.
std::string redact_env_values(std::string_view yaml_text);

// `path` with every byte outside [A-Za-z0-9/._~-] percent-encoded, for href.
std::string url_path(std::string_view path);

}  // namespace kgym::report
