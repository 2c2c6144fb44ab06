// The agent side of a sample that sample_flow.cc leaves out: how the agent
// and its command gates are confined (sandboxed), what the agent's
// environment says of its sample and device (agent_env), and the workflow
// stages run inside the generation phase (launch_stage, check_stage,
// stage_checked, end_generation).
#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "agent/template.h"
#include "agent/transcript_scan.h"
#include "core/backend.h"
#include "run/sample_flow.h"
#include "util/fs.h"
#include "util/sha256.h"

namespace kgym::run {

agent::AgentTask SampleFlow::agent_task(const std::filesystem::path& prompt_file) const {
  std::string device = config_.agent.needs_device && device_ ? device_->name : "";
  return {id_.c.id(), id_.c.level, id_.c.stem(),           id_.paths.dir,
          id_.work,   prompt_file, id_.work / CasePaths::kSpec, device};
}

Step SampleFlow::launch_agent(const std::filesystem::path& prompt_file) {
  auto launch = agent_.prepare(agent_task(prompt_file));
  if (!launch) {
    end_generation();
    generation_.outcome = std::string(to_string(launch.error().outcome));
    return fail(Verdict::kGenerationFailed, launch.error().reason);
  }
  if (!launch->process) return agent_done();
  agent_env(*launch->process);
  Step step = this->launch(Child::kAgent, sandboxed(*launch->process, Boxed::kAgent), launch->timeout);
  launched_ = launch->process->argv.front();
  return step;
}

// The agent's box. A command gate runs a program the agent may have written,
// so it gets the same box, without network and without write access to any
// log: what it prints reaches its log through its stdout only.
util::ProcessSpec SampleFlow::sandboxed(const util::ProcessSpec& spec, Boxed who) const {
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
    // The agent program itself stays visible when it lives in a hidden tree
    // or under the box's own /tmp (bound only then: binding a program that
    // is a symlink, a venv's python3, over the read-only root fails).
    if (!spec.argv.empty() && std::filesystem::path(spec.argv.front()).is_absolute()) {
      std::filesystem::path program = spec.argv.front();
      auto under = [&](const std::filesystem::path& dir) {
        auto relative = program.lexically_relative(dir);
        return !relative.empty() && *relative.begin() != "..";
      };
      bool in_hidden = under("/tmp") || std::ranges::any_of(policy.hidden, under);
      if (in_hidden) policy.read_only.push_back(program);
    }
    for (const auto& path : config_.sandbox.agent_read_only) policy.read_only.push_back(path);
    policy.writable.emplace_back(id_.work, std::filesystem::path());
    // Its own log (profiles read their transcript back from it) and the
    // case's session dir (where they keep exported sessions).
    if (who == Boxed::kAgent && !spec.log_file.empty()) {
      std::ofstream(spec.log_file, std::ios::app).flush();  // bwrap binds only what exists
      if (std::filesystem::is_regular_file(spec.log_file, ec))
        policy.writable.emplace_back(spec.log_file, std::filesystem::path());
      auto session = spec.log_file.parent_path() / "session";
      if (util::make_dirs(session)) policy.writable.emplace_back(session, std::filesystem::path());
    }
    if (!spec.cwd.empty() && spec.cwd != id_.work)
      policy.writable.emplace_back(spec.cwd, std::filesystem::path());
    for (const auto& path : config_.sandbox.agent_writable) {
      if (std::filesystem::exists(path, ec)) policy.writable.emplace_back(path, std::filesystem::path());
    }
    // The real $HOME is read-only in the box; CLIs that keep config, data,
    // caches and state under it get a private home in the case dir (kept
    // with the case: opencode's session store lives there). agent.env wins.
    auto home = id_.paths.agent_home();
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
void SampleFlow::agent_env(util::ProcessSpec& spec) const {
  if (id_.sample > 0) spec.env["KGYM_SAMPLE"] = std::to_string(id_.sample);
  if (!config_.agent.needs_device || !device_) return;
  spec.env["KGYM_DEVICE"] = device_->name;
  for (std::string_view variable : backend_of(config_.verifier).agent_device_env)
    spec.env[std::string(variable)] = device_->name;
}

// Writes the prompt of the current stage's next attempt (the template with
// its placeholders filled, plus the failed checks on a re-prompt) and runs
// the agent on it.
Step SampleFlow::launch_stage() {
  const StageConfig& stage = config_.workflow.stages[workflow_stage_];
  ++attempt_;
  if (attempt_ == 1) generation_.stages.push_back(StageRecord{stage.name, {}, false});
  auto values = agent::placeholders(agent_task(id_.work / CasePaths::kPrompt), config_.agent);
  values["stage"] = stage.name;
  values["attempt"] = std::to_string(attempt_);
  auto text = util::read_file(stage.prompt);
  if (!text) return fail(Verdict::kHarnessError, text.error());
  std::string prompt = agent::expand_template(*text, values);
  if (attempt_ > 1) {
    prompt = reprompt_text(prompt, generation_.stages.back().attempts.back().gates, attempt_,
                           config_.workflow.max_attempts);
  }
  if (workflow_stage_ == 0 && attempt_ == 1) generation_.prompt_sha256 = util::sha256_hex(prompt);
  std::filesystem::path file = id_.work / ".kgym" / fmt::format("{}.{}.md", stage.name, attempt_);
  if (auto ok = util::make_dirs(file.parent_path()); !ok) return fail(Verdict::kHarnessError, ok.error());
  if (auto ok = util::write_file_atomic(file, prompt); !ok) return fail(Verdict::kHarnessError, ok.error());
  stage_name_ = stage.name;
  event("stage", {{"stage", stage.name}, {"attempt", attempt_}});
  return launch_agent(file);
}

// Checks the stage the agent just finished: the file gates in-process, each
// command gate as a sandboxed child of the event loop (advance_checks).
Step SampleFlow::check_stage() {
  const StageConfig& stage = config_.workflow.stages[workflow_stage_];
  agent::AgentTask task = agent_task(id_.work / CasePaths::kPrompt);
  GateContext context{agent_.artifact_dir(task), id_.c.file, &backend_of(config_.verifier),
                      agent::placeholders(task, config_.agent)};
  checks_.emplace(stage, std::move(context), id_.paths.gates(stage.name, attempt_));
  set_phase(Phase::kChecking);
  return advance_checks();
}

Step SampleFlow::advance_checks() {
  if (auto command = checks_->next())
    return launch(Child::kGate, sandboxed(command->spec, Boxed::kGate), command->timeout);
  return stage_checked();
}

// The stage's checks are all in. When they passed and it was the last stage
// the candidate is collected; otherwise the next attempt or stage is
// launched, or the sample fails.
Step SampleFlow::stage_checked() {
  const StageConfig& stage = config_.workflow.stages[workflow_stage_];
  StageRecord& record = generation_.stages.back();
  record.attempts.push_back(StageAttempt{attempt_, "ok", checks_->results()});
  checks_.reset();
  const StageAttempt& attempt = record.attempts.back();
  failed_gates_.clear();
  nlohmann::json gates = nlohmann::json::array();
  for (const GateResult& g : attempt.gates) {
    if (!g.ok) failed_gates_.push_back(fmt::format("{}: {}", g.gate, g.detail));
    gates.push_back({{"gate", g.gate}, {"ok", g.ok}, {"detail", g.detail}});
  }
  event("gates", {{"stage", stage.name}, {"attempt", attempt_}, {"gates", gates}});
  if (attempt.passed()) {
    record.passed = true;
    if (++workflow_stage_ < config_.workflow.stages.size()) {
      attempt_ = 0;
      set_phase(Phase::kGenerating);
      return launch_stage();
    }
    return collect_candidate();
  }
  if (attempt_ < config_.workflow.max_attempts) {
    set_phase(Phase::kGenerating);
    return launch_stage();
  }
  end_generation();
  generation_.outcome = std::string(to_string(GenerationOutcome::kGateFailed));
  return fail(Verdict::kGenerationFailed,
              fmt::format("stage '{}' failed its checks after {} attempt(s): {}", stage.name, attempt_,
                          failed_gates_.empty() ? "" : failed_gates_.front()));
}

// The agent is done with this sample (for good or not): its time and what
// its transcript reports.
void SampleFlow::end_generation() {
  generate_s_ = util::Seconds(clock_.now() - generation_started_).count();
  generation_.duration_s = generate_s_;
  if (auto usage = agent_.read_usage(agent_task(id_.work / CasePaths::kPrompt))) {
    generation_.tokens_in = usage->tokens_in;
    generation_.tokens_out = usage->tokens_out;
    generation_.cost = usage->cost;
    generation_.tool_calls = usage->tool_calls;
    generation_.transcript = "session/transcript.jsonl";
  }
  scan_transcripts();
}

// What the agent did, read back from its transcripts and scanned for
// attempts to game the grader (docs/anti-cheat.md "Transcripts"): a CLI's
// JSON stream and, for opencode, its session export; a command agent's
// output. Every stage of a workflow is in them.
void SampleFlow::scan_transcripts() {
  namespace fs = std::filesystem;
  agent::AgentTask task = agent_task(id_.work / CasePaths::kPrompt);
  agent::ScanContext context;
  context.workspace = agent_.workdir(task);
  context.home = id_.paths.agent_home();
  context.case_stem = id_.c.stem();
  context.artifacts = agent_.artifacts();
  context.allowed = {context.home};
  for (const auto& path : config_.sandbox.agent_read_only) context.allowed.emplace_back(path);
  if (config_.agent.work_repo) context.allowed.push_back(*config_.agent.work_repo);
  context.off_limits = options_.agent_hidden;
  context.off_limits.push_back(config_.bench_dir);
  context.off_limits.push_back(config_.output_root);
  if (!options_.kgym_argv0.empty()) context.off_limits.emplace_back(options_.kgym_argv0.front());
  std::vector<std::pair<std::string, agent::TranscriptFormat>> sources;
  std::string kind = agent_.name();
  if (kind == "opencode" || kind == "claude" || kind == "codex") {
    sources.emplace_back("session/transcript.jsonl", kind == "opencode" ? agent::TranscriptFormat::kOpencode
                                                     : kind == "claude" ? agent::TranscriptFormat::kClaude
                                                                        : agent::TranscriptFormat::kCodex);
  } else if (kind == "command") {
    sources.emplace_back(std::string(CasePaths::kAgentLog), agent::TranscriptFormat::kText);
  }
  std::error_code ec;
  if (kind == "opencode" && fs::is_directory(id_.paths.dir / "session", ec)) {
    for (const auto& entry : fs::directory_iterator(id_.paths.dir / "session", ec)) {
      std::string name = entry.path().filename().string();
      if (name.starts_with("opencode-export-") && name.ends_with(".json"))
        sources.emplace_back("session/" + name, agent::TranscriptFormat::kOpencodeExport);
    }
  }
  generation_.transcript_flags.clear();
  for (const auto& [file, format] : sources) {
    auto text = util::read_file(id_.paths.dir / file);
    if (!text) continue;
    auto flags = agent::scan_actions(agent::read_actions(*text, format), context, file);
    generation_.transcript_flags.insert(generation_.transcript_flags.end(), flags.begin(), flags.end());
  }
}

}  // namespace kgym::run
