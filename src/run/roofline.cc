#include "run/roofline.h"

#include <unistd.h>

#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/clock.h"
#include "util/cpu_set.h"
#include "util/fs.h"
#include "util/json_text.h"
#include "util/sha256.h"

namespace kgym::run {
namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("model name")) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown cpu";
}

nlohmann::json figure_json(const util::RoofFigure& f) {
  return {{"median", f.median}, {"min", f.min}, {"max", f.max}, {"runs", f.runs}};
}

util::RoofFigure figure_from(const nlohmann::json& j) {
  util::RoofFigure f;
  f.median = j.at("median").get<double>();
  f.min = j.at("min").get<double>();
  f.max = j.at("max").get<double>();
  f.runs = j.at("runs").get<std::vector<double>>();
  return f;
}

}  // namespace

nlohmann::json roofs_json(const DeviceRoofs& d) {
  const util::Roofs& r = d.roofs;
  return {
      {"device", d.device},
      {"cores", util::format_cpu_list(r.cores)},
      {"memory_bandwidth_gbs", figure_json(r.bandwidth_gbs)},
      {"peak_gflops",
       {{"float32", figure_json(r.float32_gflops)}, {"float64", figure_json(r.float64_gflops)}}},
      {"method",
       {{"version", kRoofsMethodVersion},
        {"bandwidth",
         fmt::format("STREAM triad a[i] = b[i] + s*c[i] over {} MB of doubles (last-level cache {} MB), one "
                     "thread per core, 24 bytes per element, best of 5 passes",
                     r.working_set_bytes >> 20, r.last_level_cache_bytes >> 20)},
        {"peak",
         fmt::format("independent fused multiply-adds on {} vectors, one thread per core, 2 operations "
                     "per lane",
                     r.isa)},
        {"isa", r.isa},
        {"runs", r.bandwidth_gbs.runs.size()},
        {"figure", "median of the runs"}}},
      {"measured_at", d.measured_at},
      {"from_cache", d.from_cache}};
}

std::expected<DeviceRoofs, std::string> cpu_device_roofs(const std::string& device,
                                                         const std::filesystem::path& cache_dir, bool fresh,
                                                         int runs, std::size_t working_set_bytes) {
  std::set<int> allowed = util::allowed_cpus();
  std::set<int> cores;
  if (device == "all") {
    cores = allowed;
  } else if (auto parsed = util::parse_cpu_list(device)) {
    cores = *parsed;
  } else {
    return std::unexpected(fmt::format("'{}' is not a cpu device (a core list such as 0-3, or all)", device));
  }
  for (int core : cores) {
    if (!allowed.contains(core))
      return std::unexpected(
          fmt::format("core {} of device '{}' is not one this process may use", core, device));
  }
  if (cores.empty()) return std::unexpected(fmt::format("device '{}' names no core", device));

  DeviceRoofs out;
  out.device = device;
  std::string key = util::sha256_hex(fmt::format("roofs v{}\n{}\n{}\n{}\n{}", kRoofsMethodVersion,
                                                 cpu_model_name(), util::format_cpu_list(cores), runs,
                                                 working_set_bytes))
                        .substr(0, 16);
  out.cache_file = cache_dir / "roofs" / (key + ".json");
  if (!fresh) {
    if (auto text = util::read_file(out.cache_file)) {
      nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
      try {
        if (!j.is_discarded() && j.at("method").at("version").get<int>() == kRoofsMethodVersion) {
          out.roofs.cores = cores;
          out.roofs.isa = j.at("method").at("isa").get<std::string>();
          out.roofs.bandwidth_gbs = figure_from(j.at("memory_bandwidth_gbs"));
          out.roofs.float32_gflops = figure_from(j.at("peak_gflops").at("float32"));
          out.roofs.float64_gflops = figure_from(j.at("peak_gflops").at("float64"));
          out.roofs.working_set_bytes = j.value("working_set_bytes", std::size_t{0});
          out.roofs.last_level_cache_bytes = j.value("last_level_cache_bytes", std::size_t{0});
          out.measured_at = j.value("measured_at", "");
          out.from_cache = true;
          return out;
        }
      } catch (const nlohmann::json::exception&) {
        // A damaged entry is measured again.
      }
    }
  }
  out.roofs = util::measure_roofs(cores, runs, working_set_bytes);
  out.measured_at = util::iso8601_utc(util::unix_now());
  nlohmann::json j = roofs_json(out);
  j["working_set_bytes"] = out.roofs.working_set_bytes;
  j["last_level_cache_bytes"] = out.roofs.last_level_cache_bytes;
  j["cpu_model"] = cpu_model_name();
  if (auto made = util::make_dirs(out.cache_file.parent_path()); made)
    (void)util::write_file_atomic(out.cache_file, util::json_text(j, 2) + "\n");
  return out;
}

}  // namespace kgym::run
