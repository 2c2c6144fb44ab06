// Both sides' CPU time, sampled from outside their processes during the
// timing: where the candidate's went, against the reference's
// (docs/anti-cheat.md "Library compute, seen from outside").
#include <fmt/format.h>

#include "util/proc_tree.h"
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
  auto began = worker::Clock::now();
  auto reference = side_pids(false), candidate = side_pids(true);
  if (reference.empty() || candidate.empty()) {
    sampling.missing = "the workers' host processes could not be found";
  } else if (auto started = CpuSampler::start(reference_cores_, req_.scratch_dir / "timing.perf",
                                              req_.scratch_dir / "timing.perf.log");
             !started) {
    sampling.missing = started.error();
  } else {
    sampling.sampler = std::move(*started);
    sampling.reference_roots = {reference.begin(), reference.end()};
    sampling.candidate_roots = {candidate.begin(), candidate.end()};
    for (pid_t pid : util::tree_pids(reference)) {
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
  if (!sampling.missing.empty()) {
    note("outside profile: not sampled: " + sampling.missing);
  } else {
    note(fmt::format("outside profile: perf attached to the leased cores in {:.2f} s",
                     std::chrono::duration<double>(worker::Clock::now() - began).count()));
  }
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
  if (!sampling.sampler) return record_missing(sampling.missing);
  note(fmt::format("outside profile: sampling switched {} times, {:.3f} s of the parent's time",
                   sampling.sampler->switches(), sampling.sampler->switch_seconds()));
  auto began = worker::Clock::now();
  auto reading = sampling.sampler->finish(began + std::chrono::seconds(60));
  if (!reading) return record_missing(reading.error());
  note("outside profile: " + reading->costs);
  // A report that does not add up was bent by an object's name: only a
  // candidate's own file could have such a name.
  std::set<int> both = sampling.reference_roots;
  both.insert(sampling.candidate_roots.begin(), sampling.candidate_roots.end());
  if (auto bent = miscounted_below(reading->script, both); !bent.empty() && !req_.candidate_is_reference) {
    return CheatFinding{"runtime.op_trace", "runtime",
                        fmt::format("sampled from outside, perf's report of the workers' processes ({}) does not add "
                                    "up to their sample counts: an object mapped in them has a name that breaks "
                                    "the report (a line break), which only the candidate's own files can have",
                                    fmt::join(bent, ", "))};
  }
  ObjectSamples reference_samples = samples_below(reading->script, sampling.reference_roots);
  ObjectSamples candidate_samples = samples_below(reading->script, sampling.candidate_roots);
  const auto& build_ids = reading->build_ids;
  // A build id perf read under a library's name, in either side's
  // recording, is the library's wherever else it appears.
  KnownObjects known = sampling.known;
  for (const auto& [path, id] : build_ids)
    if (library_file_name(path)) known.library.insert(id);
  // And what the reference ran code in while timed is the reference's.
  for (const auto& [path, count] : reference_samples)
    if (auto id = build_ids.find(path); id != build_ids.end()) known.reference.insert(id->second);
  KnownObjects trusted = known;
  trusted.judge_foreign = false;  // the reference's objects are what it runs
  SideProfile reference = classify_samples(reference_samples, build_ids, trusted, reference_calls);
  SideProfile candidate = classify_samples(candidate_samples, build_ids, known, candidate_calls);
  note(fmt::format("outside profile: read in {:.2f} s; reference {} samples over {} calls, {:.0f}% in library code; "
                   "candidate {} samples over {} calls, {:.0f}% in library or foreign code{}",
                   std::chrono::duration<double>(worker::Clock::now() - began).count(),
                   reference.samples, reference.calls, 100 * reference.library_share(), candidate.samples,
                   candidate.calls, 100 * candidate.library_share(),
                   known.judge_foreign ? "" : " (its builds unknown: foreign code not told apart)"));
  // What counts as foreign, by path and build id, for whoever reads the log.
  for (const auto& [path, count] : candidate_samples) {
    auto id = build_ids.find(path);
    bool known_id = id != build_ids.end();
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
