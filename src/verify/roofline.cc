#include "verify/roofline.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/clock.h"
#include "util/cpu_set.h"
#include "util/fs.h"
#include "util/json_optional.h"
#include "util/json_text.h"
#include "util/sha256.h"

namespace kgym::verify {
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

nlohmann::json cache_roofs_json(const std::vector<util::CacheRoof>& caches) {
  nlohmann::json list = nlohmann::json::array();
  for (const util::CacheRoof& c : caches) {
    nlohmann::json entry = figure_json(c.bandwidth_gbs);
    entry["level"] = c.level;
    entry["capacity_bytes"] = c.capacity_bytes;
    list.push_back(std::move(entry));
  }
  return list;
}

util::RoofFigure figure_from(const nlohmann::json& j) {
  util::RoofFigure f;
  f.median = j.at("median").get<double>();
  f.min = j.at("min").get<double>();
  f.max = j.at("max").get<double>();
  f.runs = j.at("runs").get<std::vector<double>>();
  return f;
}

std::filesystem::path cache_file(const std::filesystem::path& cache_dir, const std::set<int>& cores, int runs,
                                 std::size_t working_set_bytes) {
  std::string key =
      util::sha256_hex(fmt::format("roofs v{}\n{}\n{}\n{}\n{}", kRoofsMethodVersion, cpu_model_name(),
                                   util::format_cpu_list(cores), runs, working_set_bytes))
          .substr(0, 16);
  return cache_dir / "roofs" / (key + ".json");
}

std::optional<DeviceRoofs> read_cache(const std::filesystem::path& file, const std::set<int>& cores) {
  auto text = util::read_file(file);
  if (!text) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  try {
    if (j.is_discarded() || j.at("method").at("version").get<int>() != kRoofsMethodVersion)
      return std::nullopt;
    DeviceRoofs out;
    out.cache_file = file;
    out.device = util::format_cpu_list(cores);
    out.roofs.cores = cores;
    out.roofs.isa = j.at("method").at("isa").get<std::string>();
    out.roofs.bandwidth_gbs = figure_from(j.at("memory_bandwidth_gbs"));
    out.roofs.float32_gflops = figure_from(j.at("peak_gflops").at("float32"));
    out.roofs.float64_gflops = figure_from(j.at("peak_gflops").at("float64"));
    if (auto gemm = j.find("blas_gemm_gflops"); gemm != j.end() && gemm->is_object()) {
      out.roofs.blas = gemm->value("library", "");
      out.roofs.gemm_float32_gflops = figure_from(gemm->at("float32"));
      out.roofs.gemm_float64_gflops = figure_from(gemm->at("float64"));
    }
    for (const nlohmann::json& c : j.at("cache_bandwidth_gbs"))
      out.roofs.caches.push_back(
          {c.at("level").get<int>(), c.at("capacity_bytes").get<std::size_t>(), figure_from(c)});
    out.roofs.working_set_bytes = j.value("working_set_bytes", std::size_t{0});
    out.roofs.last_level_cache_bytes = j.value("last_level_cache_bytes", std::size_t{0});
    out.measured_at = j.value("measured_at", "");
    out.measured_unix = j.value("measured_unix", 0.0);
    out.roofs.foreign_cpu_share = util::optional_at<double>(j, "foreign_cpu_share");
    out.from_cache = true;
    return out;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a damaged entry is measured again
  }
}

}  // namespace

std::optional<DeviceRoofs> cached_cpu_roofs(const std::set<int>& cores,
                                            const std::filesystem::path& cache_dir) {
  return read_cache(cache_file(cache_dir, cores, kRoofsRuns, 0), cores);
}

double peak_gflops(const util::Roofs& r, const std::string& precision) {
  const bool f64 = precision == "float64";
  double peak = f64 ? r.float64_gflops.max : r.float32_gflops.max;
  const auto& gemm = f64 ? r.gemm_float64_gflops : r.gemm_float32_gflops;
  return gemm ? std::max(peak, gemm->max) : peak;
}

RoofsUsed roofs_used(const DeviceRoofs& d, const std::string& precision, std::int64_t bytes) {
  const util::Roofs& r = d.roofs;
  RoofsUsed used{.cores = util::format_cpu_list(r.cores),
                 .bandwidth_gbs = r.bandwidth_gbs.max,
                 .memory_level = "main memory",
                 .peak_gflops = peak_gflops(r, precision),
                 .precision = precision,
                 .measured_at = d.measured_at};
  // The smallest level that holds the call's bytes: its inputs were copied
  // there just before the call, so that level's bandwidth is the bound.
  for (const util::CacheRoof& c : r.caches) {
    if (bytes >= 0 && static_cast<std::size_t>(bytes) <= c.capacity_bytes && c.bandwidth_gbs.max > 0) {
      used.bandwidth_gbs = c.bandwidth_gbs.max;
      used.memory_level = fmt::format("L{}", c.level);
      break;
    }
  }
  return used;
}

nlohmann::json roofs_json(const DeviceRoofs& d) {
  const util::Roofs& r = d.roofs;
  return {
      {"device", d.device},
      {"cores", util::format_cpu_list(r.cores)},
      {"memory_bandwidth_gbs", figure_json(r.bandwidth_gbs)},
      {"cache_bandwidth_gbs", cache_roofs_json(r.caches)},
      {"peak_gflops",
       {{"float32", figure_json(r.float32_gflops)}, {"float64", figure_json(r.float64_gflops)}}},
      {"blas_gemm_gflops", r.gemm_float32_gflops
                               ? nlohmann::json{{"library", r.blas},
                                                {"n", util::kGemmSize},
                                                {"float32", figure_json(*r.gemm_float32_gflops)},
                                                {"float64", figure_json(*r.gemm_float64_gflops)}}
                               : nlohmann::json(nullptr)},
      {"method",
       {{"version", kRoofsMethodVersion},
        {"bandwidth",
         fmt::format("STREAM triad a[i] = b[i] + s*c[i] over {} MB of doubles (last-level cache {} MB), one "
                     "thread per core, 24 bytes per element, best of 5 passes; each cache level's over half "
                     "its capacity on these cores, repeated to 64 MB a pass",
                     r.working_set_bytes >> 20, r.last_level_cache_bytes >> 20)},
        {"peak",
         fmt::format("independent fused multiply-adds on {} vectors, one thread per core, 2 operations "
                     "per lane; a BLAS GEMM ({}) as a second figure; a case's roof is the higher",
                     r.isa, r.blas.empty() ? "none loaded" : r.blas)},
        {"isa", r.isa},
        {"runs", r.bandwidth_gbs.runs.size()},
        {"figure",
         "the roof is the best of the runs (what the machine did at least once: an upper bound, on a host "
         "whose other tenants may slow a run); the median and the lowest beside it"}}},
      {"measured_at", d.measured_at},
      {"foreign_cpu_share", util::optional_json(r.foreign_cpu_share)},
      {"from_cache", d.from_cache}};
}

std::expected<DeviceRoofs, std::string> cpu_device_roofs(const std::string& device,
                                                         const std::filesystem::path& cache_dir, bool fresh,
                                                         const RoofsOptions& options) {
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
  out.cache_file = cache_file(cache_dir, cores, options.runs, options.working_set_bytes);
  if (!fresh) {
    // An entry measured beside other work is measured again, once it is
    // kRemeasureContendedAfterS old (so that busy runs do not each pay for
    // another measurement).
    auto cached = read_cache(out.cache_file, cores);
    if (cached && (!cached->contended(options.contended_share) ||
                   util::unix_now() - cached->measured_unix < kRemeasureContendedAfterS)) {
      cached->device = device;
      return *cached;
    }
  }

  out.roofs = options.measure(cores, options.runs, options.working_set_bytes);
  out.measured_unix = util::unix_now();
  out.measured_at = util::iso8601_utc(out.measured_unix);
  nlohmann::json j = roofs_json(out);
  j["measured_unix"] = out.measured_unix;
  j["working_set_bytes"] = out.roofs.working_set_bytes;
  j["last_level_cache_bytes"] = out.roofs.last_level_cache_bytes;
  j["cpu_model"] = cpu_model_name();
  if (auto made = util::make_dirs(out.cache_file.parent_path()); made)
    (void)util::write_file_atomic(out.cache_file, util::json_text(j, 2) + "\n");
  return out;
}

}  // namespace kgym::verify
