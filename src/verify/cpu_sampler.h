#pragma once
// Samples where processes spend their CPU time, from outside them: `perf
// record -e cpu-clock` attached to every process of the given trees (and
// every thread and child they start later), sampling only while the caller
// has it on (perf's control fifo: the timing turns it on around each timed
// batch), then `perf script` and `perf buildid-list` read back
// (verify/cpu_profile.h decides from the samples).
// The candidate cannot see or switch this observer off: it runs as kgym,
// outside the candidate's box, whose seccomp filter refuses perf_event_open
// anyway. Where perf is missing or the kernel refuses (not root and
// perf_event_paranoid > 1, a container without perf events), start() says
// why and the verification goes on without this check, saying so.
#include <sys/types.h>

#include <expected>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "util/unique_fd.h"
#include "verify/cpu_profile.h"
#include "worker/child_process.h"

namespace kgym::verify {

struct SampleReading {
  ObjectSamples samples;
  std::map<std::string, std::string> build_ids;  // object path -> GNU build id, as perf read them
};

class CpuSampler {
 public:
  // Every process of the trees rooted at `roots`, sampled `hz` times per
  // second of its CPU time; perf's data goes to `data`, its messages to
  // `log`; its control fifos are made beside `data`. Returns once perf is
  // attached (or failed to), sampling off.
  static std::expected<CpuSampler, std::string> start(const std::vector<pid_t>& roots,
                                                      const std::filesystem::path& data,
                                                      const std::filesystem::path& log, int hz = 997);

  // Sampling on or off (it starts off); returns once perf acknowledged.
  // False when perf did not answer: the sampler is then broken for good,
  // and finish() says so.
  bool set_sampling(bool on);

  // Stops perf and reads its samples.
  std::expected<SampleReading, std::string> finish(Deadline deadline);

 private:
  CpuSampler(ChildProcess perf, std::string program, std::filesystem::path data, std::filesystem::path log,
             util::UniqueFd control, util::UniqueFd ack)
      : perf_(std::move(perf)),
        program_(std::move(program)),
        data_(std::move(data)),
        log_(std::move(log)),
        control_(std::move(control)),
        ack_(std::move(ack)) {}
  ChildProcess perf_;
  std::string program_;
  std::filesystem::path data_, log_;
  util::UniqueFd control_, ack_;
  std::string broken_;  // why a control command failed
};

// Every pid of the trees rooted at `roots` now.
std::vector<pid_t> process_trees(const std::vector<pid_t>& roots);

// The host pid of the process whose pid, inside the PID namespace of the
// processes under `root`, is `inner` (a warm worker, whose zygote knows it
// by its namespace's pid); nullopt when none is.
std::optional<pid_t> host_pid_below(pid_t root, pid_t inner);

// The objects process `pid` has mapped: path (as the process sees it) ->
// GNU build id, read through /proc/<pid>/map_files; objects without one
// are left out.
std::map<std::string, std::string> mapped_object_ids(pid_t pid);

// The build ids of the ELF files below `dir` (the candidate's builds).
std::set<std::string> build_ids_below(const std::filesystem::path& dir);

}  // namespace kgym::verify
