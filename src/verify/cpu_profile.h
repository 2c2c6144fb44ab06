#pragma once
// Where a side's CPU time went during the timing, sampled from outside its
// processes (docs/anti-cheat.md "Library compute, seen from outside"), and
// the decision taken from it. Pure: the samples come from
// verify/cpu_sampler.h (perf) or from tests.
//
// Every sample is one tick of a process's CPU clock, attributed to the
// object whose code it was in. An object is the library's when its file is
// named as one of the compute libraries (libtorch_cpu, BLAS, oneDNN, ...)
// or its GNU build id is one of theirs (a renamed copy is still the
// library); code in no file (a library's JIT, or code a candidate mapped
// itself) and, in the candidate's processes, any object that is neither
// its extension as kgym built it nor one the reference's worker maps (a
// patched copy of a library) count as the library's too. The candidate's
// own extension, the interpreter, libc, torch's glue and the kernel do not.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace kgym::verify {

// Samples per object, as `perf script -F dso` names it
// ("/usr/lib/.../x.so", "[kernel.kallsyms]", "[unknown]").
using ObjectSamples = std::map<std::string, std::int64_t>;

// `perf script -F pid,ip,dso --show-task-events` output of a system-wide
// recording with call chains: each process's samples and the parent of
// every process perf saw start or found running. A sample in the kernel
// counts for the first user frame of its chain (a page fault of the
// library's kernel writing a fresh output is the library's time).
struct PerfScript {
  std::map<int, ObjectSamples> by_process;  // pid -> samples
  std::map<int, int> parents;               // pid -> parent pid
  // pid -> samples, from `perf script -F pid` (one pid per line): no
  // object's name is printed there, so none can forge it.
  std::map<int, std::int64_t> totals;
};
PerfScript parse_perf_script(std::string_view script_output);

// `perf script -F pid` output: samples per pid.
std::map<int, std::int64_t> parse_perf_pids(std::string_view text);

// The processes below `roots` (themselves included).
bool below(const PerfScript& script, const std::set<int>& roots, int pid);

// The samples of the processes below `roots`.
ObjectSamples samples_below(const PerfScript& script, const std::set<int>& roots);

// The processes below `roots` whose samples by object do not add up to
// their count in `totals`: were a file's name (only a candidate's own file
// could have such a name) to break a line of the report (perf 6.1 writes a
// line break in a name as \012, another version might not), the report
// could show samples that were not taken, or hide some.
std::vector<int> miscounted_below(const PerfScript& script, const std::set<int>& roots);

// `perf buildid-list` output: "<hex> <path>" per line -> path -> build id.
std::map<std::string, std::string> parse_perf_build_ids(std::string_view text);

// Whether an object's file name is one of the compute libraries'.
bool library_file_name(std::string_view path);

// What is known of the objects a side's code may run in, by GNU build id.
struct KnownObjects {
  std::set<std::string> library;    // the compute libraries the reference's worker maps
  std::set<std::string> own;        // the candidate's extensions, as kgym built them
  std::set<std::string> reference;  // every object the reference's worker maps
  // The candidate's own builds are known: an object that is none of the
  // above is code the candidate brought (a patched copy of a library, a
  // binary it wrote), and counts as library code.
  bool judge_foreign = false;
};

// One side of the timing (a worker and its twin) as sampled.
struct SideProfile {
  std::int64_t calls = 0;            // forward calls the side ran while sampled
  std::int64_t samples = 0;          // all samples of its processes
  std::int64_t library_samples = 0;  // those in library (or foreign) code
  // Those in libc, left out of the shares: the harness's own work in the
  // worker (copying each call's input set, writing its outputs away) is
  // libc's memmove and write, and outweighs a small kernel's.
  std::int64_t libc_samples = 0;
  struct Object {
    std::string name;  // the file's name (no directory), or "[kernel.kallsyms]", ...
    std::int64_t samples = 0;
    // "library", "foreign" (neither the candidate's build nor anything the
    // reference runs), "fileless" (code in no file), "own" (the candidate's
    // extension), "libc", "runtime" (the interpreter, torch's glue, ...),
    // "kernel" (no user code under the sample).
    std::string kind;
  };
  std::vector<Object> objects;  // by samples, most first

  double library_per_call() const { return calls > 0 ? static_cast<double>(library_samples) / calls : 0; }
  // Library samples among all but libc's.
  double library_share() const {
    auto judged = samples - libc_samples;
    return judged > 0 ? static_cast<double>(library_samples) / judged : 0;
  }
};

// Classifies one side's samples. `build_ids` are perf's (object path ->
// build id); a build id perf read under a library's file name is the
// library's wherever else it appears.
SideProfile classify_samples(const ObjectSamples& samples, const std::map<std::string, std::string>& build_ids,
                             const KnownObjects& known, std::int64_t calls);

// The decision's thresholds. The candidate's library time per call is
// judged against the reference's: an honest kernel's glue (allocating its
// output, a copy to make an input contiguous) costs a small part of what
// the reference's library compute does.
struct LibraryAllowance {
  double per_call_ratio = 0.5;    // a finding from this share of the reference's library time per call
  double candidate_share = 0.15;  // ... and this share of the candidate's own samples
  double dominant_share = 0.4;    // a finding from this share of the candidate's samples alone
  std::int64_t min_reference_samples = 50;  // fewer library samples of the reference: no decision
  std::int64_t min_candidate_samples = 20;
};

// `runtime.op_trace` when library code took at least `dominant_share` of
// the candidate's processes' CPU time, or, per call, at least
// `per_call_ratio` of the reference's library time while being at least
// `candidate_share` of the candidate's.
std::optional<CheatFinding> library_compute_finding(const SideProfile& candidate, const SideProfile& reference,
                                                    const LibraryAllowance& allowance = {});

// result.json's runtime.cpu_profile entry of one side.
nlohmann::json side_profile_json(const SideProfile& side);

}  // namespace kgym::verify
