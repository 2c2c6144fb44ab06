// The correctness phase as a verification runs it (see verification.h):
// the phase itself, over this verification's workers, is
// correctness_phase.cc; here are the extra shapes, which reload both sides.
#include <fmt/format.h>

#include "verify/shape_plan.h"
#include "verify/verification.h"

namespace kgym::verify::detail {

CorrectnessPhase Verification::correctness_phase() {
  CorrectnessSetup setup{
      .config = &req_.config,
      .run_seed = req_.run_seed,
      .op_trace = req_.op_trace,
      .trace_expected = req_.op_trace && !req_.candidate_is_reference && reference_can_trace_,
      .quick = req_.self_check};
  return CorrectnessPhase(
      setup, [this](Role side, const worker::Message& request, std::string_view what) { return call(side, request, what); },
      [this](const std::string& line) { note(line); }, result_);
}

Failure Verification::runtime_cheat(CheatFinding finding, std::string_view where) {
  Failure failure = runtime_cheat_failure(std::move(finding), where);
  note("runtime finding: " + failure.reason);
  return failure;
}

std::expected<void, Failure> Verification::reload(const std::map<std::string, long long>& overrides,
                                                  std::string_view what) {
  auto state = model_state(state_dir_ / fmt::format("state_{}.pt", ++reloads_));
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

std::expected<void, Failure> Verification::check_extra_shapes(CorrectnessPhase& phase) {
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
    if (auto tried = phase.shape_trial(label); !tried) return tried;
  }
  // Timing runs at the default shape.
  return reload(overrides_, "reloading the default shape");
}

}  // namespace kgym::verify::detail
