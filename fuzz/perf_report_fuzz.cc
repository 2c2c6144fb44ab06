// perf's report of the timing's samples (verify/cpu_profile.cc): text perf
// writes, with the names of objects a candidate may have created and
// named. Half the input is read as `perf script -F pid,ip,dso
// --show-task-events`, half as `-F pid`; the samples are then classified
// and judged. Contracts: every process's samples are counted once, the
// sides' samples never exceed the report's, shares stay within [0, 1], a
// finding names its rule and evidence.
#include "fuzz/fuzz_util.h"
#include "util/json_text.h"
#include "verify/cpu_profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kgym::verify;
  std::string_view text = kgym::fuzz::as_text(data, size);
  std::size_t half = text.size() / 2;
  PerfScript script = parse_perf_script(text.substr(0, half));
  script.totals = parse_perf_pids(text.substr(half));
  auto ids = parse_perf_build_ids(text.substr(half));

  std::int64_t all = 0;
  std::set<int> roots;
  for (const auto& [pid, samples] : script.by_process) {
    for (const auto& [object, count] : samples) {
      if (count <= 0) kgym::fuzz::contract_broken("an object with no sample");
      all += count;
    }
    if (roots.size() < 3) roots.insert(pid);
  }
  ObjectSamples side = samples_below(script, roots);
  std::int64_t below = 0;
  for (const auto& [object, count] : side) below += count;
  if (below > all) kgym::fuzz::contract_broken("a side has more samples than the report");
  (void)miscounted_below(script, roots);

  KnownObjects known;
  known.judge_foreign = size % 2 == 0;
  for (const auto& [path, id] : ids) known.reference.insert(id);
  SideProfile candidate = classify_samples(side, ids, known, static_cast<std::int64_t>(size % 7));
  SideProfile reference = classify_samples(samples_below(script, {1}), ids, known, 3);
  if (candidate.samples != below || candidate.library_samples > candidate.samples)
    kgym::fuzz::contract_broken("classified samples do not add up");
  if (candidate.library_share() < 0 || candidate.library_share() > 1)
    kgym::fuzz::contract_broken("a share outside [0, 1]");
  if (auto finding = library_compute_finding(candidate, reference)) {
    if (finding->rule != "runtime.op_trace" || finding->evidence.empty())
      kgym::fuzz::contract_broken("a finding without its rule or evidence");
  }
  // As result.json is written: names that are no UTF-8 become U+FFFD.
  (void)kgym::util::json_text(side_profile_json(candidate));
  return 0;
}
