#include "verify/verifier.h"

#include <sched.h>

#include <csignal>

#include <algorithm>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "core/case_paths.h"
#include "util/fs.h"
#include "util/secure_random.h"
#include "util/seed_mix.h"
#include "verify/candidate_sources.h"
#include "verify/runtime_checks.h"
#include "verify/static_gate.h"
#include "verify/stats.h"
#include "verify/tensor_compare.h"
#include "verify/timing_session.h"
#include "verify/verification.h"
#include "verify/worker_failures.h"
#include "worker/candidate_sandbox.h"
#include "worker/probe.h"
#include "worker/worker_process.h"
#include "worker/worker_startup.h"

namespace kgym::verify {
namespace detail {

// Seeds the workers take through torch.manual_seed: 63 bits keep them
// positive for every torch version.
std::uint64_t derive_seed(std::uint64_t run_seed, std::uint64_t stream) {
  return util::splitmix64(run_seed ^ util::splitmix64(stream)) >> 1;
}

int core_count(const std::string& device) {
  if (device.empty() || device == "all") {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  int count = 0;
  std::size_t pos = 0;
  while (pos <= device.size()) {
    auto comma = device.find(',', pos);
    std::string part = device.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    auto dash = part.find('-');
    try {
      count += dash == std::string::npos
                   ? 1
                   : std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
    } catch (const std::exception&) {
      count += 1;
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return std::max(1, count);
}

double seconds_since(worker::Clock::time_point start) {
  return std::chrono::duration<double>(worker::Clock::now() - start).count();
}

void Verification::note(const std::string& line) {
  std::ofstream(log_path_, std::ios::app) << fmt::format("[kgym +{:.3f}s] {}\n", seconds_since(start_), line);
  if (req_.on_progress) req_.on_progress(line);
}

void Verification::note_hello(Role role, const worker::Message& hello) {
  const worker::WorkerProcess& w = worker(role);
  bool twin = role == Role::kTwin || role == Role::kCandidateTwin;
  if (auto startup = worker::worker_startup(hello.header, w.requested()); startup && twin) {
    note(fmt::format("{} worker ready {:.3f} s after it was asked for", role_name(role), startup->total_s()));
  } else if (startup) {
    note(fmt::format("{} worker ready {:.3f} s after it was asked for ({}: {:.3f} s, then {:.3f} s to ready)",
                     role_name(role), startup->total_s(), w.warm() ? "fork" : "spawn", startup->launch_s,
                     startup->init_s));
    // Both workers start together: the case waits from the first request
    // until the later of the two is ready.
    auto first_asked = std::min(worker(Role::kReference).requested(), worker(Role::kCandidate).requested());
    double since_first =
        std::chrono::duration<double>(w.requested() - first_asked).count() + startup->total_s();
    result_.timings.worker_start_s = std::max(result_.timings.worker_start_s.value_or(0), since_first);
  }
  if (role == Role::kReference) {
    reference_can_trace_ = hello.header.value("can_trace", false);
    result_.environment = TorchEnvironment{req_.python, hello.header.value("torch_version", ""),
                                           hello.header.value("torch_build", "")};
  }
  auto cores = hello.header.find("cores");
  if (cores == hello.header.end() || !cores->is_array()) return;
  if (role == Role::kReference) {
    reference_cores_.clear();
    for (const auto& core : *cores) {
      if (core.is_number_integer()) reference_cores_.push_back(core.get<int>());
    }
  }
  bool steady = hello.header.value("steady_allocator", false);
  note(fmt::format("{} worker pinned to cores {} (device {}); malloc thresholds {}", role_name(role),
                   cores->dump(), req_.device, steady ? "fixed" : "glibc's defaults (not glibc?)"));
}

std::expected<void, Failure> Verification::prepare() {
  if (auto made = util::make_dirs(req_.scratch_dir / "reference"); !made) {
    return std::unexpected(Failure{Verdict::kHarnessError, made.error()});
  }
  if (auto made = util::make_dirs(req_.scratch_dir / "candidate"); !made) {
    return std::unexpected(Failure{Verdict::kHarnessError, made.error()});
  }
  log_path_ = req_.scratch_dir / CasePaths::kVerifyLog;
  worker_script_ = req_.scratch_dir / "kgym_worker.py";
  if (auto written = worker::write_worker_script(worker_script_); !written) {
    return std::unexpected(Failure{Verdict::kHarnessError, written.error()});
  }
  if (!std::filesystem::is_regular_file(req_.problem)) {
    return std::unexpected(
        Failure{Verdict::kReferenceError, "problem file not found: " + req_.problem.string()});
  }
  // The candidate runs from a private copy; a symlink, a FIFO, a device and
  // a file over the source limit are refused before a byte is copied.
  candidate_copy_ = req_.scratch_dir / "candidate" / req_.candidate.filename();
  if (auto copied = copy_candidate_source(req_.candidate, candidate_copy_); !copied) {
    return std::unexpected(Failure{Verdict::kHarnessError, "cannot use the candidate: " + copied.error()});
  }
  candidate_files_ = {candidate_copy_};
  // The problem file (when it stands in as the candidate) is copied alone.
  if (req_.candidate_is_reference) return {};
  // The sources beside it come along, importable as its siblings.
  auto siblings = candidate_siblings(req_.candidate, req_.problem);
  if (!siblings) {
    return std::unexpected(
        Failure{Verdict::kCompileError, "cannot take the candidate's sources: " + siblings.error()});
  }
  for (const auto& file : *siblings) {
    auto to = req_.scratch_dir / "candidate" / file.filename();
    if (auto copied = copy_candidate_source(file, to); !copied) {
      return std::unexpected(
          Failure{Verdict::kHarnessError, "cannot copy a candidate source: " + copied.error()});
    }
    candidate_files_.push_back(to);
  }
  if (!siblings->empty())
    note(fmt::format("candidate sources: {} file(s) beside {}", siblings->size(),
                     req_.candidate.filename().string()));
  return {};
}

// Why a speedup's interval is too wide to mean much, as the record shows it.
static std::string uncertainty_cause(const Performance& perf) {
  const auto& ci = *perf.speedup.ci95;
  std::string span = ci.lo > 0 ? fmt::format("its upper end is {:.1f}x its lower", ci.hi / ci.lo) : "it reaches 0";
  std::string cause =
      perf.foreign_cpu_share && *perf.foreign_cpu_share > kContendedShare
          ? fmt::format("other processes used {:.0f} % of the leased cores", *perf.foreign_cpu_share * 100)
          : fmt::format("{} timed rounds; a larger verifier.timing.budget_sec or idle cores narrow it",
                        perf.rounds_ms.size());
  return fmt::format("uncertain: {} ({})", span, cause);
}

FailureContext Verification::failure_context() const {
  return {.timeout = req_.config.timeout,
          .call_timeout = req_.config.call_timeout,
          .candidate_boxed = candidate_boxed_,
          .address_space_mb = req_.sandbox.address_space_mb,
          .sizes = result_.problem};
}

std::expected<void, Failure> Verification::measure_performance() {
  auto inputs =
      correctness_phase().reference_trial(derive_seed(req_.run_seed, 1000), "given", "preparing timing inputs");
  if (!inputs) return std::unexpected(inputs.error());
  // This trial's inputs size the batches; the timed calls get sets of their own.
  TimingInputs timing_inputs{.set_bytes = inputs->payloads.at(0).size(),
                             .check_seed = derive_seed(req_.run_seed, 2000),
                             .set_seeds = util::secure_random_u64() >> 1,
                             .backend = &backend_of(req_.config),
                             .check_op_trace = req_.op_trace && !req_.candidate_is_reference,
                             .trace_expected = reference_can_trace_ && !req_.candidate_is_reference,
                             .degenerate = result_.correctness.degenerate};
  for (std::size_t i = 1; i < inputs->payloads.size(); ++i)
    timing_inputs.output_bytes += inputs->payloads[i].size();

  // The twins start now, not for cases that never reach the timing.
  if (auto started = start_twins(); !started) return std::unexpected(started.error());
  // Both sides' processes are sampled alike from here to the end of the
  // timing, and their forward calls counted (reference and twin, candidate
  // and twin).
  OutsideSampling sampling = start_outside_sampling();
  std::array<std::int64_t, 2> sampled_calls{0, 0};
  std::array<bool, 2> sampled_now{false, false};
  // The side called is sampled while a batch of the timed rounds runs,
  // and only then: the warm-up (where a candidate could spend anything
  // for free) and what the workers do between batches (the reference
  // drawing input sets) are none of the comparison. The switch waits for
  // perf's answer, outside the parent's clock around the batch.
  int batches = 0;
  timing_inputs.around_batch = [&](Role side, std::string_view what, bool starting) {
    if (starting && req_.on_progress)
      req_.on_progress(fmt::format("timing: {}, batch {} (the {} worker)", what, ++batches, role_name(side)));
    std::optional<CpuSampler>& sampler = sampling.sampler;
    bool& now = sampled_now[is_candidate(side) ? 1 : 0];
    if (!sampler || what != "timing") return;
    if (starting) {
      now = sampler->set_sampling(true);
    } else if (now) {
      sampler->set_sampling(false);
      now = false;
    }
  };

  TimingFailure failed;
  // The lease is watched around every request (verify/lease.h): a finding
  // fails the request, which ends the timing.
  auto lease = make_lease_watch();
  auto lease_now = [] {
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  Exchange exchange = [&](Role role, const worker::Message& request,
                          std::string_view what) -> std::optional<worker::Message> {
    if (lease) {
      if (what == "warming up") lease->skip_idle();
      if (auto finding = lease->before_request(is_candidate(role), lease_now())) {
        failed = {runtime_cheat(std::move(*finding), what), Role::kCandidate};
        return std::nullopt;
      }
    }
    if (request.header.value("op", "") == "time" && sampled_now[is_candidate(role) ? 1 : 0])
      sampled_calls[is_candidate(role) ? 1 : 0] +=
          request.header.value("warmup", 0LL) + request.header.value("calls", 0LL);
    auto reply = call(role, request, what);
    if (!reply) {
      failed = {reply.error(), role};
      return std::nullopt;
    }
    if (lease) {
      if (auto finding = lease->after_reply(is_candidate(role), lease_now())) {
        failed = {runtime_cheat(std::move(*finding), what), Role::kCandidate};
        return std::nullopt;
      }
    }
    return std::move(*reply);
  };
  // The workers are all pinned to the leased device's cores, so those are
  // the cores whose other users would disturb the timing.
  CoreLoadProbe load{.cores = reference_cores_, .worker_reports_trusted = req_.candidate_is_reference};
  if (auto sides = sides_cpu_reader()) {
    note(fmt::format("timing: the workers' CPU time, for other processes' share of the cores, from {}",
                     sides->source));
    load.sides_cpu_ns = std::move(sides->read);
  }
  auto outcome = run_timing(
      req_.config, timing_inputs, exchange, [this](const std::string& line) { note(line); }, load);
  if (lease) note(lease->describe());
  if (outcome.call_failed)
    return std::unexpected(failed.failure.value_or(Failure{Verdict::kHarnessError, "timing failed"}));
  auto library_compute = finish_outside_sampling(sampling, sampled_calls[0], sampled_calls[1]);
  timing_inputs.around_batch = nullptr;  // the baselines' timing is not sampled
  auto lease_finding = [&]() -> std::optional<Failure> {
    if (!lease) return std::nullopt;
    auto finding = lease->finish(lease_now());
    if (!finding) return std::nullopt;
    note(lease->describe());
    return runtime_cheat(std::move(*finding), "timing");
  };
  if (auto found = lease_finding()) return std::unexpected(std::move(*found));
  if (!outcome.mismatch.empty()) return std::unexpected(Failure{Verdict::kFailCorrectness, outcome.mismatch});
  result_.performance = std::move(outcome.performance);
  if (result_.performance) place_on_roofline();
  if (result_.runtime) {
    for (const char* check :
         {"fresh_timing_inputs", "timed_outputs", "timed_op_trace", "clock", "memoization"})
      result_.runtime->checks.push_back(check);
  }
  if (outcome.cheat) return std::unexpected(runtime_cheat(std::move(*outcome.cheat), "timing"));
  if (library_compute) return std::unexpected(runtime_cheat(std::move(*library_compute), "timing"));
  if (req_.config.compile_baseline() && result_.performance) {
    // The window from the last candidate batch closed above: the reference
    // workers' compiling is none of the candidate's (the watch opens the
    // next at the second timing's first candidate request).
    auto compiled = time_against_compiled(timing_inputs, exchange, load, failed);
    if (!compiled) return std::unexpected(std::move(compiled.error()));
    result_.performance->speedup_vs.push_back(std::move(*compiled));
    if (lease) note(lease->describe());
    if (auto found = lease_finding()) return std::unexpected(std::move(*found));
  }
  return {};
}

void Verification::finish_logs() {
  for (Role role : {Role::kReference, Role::kCandidate, Role::kTwin, Role::kCandidateTwin}) {
    auto path = req_.scratch_dir / fmt::format("{}.log", role_name(role));
    auto text = util::read_file(path);
    if (!text) continue;
    std::ofstream(log_path_, std::ios::app) << "===== " << role_name(role) << " worker log =====\n" << *text;
  }
}

CaseResult Verification::run() {
  result_.case_id = req_.case_id;
  const Backend& backend = backend_of(req_.config);
  result_.backend = req_.config.backend;
  result_.execution = req_.config.execution;
  // An interpreter's speed says nothing of the device's: no timing.
  bool timed = req_.config.mode == "performance" && backend.measures_speed && !req_.self_check;
  result_.mode = timed || backend.measures_speed ? req_.config.mode : "correctness";
  result_.problem = req_.sizes;
  result_.baseline = req_.candidate_is_reference;
  result_.precision = req_.precision;
  auto outcome = prepare();
  // Static checks on the copy that would run, before any worker starts.
  if (outcome && req_.static_checks && !req_.candidate_is_reference) {
    auto gate = run_static_gate(candidate_files_, req_.problem, backend);
    for (const auto& f : gate.findings) {
      note(fmt::format("static {} {}: {} ({})", f.severity, f.rule, f.evidence, f.message));
    }
    result_.static_findings = std::move(gate.findings);
    result_.cheat = gate.cheat;
    if (gate.cheat) outcome = std::unexpected(Failure{Verdict::kFailCheat, gate.reason});
    // A kernel the device would run but the interpreter cannot (CUDA C++
    // on a host without a GPU) is no cheat: it is not checkable here.
    if (gate.cheat && gate.cheat->rule == "static.no_kernel" && backend.host_interpreter()) {
      auto on_device = run_static_gate(candidate_files_, req_.problem, backend_named(backend.name));
      if (!on_device.cheat) {
        result_.cheat.reset();
        outcome = std::unexpected(Failure{
            Verdict::kDeviceUnavailable,
            fmt::format("{}, and there is none here: verifier.execution host_interpreter runs {} kernels only "
                        "(static check: {})",
                        backend.no_inline_kernel, backend.interpreter_module, gate.reason)});
      }
    }
  }
  // The build comes first, without a device: given (a run's build stage),
  // asked for alone, or made here (`kgym verify`).
  if (outcome && !req_.candidate_is_reference && req_.stage != VerifyStage::kVerifyPrebuilt)
    outcome = build_stage();
  bool built_only = builds_only(req_.stage);
  if (outcome && req_.stage == VerifyStage::kBuildWithoutDevice) {
    outcome = std::unexpected(Failure{
        Verdict::kDeviceUnavailable,
        fmt::format("the candidate built in {:.1f} s, but {}: correctness and timing need a {} device",
                    result_.timings.compile_s.value_or(0), req_.no_device, req_.config.backend)});
  }
  if (outcome && !built_only) outcome = start_workers();
  if (outcome && !built_only) {
    auto trials_start = worker::Clock::now();
    CorrectnessPhase phase = correctness_phase();
    outcome = phase.run_trials();
    if (outcome && !req_.candidate_is_reference && !req_.self_check) outcome = check_extra_shapes(phase);
    result_.timings.trials_s = seconds_since(trials_start);
  }
  if (outcome && timed && !built_only) {
    auto timing_start = worker::Clock::now();
    outcome = measure_performance();
    result_.timings.timing_s = seconds_since(timing_start);
  }

  if (outcome && built_only) {
    result_.verdict = Verdict::kPass;
    result_.reason = "built";
  } else if (outcome) {
    result_.verdict = Verdict::kPass;
    result_.reason = fmt::format("{} trials matched the reference", result_.correctness.trials);
    if (backend.host_interpreter())
      result_.reason += fmt::format(" under the {} host interpreter (no device; speed not measured)",
                                    backend.interpreter_module);
    if (result_.performance) {
      const auto& s = result_.performance->speedup;
      result_.reason +=
          s.ci95 ? fmt::format("; speedup {:.3f}x (95% CI {:.3f}-{:.3f})", s.median, s.ci95->lo, s.ci95->hi)
                 : fmt::format("; speedup {:.3f}x", s.median);
      if (uncertain_speedup(s)) result_.reason += "; " + uncertainty_cause(*result_.performance);
    }
  } else {
    result_.verdict = outcome.error().verdict;
    result_.reason = outcome.error().reason;
    if (outcome.error().cheat) result_.cheat = outcome.error().cheat;
  }
  if (!log_path_.empty()) note(fmt::format("verdict {}: {}", to_string(result_.verdict), result_.reason));
  workers_.shutdown(std::chrono::seconds(5));
  remove_model_states();
  if (!log_path_.empty()) finish_logs();
  if (!warm_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(warm_dir_, ec);
  }
  result_.timings.verify_s = seconds_since(start_);
  return result_;
}

// The model states the reference-role workers write for the others to load
// are needed only while the verification runs: a level-3 case's (VGG16)
// came to 1.4 GB, which a run over a level kept for every case. Each is
// named here as its writer is told where to write it (the reference's
// side runs the problem's code, not the candidate's), and removed by that
// exact name when the verification ends.
std::filesystem::path Verification::model_state(std::filesystem::path path) {
  model_states_.push_back(path);
  return path;
}

void Verification::remove_model_states() {
  for (const auto& state : model_states_) {
    std::error_code ec;
    std::filesystem::remove(state, ec);  // a link itself, never what it names
  }
}

}  // namespace detail

CaseResult verify_candidate(const VerifyRequest& req) { return detail::Verification(req).run(); }

}  // namespace kgym::verify
