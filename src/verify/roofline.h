#pragma once
// The machine's roofs per device (docs/roofline.md): measured by
// util/roofs.h on the device's cores, or read from a cache keyed by the
// CPU model, the cores, the ISA the FMA loop ran on and the method's
// version, under the kgym cache directory (roofs/<key>.json). `kgym run`
// records them in run.json at its start (cpu backend); `kgym roofline`
// prints them.
#include <expected>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/roofline.h"
#include "util/roofs.h"

namespace kgym::verify {

// Bumped when the measurement changes: an older cache entry is measured again.
inline constexpr int kRoofsMethodVersion = 4;
// A cached entry measured beside other work is measured again by a run that
// asks this long after it (seconds).
inline constexpr double kRemeasureContendedAfterS = 600;
// Runs per figure of the roofs a run records (and a verification reads).
inline constexpr int kRoofsRuns = 5;

struct DeviceRoofs {
  std::string device;  // as the config names it: "0-3", "all"
  util::Roofs roofs;
  std::string measured_at;  // ISO 8601 UTC
  double measured_unix = 0;
  bool from_cache = false;
  std::filesystem::path cache_file;
  // Other processes took more than util::kContendedRoofsShare of the cores
  // while these were measured: the figures may be low; cached, and measured
  // again by the next run that asks (a verification reads them as they are).
  bool contended(double share = util::kContendedRoofsShare) const {
    return roofs.foreign_cpu_share && *roofs.foreign_cpu_share > share;
  }
};

// How cpu_device_roofs measures, where it must.
struct RoofsOptions {
  int runs = kRoofsRuns;
  std::size_t working_set_bytes = 0;  // as for util::measure_roofs (tests only)
  // A cached entry measured while other processes took more than this
  // share of the cores is measured again once kRemeasureContendedAfterS old.
  double contended_share = util::kContendedRoofsShare;
  // The measurement (tests of the cache give a fake).
  std::function<util::Roofs(const std::set<int>& cores, int runs, std::size_t working_set_bytes)> measure =
      [](const std::set<int>& cores, int runs, std::size_t bytes) {
        return util::measure_roofs(cores, runs, bytes);
      };
};

// The roofs of a cpu device (a core list, or "all": the cores this process
// may use): from `cache_dir` unless `fresh`, else measured (and cached).
std::expected<DeviceRoofs, std::string> cpu_device_roofs(const std::string& device,
                                                         const std::filesystem::path& cache_dir, bool fresh,
                                                         const RoofsOptions& options = {});

// The roofs of exactly these cores as `kgym run` or `kgym roofline` cached
// them, or nullopt; never measures (a verification reads, a run measures).
std::optional<DeviceRoofs> cached_cpu_roofs(const std::set<int>& cores,
                                            const std::filesystem::path& cache_dir);

// The peak a case of `precision` gets: the best run of the FMA loop or of
// the BLAS GEMM, whichever is higher.
double peak_gflops(const util::Roofs& r, const std::string& precision);

// The roofs a problem of `precision` (each figure's best run: an upper bound) ("float32" | "float64") that
// moves `bytes` is drawn against: the bandwidth of the smallest cache level that holds them, else main
// memory's.
RoofsUsed roofs_used(const DeviceRoofs& d, const std::string& precision, std::int64_t bytes);

// run.json's and `kgym roofline --json`'s form: the figures with their
// spread and how they were measured.
nlohmann::json roofs_json(const DeviceRoofs& d);

}  // namespace kgym::verify
