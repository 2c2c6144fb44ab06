#include "run/sample_flow.h"

#include <unistd.h>

#include <csignal>

#include <fmt/format.h>

#include "core/backend.h"
#include "core/record_files.h"
#include "run/spec_writer.h"
#include "util/fs.h"
#include "util/json_text.h"
#include "util/sha256.h"
#include "util/text_cells.h"
#include "verify/repro_bundle.h"
#include "verify/verifier.h"
#include "worker/child_process.h"
#include "worker/probe.h"

namespace kgym::run {

using util::ProcessExit;

namespace {

// generation.json: the generation and, with agent.feedback, the round it
// belongs to (a resume verifies it only in that round).
nlohmann::json generation_json(const Generation& g, std::optional<double> generate_s, int round) {
  nlohmann::json j = to_json(g);
  j["generate_s"] = generate_s ? nlohmann::json(*generate_s) : nlohmann::json(nullptr);
  if (round > 1) j["round"] = round;
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

std::string_view to_string(Phase phase) {
  switch (phase) {
    case Phase::kPending: return "pending";
    case Phase::kProbing: return "probing";
    case Phase::kGenerating: return "generating";
    case Phase::kChecking: return "checking";
    case Phase::kBuilding: return "building";
    case Phase::kWaitingDevice: return "waiting_device";
    case Phase::kVerifying: return "verifying";
    case Phase::kDone: return "done";
  }
  return "pending";
}

std::expected<std::optional<CaseResult>, std::string> read_result(const CasePaths& paths,
                                                                  const std::string& case_id) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(paths.result(), ec)))
    return std::optional<CaseResult>{};
  auto r = read_result_record(paths.result());
  std::string problem;
  if (!r) {
    problem = r.error();
  } else if (r->case_id != case_id) {
    problem = fmt::format("it records the case '{}', not '{}'", r->case_id, case_id);
  } else {
    // A cluster task that ended without its result is run again.
    return r->lost_task ? std::nullopt : std::optional(std::move(*r));
  }
  return std::unexpected(damaged_result_message(paths.result(), problem));
}

std::optional<CaseResult> load_result(const CasePaths& paths, const std::string& case_id) {
  auto result = read_result(paths, case_id);
  return result ? std::move(*result) : std::nullopt;
}

std::expected<void, std::string> write_result(const CasePaths& paths, const CaseResult& result) {
  if (auto ok = util::make_dirs(paths.dir); !ok) return ok;
  return util::write_file_atomic(paths.result(), util::json_text(to_json(result), 2) + "\n");
}

std::expected<void, std::string> write_bundle(const CasePaths& paths, const CaseResult& result) {
  if (!verify::case_request_file(paths.dir, result)) return {};
  return verify::write_case_bundle(paths.dir, paths.repro_bundle());
}

SampleFlow::SampleFlow(SampleId id, const Config& config, const FlowOptions& options,
                       const agent::Agent& agent, const util::Clock& clock)
    : id_(std::move(id)), config_(config), options_(options), agent_(agent), clock_(clock) {}

void SampleFlow::resume(bool regenerate) {
  const CasePaths& paths = id_.paths;
  if (auto ended = load_result(paths, id_.c.id())) {
    phase_ = Phase::kDone;
    result_ = std::move(ended);
    return;
  }
  if (regenerate) {
    std::error_code ec;
    std::filesystem::remove(paths.rounds(), ec);
    std::filesystem::remove(paths.generation(), ec);
    std::filesystem::remove_all(paths.candidate(), ec);
    std::filesystem::remove_all(id_.work, ec);
    return;
  }
  // The rounds already finished are kept; the one the sample was in runs again.
  read_rounds();
  // The sizes the probe chose are the sizes the candidate was written for.
  if (auto probe = worker::read_probe(paths.probe())) sizes_ = probe->sizes;
  // A candidate that was generated but not verified is verified, not
  // generated again; everything generation.json recorded is kept.
  auto text = util::read_file(paths.generation());
  if (!text) return;
  nlohmann::json g = nlohmann::json::parse(*text, nullptr, false);
  std::filesystem::path candidate =
      paths.candidate() / std::filesystem::path(agent_.artifacts().front()).filename();
  if (g.is_discarded() || g.value("outcome", "") != "ok" || !std::filesystem::exists(candidate)) return;
  if (!g.contains("round") ? round_ != 1 : !g["round"].is_number_integer() || g["round"].get<int>() != round_)
    return;
  candidate_ = candidate;
  try {
    generation_ = generation_from_json(g);
  } catch (const nlohmann::json::exception&) {
    generation_ = Generation{};
    generation_.agent = agent_.name();
  }
  if (g.contains("generate_s") && g["generate_s"].is_number()) generate_s_ = g["generate_s"].get<double>();
  // Built again; a build the run finished comes from the compile cache (docs/build.md).
  phase_ = Phase::kBuilding;
}

Step SampleFlow::start(std::optional<DeviceLease> device) {
  device_ = std::move(device);
  started_ = clock_.now();
  round_started_ = started_;
  if (phase_ == Phase::kBuilding) {
    event("resume_verify");
    return wait_for_build();
  }
  return launch_probe();
}

Step SampleFlow::child_exited(const ProcessExit& exit, bool timed_out) {
  Child kind = std::exchange(child_, Child::kNone);
  switch (kind) {
    case Child::kProbe: return probe_ended(exit, timed_out);
    case Child::kAgent: return agent_ended(exit, timed_out);
    case Child::kGate: checks_->command_ended(exit, timed_out); return advance_checks();
    case Child::kBuild: return build_ended(exit, timed_out);
    case Child::kVerify: return verify_ended(exit, timed_out);
    case Child::kNone: break;
  }
  return fail(Verdict::kHarnessError, "a child ended that the sample did not start");
}

Step SampleFlow::launch_failed(const std::string& why) {
  Child kind = std::exchange(child_, Child::kNone);
  switch (kind) {
    case Child::kProbe:
      return fail(Verdict::kHarnessError,
                  fmt::format("cannot start the reference probe with {}: {}", options_.python, why));
    case Child::kAgent:
      end_generation();
      generation_.outcome = std::string(to_string(GenerationOutcome::kLaunchFailed));
      return fail(Verdict::kGenerationFailed, fmt::format("cannot start agent '{}': {}", launched_, why));
    case Child::kGate:  // a gate that cannot start fails; the checks go on
      checks_->command_ended({ProcessExit::Kind::kExited, 127}, false);
      return advance_checks();
    case Child::kBuild: return fail(Verdict::kHarnessError, fmt::format("cannot start the build: {}", why));
    case Child::kVerify:
      return fail(Verdict::kHarnessError, fmt::format("cannot start the verifier: {}", why));
    case Child::kNone: break;
  }
  return fail(Verdict::kHarnessError, why);
}

Step SampleFlow::launch(Child kind, util::ProcessSpec spec, std::chrono::seconds timeout) {
  child_ = kind;
  launched_ = spec.argv.empty() ? "" : spec.argv.front();
  return Launch{std::move(spec), timeout};
}

Step SampleFlow::launch_probe() {
  const CasePaths& paths = id_.paths;
  // A later refinement round continues in the op dir the earlier ones wrote.
  if (config_.agent.work_repo && round_ == 1) {
    if (auto ok = fresh_op_dir(id_.work, options_.run_dir); !ok)
      return fail(Verdict::kHarnessError, ok.error());
  }
  for (const auto& dir : {paths.dir, id_.work}) {
    if (auto ok = util::make_dirs(dir); !ok) return fail(Verdict::kHarnessError, ok.error());
  }
  if (auto ok = util::copy_regular_file(id_.c.file, paths.task_desc()); !ok)
    return fail(Verdict::kHarnessError, ok.error());
  worker::ProbeRequest req{options_.python, id_.c.file, config_.overrides, id_.seed, 1};
  if (sizes_automatically(config_.size, backend_of(config_.verifier))) req.size = config_.size;
  req.precision = config_.precision;
  // The worker was written at the run's start; it is run only as written.
  if (auto intact = worker::check_worker_script(options_.worker_script); !intact)
    return fail(Verdict::kHarnessError, intact.error());
  util::ProcessSpec spec;
  spec.argv = worker::probe_command(req, options_.worker_script, paths.probe());
  // The probe runs the problem's own code (trusted) without capabilities.
  if (auto launcher = util::box_launcher(); launcher && ::geteuid() == 0)
    spec.argv.insert(spec.argv.begin(), {launcher->string(), "--die-with-parent", "--"});
  spec.cwd = paths.dir;
  spec.log_file = paths.probe_log();
  spec.env = {{"OMP_NUM_THREADS", "1"}};
  // With warm workers the probe is forked from the first device's reference
  // zygote (torch already imported) by a `kgym zygote-run` child, which the
  // event loop supervises like any other; a zygote that cannot start leaves
  // the probe cold.
  if (options_.warm_pool) {
    if (auto socket = options_.warm_pool->reference_socket(0)) {
      std::vector<std::string> argv = options_.kgym_argv0;
      argv.insert(argv.end(), {"zygote-run", "--socket", socket->string(), "--cwd", paths.dir.string(),
                               "--env", "OMP_NUM_THREADS=1", "--"});
      std::vector<std::string> worker_args = worker::probe_arguments(req, paths.probe());
      argv.insert(argv.end(), worker_args.begin(), worker_args.end());
      spec.argv = std::move(argv);
    }
  }
  std::error_code ec;
  std::filesystem::remove(paths.probe(), ec);
  set_phase(Phase::kProbing);
  return launch(Child::kProbe, std::move(spec), config_.verifier.timeout);
}

Step SampleFlow::probe_ended(const ProcessExit& exit, bool timed_out) {
  const CasePaths& paths = id_.paths;
  if (timed_out) return fail(Verdict::kReferenceError, "the reference probe timed out");
  auto probe = worker::read_probe(paths.probe());
  if (!probe) {
    if (exit.kind == ProcessExit::Kind::kSignaled && exit.code == SIGKILL) {
      worker::ChildExit killed{.signaled = true, .code = SIGKILL};
      return fail(Verdict::kReferenceError,
                  worker::memory_reason("the reference probe", killed, config_.sandbox.address_space_mb));
    }
    return fail(Verdict::kReferenceError,
                fmt::format("reference probe failed ({}): {}", exit.describe(), probe.error()));
  }
  sizes_ = probe->sizes;
  std::string spec = render_spec(id_.c, config_, *probe);
  std::string prompt = render_prompt(id_.c, config_);
  for (const auto& dir : {paths.dir, id_.work}) {
    for (auto [name, text] : {std::pair{CasePaths::kSpec, &spec}, std::pair{CasePaths::kPrompt, &prompt}}) {
      if (auto ok = util::write_file_atomic(dir / name, *text, util::Durability::kRenameOnly); !ok)
        return fail(Verdict::kHarnessError, ok.error());
    }
  }
  if (auto ok = util::copy_regular_file(id_.c.file, id_.work / CasePaths::kTaskDesc); !ok)
    return fail(Verdict::kHarnessError, ok.error());
  if (config_.agent.self_check) {
    if (auto ok = write_self_check(); !ok) return fail(Verdict::kHarnessError, ok.error());
  }
  return launch_generation();
}

Step SampleFlow::launch_generation() {
  generation_ = Generation{};
  generation_.agent = agent_.name();
  generation_.model = agent_.model();
  generation_.agent_version = options_.agent_version;
  set_phase(Phase::kGenerating);
  generation_started_ = clock_.now();
  std::error_code ec;
  auto log_size = std::filesystem::file_size(id_.paths.agent_log(), ec);
  agent_log_from_ = ec ? 0 : log_size;
  if (round_ > 1) return launch_feedback_round();
  if (!config_.workflow.stages.empty()) {
    workflow_stage_ = 0;
    attempt_ = 0;
    return launch_stage();
  }
  std::filesystem::path prompt_file = id_.work / CasePaths::kPrompt;
  if (auto prompt = util::read_file(prompt_file)) generation_.prompt_sha256 = util::sha256_hex(*prompt);
  return launch_agent(prompt_file);
}

Step SampleFlow::agent_ended(const ProcessExit& exit, bool timed_out) {
  bool workflow = !config_.workflow.stages.empty();
  generation_.exit_code = exit.kind == ProcessExit::Kind::kExited ? exit.code : 128 + exit.code;
  if (timed_out || !exit.ok()) {
    GenerationOutcome outcome = timed_out ? GenerationOutcome::kTimeout : GenerationOutcome::kNonZeroExit;
    if (workflow)
      generation_.stages.back().attempts.push_back({attempt_, std::string(to_string(outcome)), {}});
    end_generation();
    generation_.outcome = std::string(to_string(outcome));
    std::string where = workflow ? fmt::format(" in stage '{}'", generation_.stages.back().name) : "";
    if (timed_out)
      return fail(Verdict::kGenerationFailed,
                  fmt::format("agent timed out after {} s{}", config_.agent.timeout.count(), where));
    return fail(Verdict::kGenerationFailed,
                fmt::format("agent ended with {}{} (see agent.log)", exit.describe(), where));
  }
  return agent_done();
}

// The agent's run ended well (or there was none to run): a workflow checks
// the stage, otherwise the candidate is collected.
Step SampleFlow::agent_done() {
  if (!config_.workflow.stages.empty()) return check_stage();
  return collect_candidate();
}

Step SampleFlow::collect_candidate() {
  end_generation();
  auto candidate =
      agent::collect_artifacts(agent_, agent_.artifact_dir(agent_task({})), id_.paths.candidate());
  if (!candidate) {
    generation_.outcome = std::string(to_string(candidate.error().outcome));
    return fail(Verdict::kGenerationFailed, candidate.error().reason);
  }
  candidate_ = *candidate;
  generation_.outcome = "ok";
  if (auto ok = util::write_file_atomic(
          id_.paths.generation(),
          util::json_text(generation_json(generation_, generate_s_, round_), 2) + "\n");
      !ok) {
    return fail(Verdict::kHarnessError, ok.error());
  }
  event("generated");
  // agent.transcript_policy fail: a flagged session is a cheat, whatever its
  // kernel (docs/anti-cheat.md "Transcripts").
  if (config_.agent.transcript_policy == "fail" && !generation_.transcript_flags.empty()) {
    const TranscriptFlag& first = generation_.transcript_flags.front();
    CaseResult r;
    r.verdict = Verdict::kFailCheat;
    r.cheat = CheatFinding{first.rule, "transcript",
                           fmt::format("{}:{}: {}", first.file, first.line, first.evidence)};
    r.reason = fmt::format("the agent's transcript: {} ({}:{}: {}){}", first.rule, first.file, first.line,
                           first.evidence,
                           generation_.transcript_flags.size() > 1
                               ? fmt::format(", and {} more flag(s)", generation_.transcript_flags.size() - 1)
                               : "");
    r.problem = sizes_;
    r.precision = config_.precision;
    return finish(std::move(r));
  }
  return wait_for_build();
}

// The build stage (docs/build.md): the candidate built in its box by a
// `kgym build` child, on the cores the loop gives it, before any device is
// leased. A failed build ends the sample without ever taking a device.
Step SampleFlow::wait_for_build() {
  set_phase(Phase::kBuilding);
  return NeedBuildSlot{};
}

Step SampleFlow::build_slot_granted(BuildSlot slot) { return launch_build(slot); }

verify::VerifyRequest SampleFlow::verify_request(const std::filesystem::path& scratch) const {
  verify::VerifyRequest req;
  req.case_id = id_.c.id();
  req.problem = id_.c.file;
  req.candidate = candidate_;
  req.scratch_dir = scratch;
  req.python = options_.python;
  req.config = config_.verifier;
  req.overrides = config_.overrides;
  if (sizes_) {
    for (const auto& [name, value] : sizes_->sizes) req.overrides.emplace(name, value);  // the user's win
    req.sizes = sizes_;
  }
  req.run_seed = verify_seed();
  req.candidate_is_reference = agent_.baseline();
  req.precision = config_.precision;
  req.sandbox = config_.sandbox;
  req.sandbox.mode = std::string(util::to_string(options_.sandbox_mode));
  req.sandbox_hidden = options_.candidate_hidden;
  return req;
}

Step SampleFlow::launch_build(const BuildSlot& slot) {
  const CasePaths& paths = id_.paths;
  std::error_code ec;
  std::filesystem::remove_all(paths.build_dir(), ec);
  std::filesystem::remove(paths.build_result(), ec);
  if (auto ok = util::make_dirs(paths.build_dir()); !ok) return fail(Verdict::kHarnessError, ok.error());
  verify::VerifyRequest req = verify_request(paths.build_dir());
  req.stage = verify::VerifyStage::kBuild;
  req.device = slot.cores;
  req.config.timeout = config_.build.timeout;
  if (auto probe = worker::read_probe(paths.probe())) req.init_inputs = probe->init_values;
  if (config_.build.precompiled_header) {
    req.pch_root = options_.pch_root;
    req.pch_dir = options_.pch_dir;
  }
  if (auto ok =
          util::write_file_atomic(paths.build_request(), util::json_text(verify::to_json(req), 2) + "\n",
                                  util::Durability::kRenameOnly);
      !ok) {
    return fail(Verdict::kHarnessError, ok.error());
  }
  util::ProcessSpec spec;
  spec.argv = options_.kgym_argv0;
  spec.argv.insert(spec.argv.end(), {"build", "--request", paths.build_request().string(), "--json",
                                     paths.build_result().string()});
  spec.cwd = paths.dir;
  spec.log_file = paths.build_log();
  if (slot.cores != "all") spec.cpus = slot.cores;
  event("build", {{"cores", slot.cores}});
  // kgym build enforces build.timeout itself; this deadline only guards
  // against one that cannot stop.
  return launch(Child::kBuild, std::move(spec), config_.build.timeout + std::chrono::seconds(60));
}

Step SampleFlow::build_ended(const ProcessExit& exit, bool timed_out) {
  std::error_code ec;
  if (!std::filesystem::exists(id_.paths.build_result(), ec)) {
    if (timed_out) return fail(Verdict::kTimeout, "the build did not stop in time");
    return fail(Verdict::kHarnessError,
                fmt::format("the build ended with {} without a result (see build.log)", exit.describe()));
  }
  auto read = read_result_record(id_.paths.build_result());
  if (!read) return fail(Verdict::kHarnessError, fmt::format("build_result.json: {}", read.error()));
  CaseResult built = std::move(*read);
  compile_s_ = built.timings.compile_s;
  if (built.verdict != Verdict::kPass) {
    built.timings = Timings{};
    return finish(std::move(built));
  }
  event("built", {{"compile_s", compile_s_ ? nlohmann::json(*compile_s_) : nlohmann::json(nullptr)}});
  return wait_for_device();
}

Step SampleFlow::wait_for_device() {
  set_phase(Phase::kWaitingDevice);
  return NeedDevice{};
}

Step SampleFlow::device_granted(DeviceLease device) {
  device_ = std::move(device);
  return launch_verification();
}

Step SampleFlow::launch_verification() {
  const CasePaths& paths = id_.paths;
  std::error_code ec;
  std::filesystem::remove_all(paths.verify_dir(), ec);
  std::filesystem::remove(paths.verify_result(), ec);
  if (auto ok = util::make_dirs(paths.verify_dir()); !ok) return fail(Verdict::kHarnessError, ok.error());
  verify::VerifyRequest req = verify_request(paths.verify_dir());
  req.device = device_->name;
  // Loaded from the build stage's output; the verification never builds.
  if (!agent_.baseline()) {
    req.stage = verify::VerifyStage::kVerifyPrebuilt;
    req.prebuilt = paths.prebuilt();
  }
  if (options_.warm_pool) {
    if (auto warm = options_.warm_pool->endpoints(device_->index)) {
      req.warm = std::move(*warm);
    } else {
      notes_.push_back(
          {FlowNote::Kind::kWarning,
           fmt::format("kgym: warning: {}; {} verifies with cold workers", warm.error(), id_.c.id())});
    }
  }
  if (auto ok =
          util::write_file_atomic(paths.verify_request(), util::json_text(verify::to_json(req), 2) + "\n",
                                  util::Durability::kRenameOnly);
      !ok) {
    return fail(Verdict::kHarnessError, ok.error());
  }
  util::ProcessSpec spec;
  spec.argv = options_.kgym_argv0;
  spec.argv.insert(spec.argv.end(), {"verify", "--request", paths.verify_request().string(), "--json",
                                     paths.verify_result().string()});
  spec.cwd = paths.dir;
  spec.log_file = paths.verify_log();
  set_phase(Phase::kVerifying);
  // kgym verify enforces verifier.timeout itself; this deadline only guards
  // against a verifier that cannot stop.
  return launch(Child::kVerify, std::move(spec), config_.verifier.timeout + std::chrono::seconds(60));
}

Step SampleFlow::verify_ended(const ProcessExit& exit, bool timed_out) {
  std::error_code ec;
  if (!std::filesystem::exists(id_.paths.verify_result(), ec)) {
    std::string reason =
        timed_out
            ? "the verifier did not stop in time"
            : fmt::format("the verifier ended with {} without a result (see verify.log)", exit.describe());
    return fail(timed_out ? Verdict::kTimeout : Verdict::kHarnessError, reason);
  }
  auto result = read_result_record(id_.paths.verify_result());
  if (!result) return fail(Verdict::kHarnessError, fmt::format("verify_result.json: {}", result.error()));
  return finish(std::move(*result));
}

Step SampleFlow::fail(Verdict verdict, std::string reason) {
  CaseResult r;
  r.verdict = verdict;
  r.reason = util::last_line(reason);
  r.problem = sizes_;
  r.precision = config_.precision;
  return finish(std::move(r));
}

Step SampleFlow::finish(CaseResult result) {
  result.case_id = id_.c.id();
  result.backend = config_.verifier.backend;
  result.mode = config_.verifier.mode;
  if (!generation_.agent.empty()) result.generation = generation_;
  result.timings.generate_s = generate_s_;
  if (!result.timings.compile_s) result.timings.compile_s = compile_s_;
  result.timings.total_s = util::Seconds(clock_.now() - round_started_).count();
  if (config_.agent.feedback.on() && !agent_.baseline()) {
    if (another_round(result)) return next_round(result);
    end_rounds(result);
  }
  result.timings.total_s = util::Seconds(clock_.now() - started_).count();
  // A case that ended before a reference worker said what it ran on (an
  // agent failure, a reference the probe found broken) gets the run's.
  if (!result.environment && !options_.torch_version.empty())
    result.environment = TorchEnvironment{options_.python, options_.torch_version, options_.torch_build};
  phase_ = Phase::kDone;
  result_ = result;
  return Finished{std::move(result)};
}

void SampleFlow::set_phase(Phase phase) {
  phase_ = phase;
  notes_.push_back({FlowNote::Kind::kPhase, std::string(to_string(phase)), nlohmann::json::object()});
}

void SampleFlow::event(std::string name, nlohmann::json data) {
  notes_.push_back({FlowNote::Kind::kEvent, std::move(name), std::move(data)});
}

}  // namespace kgym::run
