// The memoization probe of the timing phase (timing_session_internal.h).
#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "util/seed_mix.h"
#include "verify/stats.h"
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

// The probe looks for a remembered output: calls of the reference and the
// candidate on sets the candidate was handed before (drawn again from
// get_inputs() under their seeds, into a file of their own) and on unseen
// sets (fresh draws), mixed in batches shaped like the timed ones, that run
// inside the timed rounds at rounds and places drawn by the parent. A
// batch's request looks like a timed batch's (one file, a set per call, a
// traced call), so only a lookup of an input's contents tells a probe batch
// from a timed one. Which positions get seen sets is drawn for every batch:
// a fixed alternation could fall in step with another process's time
// slices on a loaded machine and make either kind look slow. The kinds are
// told apart by the workers' own per-call clocks; the probe does not make
// the figure (no timed call gets a set twice, so a memo gains nothing
// there).
void TimingSession::plan_probes(int warmup, int calls, double per_call_ns, double budget_ns, int rounds_expected) {
  // Where sets are costly (tens of MB each: making one can take 50x a
  // call), the probe takes half the batches rather than more than a
  // quarter of the timing's budget; where calls are (a forward of seconds),
  // as few batches as fit the budget, one at the least.
  const double per_set_ns = sets_made_ > 0 ? make_ns_ / static_cast<double>(sets_made_) : 0;
  const int n = warmup + calls;
  int batches = kProbeBatches;
  auto cost = [&] { return batches * (n * per_set_ns + 2 * n * per_call_ns); };
  if (batches * n * per_set_ns > budget_ns / 4) batches /= 2;
  while (batches > 1 && cost() > budget_ns / 2) batches /= 2;
  // From the second round on (the candidate has then been handed sets),
  // before the earliest round the timing may stop at.
  const int last = std::max(1, rounds_expected - 1);
  probe_rounds_.clear();
  for (int k = 0; k < batches; ++k) probe_rounds_.push_back(std::uniform_int_distribution<int>(1, last)(rng_));
  std::sort(probe_rounds_.begin(), probe_rounds_.end());
}

bool TimingSession::probe_batch(int warmup, int calls, ProbeCalls& into) {
  const double began = now_ns(), make_before = make_ns_;
  const int n = warmup + calls;
  std::string mask = trace_mask(warmup, calls);
  // Half of the timed positions that are not traced get a seen set, each a
  // different one where the candidate has seen enough.
  std::vector<int> open;
  for (int p = warmup; p < n; ++p)
    if (mask[static_cast<std::size_t>(p)] == '\0') open.push_back(p);
  std::shuffle(open.begin(), open.end(), rng_);
  std::vector<bool> was_seen(static_cast<std::size_t>(n), false);
  const std::size_t seen_count = seen_seeds_.empty() ? 0 : std::max<std::size_t>(1, open.size() / 2);
  std::vector<std::uint64_t> pool = seen_seeds_;
  std::shuffle(pool.begin(), pool.end(), rng_);
  std::vector<std::uint64_t> seeds;
  std::uint64_t next = sets_made_;
  for (std::size_t k = 0; k < seen_count; ++k) was_seen[static_cast<std::size_t>(open[k])] = true;
  std::size_t used = 0;
  for (int p = 0; p < n; ++p) {
    if (was_seen[static_cast<std::size_t>(p)]) {
      seeds.push_back(pool[used++ % pool.size()]);
    } else {
      seeds.push_back(util::splitmix64(inputs_.set_seeds + ++next) >> 1);
    }
  }
  auto files = make_sets_of({seeds}, "making probe sets (seen ones drawn again)");
  if (!files) return false;
  BatchSets sets = whole((*files)[0]);
  auto order = std::bernoulli_distribution(0.5)(rng_) ? std::array{Role::kReference, Role::kCandidate}
                                                      : std::array{Role::kCandidate, Role::kReference};
  for (Role side : order) {
    auto b = batch(side, sets, mask, warmup, calls, "probing for memoization");
    if (!b) return false;
    for (std::size_t k = 0; k < b->ns.size(); ++k) {
      const int p = warmup + b->timed_at[k];
      if (p >= n || mask[static_cast<std::size_t>(p)] != '\0') continue;
      bool seen = was_seen[static_cast<std::size_t>(p)];
      auto& kind = side == Role::kReference ? (seen ? into.reference_seen : into.reference_unseen)
                                            : (seen ? into.candidate_seen : into.candidate_unseen);
      kind.push_back(b->ns[k]);
    }
  }
  ++into.batches;
  probe_ns_ += elapsed_ns(began);
  probe_make_ns_ += make_ns_ - make_before;
  return true;
}

// The probe batches the rounds did not reach run now. When the candidate
// looks faster on seen sets, a second probe after the rounds must agree: a
// memoizer is faster every time, a loaded machine's noise seldom twice in
// the same direction.
bool TimingSession::finish_probe(int warmup, int calls, const Performance& perf) {
  const int planned = static_cast<int>(probe_rounds_.size());
  const auto began = now_ns();
  const double make_before_ns = make_ns_;
  const int inside = probe_.batches;
  while (probe_.batches < planned) {
    if (!probe_batch(warmup, calls, probe_)) return false;
  }
  auto summary = [this](const ProbeCalls& p) {
    return MemoProbe{low_quantile(p.candidate_seen),   low_quantile(p.candidate_unseen),
                     low_quantile(candidate_timed_),   low_quantile(p.reference_seen),
                     low_quantile(p.reference_unseen), low_quantile(reference_timed_)};
  };
  auto describe = [](const MemoProbe& m) {
    return fmt::format("candidate {:.4f} ms on seen sets, {:.4f} ms on unseen, {:.4f} ms timed; reference "
                       "{:.4f} / {:.4f} / {:.4f} ms",
                       m.candidate_seen_ns / 1e6, m.candidate_unseen_ns / 1e6, m.candidate_timed_ns / 1e6,
                       m.reference_seen_ns / 1e6, m.reference_unseen_ns / 1e6, m.reference_timed_ns / 1e6);
  };
  MemoProbe first = summary(probe_);
  note_(fmt::format("memoization probe: {} ({} batches per side inside the rounds, {} after them)",
                    describe(first), inside, probe_.batches - inside));
  auto found = memoization_finding(first, perf.noise_floor, perf.candidate_noise_floor);
  if (!found) return true;
  ProbeCalls again;
  for (int k = 0; k < std::max(1, planned); ++k) {
    if (!probe_batch(warmup, calls, again)) return false;
  }
  MemoProbe second = summary(again);
  note_(fmt::format("memoization probe, second: {} ({:.2f} s, {:.2f} s of it making sets)", describe(second),
                    elapsed_ns(began) / 1e9, (make_ns_ - make_before_ns) / 1e9));
  if (!memoization_finding(second, perf.noise_floor, perf.candidate_noise_floor)) {
    note_("memoization probe: the second probe did not confirm the first; not a finding");
    return true;
  }
  found->evidence += fmt::format("; a second probe after the rounds: {}", describe(second));
  fail(std::move(*found));
  return true;
}

}  // namespace kgym::verify::timing_internal
