#pragma once
// The agent seam: what produces a candidate for one case. An agent either
// finishes at once (replay copies a stored file) or asks the scheduler to run
// one child process (command); in both cases the harness then collects the
// declared artifacts from the agent's work dir itself.
#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/transcript.h"
#include "agent/transcript_scan.h"
#include "core/config.h"
#include "core/result.h"
#include "util/process_runner.h"

namespace kgym::agent {

struct AgentTask {
  std::string case_id;              // "level1/19_ReLU"
  std::string level;                // "level1"
  std::string stem;                 // "19_ReLU"
  std::filesystem::path case_dir;   // RUN_DIR/cases/<level>/<stem>
  std::filesystem::path workspace;  // the agent's own work dir (seeded with SPEC.md, prompt.md, task_desc.py)
  std::filesystem::path prompt_file;
  std::filesystem::path spec_file;
  std::string device;  // leased device, "" when the agent holds none
  // The agent runs in kgym's box (sandbox.mode is not none), which allows
  // no namespaces of its own: a CLI's own sandbox is then turned off.
  bool in_kgym_box = false;
  // The refinement round (agent.feedback), from 1. Above 1 the CLI profiles
  // continue their session of the previous round where the CLI can; a
  // command agent sees KGYM_ROUND.
  int round = 1;
  // Where this run's output starts in agent.log (read_usage reads from
  // there: earlier rounds wrote before it).
  std::uintmax_t log_from = 0;
};

// What the scheduler must do to generate: nothing more (process empty) or run
// `process` with a deadline of `timeout`.
struct AgentLaunch {
  std::optional<util::ProcessSpec> process;
  std::chrono::seconds timeout{0};
};

struct GenerationFailure {
  GenerationOutcome outcome;
  std::string reason;
};

// A file the transcript scan reads (docs/anti-cheat.md "Transcripts").
struct TranscriptSource {
  std::string name;  // as the flags name it, relative to the case dir
  TranscriptFormat format;
  std::filesystem::path file;
  bool json_lines = false;  // JSON lines among other output: only they are read
};

class Agent {
 public:
  virtual ~Agent() = default;
  virtual std::string name() const = 0;  // "replay", "command"
  virtual std::optional<std::string> model() const = 0;
  // Artifact paths relative to the work dir; the first is the candidate.
  virtual const std::vector<std::string>& artifacts() const = 0;
  // The agent's cwd for a task (its work dir unless the config says otherwise).
  virtual std::filesystem::path workdir(const AgentTask& task) const = 0;
  virtual std::expected<AgentLaunch, GenerationFailure> prepare(const AgentTask& task) const = 0;
  // Where the artifacts are looked up: the work dir, or the case's workspace
  // when the agent works in an external repository.
  virtual std::filesystem::path artifact_dir(const AgentTask& task) const { return workdir(task); }
  // A baseline's candidate is the problem's own Model (agent.kind:
  // reference): verified as an A/A run, marked `baseline`, never a solve.
  virtual bool baseline() const { return false; }
  // The CLI whose `--version` is recorded as provenance; nullopt for kinds
  // that have none (replay, command).
  virtual std::optional<std::string> binary() const { return std::nullopt; }
  // Host files and directories the agent's program needs inside the bwrap
  // box, as host path -> path in the box, shown read-only: the CLI itself
  // (for an npm install, its whole node_modules tree; it may live in a tree
  // the box hides) and the profile's own config and credential files
  // (docs/agents.md). `env` is the agent's environment in the box, its
  // private home's XDG directories included. Files that do not exist on the
  // host are left out.
  using BoxFiles = std::vector<std::pair<std::filesystem::path, std::filesystem::path>>;
  virtual BoxFiles box_files(const std::map<std::string, std::string>&) const { return {}; }
  // Called once after the case's last agent run: keeps the JSON transcript
  // (from agent.log) under <case_dir>/session/ and returns what it reports.
  // nullopt for kinds that print no known stream.
  virtual std::optional<Usage> read_usage(const AgentTask&) const { return std::nullopt; }
  // What the transcript scan reads after the case's last agent run, from
  // the case's dir; none for kinds that run no agent (replay, reference).
  virtual std::vector<TranscriptSource> transcripts(const std::filesystem::path&) const { return {}; }
};

std::unique_ptr<Agent> make_agent(const AgentConfig& config);

// The values of the {placeholders} (docs/config.md) for one task.
std::map<std::string, std::string> placeholders(const AgentTask& task, const AgentConfig& config);

// The most an artifact may hold: a candidate source's limit
// (verify/candidate_sources.h), checked before any byte is copied.
inline constexpr std::uintmax_t kMaxArtifactBytes = 1 << 20;

// Copies the declared artifacts from `workdir` into `candidate_dir`: regular
// files of at most kMaxArtifactBytes, reached without a symbolic link in any
// component of their path (util/beneath.h); anything else is a missing
// artifact. Returns the candidate file's new path.
std::expected<std::filesystem::path, GenerationFailure> collect_artifacts(
    const Agent& agent, const std::filesystem::path& workdir, const std::filesystem::path& candidate_dir);

}  // namespace kgym::agent
