#pragma once
// The checks of a workflow stage that the harness makes itself, after the
// stage's agent run, in the agent's work dir (docs/workflows.md). Each gate
// gives one GateResult; a failed one says what is wrong so the agent can be
// re-prompted with it.
//
// A command gate runs a program the agent may have written, so it is never
// run here: StageChecks hands its ProcessSpec to the caller, which starts it
// in the agent's sandbox through the ProcessRunner and its one poll loop,
// and passes the exit back. The file gates are read in-process.
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/config.h"
#include "core/result.h"
#include "util/process_runner.h"

namespace kgym::run {

struct GateContext {
  std::filesystem::path workdir;                   // files are relative to this; commands run here
  std::filesystem::path problem;                   // the case's problem file (static checks read its dtypes)
  const Backend* backend = &backend_named("cpu");  // verifier.backend by its execution
  std::map<std::string, std::string> values;       // {placeholders} for command argv
};

// One gate that is not a command (a command gate gives a failed result
// saying it must run as a child).
GateResult check_file_gate(const GateConfig& gate, const GateContext& context);

// "headings PLAN.md", "command sh check.sh".
std::string gate_name(const GateConfig& gate);

// A command gate as a child: its expanded argv, run in the work dir, its
// output to `log_file` (outside the work dir, so only what the command
// prints lands there). The caller adds the sandbox and the deadline.
struct GateCommand {
  util::ProcessSpec spec;
  std::chrono::seconds timeout{120};
};
GateCommand gate_command(const GateConfig& gate, const GateContext& context,
                         const std::filesystem::path& log_file);

// The result of a command gate from how it ended and what it printed.
GateResult command_gate_result(const GateConfig& gate, const util::ProcessExit& exit, bool timed_out,
                               const std::string& output);

// A stage's checks in order: its artifacts (each must exist and be
// non-empty), then its gates. next() checks files until it reaches a
// command gate, which it returns for the caller to run; command_ended()
// records that command's result. Done when next() returns nullopt.
class StageChecks {
 public:
  StageChecks(const StageConfig& stage, GateContext context, std::filesystem::path log_dir);

  std::optional<GateCommand> next();
  void command_ended(const util::ProcessExit& exit, bool timed_out);

  const std::vector<GateResult>& results() const { return results_; }

 private:
  std::vector<GateConfig> checks_;
  GateContext context_;
  std::filesystem::path log_dir_;
  std::size_t next_ = 0;
  std::optional<std::filesystem::path> running_log_;  // of the command gate in flight
  std::vector<GateResult> results_;
};

// The re-prompt: the stage's prompt followed by the checks that failed.
std::string reprompt_text(const std::string& prompt, const std::vector<GateResult>& gates, int attempt,
                          int max_attempts);

}  // namespace kgym::run
