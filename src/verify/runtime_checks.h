#pragma once
// The runtime anti-cheat layer's decisions (docs/anti-cheat.md, "Runtime
// checks"). The workers report facts about each forward call (inputs
// changed, outputs sharing memory with inputs, outputs that are not dense,
// the dispatcher ops run); these pure functions turn them into findings,
// comparing the candidate with what the reference itself does on the same
// inputs. Also the magnitude-aware tolerance and the degenerate-output test.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/backend.h"
#include "core/config.h"
#include "core/result.h"
#include "verify/tensor_compare.h"

namespace kgym::verify {

// True for ops the candidate's forward may run on `backend`: allocation,
// views, layout copies, metadata queries ("aten.empty_like", "aten.view").
// Everything else is compute the candidate was asked to write itself.
bool is_glue_op(const Backend& backend, std::string_view op);

// A runtime finding against the candidate, or nullopt. `candidate` and
// `reference` are the "runtime" objects of the two workers' trial replies
// for the same inputs ({mutated_inputs, aliases, output_problems,
// op_trace}); a behaviour the reference shows too (an in-place reference,
// one that returns its input) is not held against the candidate. Rules:
// runtime.input_mutation, runtime.output_alias, runtime.output_layout,
// runtime.op_trace. With `trace_expected` (the call was traced and the
// reference's worker, on the same torch, can trace), a trace that came back
// null is runtime.op_trace too: the candidate switched it off.
std::optional<CheatFinding> runtime_finding(const nlohmann::json& candidate, const nlohmann::json& reference,
                                            const Backend& backend, bool trace_expected = false);

// Adds one reply's op counts to the trace record.
void add_op_trace(RuntimeTrace& trace, const nlohmann::json& runtime_facts);

// Root mean square of the finite elements of a floating tensor; nullopt
// for integer/bool tensors or when none is finite.
std::optional<double> rms_of(const TensorBytes& t);

// The tolerance to compare against reference output `b`: the configured
// atol, but never more than 1% of the reference's RMS, so that an all-zero
// answer to a problem whose outputs are all tiny fails.
Tolerance scaled_tolerance(Tolerance configured, const TensorBytes& b);

// ||a - b||_2 / ||b||_2 over elements finite in both; nullopt when the
// shapes/dtypes differ or ||b|| is 0.
std::optional<double> relative_l2_error(const TensorBytes& a, const TensorBytes& b);

// "zero" when every floating output of the reference is within atol of 0,
// "constant" when each is within tolerance of one value; else nullopt.
std::optional<std::string> degenerate_kind(std::span<const TensorBytes> reference_outputs,
                                           const std::map<std::string, Tolerance>& configured);

// True when every element of every floating output is finite.
bool all_finite(std::span<const TensorBytes> outputs);

}  // namespace kgym::verify
