// The case on the roofline (docs/roofline.md): the reference worker counts
// the problem's work once the timing is over (one forward, untimed, at the
// verified sizes), and the two sides' medians are set against the roofs of
// the cores the workers ran on, as `kgym run` or `kgym roofline` cached them.
#include <fmt/format.h>

#include "core/backend.h"
#include "util/cpu_set.h"
#include "verify/roofline.h"
#include "verify/verification.h"
#include "worker/candidate_sandbox.h"

namespace kgym::verify::detail {

void Verification::place_on_roofline() {
  Performance& perf = *result_.performance;
  worker::Message request;
  request.header = {{"op", "work"}, {"seed", derive_seed(req_.run_seed, 1000)}};
  auto reply = call(Role::kReference, request, "counting the problem's work");
  if (!reply) {
    note(fmt::format("roofline: the problem's work was not counted: {}", reply.error().reason));
    return;
  }
  WorkCount work;
  try {
    work = work_from_json(reply->header.at("work"));
  } catch (const nlohmann::json::exception& e) {
    note(fmt::format("roofline: the reference's work count is malformed: {}", e.what()));
    return;
  }
  const std::string precision = roof_precision(work.float_dtypes);
  std::optional<DeviceRoofs> roofs;
  const std::set<int> cores(reference_cores_.begin(), reference_cores_.end());
  if (backend_of(req_.config).devices_are_cores && !cores.empty())
    roofs = cached_cpu_roofs(cores, worker::kgym_cache_root());
  if (!roofs) {
    Roofline missing;
    missing.work = std::move(work);
    missing.missing =
        backend_of(req_.config).devices_are_cores
            ? fmt::format(
                  "no roofs are cached for cores {}: `kgym run` measures them, or `kgym roofline --device "
                  "{}`",
                  util::format_cpu_list(cores), util::format_cpu_list(cores))
            : fmt::format("the {} backend's roofs are not measured (docs/roofline.md)", req_.config.backend);
    note("roofline: " + missing.missing);
    perf.roofline = std::move(missing);
    return;
  }
  perf.roofline = kgym::place_on_roofline(work, roofs_used(*roofs, precision, work.bytes()),
                                          perf.candidate.median_ms, perf.reference.median_ms);
  const Roofline& r = *perf.roofline;
  note(fmt::format(
      "roofline: {} bytes, {:.4g} FLOPs ({}), intensity {:.3g} FLOP/byte, {}-bound; limit {:.4g} ms at "
      "{:.1f} GB/s ({}) and {:.1f} GFLOP/s ({}); sol candidate {}, reference {}",
      work.bytes(), work.flops, r.work.counter, r.intensity, r.bound, r.limit_ms, r.roofs->bandwidth_gbs,
      r.roofs->memory_level, r.roofs->peak_gflops, precision, r.sol ? fmt::format("{:.3f}", *r.sol) : "-",
      r.reference_sol ? fmt::format("{:.3f}", *r.reference_sol) : "-"));
  if (!r.work.uncounted.empty()) {
    std::string ops;
    for (const auto& [op, calls] : r.work.uncounted)
      ops += fmt::format("{}{} ({})", ops.empty() ? "" : ", ", op, calls);
    note("roofline: ops without a FLOP formula, not counted: " + ops);
  }
  for (const std::string& error : r.errors) note("roofline: ERROR " + error);
}

}  // namespace kgym::verify::detail
