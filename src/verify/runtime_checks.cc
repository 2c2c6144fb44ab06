#include "verify/runtime_checks.h"
#include "core/backend.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include <fmt/format.h>

namespace kgym::verify {
namespace {

using nlohmann::json;

// Glue every backend may run in the candidate's forward: allocation,
// views, layout/dtype copies and metadata. Names are the dispatcher's
// ("aten.<op>"), overloads folded.
constexpr std::string_view kCommonGlue[] = {
    // allocation and filling a fresh buffer
    "aten.empty",
    "aten.empty_like",
    "aten.empty_strided",
    "aten.new_empty",
    "aten.new_empty_strided",
    "aten.zeros",
    "aten.zeros_like",
    "aten.new_zeros",
    "aten.ones",
    "aten.ones_like",
    "aten.new_ones",
    "aten.full",
    "aten.full_like",
    "aten.new_full",
    "aten.scalar_tensor",
    "aten.fill_",
    "aten.zero_",
    "aten.lift_fresh",
    "aten.lift_fresh_copy",
    "aten.resize_",
    // views
    "aten.view",
    "aten._unsafe_view",
    "aten.reshape",
    "aten._reshape_alias",
    "aten.as_strided",
    "aten.expand",
    "aten.expand_as",
    "aten.view_as",
    "aten.permute",
    "aten.transpose",
    "aten.t",
    "aten.unsqueeze",
    "aten.squeeze",
    "aten.flatten",
    "aten.unflatten",
    "aten.slice",
    "aten.select",
    "aten.narrow",
    "aten.split",
    "aten.split_with_sizes",
    "aten.chunk",
    "aten.unbind",
    "aten.alias",
    "aten.detach",
    "aten.unfold",
    // layout and dtype copies (contiguous() on a strided tensor is a clone)
    "aten.clone",
    "aten.copy_",
    "aten._to_copy",
    "aten.to",
    "aten.contiguous",
    // metadata
    "aten.size",
    "aten.stride",
    "aten.sym_size",
    "aten.sym_stride",
    "aten.sym_numel",
    "aten.numel",
    "aten.dim",
    "aten.is_contiguous",
    "aten.is_same_size",
    "aten._local_scalar_dense",
    "aten.item",
};
// Device backends also synchronise and hand buffers between streams.
constexpr std::string_view kDeviceGlue[] = {"aten.record_stream", "aten._pin_memory", "aten.is_pinned"};

std::set<long long> indices(const json& facts, const char* list, const char* key) {
  std::set<long long> out;
  for (const json& item : facts.value(list, json::array())) out.insert(item.value(key, -1LL));
  return out;
}

std::optional<CheatFinding> first_new(const json& candidate, const json& reference, const char* list,
                                      const char* key, const char* rule, const char* note) {
  auto reference_has = indices(reference, list, key);
  for (const json& item : candidate.value(list, json::array())) {
    if (reference_has.contains(item.value(key, -1LL))) continue;
    return CheatFinding{rule, "runtime", fmt::format("{} ({})", item.value("evidence", ""), note)};
  }
  return std::nullopt;
}

std::optional<CheatFinding> alias_finding(const json& candidate, const json& reference) {
  std::set<std::pair<long long, long long>> reference_pairs;
  for (const json& a : reference.value("aliases", json::array()))
    reference_pairs.insert({a.value("output", -1LL), a.value("input", -1LL)});
  for (const json& a : candidate.value("aliases", json::array())) {
    if (reference_pairs.contains({a.value("output", -1LL), a.value("input", -1LL)})) continue;
    return CheatFinding{"runtime.output_alias", "runtime",
                        fmt::format("{} (the reference returns a new tensor)", a.value("evidence", ""))};
  }
  return std::nullopt;
}

std::optional<CheatFinding> layout_finding(const json& candidate, const json& reference) {
  std::set<long long> reference_outputs;
  for (const json& p : reference.value("output_problems", json::array()))
    reference_outputs.insert(p.value("output", -1LL));
  for (const json& p : candidate.value("output_problems", json::array())) {
    if (reference_outputs.contains(p.value("output", -1LL))) continue;
    std::string kind = p.value("kind", "layout");
    return CheatFinding{
        kind == "type" ? "runtime.output_type" : "runtime.output_layout", "runtime",
        fmt::format("{} (the reference's output is a plain dense tensor)", p.value("evidence", ""))};
  }
  return std::nullopt;
}

std::optional<CheatFinding> op_trace_finding(const json& candidate, const Backend& backend, bool trace_expected) {
  auto it = candidate.find("op_trace");
  if (trace_expected && (it == candidate.end() || !it->is_object()))
    return CheatFinding{"runtime.op_trace", "runtime",
                        "a traced forward came back without an op trace, on a torch whose dispatcher the reference's "
                        "worker traces: the candidate switched the trace off"};
  if (it == candidate.end() || !it->is_object()) return std::nullopt;
  std::vector<std::string> compute;
  for (const auto& [op, count] : it->items()) {
    if (!is_glue_op(backend, op)) compute.push_back(fmt::format("{} x{}", op, count.get<long long>()));
  }
  if (compute.empty()) return std::nullopt;
  return CheatFinding{"runtime.op_trace", "runtime",
                      fmt::format("forward ran library compute {} instead of its own kernel (traced at the "
                                  "dispatcher; glue such as empty/view/copy_ is allowed)",
                                  fmt::join(compute, ", "))};
}

}  // namespace

bool is_glue_op(const Backend& backend, std::string_view op) {
  if (std::find(std::begin(kCommonGlue), std::end(kCommonGlue), op) != std::end(kCommonGlue)) return true;
  if (std::ranges::find(backend.interpreter_glue, op) != backend.interpreter_glue.end()) return true;
  if (backend.device_glue) {
    return std::find(std::begin(kDeviceGlue), std::end(kDeviceGlue), op) != std::end(kDeviceGlue);
  }
  return false;
}

std::optional<CheatFinding> runtime_finding(const json& candidate, const json& reference,
                                            const Backend& backend, bool trace_expected) {
  if (!candidate.is_object()) return std::nullopt;
  const json empty = json::object();
  const json& ref = reference.is_object() ? reference : empty;
  if (auto f = first_new(candidate, ref, "mutated_inputs", "input", "runtime.input_mutation",
                         "the reference leaves its inputs unchanged"))
    return f;
  if (auto f = alias_finding(candidate, ref)) return f;
  if (auto f = layout_finding(candidate, ref)) return f;
  return op_trace_finding(candidate, backend, trace_expected);
}

void add_op_trace(RuntimeTrace& trace, const json& runtime_facts) {
  auto it = runtime_facts.find("op_trace");
  if (it == runtime_facts.end() || !it->is_object()) return;
  trace.available = true;
  for (const auto& [op, count] : it->items()) trace.ops[op] += count.get<std::int64_t>();
}

std::optional<double> rms_of(const TensorBytes& t) {
  auto dtype = parse_dtype(t.dtype);
  if (!dtype || !is_floating(*dtype)) return std::nullopt;
  std::size_t n = t.data.size() / element_size(*dtype);
  double sum = 0;
  std::size_t finite = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double v = element_as_double(*dtype, t.data, i);
    if (!std::isfinite(v)) continue;
    sum += v * v;
    ++finite;
  }
  if (finite == 0) return std::nullopt;
  return std::sqrt(sum / static_cast<double>(finite));
}

Tolerance scaled_tolerance(Tolerance configured, const TensorBytes& b) {
  auto rms = rms_of(b);
  if (!rms || *rms == 0) return configured;
  return {std::min(configured.atol, 0.01 * *rms), configured.rtol};
}

std::optional<double> relative_l2_error(const TensorBytes& a, const TensorBytes& b) {
  auto dtype = parse_dtype(b.dtype);
  if (!dtype || a.dtype != b.dtype || a.shape != b.shape || a.data.size() != b.data.size())
    return std::nullopt;
  std::size_t n = b.data.size() / element_size(*dtype);
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double x = element_as_double(*dtype, a.data, i), y = element_as_double(*dtype, b.data, i);
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    diff += (x - y) * (x - y);
    norm += y * y;
  }
  if (norm == 0) return std::nullopt;
  return std::sqrt(diff / norm);
}

std::optional<std::string> degenerate_kind(std::span<const TensorBytes> reference_outputs,
                                           const std::map<std::string, Tolerance>& configured) {
  bool any = false, all_zero = true, all_constant = true;
  for (const TensorBytes& t : reference_outputs) {
    auto dtype = parse_dtype(t.dtype);
    if (!dtype || !is_floating(*dtype)) continue;
    Tolerance tol = tolerance_for(configured, t.dtype);
    std::size_t n = t.data.size() / element_size(*dtype);
    if (n == 0) continue;
    any = true;
    double lo = INFINITY, hi = -INFINITY, largest = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double v = element_as_double(*dtype, t.data, i);
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      largest = std::max(largest, std::fabs(v));
    }
    if (largest > tol.atol) all_zero = false;
    // A single element is trivially "constant"; only larger outputs count.
    if (n < 2 || hi - lo > tol.atol + tol.rtol * largest) all_constant = false;
  }
  if (!any) return std::nullopt;
  if (all_zero) return "zero";
  if (all_constant) return "constant";
  return std::nullopt;
}

bool all_finite(std::span<const TensorBytes> outputs) {
  for (const TensorBytes& t : outputs) {
    auto dtype = parse_dtype(t.dtype);
    if (!dtype || !is_floating(*dtype)) continue;
    std::size_t n = t.data.size() / element_size(*dtype);
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isfinite(element_as_double(*dtype, t.data, i))) return false;
    }
  }
  return true;
}

}  // namespace kgym::verify
