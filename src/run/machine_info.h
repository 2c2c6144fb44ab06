#pragma once
// Facts about the machine a run used, for provenance in run.json and
// summary.json. Fields that cannot be read are null.
#include <nlohmann/json.hpp>

namespace kgym::run {

nlohmann::json machine_info();

}  // namespace kgym::run
