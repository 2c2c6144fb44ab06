#pragma once
// One `kgym run` from a validated config to its summary: pre-flight checks
// (dataset, selector, interpreter) before any work, the run directory and its
// lock, run.json, the scheduler, and summary.json/summary.md at the end —
// also when interrupted.
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "run/printer.h"

namespace kgym::run {

struct CampaignOptions {
  ConfigSource source;  // recorded in run.json for --resume
  std::optional<std::filesystem::path> resume_dir;
  std::vector<std::string> kgym_argv0;  // how to re-run this binary
  std::optional<int> interrupt_fd;
  // With resume_dir: accept a config that differs from the recorded one and
  // regenerate every unfinished case (a generated candidate is not reused).
  bool force = false;
  // Called once the run's summary is written (also after an interrupt),
  // with the run directory; returns a line to print ("" for none). `kgym
  // run` indexes the run into the history database here (docs/history.md).
  std::function<std::string(const std::filesystem::path& run_dir)> after_run;
};

// kOutputFailed: a result or the summary could not be written (disk full,
// file size limit); what was written is kept and a resume finishes the run.
enum class CampaignStatus { kAllPassed, kSomeFailed, kUsageError, kInterrupted, kOutputFailed };

// Runs the campaign. Errors found before any work (bad selector, no usable
// Python, run dir locked) print one clear message and return kUsageError.
CampaignStatus run_campaign(const Config& config, const CampaignOptions& options, Printer& printer);

// The ConfigSource recorded in RUN_DIR/run.json (for `--resume` without
// `--config`); an error naming run.json and the fix when it is missing,
// damaged or from a newer kgym.
std::expected<ConfigSource, std::string> recorded_config_source(const std::filesystem::path& run_dir);

}  // namespace kgym::run
