#pragma once
// The effective configuration as JSON (recorded in run.json) and the keys in
// which two recorded configurations differ, so `kgym run --resume` can
// refuse a changed config unless --force says so.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.h"

namespace kgym {

// The verifier's configuration by its config keys (verifier.timeout_sec,
// verifier.timing.budget_sec, ...): run.json's "verifier" and the "config"
// of a verification's request.json are both this. execution,
// execution_auto and warm_workers are written only away from their
// defaults.
nlohmann::json verifier_record(const VerifierConfig& verifier);
// Its inverse: a missing key keeps its default; a value of the wrong type
// throws nlohmann::json::exception.
VerifierConfig verifier_from_record(const nlohmann::json& record);

// Every key that decides what a case's result is, by its dotted config
// path ("verifier.timing.budget_sec"); paths are absolute.
nlohmann::json config_record(const Config& config);

// "verifier.call_timeout_sec: 60 -> 2" for each key whose value differs
// (missing on one side counts), in key order. Keys that only change how the
// run is carried out, not its results (concurrency, monitor.poll_sec), are
// not compared (nor verifier.warm_workers: how workers start).
std::vector<std::string> config_differences(const nlohmann::json& recorded, const nlohmann::json& current);

}  // namespace kgym
