#include "run/scheduler.h"

#include <unistd.h>

#include <fmt/format.h>

#include "run/scheduler_case_run.h"
#include "run/spec_writer.h"
#include "util/fs.h"
#include "util/sha256.h"
#include "verify/probe.h"
#include "verify/verifier.h"

namespace kgym::run {

using util::ProcessExit;
using util::SteadyTime;

namespace {

double seconds(util::Seconds s) { return s.count(); }

std::string last_line(const std::string& text) {
  std::size_t end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return "";
  std::size_t start = text.find_last_of('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end - (start == std::string::npos ? 0 : start + 1) + 1);
}

nlohmann::json generation_json(const Generation& g, std::optional<double> generate_s) {
  CaseResult holder;
  holder.generation = g;
  nlohmann::json j = to_json(holder)["generation"];
  j["generate_s"] = generate_s ? nlohmann::json(*generate_s) : nlohmann::json(nullptr);
  return j;
}

// A case's op dir in a work repository starts empty. kgym marks the dirs it
// makes; a dir it did not make is never deleted (the case fails instead).
std::expected<void, std::string> fresh_op_dir(const std::filesystem::path& dir,
                                              const std::filesystem::path& run_dir) {
  constexpr const char* kMarker = ".kgym_op_dir";
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    if (!std::filesystem::exists(dir / kMarker, ec) && !std::filesystem::is_empty(dir, ec)) {
      return std::unexpected(
          fmt::format("{} exists and was not made by kgym; move it away or point agent.work_repo elsewhere",
                      dir.string()));
    }
    std::filesystem::remove_all(dir, ec);
    if (ec) return std::unexpected(fmt::format("cannot clear {}: {}", dir.string(), ec.message()));
  }
  if (auto ok = util::make_dirs(dir); !ok) return ok;
  return util::write_file_atomic(dir / kMarker,
                                 fmt::format("made by kgym for the run {}\n", run_dir.string()));
}

}  // namespace

Scheduler::Scheduler(const Config& config, SchedulerOptions options, std::vector<Case> cases,
                     util::ProcessRunner& runner, const util::Clock& clock, const agent::Agent& agent,
                     Printer& printer, StateStore& store)
    : config_(config),
      options_(std::move(options)),
      runner_(runner),
      clock_(clock),
      agent_(agent),
      printer_(printer),
      store_(store),
      devices_(config.devices) {
  store_.state().cases.clear();
  store_.state().device_holders.emplace();
  for (Case& c : cases) add_case(std::move(c));
}

Scheduler::~Scheduler() = default;

void Scheduler::set_phase(std::size_t i, const std::string& phase) {
  CaseRun& run = runs_[i];
  run.phase = phase;
  CaseState& s = row_of(i);
  s.phase = phase;
  s.phase_started_at = util::unix_now();
  if (!s.started_at) s.started_at = s.phase_started_at;
  nlohmann::json data = {{"phase", phase}};
  if (sampled()) {
    s.sample = run.sample;
    s.device = run.device ? std::optional(devices_.name(*run.device)) : std::nullopt;
    data["sample"] = run.sample;
  }
  store_.event("phase", s.id, data);
  store_.save();
}

bool Scheduler::launch_child(std::size_t i, Child kind, const util::ProcessSpec& spec,
                             std::chrono::seconds timeout) {
  CaseRun& run = runs_[i];
  auto pid = runner_.start(static_cast<util::ProcessRunner::Id>(i), spec);
  if (!pid) return false;
  run.child = kind;
  run.deadline = clock_.now() + timeout;
  run.deadline_hit = false;
  row_of(i).pid = *pid;
  store_.save();
  return true;
}

void Scheduler::start_case(std::size_t i) {
  CaseRun& run = runs_[i];
  run.stage = CaseRun::Stage::kActive;
  run.started = clock_.now();
  row_of(i).attempt = 1;  // workflows with re-prompted stages count up from here
  // A resumed case whose candidate was generated but not verified goes
  // straight to verification, unless regeneration was asked for.
  if (options_.regenerate) {
    std::error_code ec;
    std::filesystem::remove(run.dir / "generation.json", ec);
    std::filesystem::remove_all(run.dir / "candidate", ec);
    std::filesystem::remove_all(run.work, ec);
  }
  if (auto gen = util::read_file(run.dir / "generation.json"); gen) {
    nlohmann::json g = nlohmann::json::parse(*gen, nullptr, false);
    std::filesystem::path cand =
        run.dir / "candidate" / std::filesystem::path(agent_.artifacts().front()).filename();
    if (!g.is_discarded() && g.value("outcome", "") == "ok" && std::filesystem::exists(cand)) {
      run.candidate = cand;
      // Everything generation.json recorded (usage, provenance, stages) is kept.
      try {
        run.generation = *result_from_json({{"schema_version", kResultSchemaVersion},
                                            {"case_id", run.c.id()},
                                            {"verdict", "harness_error"},
                                            {"generation", g}})
                              .generation;
      } catch (const nlohmann::json::exception&) {
        run.generation = Generation{};
        run.generation.agent = agent_.name();
      }
      if (g.contains("generate_s") && g["generate_s"].is_number())
        run.generate_s = g["generate_s"].get<double>();
      store_.event("resume_verify", run.c.id());
      run.stage = CaseRun::Stage::kWaitingDevice;
      set_phase(i, "waiting_device");
      return;
    }
  }
  if (config_.agent.work_repo) {
    if (auto ok = fresh_op_dir(run.work, options_.run_dir); !ok)
      return fail(i, Verdict::kHarnessError, ok.error());
  }
  for (const auto& dir : {run.dir, run.work}) {
    if (auto ok = util::make_dirs(dir); !ok) return fail(i, Verdict::kHarnessError, ok.error());
  }
  if (auto ok = util::copy_regular_file(run.c.file, run.dir / "task_desc.py"); !ok) {
    return fail(i, Verdict::kHarnessError, ok.error());
  }
  verify::ProbeRequest req{options_.python, run.c.file, config_.overrides, run.seed, 1};
  util::ProcessSpec spec;
  spec.argv = verify::probe_command(req, options_.worker_script, run.dir / "probe.json");
  spec.cwd = run.dir;
  spec.log_file = run.dir / "probe.log";
  spec.env = {{"OMP_NUM_THREADS", "1"}};
  // With warm workers the probe is forked from the first device's reference
  // zygote (torch already imported) by a `kgym zygote-run` child, which the
  // event loop supervises like any other; a zygote that cannot start leaves
  // the probe cold.
  if (options_.warm_pool) {
    if (auto socket = options_.warm_pool->reference_socket(0)) {
      std::vector<std::string> argv = options_.kgym_argv0;
      argv.insert(argv.end(), {"zygote-run", "--socket", socket->string(), "--cwd", run.dir.string(), "--env",
                               "OMP_NUM_THREADS=1", "--"});
      argv.insert(argv.end(), spec.argv.begin() + 2, spec.argv.end());  // past the interpreter and script
      spec.argv = std::move(argv);
    }
  }
  std::filesystem::remove(run.dir / "probe.json");
  set_phase(i, "probing");
  if (!launch_child(i, Child::kProbe, spec, config_.verifier.timeout)) {
    fail(i, Verdict::kHarnessError, fmt::format("cannot start the reference probe with {}", options_.python));
  }
}

void Scheduler::on_probe_exit(std::size_t i, const ProcessExit& exit) {
  CaseRun& run = runs_[i];
  if (run.deadline_hit) return fail(i, Verdict::kReferenceError, "the reference probe timed out");
  auto probe = verify::read_probe(run.dir / "probe.json");
  if (!probe) {
    return fail(i, Verdict::kReferenceError,
                fmt::format("reference probe failed ({}): {}", exit.describe(), probe.error()));
  }
  std::string spec = render_spec(run.c, config_, *probe);
  std::string prompt = render_prompt(run.c, config_);
  for (const auto& dir : {run.dir, run.work}) {
    for (auto [name, text] : {std::pair{"SPEC.md", &spec}, std::pair{"prompt.md", &prompt}}) {
      if (auto ok = util::write_file_atomic(dir / name, *text, util::Durability::kRenameOnly); !ok)
        return fail(i, Verdict::kHarnessError, ok.error());
    }
  }
  if (auto ok = util::copy_regular_file(run.c.file, run.work / "task_desc.py"); !ok) {
    return fail(i, Verdict::kHarnessError, ok.error());
  }
  launch_generation(i);
}

agent::AgentTask Scheduler::agent_task(std::size_t i, const std::filesystem::path& prompt_file) const {
  const CaseRun& run = runs_[i];
  std::string device = config_.agent.needs_device && run.device ? devices_.name(*run.device) : "";
  return {run.c.id(), run.c.level, run.c.stem(),         run.dir,
          run.work,   prompt_file, run.work / "SPEC.md", device};
}

void Scheduler::launch_generation(std::size_t i) {
  CaseRun& run = runs_[i];
  run.generation = Generation{};
  run.generation.agent = agent_.name();
  run.generation.model = agent_.model();
  run.generation.agent_version = options_.agent_version;
  set_phase(i, "generating");
  run.generation_started = clock_.now();
  if (!config_.workflow.stages.empty()) {
    run.workflow_stage = 0;
    run.attempt = 0;
    return launch_stage(i);
  }
  if (auto prompt = util::read_file(run.work / "prompt.md"))
    run.generation.prompt_sha256 = util::sha256_hex(*prompt);
  launch_agent(i, run.work / "prompt.md");
}

void Scheduler::launch_agent(std::size_t i, const std::filesystem::path& prompt_file) {
  CaseRun& run = runs_[i];
  auto launch = agent_.prepare(agent_task(i, prompt_file));
  if (!launch) {
    end_generation(i);
    run.generation.outcome = std::string(to_string(launch.error().outcome));
    return fail(i, Verdict::kGenerationFailed, launch.error().reason);
  }
  if (!launch->process) return generation_done(i, std::nullopt);
  agent_env(i, *launch->process);
  if (!launch_child(i, Child::kAgent, sandboxed(*launch->process, run.work, run.dir, Boxed::kAgent),
                    launch->timeout)) {
    end_generation(i);
    run.generation.outcome = std::string(to_string(GenerationOutcome::kLaunchFailed));
    fail(i, Verdict::kGenerationFailed,
         fmt::format("cannot start agent '{}'", launch->process->argv.front()));
  }
}

void Scheduler::generation_done(std::size_t i, std::optional<ProcessExit> exit) {
  CaseRun& run = runs_[i];
  bool workflow = !config_.workflow.stages.empty();
  if (exit) {
    run.generation.exit_code = exit->kind == ProcessExit::Kind::kExited ? exit->code : 128 + exit->code;
    if (run.deadline_hit || !exit->ok()) {
      GenerationOutcome outcome =
          run.deadline_hit ? GenerationOutcome::kTimeout : GenerationOutcome::kNonZeroExit;
      if (workflow)
        run.generation.stages.back().attempts.push_back({run.attempt, std::string(to_string(outcome)), {}});
      end_generation(i);
      run.generation.outcome = std::string(to_string(outcome));
      std::string where = workflow ? fmt::format(" in stage '{}'", run.generation.stages.back().name) : "";
      if (run.deadline_hit)
        return fail(i, Verdict::kGenerationFailed,
                    fmt::format("agent timed out after {} s{}", config_.agent.timeout.count(), where));
      return fail(i, Verdict::kGenerationFailed,
                  fmt::format("agent ended with {}{} (see agent.log)", exit->describe(), where));
    }
  }
  if (workflow) return check_stage(i);
  collect_candidate(i);
}

void Scheduler::collect_candidate(std::size_t i) {
  CaseRun& run = runs_[i];
  end_generation(i);
  auto candidate =
      agent::collect_artifacts(agent_, agent_.artifact_dir(agent_task(i, {})), run.dir / "candidate");
  if (!candidate) {
    run.generation.outcome = std::string(to_string(candidate.error().outcome));
    return fail(i, Verdict::kGenerationFailed, candidate.error().reason);
  }
  run.candidate = *candidate;
  run.generation.outcome = "ok";
  if (auto ok = util::write_file_atomic(run.dir / "generation.json",
                                        generation_json(run.generation, run.generate_s).dump(2) + "\n");
      !ok) {
    return fail(i, Verdict::kHarnessError, ok.error());
  }
  store_.event("generated", run.c.id());
  run.stage = CaseRun::Stage::kWaitingDevice;
  set_phase(i, "waiting_device");
}

void Scheduler::launch_verification(std::size_t i, std::size_t device) {
  CaseRun& run = runs_[i];
  run.device = device;
  run.stage = CaseRun::Stage::kActive;
  row_of(i).device = devices_.name(device);
  std::filesystem::path scratch = run.dir / "verify";
  std::error_code ec;
  std::filesystem::remove_all(scratch, ec);
  std::filesystem::remove(run.dir / "verify_result.json", ec);
  if (auto ok = util::make_dirs(scratch); !ok) return fail(i, Verdict::kHarnessError, ok.error());
  verify::VerifyRequest req;
  req.case_id = run.c.id();
  req.problem = run.c.file;
  req.candidate = run.candidate;
  req.scratch_dir = scratch;
  req.python = options_.python;
  req.config = config_.verifier;
  req.overrides = config_.overrides;
  req.device = devices_.name(device);
  req.run_seed = run.seed;
  req.sandbox = config_.sandbox;
  req.sandbox.mode = std::string(util::to_string(options_.sandbox_mode));
  req.sandbox_hidden = options_.candidate_hidden;
  if (options_.warm_pool) {
    auto warm = options_.warm_pool->endpoints(device);
    if (warm) {
      req.warm = std::move(*warm);
    } else {
      printer_.error(
          fmt::format("kgym: warning: {}; {} verifies with cold workers", warm.error(), run.c.id()));
    }
  }
  if (auto ok = util::write_file_atomic(run.dir / "verify_request.json", verify::to_json(req).dump(2) + "\n",
                                        util::Durability::kRenameOnly);
      !ok) {
    return fail(i, Verdict::kHarnessError, ok.error());
  }
  util::ProcessSpec spec;
  spec.argv = options_.kgym_argv0;
  for (const std::string& arg :
       std::vector<std::string>{"verify", "--request", (run.dir / "verify_request.json").string(), "--json",
                                (run.dir / "verify_result.json").string()}) {
    spec.argv.push_back(arg);
  }
  spec.cwd = run.dir;
  spec.log_file = run.dir / "verify.log";
  set_phase(i, "verifying");
  // kgym verify enforces verifier.timeout itself; this deadline only guards
  // against a verifier that cannot stop.
  if (!launch_child(i, Child::kVerify, spec, config_.verifier.timeout + std::chrono::seconds(60))) {
    fail(i, Verdict::kHarnessError, "cannot start the verifier");
  }
}

void Scheduler::on_verify_exit(std::size_t i, const ProcessExit& exit) {
  CaseRun& run = runs_[i];
  auto text = util::read_file(run.dir / "verify_result.json");
  if (!text) {
    std::string reason =
        run.deadline_hit
            ? "the verifier did not stop in time"
            : fmt::format("the verifier ended with {} without a result (see verify.log)", exit.describe());
    return fail(i, run.deadline_hit ? Verdict::kTimeout : Verdict::kHarnessError, reason);
  }
  CaseResult result;
  try {
    result = result_from_json(nlohmann::json::parse(*text));
  } catch (const nlohmann::json::exception& e) {
    return fail(i, Verdict::kHarnessError, fmt::format("unreadable verify_result.json: {}", e.what()));
  }
  finish(i, std::move(result));
}

void Scheduler::on_exit(std::size_t i, const ProcessExit& exit) {
  CaseRun& run = runs_[i];
  Child kind = run.child;
  run.child = Child::kNone;
  run.deadline.reset();
  row_of(i).pid.reset();
  if (interrupts_ > 0) return;  // the case is reported as not run
  switch (kind) {
    case Child::kProbe: return on_probe_exit(i, exit);
    case Child::kAgent: return generation_done(i, exit);
    case Child::kGate:
      run.checks->command_ended(exit, run.deadline_hit);
      return advance_checks(i);
    case Child::kVerify: return on_verify_exit(i, exit);
    case Child::kNone: return;
  }
}

void Scheduler::fail(std::size_t i, Verdict verdict, std::string reason) {
  CaseResult r;
  r.verdict = verdict;
  r.reason = last_line(reason);
  finish(i, std::move(r));
}

void Scheduler::finish(std::size_t i, CaseResult result) {
  CaseRun& run = runs_[i];
  result.case_id = run.c.id();
  result.backend = config_.verifier.backend;
  result.mode = config_.verifier.mode;
  if (!run.generation.agent.empty()) result.generation = run.generation;
  result.timings.generate_s = run.generate_s;
  result.timings.total_s = seconds(clock_.now() - run.started);
  release_device(i);
  run.stage = CaseRun::Stage::kDone;
  run.phase = "done";
  run.result = result;
  // One sample: its result is the case's, written by case_finished.
  if (sampled()) {
    if (auto ok = util::make_dirs(run.dir); ok) {
      if (auto w = util::write_file_atomic(run.dir / "result.json", to_json(result).dump(2) + "\n"); !w)
        printer_.error(fmt::format("kgym: warning: {}", w.error()));
    }
  }
  sample_finished(i, std::move(result));
}

void Scheduler::schedule() {
  if (interrupts_ > 0) return;
  std::size_t active = 0;
  for (const CaseRun& run : runs_) {
    if (run.stage == CaseRun::Stage::kActive || run.stage == CaseRun::Stage::kWaitingDevice) ++active;
  }
  // A sample that leased its device before generation (agent.needs_device)
  // verifies on it without a second wait.
  auto verify_if_leased = [this](std::size_t i) {
    if (runs_[i].stage != CaseRun::Stage::kWaitingDevice) return;
    auto device = runs_[i].device ? runs_[i].device : lease_device(i);
    if (device) launch_verification(i, *device);
  };
  for (std::size_t i = 0; i < runs_.size(); ++i) verify_if_leased(i);
  for (std::size_t i = 0; i < runs_.size() && active < static_cast<std::size_t>(config_.concurrency); ++i) {
    if (runs_[i].stage != CaseRun::Stage::kPending) continue;
    if (config_.agent.needs_device && !lease_device(i)) break;
    ++active;
    start_case(i);
    verify_if_leased(i);
  }
}

void Scheduler::enforce_deadlines() {
  SteadyTime now = clock_.now();
  for (std::size_t i = 0; i < runs_.size(); ++i) {
    CaseRun& run = runs_[i];
    if (run.child != Child::kNone && run.deadline && *run.deadline <= now && !run.deadline_hit) {
      run.deadline_hit = true;
      store_.event("timeout", run.c.id());
      runner_.terminate(static_cast<util::ProcessRunner::Id>(i), options_.kill_grace);
    }
  }
}

SteadyTime Scheduler::next_deadline() const {
  SteadyTime next = clock_.now() + std::chrono::seconds(1);
  for (const CaseRun& run : runs_) {
    if (run.child != Child::kNone && run.deadline && !run.deadline_hit && *run.deadline < next)
      next = *run.deadline;
  }
  return next;
}

void Scheduler::handle_interrupt() {
  if (!options_.interrupt_fd) return;
  char buf[16];
  ssize_t n = ::read(*options_.interrupt_fd, buf, sizeof buf);
  if (n <= 0) return;
  int before = interrupts_;
  interrupts_ += static_cast<int>(n);
  if (before == 0) {
    printer_.line("kgym: interrupted; stopping running cases (Ctrl-C again to kill them at once)");
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      if (runs_[i].child != Child::kNone)
        runner_.terminate(static_cast<util::ProcessRunner::Id>(i), options_.kill_grace);
    }
  }
  if (interrupts_ >= 2) runner_.kill_all();
  store_.state().status = "interrupted";
  store_.event("interrupt", "", {{"count", interrupts_}});
  store_.save();
}

RunOutcome Scheduler::run() {
  store_.state().status = "running";
  store_.save();
  store_.event("run_started", "", {{"cases", cases_.size()}});
  finish_resumed_cases();
  for (;;) {
    schedule();
    printer_.progress(store_.state());  // at least once a second: next_deadline() is at most 1 s away
    bool unfinished = std::any_of(runs_.begin(), runs_.end(),
                                  [](const CaseRun& r) { return r.stage != CaseRun::Stage::kDone; });
    if (runner_.running() == 0 && (!unfinished || interrupts_ > 0)) break;
    store_.flush(clock_.now());  // one group commit per turn, before waiting
    util::SteadyTime deadline = next_deadline();
    if (store_.state_pending()) deadline = std::min(deadline, clock_.now() + StateStore::kStateInterval);
    for (const auto& finished : runner_.wait(deadline, options_.interrupt_fd)) {
      on_exit(static_cast<std::size_t>(finished.id), finished.exit);
    }
    enforce_deadlines();
    handle_interrupt();
  }
  RunOutcome outcome;
  outcome.interrupted = interrupts_ > 0;
  for (std::size_t i = 0; i < runs_.size(); ++i) release_device(i);
  for (std::size_t c = 0; c < cases_.size(); ++c) {
    CaseState& s = store_.case_state(c);
    if (cases_[c].result) {
      outcome.results.push_back(*cases_[c].result);
    } else {
      ++outcome.not_run;
      s.phase = "not_run";
      s.pid.reset();
    }
  }
  store_.state().status = outcome.interrupted ? "interrupted" : "finished";
  store_.event("run_finished", "", {{"status", store_.state().status}});
  store_.save();
  store_.flush(clock_.now(), /*force=*/true);
  return outcome;
}

}  // namespace kgym::run
