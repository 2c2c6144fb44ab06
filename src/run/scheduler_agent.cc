// The agent side of a case that scheduler.cc leaves out: how the agent and
// its command gates are confined (sandboxed), what its environment says of
// its sample and device (agent_env), and the workflow stages run inside the
// generation phase (launch_stage, check_stage, stage_checked, end_generation).
#include <fstream>

#include <fmt/format.h>

#include "agent/template.h"
#include "run/gates.h"
#include "run/scheduler.h"
#include "run/scheduler_case_run.h"
#include "util/fs.h"
#include "util/sha256.h"

namespace kgym::run {

// The agent's box. A command gate runs a program the agent may have written,
// so it gets the same box, without network and without write access to any
// log: what it prints reaches its log through its stdout only.
util::ProcessSpec Scheduler::sandboxed(const util::ProcessSpec& spec, const std::filesystem::path& workspace,
                                       const std::filesystem::path& case_dir, Boxed who) const {
  util::ProcessSpec boxed = spec;
  util::SandboxPolicy policy;
  policy.mode = options_.sandbox_mode;
  policy.network = who == Boxed::kAgent && config_.agent.network;
  policy.limits.no_core_dumps = policy.mode != util::SandboxMode::kNone;
  if (policy.mode == util::SandboxMode::kBwrap) {
    std::error_code ec;
    for (const auto& dir : options_.agent_hidden) {
      if (std::filesystem::is_directory(dir, ec)) policy.hidden.push_back(dir);
    }
    // The agent program itself stays visible when it lives in a hidden tree.
    if (!spec.argv.empty() && std::filesystem::path(spec.argv.front()).is_absolute())
      policy.read_only.push_back(spec.argv.front());
    for (const auto& path : config_.sandbox.agent_read_only) policy.read_only.push_back(path);
    policy.writable.emplace_back(workspace, std::filesystem::path());
    // Its own log (profiles read their transcript back from it) and the
    // case's session dir (where they keep exported sessions).
    if (who == Boxed::kAgent && !spec.log_file.empty()) {
      std::ofstream(spec.log_file, std::ios::app).flush();  // bwrap binds only what exists
      if (std::filesystem::is_regular_file(spec.log_file, ec))
        policy.writable.emplace_back(spec.log_file, std::filesystem::path());
      auto session = spec.log_file.parent_path() / "session";
      if (util::make_dirs(session)) policy.writable.emplace_back(session, std::filesystem::path());
    }
    if (!spec.cwd.empty() && spec.cwd != workspace)
      policy.writable.emplace_back(spec.cwd, std::filesystem::path());
    for (const auto& path : config_.sandbox.agent_writable) {
      if (std::filesystem::exists(path, ec)) policy.writable.emplace_back(path, std::filesystem::path());
    }
    // The real $HOME is read-only in the box; CLIs that keep config, data,
    // caches and state under it get a private home in the case dir (kept
    // with the case: opencode's session store lives there). agent.env wins.
    auto home = case_dir / "agent_home";
    if (util::make_dirs(home)) {
      policy.writable.emplace_back(home, std::filesystem::path());
      for (const auto& [key, value] : util::private_home_env(home)) boxed.env.try_emplace(key, value);
    }
    for (const auto& file : agent_.box_files(boxed.env)) policy.read_only_over_writable.push_back(file);
    policy.cwd = spec.cwd;
  }
  boxed.argv = util::sandboxed_argv(policy, spec.argv);
  // /tmp is private to the sandbox; a TMPDIR of the host would not exist there.
  if (policy.mode == util::SandboxMode::kBwrap && !boxed.env.contains("TMPDIR")) boxed.env["TMPDIR"] = "/tmp";
  return boxed;
}

// KGYM_SAMPLE for a case with several samples; with agent.needs_device the
// leased device as the backend's own selector reads it (the command agent
// already sets KGYM_DEVICE from the task).
void Scheduler::agent_env(std::size_t i, util::ProcessSpec& spec) const {
  const CaseRun& run = runs_[i];
  if (sampled()) spec.env["KGYM_SAMPLE"] = std::to_string(run.sample);
  if (!config_.agent.needs_device || !run.device) return;
  const std::string& device = devices_.name(*run.device);
  spec.env["KGYM_DEVICE"] = device;
  if (config_.verifier.backend == "npu") spec.env["TILE_FWK_DEVICE_ID"] = device;
  if (config_.verifier.backend == "cuda") spec.env["CUDA_VISIBLE_DEVICES"] = device;
}

// Writes the prompt of the current stage's next attempt (the template with
// its placeholders filled, plus the failed checks on a re-prompt) and runs
// the agent on it.
void Scheduler::launch_stage(std::size_t i) {
  CaseRun& run = runs_[i];
  const StageConfig& stage = config_.workflow.stages[run.workflow_stage];
  ++run.attempt;
  if (run.attempt == 1) run.generation.stages.push_back(StageRecord{stage.name, {}, false});
  auto values = agent::placeholders(agent_task(i, run.work / "prompt.md"), config_.agent);
  values["stage"] = stage.name;
  values["attempt"] = std::to_string(run.attempt);
  auto text = util::read_file(stage.prompt);
  if (!text) return fail(i, Verdict::kHarnessError, text.error());
  std::string prompt = agent::expand_template(*text, values);
  if (run.attempt > 1) {
    prompt = reprompt_text(prompt, run.generation.stages.back().attempts.back().gates, run.attempt,
                           config_.workflow.max_attempts);
  }
  if (run.workflow_stage == 0 && run.attempt == 1) run.generation.prompt_sha256 = util::sha256_hex(prompt);
  std::filesystem::path file = run.work / ".kgym" / fmt::format("{}.{}.md", stage.name, run.attempt);
  if (auto ok = util::make_dirs(file.parent_path()); !ok) return fail(i, Verdict::kHarnessError, ok.error());
  if (auto ok = util::write_file_atomic(file, prompt); !ok)
    return fail(i, Verdict::kHarnessError, ok.error());
  CaseState& s = row_of(i);
  s.stage = stage.name;
  s.attempt = run.attempt;
  store_.event("stage", s.id, {{"stage", stage.name}, {"attempt", run.attempt}});
  store_.save();
  launch_agent(i, file);
}

// Checks the stage the agent just finished: the file gates in-process, each
// command gate as a sandboxed child of the event loop (advance_checks).
void Scheduler::check_stage(std::size_t i) {
  CaseRun& run = runs_[i];
  const StageConfig& stage = config_.workflow.stages[run.workflow_stage];
  agent::AgentTask task = agent_task(i, run.work / "prompt.md");
  GateContext context{agent_.artifact_dir(task), run.c.file, config_.verifier.backend,
                      agent::placeholders(task, config_.agent)};
  run.checks.emplace(stage, std::move(context),
                     run.dir / "gates" / fmt::format("{}.{}", stage.name, run.attempt));
  advance_checks(i);
}

void Scheduler::advance_checks(std::size_t i) {
  CaseRun& run = runs_[i];
  while (auto command = run.checks->next()) {
    util::ProcessSpec spec = sandboxed(command->spec, run.work, run.dir, Boxed::kGate);
    if (launch_child(i, Child::kGate, spec, command->timeout)) return;
    run.checks->command_ended({util::ProcessExit::Kind::kExited, 127}, false);
  }
  stage_checked(i);
}

// The stage's checks are all in. When they passed and it was the last stage
// the candidate is collected; otherwise the next attempt or stage is
// launched, or the case fails.
void Scheduler::stage_checked(std::size_t i) {
  CaseRun& run = runs_[i];
  const StageConfig& stage = config_.workflow.stages[run.workflow_stage];
  StageRecord& record = run.generation.stages.back();
  record.attempts.push_back(StageAttempt{run.attempt, "ok", run.checks->results()});
  run.checks.reset();
  const StageAttempt& attempt = record.attempts.back();
  CaseState& s = row_of(i);
  s.failed_gates.clear();
  nlohmann::json gates = nlohmann::json::array();
  for (const GateResult& g : attempt.gates) {
    if (!g.ok) s.failed_gates.push_back(fmt::format("{}: {}", g.gate, g.detail));
    gates.push_back({{"gate", g.gate}, {"ok", g.ok}, {"detail", g.detail}});
  }
  store_.event("gates", s.id, {{"stage", stage.name}, {"attempt", run.attempt}, {"gates", gates}});
  store_.save();
  if (attempt.passed()) {
    record.passed = true;
    if (++run.workflow_stage < config_.workflow.stages.size()) {
      run.attempt = 0;
      return launch_stage(i);
    }
    return collect_candidate(i);
  }
  if (run.attempt < config_.workflow.max_attempts) return launch_stage(i);
  end_generation(i);
  run.generation.outcome = std::string(to_string(GenerationOutcome::kGateFailed));
  fail(i, Verdict::kGenerationFailed,
       fmt::format("stage '{}' failed its checks after {} attempt(s): {}", stage.name, run.attempt,
                   s.failed_gates.empty() ? "" : s.failed_gates.front()));
}

// The agent is done with this case (for good or not): its time and what
// its transcript reports.
void Scheduler::end_generation(std::size_t i) {
  CaseRun& run = runs_[i];
  run.generate_s = util::Seconds(clock_.now() - run.generation_started).count();
  run.generation.duration_s = run.generate_s;
  if (auto usage = agent_.read_usage(agent_task(i, run.work / "prompt.md"))) {
    run.generation.tokens_in = usage->tokens_in;
    run.generation.tokens_out = usage->tokens_out;
    run.generation.cost = usage->cost;
    run.generation.tool_calls = usage->tool_calls;
    run.generation.transcript = "session/transcript.jsonl";
  }
}

}  // namespace kgym::run
