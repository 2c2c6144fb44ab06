#include "run/samples.h"

#include <array>
#include <stdexcept>

#include "core/pass_at_k.h"
#include "util/seed_mix.h"

namespace kgym::run {
namespace {

// Lower ranks are reported first when no sample passed.
int failure_rank(Verdict v) {
  constexpr std::array kOrder = {Verdict::kFailCheat,         Verdict::kFailCorrectness,
                                 Verdict::kRuntimeError,      Verdict::kCompileError,
                                 Verdict::kTimeout,           Verdict::kCrash,
                                 Verdict::kGenerationFailed,  Verdict::kReferenceError,
                                 Verdict::kDeviceUnavailable, Verdict::kHarnessError};
  for (std::size_t i = 0; i < kOrder.size(); ++i) {
    if (kOrder[i] == v) return static_cast<int>(i);
  }
  return static_cast<int>(kOrder.size());
}

template <typename T>
void add(std::optional<T>& total, const std::optional<T>& value) {
  if (value) total = total.value_or(0) + *value;
}

std::optional<double> speedup(const CaseResult& r) {
  if (!r.performance) return std::nullopt;
  return r.performance->speedup.median;
}

}  // namespace

std::uint64_t sample_seed(std::uint64_t run_seed, const std::string& case_id, int sample) {
  if (sample == 0) return run_seed;
  return util::splitmix64(run_seed ^
                          util::splitmix64(util::fnv1a(case_id) + static_cast<std::uint64_t>(sample))) >>
         1;
}

std::size_t chosen_sample(const std::vector<CaseResult>& results) {
  if (results.empty()) throw std::invalid_argument("chosen_sample: no samples");
  std::optional<std::size_t> best_pass;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].verdict != Verdict::kPass) continue;
    if (!best_pass) {
      best_pass = i;
      continue;
    }
    auto mine = speedup(results[i]), theirs = speedup(results[*best_pass]);
    if (mine && (!theirs || *mine > *theirs)) best_pass = i;
  }
  if (best_pass) return *best_pass;
  std::size_t best = 0;
  for (std::size_t i = 1; i < results.size(); ++i) {
    if (failure_rank(results[i].verdict) < failure_rank(results[best].verdict)) best = i;
  }
  return best;
}

CaseResult case_result_of_samples(const std::vector<CaseResult>& results) {
  std::size_t chosen = chosen_sample(results);
  SamplesSummary s;
  s.n = static_cast<int>(results.size());
  s.chosen = static_cast<int>(chosen) + 1;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const CaseResult& r = results[i];
    bool passed = r.verdict == Verdict::kPass;
    if (passed) {
      ++s.passed;
      if (auto up = speedup(r); up && (!s.best_speedup || *up > *s.best_speedup)) s.best_speedup = up;
    }
    s.per_sample.push_back({static_cast<int>(i) + 1, r.verdict, speedup(r), r.reason});
    if (r.generation) {
      add(s.tokens_in, r.generation->tokens_in);
      add(s.tokens_out, r.generation->tokens_out);
      add(s.tool_calls, r.generation->tool_calls);
      add(s.cost, r.generation->cost);
    }
  }
  s.pass_at_k = pass_at_ks(s.n, s.passed, every_k(s.n));
  CaseResult out = results[chosen];
  out.samples = std::move(s);
  return out;
}

}  // namespace kgym::run
