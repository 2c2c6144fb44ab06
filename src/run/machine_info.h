#pragma once
// Facts about the machine a run used, for provenance in run.json and
// summary.json: CPU model, the cores this process may use, the threads the
// timed code gets, the torch version, the frequency governor and clocks of
// cpu0, the load average. Fields that cannot be read are null.
#include <string>

#include <nlohmann/json.hpp>

#include "core/config.h"

namespace kgym::run {

nlohmann::json machine_info(const Config& config, const std::string& torch_version);

// The 1, 5 and 15 minute load averages, or null.
nlohmann::json load_average();

}  // namespace kgym::run
