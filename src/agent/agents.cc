// The plain agent kinds: `replay` (a stored candidate per case), `reference`
// (the problem's own Model: the baseline) and `command` (any program, run
// by the scheduler as a child process). The CLI profiles build on
// `command` (profiles.cc).
#include <fmt/format.h>

#include "agent/agent.h"
#include "agent/command_agent.h"
#include "agent/template.h"
#include "core/case_paths.h"
#include "util/beneath.h"
#include "util/fs.h"

namespace kgym::agent {
std::map<std::string, std::string> placeholders(const AgentTask& task, const AgentConfig& config) {
  return {{"workspace", task.workspace.string()}, {"prompt_file", task.prompt_file.string()},
          {"spec_file", task.spec_file.string()}, {"case_id", task.case_id},
          {"model", config.model.value_or("")},   {"device", task.device}};
}

namespace {

class ReplayAgent final : public Agent {
 public:
  explicit ReplayAgent(AgentConfig config) : config_(std::move(config)) {}
  std::string name() const override { return "replay"; }
  std::optional<std::string> model() const override { return std::nullopt; }
  const std::vector<std::string>& artifacts() const override { return artifacts_; }
  std::filesystem::path workdir(const AgentTask& task) const override { return task.workspace; }

  // Looks for <dir>/<level>/<N>_<Name>/model_new.py, then <dir>/<level>_<N>_<Name>.py.
  std::expected<AgentLaunch, GenerationFailure> prepare(const AgentTask& task) const override {
    std::filesystem::path nested = config_.replay_dir / task.level / task.stem / "model_new.py";
    std::filesystem::path flat = config_.replay_dir / (task.level + "_" + task.stem + ".py");
    std::filesystem::path source = std::filesystem::exists(nested) ? nested : flat;
    if (!std::filesystem::exists(source)) {
      return std::unexpected(GenerationFailure{
          GenerationOutcome::kMissingArtifact,
          fmt::format("no stored candidate: neither {} nor {} exists", nested.string(), flat.string())});
    }
    if (auto ok = util::copy_regular_file(source, task.workspace / artifacts_[0]); !ok) {
      return std::unexpected(GenerationFailure{GenerationOutcome::kMissingArtifact, ok.error()});
    }
    return AgentLaunch{};
  }

 private:
  AgentConfig config_;
  std::vector<std::string> artifacts_{"model_new.py"};
};

// `reference`: the baseline. Its candidate is the problem itself, whose
// Model the verifier runs in the candidate's place (an A/A run, the
// instrument's calibration): no kernel, never a solve.
class ReferenceAgent final : public Agent {
 public:
  std::string name() const override { return "reference"; }
  std::optional<std::string> model() const override { return std::nullopt; }
  const std::vector<std::string>& artifacts() const override { return artifacts_; }
  std::filesystem::path workdir(const AgentTask& task) const override { return task.workspace; }
  bool baseline() const override { return true; }

  std::expected<AgentLaunch, GenerationFailure> prepare(const AgentTask& task) const override {
    if (auto ok =
            util::copy_regular_file(task.workspace / CasePaths::kTaskDesc, task.workspace / artifacts_[0]);
        !ok) {
      return std::unexpected(GenerationFailure{GenerationOutcome::kMissingArtifact, ok.error()});
    }
    return AgentLaunch{};
  }

 private:
  std::vector<std::string> artifacts_{"model_new.py"};
};

}  // namespace

std::filesystem::path CommandAgent::workdir(const AgentTask& task) const {
  if (config_.work_repo && config_.workdir == "{workspace}") return *config_.work_repo;
  return expand_template(config_.workdir, placeholders(task, config_));
}

std::filesystem::path CommandAgent::artifact_dir(const AgentTask& task) const {
  return config_.work_repo ? task.workspace : workdir(task);
}

std::expected<std::vector<std::string>, GenerationFailure> CommandAgent::command(
    const AgentTask&, const std::map<std::string, std::string>& values) const {
  std::vector<std::string> argv;
  for (const std::string& arg : config_.argv) argv.push_back(expand_template(arg, values));
  return argv;
}

std::expected<AgentLaunch, GenerationFailure> CommandAgent::prepare(const AgentTask& task) const {
  auto values = placeholders(task, config_);
  util::ProcessSpec spec;
  auto argv = command(task, values);
  if (!argv) return std::unexpected(argv.error());
  spec.argv = std::move(*argv);
  spec.cwd = workdir(task);
  if (auto ok = util::make_dirs(spec.cwd); !ok) {
    return std::unexpected(GenerationFailure{GenerationOutcome::kLaunchFailed, ok.error()});
  }
  for (const auto& [key, value] : profile_env()) spec.env[key] = value;
  for (const auto& [key, value] : config_.env) spec.env[key] = expand_template(value, values);
  spec.env["KGYM_CASE_ID"] = task.case_id;
  spec.env["KGYM_WORKSPACE"] = task.workspace.string();
  spec.env["KGYM_PROMPT_FILE"] = task.prompt_file.string();
  spec.env["KGYM_ROUND"] = std::to_string(task.round);
  if (!task.device.empty()) spec.env["KGYM_DEVICE"] = task.device;
  if (config_.work_repo) {
    spec.env["KGYM_WORK_REPO"] = config_.work_repo->string();
    // PyPTO picks its NPU from this variable.
    if (!task.device.empty()) spec.env["TILE_FWK_DEVICE_ID"] = task.device;
  }
  spec.log_file = CasePaths{task.case_dir}.agent_log();
  return AgentLaunch{spec, config_.timeout};
}

std::unique_ptr<Agent> make_agent(const AgentConfig& config) {
  if (config.kind == "command") return std::make_unique<CommandAgent>(config);
  if (config.kind == "reference") return std::make_unique<ReferenceAgent>();
  if (auto profile = make_profile_agent(config)) return profile;
  return std::make_unique<ReplayAgent>(config);
}

std::expected<std::filesystem::path, GenerationFailure> collect_artifacts(
    const Agent& agent, const std::filesystem::path& workdir, const std::filesystem::path& candidate_dir) {
  if (auto ok = util::make_dirs(candidate_dir); !ok) {
    return std::unexpected(GenerationFailure{GenerationOutcome::kMissingArtifact, ok.error()});
  }
  for (const std::string& artifact : agent.artifacts()) {
    std::filesystem::path to = candidate_dir / std::filesystem::path(artifact).filename();
    if (auto ok = util::copy_file_beneath(workdir, artifact, to, kMaxArtifactBytes); !ok) {
      return std::unexpected(GenerationFailure{GenerationOutcome::kMissingArtifact,
                                               fmt::format("artifact {} missing: {}", artifact, ok.error())});
    }
    std::error_code ec;
    if (std::filesystem::file_size(to, ec) == 0) {
      return std::unexpected(GenerationFailure{GenerationOutcome::kMissingArtifact,
                                               fmt::format("artifact {} is empty", artifact)});
    }
  }
  return candidate_dir / std::filesystem::path(agent.artifacts().front()).filename();
}

}  // namespace kgym::agent
