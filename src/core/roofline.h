#pragma once
// A case on the roofline (docs/roofline.md): the problem's work, counted in
// the reference worker at the verified sizes and precision
// (boxed/kgym_worker_work.py), and where the candidate and the reference
// stand against the machine's roofs: the roofline's time for that work
// (`limit_ms`) and its share of each side's median time (`sol`, speed of
// light). Pure: the roofs come in, nothing is measured here.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kgym {

// What a kernel must at least do: the bytes it moves (every tensor input and
// the model's parameters and buffers read once, every output written once)
// and the FLOPs of the reference's forward.
struct WorkCount {
  std::int64_t input_bytes = 0;
  std::int64_t parameter_bytes = 0;
  std::int64_t output_bytes = 0;
  double flops = 0;
  double flops_torch_counter = 0;  // the part torch.utils.flop_counter counted
  std::string counter;             // "torch.utils.flop_counter and kgym's formulas" | "kgym's formulas"
  // Ops that had no formula, with their calls: their FLOPs are missing.
  std::map<std::string, std::int64_t> uncounted;
  std::vector<std::string> float_dtypes;  // of the inputs, parameters and outputs
  std::int64_t bytes() const { return input_bytes + parameter_bytes + output_bytes; }
};

// The roofs a case's roofline was drawn against: its device's.
struct RoofsUsed {
  std::string cores;         // "0-1"
  double bandwidth_gbs = 0;  // 1e9 bytes/s, of `memory_level`
  std::string memory_level;  // "L2", "L3", "main memory": the smallest that holds the bytes
  double peak_gflops = 0;    // of `precision`
  std::string precision;     // "float32" | "float64": the roof the problem's dtype gets
  std::string measured_at;
};

struct Roofline {
  WorkCount work;
  std::optional<RoofsUsed> roofs;  // nullopt: none measured for the device (`missing` says why)
  std::string missing;
  // Filled when `roofs` is:
  double intensity = 0;                 // FLOPs per byte
  std::string bound;                    // "memory" | "compute"
  double limit_ms = 0;                  // max(bytes / bandwidth, flops / peak)
  std::optional<double> sol;            // limit_ms / the candidate's median
  std::optional<double> reference_sol;  // limit_ms / the reference's median
  std::optional<double> achieved_gflops;
  std::optional<double> reference_achieved_gflops;
  // A sol above 1 means the count or the roof is wrong (never a score):
  // what was above the roof, and by how much.
  std::vector<std::string> errors;
  bool sound() const { return roofs.has_value() && errors.empty(); }
};

// Which roof a problem of these dtypes gets: float64 where any is, else
// float32 (the CPU computes half and bfloat16 through float32).
std::string roof_precision(const std::vector<std::string>& float_dtypes);

// The roofline of `work` at `roofs` for the two sides' median times (ms; 0
// where a side has none).
Roofline place_on_roofline(const WorkCount& work, const RoofsUsed& roofs, double candidate_ms,
                           double reference_ms);

nlohmann::json to_json(const WorkCount& w);
WorkCount work_from_json(const nlohmann::json& j);
nlohmann::json to_json(const Roofline& r);
// Throws nlohmann::json::exception on a malformed record.
Roofline roofline_from_json(const nlohmann::json& j);

}  // namespace kgym
