// Both sides' CPU time, sampled from outside their processes during the
// timing: where the candidate's went, against the reference's
// (docs/anti-cheat.md "Library compute, seen from outside").
#include <fmt/format.h>

#include "verify/cpu_profile.h"
#include "verify/verification.h"

namespace kgym::verify::detail {

std::vector<pid_t> Verification::side_pids(bool candidate) {
  std::vector<pid_t> pids;
  for (Role role : candidate ? std::array{Role::kCandidate, Role::kCandidateTwin}
                             : std::array{Role::kReference, Role::kTwin}) {
    auto& w = slot(role);
    if (!w) continue;
    if (!w->warm()) {
      pids.push_back(w->pid());
      continue;
    }
    int zygote = !req_.warm ? 0 : candidate ? req_.warm->candidate_zygote_pid : req_.warm->reference_zygote_pid;
    if (zygote <= 0) return {};
    auto host = host_pid_below(zygote, w->pid());
    if (!host) return {};
    pids.push_back(*host);
  }
  return pids;
}

Verification::OutsideSampling Verification::start_outside_sampling() {
  OutsideSampling sampling;
  auto reference = side_pids(false), candidate = side_pids(true);
  if (reference.empty() || candidate.empty()) {
    sampling.missing = "the workers' host processes could not be found";
  } else {
    auto started = [&](const char* side, const std::vector<pid_t>& pids) {
      return CpuSampler::start(pids, req_.scratch_dir / fmt::format("{}.perf", side),
                               req_.scratch_dir / fmt::format("{}.perf.log", side));
    };
    auto ref = started("reference", reference);
    auto cand = ref ? started("candidate", candidate) : std::unexpected(std::string());
    if (!ref || !cand) {
      sampling.missing = ref ? cand.error() : ref.error();
    } else {
      sampling.reference = std::move(*ref);
      sampling.candidate = std::move(*cand);
      for (pid_t pid : process_trees(reference)) {
        for (const auto& [path, id] : mapped_object_ids(pid)) {
          sampling.known.reference.insert(id);
          if (library_file_name(path)) sampling.known.library.insert(id);
        }
      }
      // The candidate's extensions as kgym built them: with those known,
      // code that is neither theirs nor the reference's is foreign.
      if (!prebuilt_dir_.empty()) sampling.known.own = build_ids_below(prebuilt_dir_);
      sampling.known.judge_foreign = !sampling.known.own.empty();
    }
  }
  if (!sampling.missing.empty()) note("outside profile: not sampled: " + sampling.missing);
  return sampling;
}

std::optional<CheatFinding> Verification::finish_outside_sampling(OutsideSampling& sampling,
                                                                  std::int64_t reference_calls,
                                                                  std::int64_t candidate_calls) {
  auto record_missing = [&](std::string why) -> std::optional<CheatFinding> {
    note("outside profile: not sampled: " + why);
    if (result_.runtime) result_.runtime->cpu_profile_missing = std::move(why);
    return std::nullopt;
  };
  if (!sampling.reference || !sampling.candidate) return record_missing(sampling.missing);
  auto deadline = Clock::now() + std::chrono::seconds(60);
  auto ref = sampling.reference->finish(deadline);
  auto cand = sampling.candidate->finish(deadline);
  if (!ref || !cand) return record_missing(ref ? cand.error() : ref.error());
  // A build id perf read under a library's name, in either side's
  // recording, is the library's wherever else it appears.
  KnownObjects known = sampling.known;
  for (const auto* reading : {&*ref, &*cand})
    for (const auto& [path, id] : reading->build_ids)
      if (library_file_name(path)) known.library.insert(id);
  // And what the reference ran code in while timed is the reference's.
  for (const auto& [path, id] : ref->build_ids) known.reference.insert(id);
  KnownObjects trusted = known;
  trusted.judge_foreign = false;  // the reference's objects are what it runs
  SideProfile reference = classify_samples(ref->samples, ref->build_ids, trusted, reference_calls);
  SideProfile candidate = classify_samples(cand->samples, cand->build_ids, known, candidate_calls);
  note(fmt::format("outside profile: reference {} samples over {} calls, {:.0f}% in library code; candidate {} "
                   "samples over {} calls, {:.0f}% in library or foreign code{}",
                   reference.samples, reference.calls, 100 * reference.library_share(), candidate.samples,
                   candidate.calls, 100 * candidate.library_share(),
                   known.judge_foreign ? "" : " (its builds unknown: foreign code not told apart)"));
  // What counts as foreign, by path and build id, for whoever reads the log.
  for (const auto& [path, count] : cand->samples) {
    auto id = cand->build_ids.find(path);
    bool known_id = id != cand->build_ids.end();
    if (!path.starts_with("[") && known.judge_foreign && (!known_id || (!known.own.contains(id->second) &&
                                                                        !known.reference.contains(id->second) &&
                                                                        !known.library.contains(id->second))))
      note(fmt::format("outside profile: {} samples of the candidate in {} (build id {}), which is neither its "
                       "build nor an object the reference's worker maps",
                       count, path, known_id ? id->second : "unknown"));
  }
  if (result_.runtime) {
    result_.runtime->cpu_profile = {{"source", "perf cpu-clock"},
                                    {"reference", side_profile_json(reference)},
                                    {"candidate", side_profile_json(candidate)}};
    result_.runtime->checks.push_back("outside_profile");
  }
  if (req_.candidate_is_reference) return std::nullopt;
  return library_compute_finding(candidate, reference);
}

}  // namespace kgym::verify::detail
