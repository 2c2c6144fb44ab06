#pragma once
// Internal to verify/: one verification as an object (verify_candidate()
// runs it). verifier.cc holds its life cycle (workers, calls, failures,
// timing, the result); verification_correctness.cc the correctness phase
// (trials, distributions, runtime checks, extra shapes).
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/cgroup.h"
#include "verify/correctness_phase.h"
#include "verify/failure.h"
#include "verify/worker_set.h"
#include "verify/cpu_sampler.h"
#include "verify/lease.h"
#include "verify/output_match.h"
#include "verify/role.h"
#include "verify/runtime_checks.h"
#include "verify/tensor_compare.h"
#include "verify/timing_session.h"
#include "verify/verifier.h"
#include "worker/candidate_sandbox.h"
#include "worker/compile_cache.h"
#include "worker/worker_process.h"

namespace kgym::verify::detail {

double seconds_since(worker::Clock::time_point start);
// Cores in a cpu device's core list ("0-3,8" -> 5; "all" -> this process's).
int core_count(const std::string& device);

// How one side's CPU time is read from outside its processes, and from where.
struct SideReader {
  CpuReader read;
  std::string source;
  bool ticks = false;  // read from /proc, in clock ticks
};

class Verification {
 public:
  explicit Verification(const VerifyRequest& req)
      : req_(req),
        start_(worker::Clock::now()),
        deadline_(start_ + req.config.timeout),
        workers_(deadline_, req.config.call_timeout, [this](const std::string& line) { note(line); },
                 [this] { return failure_context(); }),
        overrides_(req.overrides) {}

  CaseResult run();

 private:
  std::expected<void, Failure> prepare();
  // verification_workers.cc: warm forks or cold spawns, then load/import/build.
  std::expected<void, Failure> start_workers();
  // verification_build.cc: the build stage (the candidate imported once,
  // boxed, with no device; its extensions kept in prebuilt_dir_), the
  // the build's
  // output copied where the candidate workers read it (`into`/prebuilt),
  // and the import request that hands it to them.
  std::expected<void, Failure> build_stage();
  std::expected<void, Failure> take_prebuilt(const std::filesystem::path& into);
  nlohmann::json import_header(const std::filesystem::path& candidate_file) const;
  // The init inputs the build stage builds ModelNew with (the request's,
  // else the trusted probe's when the candidate may build in a function).
  std::optional<nlohmann::json> init_inputs_for_builds();
  // The candidate's box (box_ and its paths), made and noted.
  std::expected<void, Failure> make_box();
  // The compile caches (worker/compile_cache.h): with the build of this
  // candidate's key in the cache, that build copied to scratch_dir/prebuilt
  // (true: nothing to build); else the box given its key's ccache. After a
  // build succeeded, keep_cached_build stores it under the key.
  bool reuse_cached_build(const std::optional<nlohmann::json>& init_inputs);
  void keep_cached_build(const std::filesystem::path& kept);
  // The candidate's hello and its reply to `import` (compile_s recorded).
  std::expected<void, Failure> receive_import();
  std::optional<worker::WorkerProcess> fork_warm(Role role, int threads,
                                         const std::vector<std::string>& env_overrides);
  std::vector<std::string> serve_args(Role role, const std::filesystem::path& scratch, int threads) const;
  std::expected<void, Failure> load_and_import(const std::filesystem::path& candidate_file);
  // The reference's `load` request: `problem` at `overrides` and the
  // request's precision, its state written to `state_out`.
  nlohmann::json load_header(const std::filesystem::path& problem,
                             const std::map<std::string, long long>& overrides,
                             const std::filesystem::path& state_out) const;
  // The twins: a second reference worker and a second candidate worker,
  // started (warm or cold) and loaded like the first two when the timing
  // begins. The candidate twin shares the candidate's directory and box.
  std::expected<void, Failure> start_twins();
  // The environment every worker gets on top of the parent's.
  std::vector<std::string> worker_env_overrides(int threads) const;
  worker::WorkerSpec cold_spec(Role role, int threads) const;
  // verification_lease.cc: the cgroups of cold workers (made once, before
  // the first cold spawn), the argv that enters the role's group, and the
  // watch over the candidate's CPU time during the timing.
  void ensure_lease_groups();
  const std::optional<util::CpuCgroup>& lease_group(bool candidate) const;
  std::vector<std::string> entering_lease(Role role, std::vector<std::string> argv) const;
  std::optional<LeaseWatch> make_lease_watch();
  bool lease_applies() const;
  std::optional<SideReader> side_reader(bool candidate) const;
  // Both sides' CPU time together, A/A runs included (the timing's share of
  // the cores other processes took); nullopt where a side cannot be read.
  std::optional<SideReader> sides_cpu_reader() const;
  // `host` (a file the candidate must read) as the candidate worker sees it.
  std::filesystem::path candidate_view(const std::filesystem::path& host) const;
  // The correctness phase (correctness_phase.h) over this verification's
  // workers and result.
  CorrectnessPhase correctness_phase();
  std::expected<void, Failure> measure_performance();
  // verification_roofline.cc: the problem's work counted by the reference
  // worker after the timing, and both sides set against the cached roofs
  // of the cores they ran on (performance.roofline); a failure is noted,
  // never a verdict.
  void place_on_roofline();
  // verification_profile.cc: both sides' processes sampled from outside
  // during the timing (verify/cpu_sampler.h), and the decision on the
  // candidate's library compute (verify/cpu_profile.h).
  struct OutsideSampling {
    std::optional<CpuSampler> sampler;                // the leased cores, system-wide
    std::set<int> reference_roots, candidate_roots;  // each side's workers (their host pids)
    KnownObjects known;
    std::string missing;                // why nothing is sampled
  };
  OutsideSampling start_outside_sampling();
  std::optional<CheatFinding> finish_outside_sampling(OutsideSampling& sampling, std::int64_t reference_calls,
                                                      std::int64_t candidate_calls);
  // The host pids of one side's workers (a warm one found below its zygote).
  std::vector<pid_t> side_pids(bool candidate);
  // What the timing's exchange saw fail last, and on whose request.
  struct TimingFailure {
    std::optional<Failure> failure;
    std::optional<Role> role;
  };
  // verification_baselines.cc: the reference through torch.compile timed
  // against the candidate like the eager one. A failure is the candidate's
  // (a cheat, a crash); the reference's make the baseline unavailable.
  std::expected<BaselineSpeedup, Failure> time_against_compiled(TimingInputs inputs, const Exchange& exchange,
                                                                const CoreLoadProbe& load,
                                                                const TimingFailure& failed);
  // verification_correctness.cc: each extra shape loaded on both sides
  // and tried once, then the default shape loaded again.
  std::expected<void, Failure> check_extra_shapes(CorrectnessPhase& phase);
  std::expected<void, Failure> reload(const std::map<std::string, long long>& overrides,
                                      std::string_view what);
  Failure runtime_cheat(CheatFinding finding, std::string_view where);

  // Sends `request` to one side and returns its successful reply; every
  // other outcome (error reply, timeout, death, bad bytes) becomes a Failure
  // (workers_, worker_set.h).
  std::expected<worker::Message, Failure> call(Role role, const worker::Message& request, std::string_view what,
                                               bool bounded_by_call_timeout = true) {
    return workers_.call(role, request, what, bounded_by_call_timeout);
  }
  std::expected<worker::Message, Failure> receive(Role role, std::string_view what, worker::Deadline deadline) {
    return workers_.receive(role, what, deadline);
  }
  Failure channel_failure(Role role, const worker::ChannelError& error, std::string_view what, bool overall_deadline) {
    return workers_.channel_failure(role, error, what, overall_deadline);
  }
  // What a worker's failure reads as depends on (worker_failures.h).
  FailureContext failure_context() const;
  worker::WorkerProcess& worker(Role role) { return workers_.at(role); }
  std::optional<worker::WorkerProcess>& slot(Role role) { return workers_.slot(role); }
  int worker_threads() const;
  void note(const std::string& line);
  // Records how long the worker took to start (timings.worker_start_s) and
  // the cores it runs on (its affinity after pinning to the leased device).
  void note_hello(Role role, const worker::Message& hello);
  void finish_logs();
  // `path`, kept as a model state a reference-role worker is told to write
  // there; remove_model_states removes each when the verification ends.
  std::filesystem::path model_state(std::filesystem::path path);
  void remove_model_states();

  const VerifyRequest& req_;
  worker::Clock::time_point start_;
  worker::Deadline deadline_;
  // The four workers, their lease groups and every request to them.
  WorkerSet workers_;
  bool lease_groups_tried_ = false;
  bool reference_can_trace_ = false;  // the reference's hello: this torch traces dispatcher ops
  CaseResult result_;
  std::filesystem::path log_path_;
  std::filesystem::path worker_script_;
  std::filesystem::path candidate_copy_;
  std::vector<std::filesystem::path> candidate_files_;  // the copy first, then its sibling sources
  std::filesystem::path candidate_import_;  // the file the candidate imported (host path)
  std::filesystem::path state_file_;        // the reference state ModelNew was last built from
  // The request's overrides, and the sizes the reference solved when the
  // request asked it to (req_.solve_sizes): what every load uses.
  std::map<std::string, long long> overrides_;
  nlohmann::json constants_;          // the reference's size constants (load reply)
  nlohmann::json declared_cases_;     // the problem's CASES
  nlohmann::json size_keys_;          // its size constants' names (null: unknown)
  std::vector<int> reference_cores_;  // the cores the reference worker is pinned to (its hello)
  int reloads_ = 0;
  std::vector<std::filesystem::path> model_states_;  // written for the others to load (model_state)
  bool building_ = false;         // the build stage's worker is starting (no device: cpu)
  bool candidate_boxed_ = false;  // the candidate runs under bwrap/unshare (see channel_failure)
  worker::CandidateBox box_;              // the cold candidate's box
  // Host dir -> the candidate's view of it (empty = same paths).
  std::filesystem::path candidate_host_root_;
  std::filesystem::path candidate_inside_root_;
  std::filesystem::path state_dir_;  // where the reference writes the state the candidate loads
  std::filesystem::path warm_dir_;   // the warm candidate's scratch dir, removed at the end
  std::filesystem::path prebuilt_dir_;  // the build's output the candidate loads (empty: none)
  std::string build_key_;               // the build's compile-cache key (empty: no cache)
  std::optional<worker::CcacheDir> ccache_;  // the key's ccache, held while the build may use it
};

}  // namespace kgym::verify::detail
