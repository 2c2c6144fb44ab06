// The correctness phase of a verification (correctness_phase.h).
#include "verify/correctness_phase.h"

#include <algorithm>

#include <fmt/format.h>

#include "verify/runtime_checks.h"
#include "verify/shape_plan.h"

namespace kgym::verify::detail {

namespace {

std::vector<TensorBytes> output_views(const nlohmann::json& descriptions,
                                      const std::vector<std::string>& payloads, std::size_t first_payload) {
  std::vector<TensorBytes> views;
  for (std::size_t i = 0; i < descriptions.size(); ++i) {
    views.push_back(TensorBytes{descriptions[i].value("dtype", ""),
                                descriptions[i].value("shape", std::vector<std::int64_t>{}),
                                payloads.at(first_payload + i)});
  }
  return views;
}

std::vector<TensorBytes> reply_outputs(const worker::Message& reply, std::size_t first_payload) {
  return output_views(reply.header.value("outputs", nlohmann::json::array()), reply.payloads, first_payload);
}

// The reference's inputs as the record shows them: a tensor's shape, else
// the value's repr.
std::vector<std::string> input_shapes(const worker::Message& reference) {
  std::vector<std::string> shapes;
  for (const auto& input : reference.header.value("inputs", nlohmann::json::array())) {
    shapes.push_back(input.value("kind", "") == "tensor"
                         ? shape_string(input.value("shape", std::vector<std::int64_t>{}))
                         : input.value("repr", ""));
  }
  return shapes;
}

}  // namespace

Failure CorrectnessPhase::runtime_cheat(CheatFinding finding, std::string_view where) {
  Failure failure = runtime_cheat_failure(std::move(finding), where);
  note_("runtime finding: " + failure.reason);
  return failure;
}

std::expected<worker::Message, Failure> CorrectnessPhase::reference_trial(std::uint64_t seed,
                                                                          std::string_view distribution,
                                                                          std::string_view what) {
  worker::Message request;
  request.header = {{"op", "trial"}, {"seed", seed}, {"distribution", std::string(distribution)}};
  auto reply = call_(Role::kReference, request, what);
  if (!reply) return std::unexpected(reply.error());
  if (reply->payloads.size() != reply->header.value("outputs", nlohmann::json::array()).size() + 1) {
    return std::unexpected(
        Failure{Verdict::kHarnessError, "reference reply has the wrong number of payloads"});
  }
  return reply;
}

OutputRules CorrectnessPhase::output_rules() const {
  return OutputRules{.configured = &setup_.config->tolerances,
                     .backend = &backend_of(*setup_.config),
                     .degenerate = result_.correctness.degenerate};
}

std::expected<void, Failure> CorrectnessPhase::compare_outputs(int trial, std::span<const TensorBytes> candidate,
                                                               std::span<const TensorBytes> reference) {
  auto& correctness = result_.correctness;
  OutputMatch match = match_outputs(candidate, reference, output_rules());
  if (trial == 0 && candidate.size() == reference.size()) {
    for (std::size_t i = 0; i < reference.size() && i < match.tolerances.size(); ++i) {
      const TensorBytes &b = reference[i], &a = candidate[i];
      const Tolerance& tolerance = match.tolerances[i];
      correctness.outputs.push_back({b.dtype, b.shape, tolerance.atol, tolerance.rtol});
      note_(fmt::format("compared: output {} {} [{}] with atol={:.3g} rtol={:.3g} (candidate's: {} [{}])", i,
                        b.dtype, fmt::join(b.shape, ", "), tolerance.atol, tolerance.rtol, a.dtype,
                        fmt::join(a.shape, ", ")));
    }
  }
  auto raise = [](std::optional<double>& acc, std::optional<double> v) {
    if (v) acc = std::max(acc.value_or(0), *v);
  };
  raise(correctness.max_abs_err, match.max_abs_err);
  raise(correctness.max_rel_err, match.max_rel_err);
  if (match.ok) return {};
  correctness.failed_trial = trial;
  if (match.failed_output) correctness.failed_output = static_cast<int>(*match.failed_output);
  std::string what = match.failed_output
                         ? fmt::format("trial {} ({} inputs) {}", trial, correctness.distributions.at(trial),
                                       match.problem)
                         : fmt::format("trial {}: candidate returned {} outputs, the reference {}", trial,
                                       candidate.size(), reference.size());
  return std::unexpected(Failure{Verdict::kFailCorrectness, std::move(what)});
}

// Runs the candidate on `inputs` and returns its reply after the runtime
// checks; the reply's payloads are its outputs.
std::expected<worker::Message, Failure> CorrectnessPhase::candidate_trial(const std::string& inputs,
                                                                          const nlohmann::json& reference_facts,
                                                                          std::string_view what) {
  worker::Message request;
  request.header = {{"op", "trial"}, {"trace", setup_.op_trace}};
  request.payloads.push_back(inputs);
  auto reply = call_(Role::kCandidate, request, what);
  if (!reply) return std::unexpected(reply.error());
  if (reply->payloads.size() != reply->header.value("outputs", nlohmann::json::array()).size()) {
    return std::unexpected(
        Failure{Verdict::kHarnessError, "candidate reply has the wrong number of payloads"});
  }
  const auto& facts = reply->header.value("runtime", nlohmann::json::object());
  if (!result_.runtime) {
    result_.runtime.emplace();
    result_.runtime->checks = {"input_mutation", "output_alias", "output_type", "output_layout",
                               "op_trace",       "determinism",  "escape"};
  }
  add_op_trace(*result_.runtime, facts);
  if (auto finding = runtime_finding(facts, reference_facts, backend_of(*setup_.config), setup_.trace_expected))
    return std::unexpected(runtime_cheat(std::move(*finding), what));
  return std::move(*reply);
}

std::expected<void, Failure> CorrectnessPhase::run_trials() {
  const int given_trials = setup_.quick ? 1 : std::max(3, setup_.config->trials);
  const int normal_trials = setup_.quick ? 1 : kSignedNormalTrials;
  auto& correctness = result_.correctness;
  for (int trial = 0; trial < given_trials + normal_trials; ++trial) {
    bool normal = trial >= given_trials;
    std::uint64_t seed = derive_seed(setup_.run_seed, normal ? 500 + static_cast<std::uint64_t>(trial)
                                                              : 1 + static_cast<std::uint64_t>(trial));
    std::string distribution = normal ? "normal" : "given";
    correctness.seeds.push_back(seed);
    correctness.distributions.push_back(distribution);
    auto what = fmt::format("trial {}", trial);
    auto ref = reference_trial(seed, distribution, what);
    if (!ref) return std::unexpected(ref.error());
    auto reference = reply_outputs(*ref, 1);
    if (trial == 0) {
      for (const auto& input : ref->header.value("inputs", nlohmann::json::array()))
        correctness.input_dtypes.push_back(input.value("kind", "") == "tensor" ? input.value("dtype", "") : "-");
      correctness.shapes.push_back(fmt::format("{}", fmt::join(input_shapes(*ref), ", ")));
      note_(fmt::format("compared: inputs {}", fmt::join(correctness.input_dtypes, ", ")));
      if (auto consistent = check_reference_consistency(ref->payloads[0], reference); !consistent)
        return consistent;
      correctness.degenerate = degenerate_kind(reference, setup_.config->tolerances);
      if (correctness.degenerate) {
        note_(fmt::format("degenerate reference: output is {} on the given inputs; a relative bound applies",
                          *correctness.degenerate));
      }
    }
    if (normal && !all_finite(reference)) {
      // Signed inputs may leave the problem's domain (log, sqrt); such a
      // trial says nothing about the candidate.
      correctness.skipped.push_back(
          fmt::format("trial {} ({}): reference output not finite", trial, distribution));
      note_(correctness.skipped.back());
      continue;
    }
    const auto& ref_facts = ref->header.value("runtime", nlohmann::json::object());
    auto cand = candidate_trial(ref->payloads[0], ref_facts, what);
    if (!cand) return std::unexpected(cand.error());
    ++correctness.trials;
    auto candidate = reply_outputs(*cand, 0);
    if (auto compared = compare_outputs(trial, candidate, reference); !compared) return compared;
    ++correctness.trials_passed;
    if (trial != 0) continue;
    // A performance model's estimate of this call (PyPTO's cost model on
    // its host interpreter): trial 0 is the problem's own shape.
    const nlohmann::json facts = cand->header.value("runtime", nlohmann::json::object());
    if (auto sim = facts.find("simulated");
        sim != facts.end() && sim->is_object() && setup_.config->mode == "performance") {
      result_.simulated =
          SimulatedTime{sim->value("value", 0.0), sim->value("unit", ""), sim->value("source", "")};
      note_(fmt::format("simulated time {:.3f} {} ({})", result_.simulated->value, result_.simulated->unit,
                        result_.simulated->source));
    }
    if (auto same = check_determinism(ref->payloads[0], ref_facts, candidate, reference); !same) return same;
  }
  return {};
}

// The same inputs again must give the same outputs.
std::expected<void, Failure> CorrectnessPhase::check_determinism(const std::string& inputs,
                                                                 const nlohmann::json& reference_facts,
                                                                 std::span<const TensorBytes> first,
                                                                 std::span<const TensorBytes> reference) {
  auto again = candidate_trial(inputs, reference_facts, "trial 0 repeated");
  if (!again) return std::unexpected(again.error());
  auto repeated = reply_outputs(*again, 0);
  if (repeated.size() != first.size()) {
    return std::unexpected(runtime_cheat(CheatFinding{"runtime.nondeterministic", "runtime",
                                                      fmt::format("the same inputs twice gave {} then {} outputs",
                                                                  first.size(), repeated.size())},
                                         "trial 0 repeated"));
  }
  OutputRules rules = output_rules();
  rules.degenerate.reset();
  if (auto same = match_outputs(repeated, first, rules, reference); !same.ok) {
    return std::unexpected(
        runtime_cheat(CheatFinding{"runtime.nondeterministic", "runtime",
                                   fmt::format("the same inputs twice gave different {}", same.problem)},
                      "trial 0 repeated"));
  }
  return {};
}

std::expected<void, Failure> CorrectnessPhase::shape_trial(const std::string& label) {
  auto& correctness = result_.correctness;
  int trial = static_cast<int>(correctness.seeds.size());
  std::uint64_t seed = derive_seed(setup_.run_seed, 700 + static_cast<std::uint64_t>(trial));
  correctness.seeds.push_back(seed);
  correctness.distributions.push_back("given");
  auto what = fmt::format("trial {} ({})", trial, label);
  auto ref = reference_trial(seed, "given", what);
  if (!ref) return std::unexpected(ref.error());
  correctness.shapes.push_back(fmt::format("{} ({})", fmt::join(input_shapes(*ref), ", "), label));
  auto reference = reply_outputs(*ref, 1);
  auto cand = candidate_trial(ref->payloads[0], ref->header.value("runtime", nlohmann::json::object()), what);
  if (!cand) return std::unexpected(cand.error());
  ++correctness.trials;
  auto candidate = reply_outputs(*cand, 0);
  if (auto compared = compare_outputs(trial, candidate, reference); !compared) {
    auto failure = compared.error();
    failure.reason += fmt::format(" [shape {}]", label);
    return std::unexpected(std::move(failure));
  }
  ++correctness.trials_passed;
  return {};
}

// The reference run again on the same inputs must match itself (the lint
// check `not_self_consistent`): otherwise no candidate can pass, and the
// case is the problem's fault.
std::expected<void, Failure> CorrectnessPhase::check_reference_consistency(const std::string& inputs,
                                                                           std::span<const TensorBytes> first) {
  worker::Message request;
  request.header = {{"op", "trial"}};
  request.payloads.push_back(inputs);
  auto again = call_(Role::kReference, request, "re-running the reference on trial 0's inputs");
  if (!again) return std::unexpected(again.error());
  auto second = reply_outputs(*again, 0);
  OutputRules rules{.configured = &setup_.config->tolerances, .backend = &backend_of(*setup_.config),
                    .scaled = false};
  if (second.size() == first.size()) {
    if (auto same = match_outputs(second, first, rules); !same.ok) {
      return std::unexpected(Failure{
          Verdict::kReferenceError,
          fmt::format("the reference does not match itself on the same inputs (training-mode dropout or "
                      "unseeded randomness?): {}",
                      same.problem)});
    }
  }
  return {};
}

}  // namespace kgym::verify::detail
