#pragma once
// Scanning what an agent did for attempts to game the grader
// (docs/anti-cheat.md "Transcripts"). A transcript is first read into the
// agent's actions (shell commands, file reads, writes and edits, listings,
// searches, web fetches), whatever CLI printed it; the rules then look at
// the actions only. An honest session, which works in its workspace, reads
// its SPEC.md and task_desc.py, writes its kernel and runs Python, raises
// nothing.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace kgym::agent {

// One thing the agent did.
struct AgentAction {
  enum class Kind { kShell, kRead, kWrite, kEdit, kList, kSearch, kFetch };
  Kind kind = Kind::kShell;
  std::string target;   // the command, path, pattern or URL
  std::string content;  // what a write or edit put into the file ("" otherwise)
  int line = 0;         // 1-based line of the transcript the action is on
  // A line the agent printed (a command agent's output), not a call the
  // CLI recorded: only its first word is read as a program.
  bool printed = false;
};

// The transcript formats kgym reads (docs/agents.md).
enum class TranscriptFormat {
  kOpencode,        // `opencode run --format json` events, one per line
  kOpencodeExport,  // `opencode export SESSION`: one JSON document
  kClaude,          // `claude -p --output-format stream-json`
  kCodex,           // `codex exec --json`
  kText,            // a command agent's output, or a workflow stage's log
};

std::vector<AgentAction> read_actions(std::string_view text, TranscriptFormat format);

// What the rules compare paths with. Paths are the host's; `workspace` is
// where the agent works (relative paths in its actions are relative to it).
struct ScanContext {
  std::filesystem::path workspace;
  std::filesystem::path home;          // what ~ means to the agent
  std::string case_stem;               // "19_ReLU": the problem file is <stem>.py
  std::vector<std::string> artifacts;  // the candidate's files, relative to the workspace
  // Shown to the agent on purpose: its private home, sandbox.agent_read_only,
  // a work repository. Reading there is never flagged.
  std::vector<std::filesystem::path> allowed;
  // What it must not look into: bench_dir, the runs' root, the hidden
  // trees, kgym's binary and its tree.
  std::vector<std::filesystem::path> off_limits;
};

// Every rule on every action; at most one flag per rule and action.
std::vector<TranscriptFlag> scan_actions(const std::vector<AgentAction>& actions, const ScanContext& context,
                                         const std::string& file);

// The rule ids, in the order docs/anti-cheat.md lists them.
const std::vector<std::string>& transcript_rules();

}  // namespace kgym::agent
