// `kgym roofline [--device D]... [--config FILE] [--runs N] [--fresh] [--json]`:
// the machine's roofs per device (docs/roofline.md): sustained memory
// bandwidth and peak floating-point rate per precision, measured on the
// device's cores or read from the cache `kgym run` fills.
#include <fmt/format.h>

#include "app/command.h"
#include "core/backend.h"
#include "core/config.h"
#include "util/cpu_set.h"
#include "util/json_text.h"
#include "verify/roofline.h"
#include "worker/candidate_sandbox.h"

namespace kgym::app {
namespace {

struct RooflineArgs {
  std::vector<std::string> devices;
  std::string config_file;
  int runs = 5;
  bool fresh = false;
  bool json = false;
};

std::string figure_line(std::string_view what, const util::RoofFigure& f, std::string_view unit) {
  return fmt::format("  {:<24} {:>9.1f} {:<8} (best of {} runs; median {:.1f}, lowest {:.1f})\n", what, f.max,
                     unit, f.runs.size(), f.median, f.min);
}

int run_roofline(const RooflineArgs& args) {
  std::vector<std::string> devices = args.devices;
  if (!args.config_file.empty()) {
    auto config = load_config(ConfigSource{args.config_file, {}, {}});
    if (!config) {
      fmt::print(stderr, "{}\n", config.error().message);
      return kExitUsage;
    }
    if (!backend_of(config->verifier).devices_are_cores) {
      fmt::print(stderr, "kgym roofline: backend {}: only cpu devices are measured (docs/roofline.md)\n",
                 config->verifier.backend);
      return kExitUsage;
    }
    if (devices.empty()) devices = config->devices;
  }
  if (devices.empty()) devices = {"all"};
  nlohmann::json list = nlohmann::json::array();
  for (const std::string& device : devices) {
    auto roofs = verify::cpu_device_roofs(device, worker::kgym_cache_root(), args.fresh, {.runs = args.runs});
    if (!roofs) {
      fmt::print(stderr, "kgym roofline: {}\n", roofs.error());
      return kExitUsage;
    }
    if (args.json) {
      list.push_back(verify::roofs_json(*roofs));
      continue;
    }
    const util::Roofs& r = roofs->roofs;
    fmt::print("device {} (cores {}), {}, measured {}{}\n", device, util::format_cpu_list(r.cores), r.isa,
               roofs->measured_at, roofs->from_cache ? " (from the cache)" : "");
    fmt::print("{}", figure_line("memory bandwidth", r.bandwidth_gbs, "GB/s"));
    for (const util::CacheRoof& c : r.caches)
      fmt::print("{}", figure_line(fmt::format("L{} ({} KB) bandwidth", c.level, c.capacity_bytes >> 10),
                                   c.bandwidth_gbs, "GB/s"));
    fmt::print("{}", figure_line("peak float32", r.float32_gflops, "GFLOP/s"));
    fmt::print("{}", figure_line("peak float64", r.float64_gflops, "GFLOP/s"));
    if (r.gemm_float32_gflops) {
      fmt::print("{}", figure_line(fmt::format("BLAS sgemm n={}", util::kGemmSize), *r.gemm_float32_gflops,
                                   "GFLOP/s"));
      fmt::print("{}", figure_line(fmt::format("BLAS dgemm n={}", util::kGemmSize), *r.gemm_float64_gflops,
                                   "GFLOP/s"));
      fmt::print("  ({})\n", r.blas);
    } else {
      fmt::print("  no BLAS loaded (libopenblas.so.0, libblas.so.3): no GEMM figure\n");
    }
    fmt::print("  ridge point (float32): {:.2f} FLOP/byte\n",
               verify::peak_gflops(r, "float32") / r.bandwidth_gbs.max);
    if (roofs->contended())
      fmt::print(
          "  other processes took {:.0f} % of these cores while they were measured: the figures are low "
          "and not cached\n",
          *r.foreign_cpu_share * 100);
  }
  if (args.json)
    fmt::print("{}\n", util::json_text({{"kgym_json", 1}, {"command", "roofline"}, {"devices", list}}, 2));
  return kExitOk;
}

}  // namespace

Command add_roofline_command(CLI::App& root) {
  auto args = std::make_shared<RooflineArgs>();
  CLI::App* app = root.add_subcommand(
      "roofline", "The machine's roofs per device: memory bandwidth and peak FLOP/s (measured or cached)");
  app->add_option("--device", args->devices,
                  "a cpu device, a core list such as 0-3 or all (repeatable; default: "
                  "the config's devices, else all)");
  app->add_option("--config", args->config_file, "take the devices from this config");
  app->add_option("--runs", args->runs, "measurements per figure; the best is the roof (default 5)")
      ->check(CLI::Range(1, 50));
  app->add_flag("--fresh", args->fresh, "measure again, replacing the cached figures");
  app->add_flag("--json", args->json, "print the roofs as one JSON object");
  return {app, [args] { return run_roofline(*args); }};
}

}  // namespace kgym::app
