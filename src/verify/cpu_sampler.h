#pragma once
// Samples where processes spend their CPU time, from outside them: `perf
// record -a -e cpu-clock` on the given cores (every process that runs
// there, so nothing a sampled process starts or ends can slip out or stall
// perf), sampling only while the caller has it on (perf's control fifo:
// the timing turns it on around each timed batch), then `perf script`
// (each sample's process, and every process's parent) and `perf
// buildid-list` read back; cpu_profile.h picks each side's processes out
// and decides. The candidate cannot see or switch this observer off: it
// runs as kgym, outside the candidate's box, whose seccomp filter
// (kgym-box) fails perf_event_open anyway. System-wide sampling needs root (or
// perf_event_paranoid <= 0); where perf is missing or refused, start()
// says why and the verification goes on without this check, saying so.
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
  PerfScript script;                             // samples by process, and the processes' parents
  std::map<std::string, std::string> build_ids;  // object path -> GNU build id, as perf read them
  std::string costs;                             // what reading it took, for the log
};

class CpuSampler {
 public:
  // Every process on `cores` (empty: on every core), sampled `hz` times
  // per second of CPU time; perf's data goes to `data`, its messages to
  // `log`; its control fifos are made beside `data`. Returns once perf is
  // attached (or failed to), sampling off.
  static std::expected<CpuSampler, std::string> start(const std::vector<int>& cores,
                                                      const std::filesystem::path& data,
                                                      const std::filesystem::path& log, int hz = 3997);

  // Sampling on or off (it starts off). Does not wait for perf's answer
  // unless `wait` (perf takes the command within its next wake-up, well
  // under a millisecond on an idle core; a late switch cuts or extends a
  // batch's sampled window alike for both sides). False when perf could
  // not be told, or (with `wait`) did not answer: the sampler is then
  // broken for good, and finish() says so.
  bool set_sampling(bool on, bool wait = false);
  // The switches so far and the parent's time they took (waiting for perf).
  int switches() const { return switches_; }
  double switch_seconds() const { return switch_s_; }

  // Stops perf and reads its samples.
  std::expected<SampleReading, std::string> finish(worker::Deadline deadline);

 private:
  CpuSampler(worker::ChildProcess perf, std::string program, std::filesystem::path data, std::filesystem::path log,
             util::UniqueFd control, util::UniqueFd ack)
      : perf_(std::move(perf)),
        program_(std::move(program)),
        data_(std::move(data)),
        log_(std::move(log)),
        control_(std::move(control)),
        ack_(std::move(ack)) {}
  worker::ChildProcess perf_;
  std::string program_;
  std::filesystem::path data_, log_;
  util::UniqueFd control_, ack_;
  std::string broken_;  // why a control command failed
  bool read_answers(worker::Deadline until);
  int unanswered_ = 0;  // commands perf has not acknowledged yet
  int switches_ = 0;
  double switch_s_ = 0;
};

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
