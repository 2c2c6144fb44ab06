#pragma once
// The reference probe: one run of the problem's reference model alone, in a
// Python worker, to learn its inputs and outputs (for SPEC.md, and later for
// problem lint). The worker writes a JSON document (schema in
// docs/worker-protocol.md); read_probe() parses it.
#include <expected>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/result.h"

namespace kgym::worker {

struct TensorInfo {
  std::string kind;   // "tensor" | "int" | "float" | "bool" | "other"
  std::string dtype;  // torch dtype name without "torch.", e.g. "float32"; "" for non-tensors
  std::vector<long long> shape;
  std::string repr;  // short text for non-tensors ("16"), "" for tensors
};

struct ProbeResult {
  std::vector<TensorInfo> init_inputs;
  // The init inputs as plain values (numbers, strings, lists of them), for
  // building ModelNew outside a worker that ran the problem; nullopt when
  // they are not plain data.
  std::optional<nlohmann::json> init_values;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  std::map<std::string, long long> constants;  // module-level int constants after overrides
  std::vector<std::string> parameters;         // "name: dtype[shape]" of the model's state_dict
  double forward_ms = 0;                       // one reference forward, wall time
  std::string torch_version;
  // What `problem.size: auto` chose (the probe ran at those sizes); nullopt
  // when the request asked for none.
  std::optional<ProblemSizes> sizes;
};

struct ProbeRequest {
  std::string python;
  std::filesystem::path problem;
  std::map<std::string, long long> overrides;
  unsigned long long seed = 0;
  int threads = 1;
  // Set: solve the problem's sizes for this budget first (`overrides` win),
  // then probe at them.
  std::optional<ProblemSize> size;
  std::string precision = "as_written";  // problem.precision
};

// argv of a child process that probes the problem and writes the result to
// `out_json` (exit 0), or an error document and exit 1. The worker script is
// written to `worker_path` by the caller (write_worker_script()).
std::vector<std::string> probe_command(const ProbeRequest& req, const std::filesystem::path& worker_path,
                                       const std::filesystem::path& out_json);
// The worker's own arguments of that command (past the interpreter and the
// script): what a process forked from a warm worker parent is given.
std::vector<std::string> probe_arguments(const ProbeRequest& req, const std::filesystem::path& out_json);

// The arguments every worker command about one problem starts with:
// `OP --problem P --seed S --threads T [--override NAME=VALUE]...`.
std::vector<std::string> problem_arguments(std::string_view op, const std::filesystem::path& problem,
                                           unsigned long long seed, int threads,
                                           const std::map<std::string, long long>& overrides);

// Writes the embedded worker script to `path` and its modules beside it
// (mode 0444). Returns an error message on failure.
std::expected<void, std::string> write_worker_script(const std::filesystem::path& path);

// Whether the worker at `path` and its modules are byte for byte the
// embedded ones (and none is a link): checked before kgym runs a copy it
// wrote earlier in the run. The error names the file.
std::expected<void, std::string> check_worker_script(const std::filesystem::path& path);

// Parses the probe document; on a worker-side error returns its message
// (e.g. "problem defines no class Model").
std::expected<ProbeResult, std::string> read_probe(const std::filesystem::path& out_json);

}  // namespace kgym::worker
