#pragma once
// The machine's roofs per device (docs/roofline.md): measured by
// util/roofs.h on the device's cores, or read from a cache keyed by the
// CPU model, the cores, the ISA the FMA loop ran on and the method's
// version, under the kgym cache directory (roofs/<key>.json). `kgym run`
// records them in run.json at its start (cpu backend); `kgym roofline`
// prints them.
#include <expected>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "util/roofs.h"

namespace kgym::run {

// Bumped when the measurement changes: an older cache entry is measured again.
inline constexpr int kRoofsMethodVersion = 1;

struct DeviceRoofs {
  std::string device;  // as the config names it: "0-3", "all"
  util::Roofs roofs;
  std::string measured_at;  // ISO 8601 UTC
  bool from_cache = false;
  std::filesystem::path cache_file;
};

// The roofs of a cpu device (a core list, or "all": the cores this process
// may use): from `cache_dir` unless `fresh`, else measured (and cached).
// `working_set_bytes` as for util::measure_roofs (tests only).
std::expected<DeviceRoofs, std::string> cpu_device_roofs(const std::string& device,
                                                         const std::filesystem::path& cache_dir, bool fresh,
                                                         int runs = 5, std::size_t working_set_bytes = 0);

// run.json's and `kgym roofline --json`'s form: the figures with their
// spread and how they were measured.
nlohmann::json roofs_json(const DeviceRoofs& d);

}  // namespace kgym::run
