// The baselines beyond the reference as written (verifier.baselines): the
// candidate timed a second time, against the reference through
// torch.compile, by the same method as against the eager reference.
#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "util/secure_random.h"
#include "verify/verification.h"

namespace kgym::verify::detail {

namespace {

// Compiling may take what the verification has left but this: enough for
// the second timing (its budget, its warm-up and the probe) to follow.
constexpr std::chrono::seconds kAfterCompile{20};

}  // namespace

std::expected<BaselineSpeedup, Failure> Verification::time_against_compiled(TimingInputs inputs,
                                                                           const Exchange& exchange,
                                                                           const CoreLoadProbe& load,
                                                                           const TimingFailure& failed) {
  BaselineSpeedup baseline{.name = "compile"};
  auto unavailable = [&](std::string why) -> BaselineSpeedup {
    note("compile baseline unavailable: " + why);
    baseline.unavailable = std::move(why);
    return baseline;
  };
  // Both reference workers compile their model and make its first calls,
  // untimed: what compiling costs is recorded, never counted in a speedup.
  auto reserve = std::chrono::duration_cast<worker::Clock::duration>(req_.config.timing.budget * 3 + kAfterCompile);
  worker::Deadline deadline = deadline_ - reserve;
  if (worker::Clock::now() >= deadline)
    return unavailable(fmt::format("too little of verifier.timeout ({} s) was left to compile the reference",
                                   req_.config.timeout.count()));
  auto start = worker::Clock::now();
  std::string what = "compiling the reference with torch.compile";
  auto late = [&] {
    return fmt::format("compiling did not finish in the {:.0f} s the verification had left for it",
                       std::chrono::duration<double>(deadline - start).count());
  };
  // Both workers compile at once (on a lease of several cores, side by side).
  for (Role role : {Role::kReference, Role::kTwin}) {
    worker::Message request;
    request.header = {{"op", "compile"}, {"seed", derive_seed(req_.run_seed, 5000)}};
    if (auto sent = worker(role).send(request, deadline); !sent) {
      auto reason = channel_failure(role, sent.error(), what, false).reason;
      return unavailable(worker::Clock::now() >= deadline ? late() : reason);
    }
  }
  for (Role role : {Role::kReference, Role::kTwin}) {
    auto reply = receive(role, what, deadline);
    if (!reply) return unavailable(worker::Clock::now() >= deadline ? late() : reply.error().reason);
    if (auto why = reply->header.find("unavailable"); why != reply->header.end() && why->is_string())
      return unavailable(why->get<std::string>());
    note(fmt::format("compile baseline: the {} worker compiled in {:.2f} s", role_name(role),
                     reply->header.value("compile_s", 0.0)));
  }
  baseline.compile_s = seconds_since(start);
  // Input sets and checks of their own: the candidate has seen the first
  // timing's sets.
  inputs.check_seed = derive_seed(req_.run_seed, 2001);
  inputs.set_seeds = util::secure_random_u64() >> 1;
  auto outcome = run_timing(
      req_.config, inputs, exchange, [this](const std::string& line) { note("compile baseline " + line); },
      load);
  if (outcome.call_failed) {
    Failure failure = failed.failure.value_or(Failure{Verdict::kHarnessError, "timing failed"});
    // The compiled reference failing leaves the eager result standing; the
    // candidate failing is the candidate's verdict.
    if (failed.role && !is_candidate(*failed.role)) return unavailable(failure.reason);
    return std::unexpected(std::move(failure));
  }
  if (outcome.cheat) return std::unexpected(runtime_cheat(std::move(*outcome.cheat), "timing against torch.compile"));
  if (!outcome.mismatch.empty())
    return unavailable("the compiled reference's outputs differ from the candidate's: " + outcome.mismatch);
  if (!outcome.performance) return unavailable("the timing gave no figures");
  const Performance& perf = *outcome.performance;
  baseline.speedup = perf.speedup;
  baseline.reference = perf.reference;
  baseline.noise_floor = perf.noise_floor;
  baseline.measure_s = perf.measure_s;
  baseline.flags = perf.flags;
  return baseline;
}

}  // namespace kgym::verify::detail
