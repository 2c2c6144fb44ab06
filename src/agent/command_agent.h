#pragma once
// Internal to agent/: the `command` agent (any program run as a child) and
// the base of the CLI profiles, which only choose the argv and read their
// transcript.
#include <map>
#include <string>

#include "agent/agent.h"
#include "core/case_paths.h"

namespace kgym::agent {

class CommandAgent : public Agent {
 public:
  explicit CommandAgent(AgentConfig config) : config_(std::move(config)) {}
  std::string name() const override { return "command"; }
  std::optional<std::string> model() const override { return config_.model; }
  const std::vector<std::string>& artifacts() const override { return config_.artifacts; }
  std::filesystem::path workdir(const AgentTask& task) const override;
  std::filesystem::path artifact_dir(const AgentTask& task) const override;
  std::expected<AgentLaunch, GenerationFailure> prepare(const AgentTask& task) const override;
  // Its output, as kgym's relay wrote it outside the box: agent.log.
  std::vector<TranscriptSource> transcripts(const std::filesystem::path& case_dir) const override {
    return {{std::string(CasePaths::kAgentLog), TranscriptFormat::kText, CasePaths{case_dir}.agent_log()}};
  }

 protected:
  // The command line for `task`; `values` are its placeholders.
  virtual std::expected<std::vector<std::string>, GenerationFailure> command(
      const AgentTask& task, const std::map<std::string, std::string>& values) const;
  // Environment the profile itself needs; agent.env may override it.
  virtual std::map<std::string, std::string> profile_env() const { return {}; }
  const AgentConfig& config() const { return config_; }

 private:
  AgentConfig config_;
};

std::unique_ptr<Agent> make_profile_agent(const AgentConfig& config);

}  // namespace kgym::agent
