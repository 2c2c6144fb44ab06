// The agent side of a sample that sample_flow.cc leaves out: how the agent
// and its command gates are confined (sandboxed), what the agent's
// environment says of its sample and device (agent_env), and the workflow
// stages run inside the generation phase (launch_stage, check_stage,
// stage_checked, end_generation).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "agent/template.h"
#include "agent/transcript.h"
#include "agent/transcript_scan.h"
#include "core/backend.h"
#include "run/sample_flow.h"
#include "util/fs.h"
#include "util/json_text.h"
#include "util/sha256.h"

namespace kgym::run {

agent::AgentTask SampleFlow::agent_task(const std::filesystem::path& prompt_file) const {
  std::string device = config_.agent.needs_device && device_ ? device_->name : "";
  return {id_.c.id(),
          id_.c.level,
          id_.c.stem(),
          id_.paths.dir,
          id_.work,
          prompt_file,
          id_.work / CasePaths::kSpec,
          device,
          options_.sandbox_mode != util::SandboxMode::kNone,
          round_,
          agent_log_from_};
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
  auto boxed = sandboxed(*launch->process, Boxed::kAgent);
  if (!boxed) {
    end_generation();
    generation_.outcome = std::string(to_string(GenerationOutcome::kLaunchFailed));
    return fail(Verdict::kHarnessError, fmt::format("cannot box the agent: {}", boxed.error()));
  }
  Step step = this->launch(Child::kAgent, std::move(*boxed), launch->timeout);
  launched_ = launch->process->argv.front();
  return step;
}

namespace {

// Makes `dir` below `home` (the box's own directory), removing on the way
// whatever is not a directory: a link the box left there is never followed.
bool own_dirs_below(const std::filesystem::path& home, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  auto relative = dir.lexically_relative(home);
  if (relative.empty() || *relative.begin() == "..") return false;
  fs::path walked = home;
  std::error_code ec;
  for (const auto& part : relative) {
    walked /= part;
    auto status = fs::symlink_status(walked, ec);
    if (!ec && status.type() == fs::file_type::directory) continue;
    if (!ec) fs::remove(walked, ec);
    if (!fs::create_directory(walked, ec) || ec) return false;
  }
  return true;
}

}  // namespace

// The agent's box. A command gate runs a program the agent may have written,
// so it gets the same box, without network. Both run without capabilities,
// as kBoxUid when kgym runs as root (docs/agents.md "The agent's box"), with
// a file-size limit, and print into a pipe whose relay outside the box
// writes their log: what the box can write is its work dir, its home and
// its session dir, never a file kgym reads as its own record.
std::expected<util::ProcessSpec, std::string> SampleFlow::sandboxed(const util::ProcessSpec& spec,
                                                                    Boxed who) const {
  namespace fs = std::filesystem;
  util::ProcessSpec boxed = spec;
  util::SandboxPolicy policy;
  policy.mode = options_.sandbox_mode;
  policy.network = who == Boxed::kAgent && config_.agent.network;
  policy.limits.no_core_dumps = policy.mode != util::SandboxMode::kNone;
  std::uint64_t file_limit =
      config_.sandbox.file_size_mb > 0 ? static_cast<std::uint64_t>(config_.sandbox.file_size_mb) << 20 : 0;
  if (policy.mode != util::SandboxMode::kNone) {
    if (file_limit > 0) policy.limits.file_size_bytes = file_limit;
    policy.relay_output_bytes = file_limit > 0 ? file_limit : std::uint64_t{1} << 30;
  }
  policy.run_as = util::box_uid(config_.sandbox.drop_privileges, policy.mode);
  // What the box may write: its work dir (and cwd), its home, its session dir.
  std::vector<fs::path> own{id_.work};
  if (!spec.cwd.empty() && spec.cwd != id_.work && !config_.agent.work_repo) own.push_back(spec.cwd);
  auto home = id_.paths.agent_home();
  auto session = id_.paths.session();
  for (const fs::path& dir :
       who == Boxed::kAgent ? std::vector<fs::path>{home, session} : std::vector<fs::path>{home}) {
    if (auto made = util::make_dirs(dir); !made) return std::unexpected(made.error());
    own.push_back(dir);
  }
  if (policy.run_as) {
    for (const fs::path& dir : own) {
      if (auto given = util::hand_over(dir, *policy.run_as); !given) return std::unexpected(given.error());
    }
  }
  if (policy.mode == util::SandboxMode::kBwrap) {
    std::error_code ec;
    for (const auto& dir : options_.agent_hidden) {
      if (fs::is_directory(dir, ec)) policy.hidden.push_back(dir);
    }
    // The agent program itself stays visible when it lives in a hidden tree
    // or under the box's own /tmp (bound only then: binding a program that
    // is a symlink, a venv's python3, over the read-only root fails).
    auto show_if_hidden = [&policy](const fs::path& program) {
      if (!program.is_absolute()) return;
      auto under = [&](const fs::path& dir) {
        auto relative = program.lexically_relative(dir);
        return !relative.empty() && *relative.begin() != "..";
      };
      bool in_hidden = under("/tmp") || std::ranges::any_of(policy.hidden, under);
      if (in_hidden) policy.read_only.push_back(program);
    };
    if (!spec.argv.empty()) show_if_hidden(spec.argv.front());
    // agent.self_check: kgym-check's directory and the kgym it runs.
    if (who == Boxed::kAgent && config_.agent.self_check) {
      policy.read_only.push_back(id_.paths.self_check());
      if (!options_.kgym_argv0.empty()) show_if_hidden(options_.kgym_argv0.front());
    }
    for (const auto& path : config_.sandbox.agent_read_only) policy.read_only.push_back(path);
    for (const fs::path& dir : own) policy.writable.emplace_back(dir, fs::path());
    if (config_.agent.work_repo && !spec.cwd.empty() && spec.cwd != id_.work)
      policy.writable.emplace_back(spec.cwd, fs::path());
    for (const auto& path : config_.sandbox.agent_writable) {
      if (fs::exists(path, ec)) policy.writable.emplace_back(path, fs::path());
    }
    // The real $HOME is read-only in the box; CLIs that keep config, data,
    // caches and state under it get a private home in the case dir (kept
    // with the case: opencode's session store lives there). agent.env wins.
    for (const auto& [key, value] : util::private_home_env(home)) boxed.env.try_emplace(key, value);
    int copies = 0;
    for (const auto& [host, inside] : agent_.box_files(boxed.env)) {
      // A credential file shown inside the private home: as another uid the
      // box could not read kgym's, so it gets a copy of its own, made in a
      // directory of kgym's and bound read-only like the file itself.
      if (policy.run_as && !inside.empty() && fs::is_regular_file(host, ec)) {
        fs::path copy = id_.paths.box_copies() / std::to_string(copies++);
        if (auto made = util::make_dirs(copy.parent_path()); !made) return std::unexpected(made.error());
        fs::remove(copy, ec);
        fs::copy_file(host, copy, ec);
        if (ec || ::chown(copy.c_str(), *policy.run_as, *policy.run_as) != 0 ||
            ::chmod(copy.c_str(), 0400) != 0)
          return std::unexpected(fmt::format("cannot give the box its copy of {}", host.string()));
        if (own_dirs_below(home, inside.parent_path())) (void)util::hand_over(home, *policy.run_as);
        policy.read_only_over_writable.emplace_back(copy, inside);
        continue;
      }
      // Where a file is shown inside the home, the directories on its way
      // are the box's (bwrap would make them as root, 0700).
      if (policy.run_as && !inside.empty() && inside.parent_path() != home) {
        if (own_dirs_below(home, inside.parent_path())) (void)util::hand_over(home, *policy.run_as);
      }
      policy.read_only_over_writable.emplace_back(host, inside);
    }
    // A directory the box's uid may not enter on the way to what it is
    // given (/root, 0700, above a run dir) is covered by an empty one, and
    // what the box is given below it is bound again.
    util::cover_unreachable(policy);
    policy.cwd = spec.cwd;
  } else if (policy.run_as) {
    // Without bubblewrap the box sees the host's directories as they are.
    for (const fs::path& dir : own) {
      if (auto blocked = util::unreachable_for(*policy.run_as, dir))
        return std::unexpected(fmt::format(
            "the agent runs as uid {} without bubblewrap and cannot enter {}: put output.root_dir where "
            "others may enter (e.g. /var/tmp/kgym-runs), install bubblewrap, or set "
            "sandbox.drop_privileges: false",
            *policy.run_as, blocked->string()));
    }
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
  // agent.self_check: kgym-check first on the PATH (agent.env's, else kgym's).
  if (config_.agent.self_check) {
    const char* host = std::getenv("PATH");
    std::string path = spec.env.contains("PATH") ? spec.env["PATH"]
                       : host != nullptr         ? host
                                                 : "/usr/bin:/bin";
    spec.env["PATH"] = id_.paths.self_check().string() + ":" + path;
  }
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
  // A refinement round re-runs the last stage with the verification's feedback.
  if (round_ > 1) prompt += "\n\n" + feedback_;
  if (attempt_ > 1) {
    prompt = reprompt_text(prompt, generation_.stages.back().attempts.back().gates, attempt_,
                           config_.workflow.max_attempts);
  }
  if (workflow_stage_ == 0 && attempt_ == 1 && round_ == 1)
    generation_.prompt_sha256 = util::sha256_hex(prompt);
  std::string name = round_ > 1 ? fmt::format("{}.round{}.{}.md", stage.name, round_, attempt_)
                                : fmt::format("{}.{}.md", stage.name, attempt_);
  auto file = write_prompt(name, prompt);
  if (!file) return fail(Verdict::kHarnessError, file.error());
  stage_name_ = stage.name;
  event("stage", {{"stage", stage.name}, {"attempt", attempt_}});
  return launch_agent(*file);
}

namespace {

// `text` as one word of sh: in single quotes, each quote closed and escaped.
std::string sh_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

// agent.self_check (docs/agents.md "A check in the box"): the case's
// self_check/ directory, shown read-only in the agent's box and first on
// its PATH, holds `kgym-check`, the request it checks with and a copy of
// the problem. The request is the verification's at the probed sizes and
// precision, with kgym's tolerances, made a self check (correctness only,
// two trials, no held-out shape, no box of its own); kgym self-check draws
// its own seeds.
std::expected<void, std::string> SampleFlow::write_self_check() const {
  namespace fs = std::filesystem;
  fs::path dir = id_.paths.self_check();
  if (auto made = util::make_dirs(dir); !made) return made;
  if (auto copied = util::copy_regular_file(id_.c.file, dir / "problem.py"); !copied) return copied;
  verify::VerifyRequest req = verify_request({});
  req.problem = dir / "problem.py";
  req.candidate = "model_new.py";
  req.self_check = true;
  req.config.mode = "correctness";
  req.sandbox.mode = "none";
  req.sandbox_hidden.clear();
  req.run_seed = 0;
  if (auto ok =
          util::write_file_atomic(dir / "request.json", util::json_text(verify::to_json(req), 2) + "\n");
      !ok)
    return ok;
  std::string kgym = options_.kgym_argv0.empty() ? "kgym" : options_.kgym_argv0.front();
  std::string script = fmt::format(
      "#!/bin/sh\n# kgym-check [FILE]: what kgym's verification would say of FILE (default model_new.py):\n"
      "# the static rules, the build and two correctness trials; never the verdict.\n"
      "exec {} self-check --request {} \"$@\"\n",
      sh_quoted(kgym), sh_quoted((dir / "request.json").string()));
  if (auto ok = util::write_file_atomic(dir / "kgym-check", script); !ok) return ok;
  std::error_code ec;
  fs::permissions(dir / "kgym-check",
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                      fs::perms::others_read | fs::perms::others_exec,
                  ec);
  for (const char* file : {"request.json", "problem.py"})
    fs::permissions(
        dir / file,
        fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read, ec);
  fs::permissions(dir,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                      fs::perms::others_read | fs::perms::others_exec,
                  ec);
  if (ec)
    return std::unexpected(fmt::format("cannot open {} to the agent's box: {}", dir.string(), ec.message()));
  return {};
}

// Writes a prompt kgym made for the agent under the work dir's .kgym/. The
// work dir is the agent's: what it left at .kgym (a link to a host
// directory, say) is removed, never written through. No process of the box
// runs between its runs.
std::expected<std::filesystem::path, std::string> SampleFlow::write_prompt(const std::string& name,
                                                                           const std::string& text) const {
  std::filesystem::path file = id_.work / ".kgym" / name;
  std::error_code ec;
  if (auto status = std::filesystem::symlink_status(file.parent_path(), ec);
      !ec && status.type() != std::filesystem::file_type::directory)
    std::filesystem::remove_all(file.parent_path(), ec);
  if (auto ok = util::make_dirs(file.parent_path()); !ok) return std::unexpected(ok.error());
  if (auto ok = util::write_file_atomic(file, text); !ok) return std::unexpected(ok.error());
  return file;
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
  if (auto command = checks_->next()) {
    auto boxed = sandboxed(command->spec, Boxed::kGate);
    if (!boxed)
      return fail(Verdict::kHarnessError, fmt::format("cannot box a command gate: {}", boxed.error()));
    return launch(Child::kGate, std::move(*boxed), command->timeout);
  }
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
    generation_.transcript = std::string(CasePaths::kTranscript);
  }
  scan_transcripts();
}

// What the agent did, read back from its transcripts and scanned for
// attempts to game the grader (docs/anti-cheat.md "Transcripts"): a CLI's
// JSON stream and, for opencode, its session export; a command agent's
// output. Every stage of a workflow is in them.
void SampleFlow::scan_transcripts() {
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
  // Which files, in which format, is the agent layer's knowledge.
  generation_.transcript_flags.clear();
  for (const agent::TranscriptSource& source : agent_.transcripts(id_.paths.dir)) {
    auto text = util::read_file(source.file);
    if (!text) continue;
    if (source.json_lines) *text = agent::json_lines(*text);
    auto flags = agent::scan_actions(agent::read_actions(*text, source.format), context, source.name);
    generation_.transcript_flags.insert(generation_.transcript_flags.end(), flags.begin(), flags.end());
  }
}

}  // namespace kgym::run
