// The correctness phase of a verification (see verification.h).
#include <algorithm>

#include <fmt/format.h>

#include "core/backend.h"
#include "verify/shape_plan.h"
#include "verify/verification.h"

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

}  // namespace

Failure Verification::runtime_cheat(CheatFinding finding, std::string_view where) {
  std::string reason = fmt::format("{} — {}: {}", finding.rule, where, finding.evidence);
  note("runtime finding: " + reason);
  return Failure{Verdict::kFailCheat, std::move(reason), std::move(finding)};
}

// One reference trial: its reply holds the inputs blob, then one payload
// per output.
std::expected<worker::Message, Failure> Verification::reference_trial(std::uint64_t seed,
                                                              std::string_view distribution,
                                                              std::string_view what) {
  worker::Message request;
  request.header = {{"op", "trial"}, {"seed", seed}, {"distribution", std::string(distribution)}};
  auto reply = call(Role::kReference, request, what);
  if (!reply) return std::unexpected(reply.error());
  if (reply->payloads.size() != reply->header.value("outputs", nlohmann::json::array()).size() + 1) {
    return std::unexpected(
        Failure{Verdict::kHarnessError, "reference reply has the wrong number of payloads"});
  }
  return reply;
}

OutputRules Verification::output_rules() const {
  return OutputRules{.configured = &req_.config.tolerances,
                     .backend = &backend_of(req_.config),
                     .degenerate = result_.correctness.degenerate};
}

std::expected<void, Failure> Verification::compare_outputs(int trial, std::span<const TensorBytes> candidate,
                                                           std::span<const TensorBytes> reference) {
  auto& correctness = result_.correctness;
  OutputMatch match = match_outputs(candidate, reference, output_rules());
  if (trial == 0 && candidate.size() == reference.size()) {
    for (std::size_t i = 0; i < reference.size() && i < match.tolerances.size(); ++i) {
      const TensorBytes &b = reference[i], &a = candidate[i];
      const Tolerance& tolerance = match.tolerances[i];
      correctness.outputs.push_back({b.dtype, b.shape, tolerance.atol, tolerance.rtol});
      note(fmt::format("compared: output {} {} [{}] with atol={:.3g} rtol={:.3g} (candidate's: {} [{}])", i,
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
std::expected<worker::Message, Failure> Verification::candidate_trial(const std::string& inputs,
                                                              const nlohmann::json& reference_facts,
                                                              std::string_view what) {
  worker::Message request;
  request.header = {{"op", "trial"}, {"trace", req_.op_trace}};
  request.payloads.push_back(inputs);
  auto reply = call(Role::kCandidate, request, what);
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
  if (auto finding =
          runtime_finding(facts, reference_facts, backend_of(req_.config),
                         req_.op_trace && !req_.candidate_is_reference && reference_can_trace_)) {
    return std::unexpected(runtime_cheat(std::move(*finding), what));
  }
  return std::move(*reply);
}

std::expected<void, Failure> Verification::check_correctness() {
  const int given_trials = std::max(3, req_.config.trials);
  auto& correctness = result_.correctness;
  for (int trial = 0; trial < given_trials + kSignedNormalTrials; ++trial) {
    bool normal = trial >= given_trials;
    std::uint64_t seed = derive_seed(req_.run_seed, normal ? 500 + static_cast<std::uint64_t>(trial)
                                                           : 1 + static_cast<std::uint64_t>(trial));
    std::string distribution = normal ? "normal" : "given";
    correctness.seeds.push_back(seed);
    correctness.distributions.push_back(distribution);
    auto what = fmt::format("trial {}", trial);
    auto ref = reference_trial(seed, distribution, what);
    if (!ref) return std::unexpected(ref.error());
    const auto& ref_outputs = ref->header.value("outputs", nlohmann::json::array());
    auto reference = output_views(ref_outputs, ref->payloads, 1);
    if (trial == 0) {
      std::vector<std::string> shapes;
      for (const auto& input : ref->header.value("inputs", nlohmann::json::array())) {
        correctness.input_dtypes.push_back(input.value("kind", "") == "tensor" ? input.value("dtype", "") : "-");
        shapes.push_back(input.value("kind", "") == "tensor"
                             ? shape_string(input.value("shape", std::vector<std::int64_t>{}))
                             : input.value("repr", ""));
      }
      correctness.shapes.push_back(fmt::format("{}", fmt::join(shapes, ", ")));
      note(fmt::format("compared: inputs {}", fmt::join(correctness.input_dtypes, ", ")));
      if (auto consistent = check_reference_consistency(ref->payloads[0], reference); !consistent)
        return consistent;
      correctness.degenerate = degenerate_kind(reference, req_.config.tolerances);
      if (correctness.degenerate) {
        note(fmt::format("degenerate reference: output is {} on the given inputs; a relative bound applies",
                         *correctness.degenerate));
      }
    }
    if (normal && !all_finite(reference)) {
      // Signed inputs may leave the problem's domain (log, sqrt); such a
      // trial says nothing about the candidate.
      correctness.skipped.push_back(
          fmt::format("trial {} ({}): reference output not finite", trial, distribution));
      note(correctness.skipped.back());
      continue;
    }
    const auto& ref_facts = ref->header.value("runtime", nlohmann::json::object());
    auto cand = candidate_trial(ref->payloads[0], ref_facts, what);
    if (!cand) return std::unexpected(cand.error());
    ++correctness.trials;
    auto candidate = output_views(cand->header.value("outputs", nlohmann::json::array()), cand->payloads, 0);
    if (auto compared = compare_outputs(trial, candidate, reference); !compared) return compared;
    ++correctness.trials_passed;
    if (trial != 0) continue;
    // A performance model's estimate of this call (PyPTO's cost model on
    // its host interpreter): trial 0 is the problem's own shape.
    const nlohmann::json facts = cand->header.value("runtime", nlohmann::json::object());
    if (auto sim = facts.find("simulated");
        sim != facts.end() && sim->is_object() && req_.config.mode == "performance") {
      result_.simulated =
          SimulatedTime{sim->value("value", 0.0), sim->value("unit", ""), sim->value("source", "")};
      note(fmt::format("simulated time {:.3f} {} ({})", result_.simulated->value, result_.simulated->unit,
                       result_.simulated->source));
    }
    // Determinism: the same inputs again must give the same outputs.
    auto again = candidate_trial(ref->payloads[0], ref_facts, "trial 0 repeated");
    if (!again) return std::unexpected(again.error());
    auto repeated = output_views(again->header.value("outputs", nlohmann::json::array()), again->payloads, 0);
    if (repeated.size() == candidate.size()) {
      OutputRules rules = output_rules();
      rules.degenerate.reset();
      if (auto same = match_outputs(repeated, candidate, rules, reference); !same.ok) {
        return std::unexpected(runtime_cheat(
            CheatFinding{"runtime.nondeterministic", "runtime",
                         fmt::format("the same inputs twice gave different {}", same.problem)},
            "trial 0 repeated"));
      }
    }
    if (repeated.size() != candidate.size()) {
      return std::unexpected(
          runtime_cheat(CheatFinding{"runtime.nondeterministic", "runtime",
                                     fmt::format("the same inputs twice gave {} then {} outputs",
                                                 candidate.size(), repeated.size())},
                        "trial 0 repeated"));
    }
  }
  return {};
}

std::expected<void, Failure> Verification::reload(const std::map<std::string, long long>& overrides,
                                                  std::string_view what) {
  auto state = state_dir_ / fmt::format("state_{}.pt", ++reloads_);
  state_file_ = state;
  worker::Message load;
  load.header = load_header(req_.problem, overrides, state);
  auto loaded = call(Role::kReference, load, what, false);
  if (!loaded) return std::unexpected(loaded.error());
  worker::Message build;
  build.header = {{"op", "build"}, {"state", candidate_view(state).string()}};
  auto built = call(Role::kCandidate, build, what, false);
  if (!built) return std::unexpected(built.error());
  return {};
}

// One trial on the problem's own inputs at the shape loaded last.
std::expected<void, Failure> Verification::shape_trial(const std::string& label) {
  auto& correctness = result_.correctness;
  int trial = static_cast<int>(correctness.seeds.size());
  std::uint64_t seed = derive_seed(req_.run_seed, 700 + static_cast<std::uint64_t>(trial));
  correctness.seeds.push_back(seed);
  correctness.distributions.push_back("given");
  auto what = fmt::format("trial {} ({})", trial, label);
  auto ref = reference_trial(seed, "given", what);
  if (!ref) return std::unexpected(ref.error());
  const auto& ref_outputs = ref->header.value("outputs", nlohmann::json::array());
  std::vector<std::string> shapes;
  for (const auto& input : ref->header.value("inputs", nlohmann::json::array())) {
    shapes.push_back(input.value("kind", "") == "tensor"
                         ? shape_string(input.value("shape", std::vector<std::int64_t>{}))
                         : input.value("repr", ""));
  }
  correctness.shapes.push_back(fmt::format("{} ({})", fmt::join(shapes, ", "), label));
  auto reference = output_views(ref_outputs, ref->payloads, 1);
  auto cand = candidate_trial(ref->payloads[0], ref->header.value("runtime", nlohmann::json::object()), what);
  if (!cand) return std::unexpected(cand.error());
  ++correctness.trials;
  auto candidate = output_views(cand->header.value("outputs", nlohmann::json::array()), cand->payloads, 0);
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
std::expected<void, Failure> Verification::check_reference_consistency(const std::string& inputs,
                                                                       std::span<const TensorBytes> first) {
  worker::Message request;
  request.header = {{"op", "trial"}};
  request.payloads.push_back(inputs);
  auto again = call(Role::kReference, request, "re-running the reference on trial 0's inputs");
  if (!again) return std::unexpected(again.error());
  auto second = output_views(again->header.value("outputs", nlohmann::json::array()), again->payloads, 0);
  OutputRules rules{.configured = &req_.config.tolerances, .backend = &backend_of(req_.config), .scaled = false};
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

std::expected<void, Failure> Verification::check_extra_shapes() {
  auto shapes =
      extra_shapes(constants_, declared_cases_, overrides_, derive_seed(req_.run_seed, 3000), size_keys_);
  if (shapes.empty()) return {};
  for (const ShapeSet& shape : shapes) {
    std::string label = fmt::format("{}: {}", shape.origin, overrides_string(shape.overrides));
    note("shape " + label);
    auto loaded = reload(shape.overrides, "loading shape " + label);
    if (!loaded) {
      // A derived shape the reference itself cannot run (sizes that must
      // divide each other) says nothing about the candidate.
      if (loaded.error().verdict != Verdict::kReferenceError || !loaded.error().worker_answered)
        return loaded;
      result_.correctness.skipped.push_back(fmt::format("shape {}: {}", label, loaded.error().reason));
      note(result_.correctness.skipped.back());
      continue;
    }
    if (auto tried = shape_trial(label); !tried) return tried;
  }
  // Timing runs at the default shape.
  return reload(overrides_, "reloading the default shape");
}

}  // namespace kgym::verify::detail
