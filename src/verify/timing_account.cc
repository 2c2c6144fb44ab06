// The figures of the timing phase (timing_session_internal.h): each
// round's four batches turned into per-call figures, on the parent's clock
// or, where the harness is most of a batch, on the workers' own clocks
// with everything the candidate's worker did not claim as timed calls
// held against the reference's (untimed_excess_ns, unclaimed_beyond_ns,
// charge_unclaimed).
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "verify/stats.h"
#include "verify/timing_checks.h"
#include "verify/timing_session_internal.h"

namespace kgym::verify::timing_internal {

// What a candidate batch's untimed and traced calls took beyond the
// reference's in the same batch, scaled by the two sides' timed medians,
// with half of that as slack (a cold call's time varies from batch to
// batch); 0 when within it.
double untimed_excess_ns(const Batch& reference, const Batch& candidate) {
  auto ref_timed = median(reference.ns), cand_timed = median(candidate.ns);
  if (!ref_timed || !cand_timed || *ref_timed <= 0) return 0;
  double expected = reference.untimed_ns * (*cand_timed / *ref_timed);
  return std::max(0.0, candidate.untimed_ns - kUntimedSlack * expected);
}

// Each side's figure for the round: its batch on the parent's clock, less
// the harness's share — what the reference worker of the same sets spent
// around its calls in this round (the request, mapping the sets, copying
// the outputs out, sealing them) — per call. The reference is trusted to
// say how long its own calls took, so its figure is its own calls; nothing
// the candidate's process says enters the candidate's.
void TimingSession::account(int round, std::array<std::optional<Batch>, kSides>& taken) {
  (void)round;
  auto outside = [&](Role side) {
    const Batch& b = *taken[index_of(side)];
    double inner = 0;
    for (double ns : b.ns) inner += ns;
    return (b.worker_ns - inner - b.untimed_ns) / std::max(1, b.positions);
  };
  overhead_.excess_ns.push_back(outside(Role::kCandidate) - outside(Role::kReference));
  overhead_.excess_ns.push_back(outside(Role::kCandidateTwin) - outside(Role::kTwin));
  overhead_.aa_ns.push_back(outside(Role::kTwin) - outside(Role::kReference));
  overhead_.reference_ns.push_back(outside(Role::kReference));
  std::array<double, 2> harness{};
  for (Role trusted : {Role::kReference, Role::kTwin}) {
    const Batch& b = *taken[index_of(trusted)];
    harness[first_sequence(trusted) ? 0 : 1] = std::max(0.0, b.outer_ns - b.calls_ns());
  }
  if (!parent_clock_) {
    const Batch& reference = *taken[index_of(Role::kReference)];
    unclaimed_.aa_ns.push_back(unclaimed_beyond_ns(reference, *taken[index_of(Role::kTwin)]));
    unclaimed_.reference_ns.push_back((reference.outer_ns - (reference.calls_ns() - reference.untimed_ns)) /
                                      static_cast<double>(std::max<std::size_t>(1, reference.ns.size())));
  }
  for (Role side : kAllSides) {
    Batch& b = *taken[index_of(side)];
    if (!parent_clock_) {
      // Where the harness outweighs the calls, the worker's own clock (the
      // parent's clock bounds it over the whole timing: clock_finding): its
      // timed calls, each charged an equal part of what its untimed and
      // traced calls took beyond what the reference's took in the same
      // batch of the same sequence, scaled to the two sides' timed speed
      // (untimed_excess_ns). Work moved into an untimed call is charged to
      // the timed ones; an honest kernel's untimed calls cost what the
      // reference's do, and its figure is its timed calls. The figure is
      // the batch's mean timed call, for every side alike: the sum of the
      // calls is what the parent's clock bounds, and a median would move
      // for a worker that reports the same sum unevenly.
      const Batch& reference = *taken[index_of(first_sequence(side) ? Role::kReference : Role::kTwin)];
      double extra = is_candidate(side) ? untimed_excess_ns(reference, b) : 0;
      if (is_candidate(side) && !b.ns.empty())
        unclaimed_.excess_ns.push_back(unclaimed_beyond_ns(reference, b) -
                                       extra / static_cast<double>(b.ns.size()));
      double sum = extra;
      for (double ns : b.ns) sum += ns;
      b.figure_ns = sum / static_cast<double>(std::max<std::size_t>(1, b.ns.size()));
      rounds_[index_of(side)].push_back({b.figure_ns});
      (is_candidate(side) ? candidate_ : reference_).push_back(b.figure_ns);
      if (extra > 0) charged_untimed_ns_ += extra;
      continue;
    }
    double own = b.outer_ns - harness[first_sequence(side) ? 0 : 1];
    // A batch cannot take less than a nanosecond a call, whatever the
    // harness's median says.
    b.figure_ns = std::max(own, static_cast<double>(b.positions)) / std::max(1, b.positions);
    rounds_[index_of(side)].push_back({b.figure_ns});
    (is_candidate(side) ? candidate_ : reference_).push_back(b.figure_ns);
  }
}

// What batch `b` left unclaimed beyond what `reference`'s batch of the same
// round left, per timed call: the parent's clock around it less the timed
// calls its worker reported, against the reference's less its timed calls,
// with the reference's untimed calls scaled to b's timed speed.
double unclaimed_beyond_ns(const Batch& reference, const Batch& b) {
  auto ref_timed = median(reference.ns), timed = median(b.ns);
  if (!ref_timed || !timed || *ref_timed <= 0 || b.ns.empty()) return 0;
  double claimed = 0, ref_claimed = 0;
  for (double ns : b.ns) claimed += ns;
  for (double ns : reference.ns) ref_claimed += ns;
  const double expected =
      reference.outer_ns - ref_claimed - reference.untimed_ns + reference.untimed_ns * (*timed / *ref_timed);
  return (b.outer_ns - claimed - expected) / static_cast<double>(b.ns.size());
}

// Where the figures are the workers' own clocks: what the candidate's
// batches left unclaimed beyond the reference's, over all the rounds,
// charged to each of its timed calls past the allowance
// (unclaimed_charge_ns), in the rounds and the samples alike. What is
// within the allowance stays uncharged; widen_by_unclaimed moves the
// interval's lower end as if it were charged too.
void TimingSession::charge_unclaimed() {
  if (parent_clock_) return;
  const double excess = median(unclaimed_.excess_ns).value_or(0);
  const double charge = unclaimed_charge_ns(unclaimed_, trusted_foreign_share_);
  uncharged_unclaimed_ns_ = std::max(0.0, excess - charge);
  note_(
      fmt::format("timing: the candidate's batches left {:.3f} ms per timed call unclaimed beyond the "
                  "reference's (median of "
                  "{} rounds; the twins differ by {:.3f} ms); {:.3f} ms charged to each of its timed calls, "
                  "{:.3f} ms within "
                  "the allowance",
                  excess / 1e6, unclaimed_.aa_ns.size(), median(unclaimed_.aa_ns).value_or(0) / 1e6,
                  charge / 1e6, uncharged_unclaimed_ns_ / 1e6));
  if (charge <= 0) return;
  for (Role side : {Role::kCandidate, Role::kCandidateTwin})
    for (auto& round : rounds_[index_of(side)])
      for (double& ns : round) ns += charge;
  for (double& ns : candidate_) ns += charge;
  charged_unclaimed_ns_ = charge;
}

// The speedup's lower end as if the unclaimed time within the allowance
// had been charged as well: a worker that hid less than the allowance
// moves the point, not the lower end.
void TimingSession::widen_by_unclaimed(SpeedupEstimate& speedup) const {
  auto call = median(candidate_);
  if (uncharged_unclaimed_ns_ <= 0 || !call || *call <= 0 || !speedup.ci95) return;
  speedup.ci95->lo *= *call / (*call + uncharged_unclaimed_ns_);
}

}  // namespace kgym::verify::timing_internal
