// The memoization probe of the timing phase (timing_session_internal.h).
#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "verify/timing_session_internal.h"

namespace kgym::verify::timing_internal {
namespace {

// The first quartile of `ns`: what a call costs when nothing else took the
// core. Another process's time slice only adds to a call; on a loaded
// machine about half the calls may carry one, and the median of each kind
// then falls on either side of that split by chance (measured: an honest
// kernel read 3.8x faster on the seen set under `ctest -j2`), where the
// first quartile of both stays the call's own time.
double low_quantile(std::vector<double> ns) {
  if (ns.empty()) return 0;
  std::sort(ns.begin(), ns.end());
  return ns[(ns.size() - 1) / 4];
}

}  // namespace

// Calls of the reference and the candidate on a set the candidate has
// already seen (the same file, handed again) and on unseen sets (fresh
// draws from get_inputs()), mixed in batches like the timed ones, so
// nothing in a call tells the candidate it is probed, and both kinds of
// call share each batch's conditions. Which positions get the seen set is
// drawn for every batch: a fixed alternation could fall in step with
// another process's time slices on a loaded machine and make either kind
// look slow. The kinds are told apart by the workers' own per-call clocks:
// the probe looks for a remembered output, it does not make the figure
// (a candidate that hides its memo here gains nothing from it in the
// timed rounds, where no set comes twice).
bool TimingSession::memoization_probe(const BatchSets& seen_in, int warmup, MemoProbe& probe) {
  const auto seen = seen_in.calls.at(static_cast<std::size_t>(
      std::uniform_int_distribution<int>(warmup, static_cast<int>(seen_in.calls.size()) - 1)(rng_)));
  const auto& seen_file = seen_in.files.at(static_cast<std::size_t>(seen.first));
  std::vector<double> ref_seen, ref_unseen, cand_seen, cand_unseen;
  // Where sets are costly (tens of MB each: making one can take 50x a
  // call), the probe takes half the batches rather than more than half the
  // timing's budget; where calls are (a forward of seconds), it takes as
  // few batches, and then calls, as fit the budget: one batch of four timed
  // calls at the least, two on the seen set and two on unseen ones.
  double per_set_ns = sets_made_ > 0 ? make_ns_ / static_cast<double>(sets_made_) : 0;
  double per_call_ns = median(reference_).value_or(0);
  double budget_ns = std::chrono::duration<double, std::nano>(timing_.budget).count();
  int calls = kProbeCalls;
  int batches = kProbeBatches;
  auto cost = [&] { return batches * ((2 + calls / 2) * per_set_ns + 2 * (1 + calls) * per_call_ns); };
  if (per_set_ns * (2 + calls / 2) * batches > budget_ns / 4) batches /= 2;
  while (batches > 1 && cost() > budget_ns) batches /= 2;
  if (cost() > budget_ns) calls = kProbeCalls / 2;
  const int n = 1 + calls;
  const int unseen = n - calls / 2;  // the untimed call's set is unseen too
  const auto began = now_ns();
  const double make_before_ns = make_ns_;
  for (int batch_index = 0; batch_index < batches; ++batch_index) {
    auto fresh = make_sets({unseen});
    if (!fresh) return false;
    // Position 0 is untimed; half of the others get the seen set.
    std::vector<int> positions(static_cast<std::size_t>(calls));
    std::iota(positions.begin(), positions.end(), 1);
    std::shuffle(positions.begin(), positions.end(), rng_);
    std::vector<bool> was_seen(static_cast<std::size_t>(n), false);
    for (int k = 0; k < calls / 2; ++k) was_seen[static_cast<std::size_t>(positions[k])] = true;
    BatchSets sets{.files = {seen_file, (*fresh)[0]}, .calls = {}};
    int next = 0;
    for (int p = 0; p < n; ++p)
      sets.calls.push_back(was_seen[static_cast<std::size_t>(p)] ? std::pair{0, seen.second} : std::pair{1, next++});
    for (Role side : {Role::kReference, Role::kCandidate}) {
      auto b = batch(side, sets, std::string(static_cast<std::size_t>(n), '\0'), 1, calls, "probing for memoization");
      if (!b) return false;
      for (std::size_t k = 0; k < b->ns.size(); ++k) {
        auto& into = side == Role::kReference ? (was_seen[k + 1] ? ref_seen : ref_unseen)
                                              : (was_seen[k + 1] ? cand_seen : cand_unseen);
        into.push_back(b->ns[k]);
      }
    }
  }
  probe = MemoProbe{low_quantile(cand_seen), low_quantile(cand_unseen), low_quantile(ref_seen),
                    low_quantile(ref_unseen)};
  note_(fmt::format(
      "memoization probe: candidate {:.4f} ms on a seen set, {:.4f} ms on unseen; reference {:.4f} / {:.4f} "
      "ms ({} batches in {:.2f} s, {:.2f} s of it making their sets)",
      probe.candidate_seen_ns / 1e6, probe.candidate_unseen_ns / 1e6, probe.reference_seen_ns / 1e6,
      probe.reference_unseen_ns / 1e6, batches, elapsed_ns(began) / 1e9, (make_ns_ - make_before_ns) / 1e9));
  return true;
}

// The probe, and when it finds the candidate faster on the seen set, a
// second probe on another seen set: a memoizer is faster every time, a
// loaded machine's noise seldom twice in the same direction.
bool TimingSession::probe_memoization(const BatchSets& seen_in, int warmup, const Performance& perf) {
  MemoProbe first;
  if (!memoization_probe(seen_in, warmup, first)) return false;
  auto found = memoization_finding(first, perf.noise_floor, perf.candidate_noise_floor);
  if (!found) return true;
  MemoProbe second;
  if (!memoization_probe(seen_in, warmup, second)) return false;
  auto confirmed = memoization_finding(second, perf.noise_floor, perf.candidate_noise_floor);
  if (!confirmed) {
    note_("memoization probe: the second probe did not confirm the first; not a finding");
    return true;
  }
  found->evidence += fmt::format("; a second probe on another seen set: {:.4f} ms seen, {:.4f} ms unseen",
                                 second.candidate_seen_ns / 1e6, second.candidate_unseen_ns / 1e6);
  fail(std::move(*found));
  return true;
}

}  // namespace kgym::verify::timing_internal
