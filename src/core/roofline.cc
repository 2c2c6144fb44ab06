#include "core/roofline.h"

#include <algorithm>

#include <fmt/format.h>

#include "util/json_optional.h"

namespace kgym {

std::string roof_precision(const std::vector<std::string>& float_dtypes) {
  return std::ranges::find(float_dtypes, "float64") != float_dtypes.end() ? "float64" : "float32";
}

Roofline place_on_roofline(const WorkCount& work, const RoofsUsed& roofs, double candidate_ms,
                           double reference_ms) {
  Roofline r;
  r.work = work;
  r.roofs = roofs;
  const double bytes = static_cast<double>(work.bytes());
  r.intensity = bytes > 0 ? work.flops / bytes : 0;
  // GB/s and GFLOP/s are bytes and FLOPs per nanosecond.
  const double memory_ms = roofs.bandwidth_gbs > 0 ? bytes / roofs.bandwidth_gbs / 1e6 : 0;
  const double compute_ms = roofs.peak_gflops > 0 ? work.flops / roofs.peak_gflops / 1e6 : 0;
  r.bound = compute_ms > memory_ms ? "compute" : "memory";
  r.limit_ms = std::max(memory_ms, compute_ms);
  auto side = [&](double ms, std::optional<double>& sol, std::optional<double>& gflops, const char* who) {
    if (ms <= 0 || r.limit_ms <= 0) return;
    sol = r.limit_ms / ms;
    gflops = work.flops / ms / 1e6;
    if (*sol > 1)
      r.errors.push_back(
          fmt::format("the {} ran at {:.2f}x the roofline's limit ({:.4g} ms against {:.4g} ms): the work "
                      "count or the roof "
                      "is wrong, and this sol is no score",
                      who, *sol, ms, r.limit_ms));
  };
  side(candidate_ms, r.sol, r.achieved_gflops, "candidate");
  side(reference_ms, r.reference_sol, r.reference_achieved_gflops, "reference");
  return r;
}

nlohmann::json to_json(const WorkCount& w) {
  return {{"bytes", w.bytes()},
          {"bytes_by",
           {{"inputs", w.input_bytes}, {"parameters", w.parameter_bytes}, {"outputs", w.output_bytes}}},
          {"flops", w.flops},
          {"flops_torch_counter", w.flops_torch_counter},
          {"counter", w.counter},
          {"uncounted_ops", w.uncounted},
          {"float_dtypes", w.float_dtypes}};
}

WorkCount work_from_json(const nlohmann::json& j) {
  WorkCount w;
  const nlohmann::json& by = j.at("bytes_by");
  w.input_bytes = by.at("inputs").get<std::int64_t>();
  w.parameter_bytes = by.at("parameters").get<std::int64_t>();
  w.output_bytes = by.at("outputs").get<std::int64_t>();
  w.flops = j.at("flops").get<double>();
  w.flops_torch_counter = j.value("flops_torch_counter", 0.0);
  w.counter = j.value("counter", "");
  w.uncounted = j.value("uncounted_ops", std::map<std::string, std::int64_t>{});
  w.float_dtypes = j.value("float_dtypes", std::vector<std::string>{});
  return w;
}

nlohmann::json to_json(const Roofline& r) {
  nlohmann::json j = to_json(r.work);
  if (!r.roofs) {
    j["missing"] = r.missing;
    return j;
  }
  j["intensity"] = r.intensity;
  j["bound"] = r.bound;
  j["limit_ms"] = r.limit_ms;
  j["sol"] = util::optional_json(r.sol);
  j["reference_sol"] = util::optional_json(r.reference_sol);
  j["achieved_gflops"] = util::optional_json(r.achieved_gflops);
  j["reference_achieved_gflops"] = util::optional_json(r.reference_achieved_gflops);
  j["roofs"] = {{"cores", r.roofs->cores},
                {"memory_bandwidth_gbs", r.roofs->bandwidth_gbs},
                {"memory_level", r.roofs->memory_level},
                {"peak_gflops", r.roofs->peak_gflops},
                {"precision", r.roofs->precision},
                {"measured_at", r.roofs->measured_at}};
  j["errors"] = r.errors;
  return j;
}

Roofline roofline_from_json(const nlohmann::json& j) {
  Roofline r;
  r.work = work_from_json(j);
  if (auto roofs = j.find("roofs"); roofs != j.end() && roofs->is_object()) {
    r.roofs = RoofsUsed{.cores = roofs->value("cores", ""),
                        .bandwidth_gbs = roofs->at("memory_bandwidth_gbs").get<double>(),
                        .memory_level = roofs->value("memory_level", "main memory"),
                        .peak_gflops = roofs->at("peak_gflops").get<double>(),
                        .precision = roofs->value("precision", ""),
                        .measured_at = roofs->value("measured_at", "")};
    r.intensity = j.at("intensity").get<double>();
    r.bound = j.at("bound").get<std::string>();
    r.limit_ms = j.at("limit_ms").get<double>();
    r.sol = util::optional_at<double>(j, "sol");
    r.reference_sol = util::optional_at<double>(j, "reference_sol");
    r.achieved_gflops = util::optional_at<double>(j, "achieved_gflops");
    r.reference_achieved_gflops = util::optional_at<double>(j, "reference_achieved_gflops");
    r.errors = j.value("errors", std::vector<std::string>{});
  } else {
    r.missing = j.value("missing", "");
  }
  return r;
}

}  // namespace kgym
