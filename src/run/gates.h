#pragma once
// The checks of a workflow stage that the harness makes itself, after the
// stage's agent run, in the agent's work dir (docs/workflows.md). Each gate
// gives one GateResult; a failed one says what is wrong so the agent can be
// re-prompted with it.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/result.h"

namespace kgym::run {

struct GateContext {
  std::filesystem::path workdir;              // files are relative to this; commands run here
  std::filesystem::path problem;              // the case's problem file (static checks read its dtypes)
  std::string backend;                        // verifier.backend
  std::map<std::string, std::string> values;  // {placeholders} for command argv
};

// The stage's artifacts (each must exist and be non-empty) and then its
// gates, in order. Command gates run to completion (bounded by their
// timeout) before this returns.
std::vector<GateResult> check_stage(const StageConfig& stage, const GateContext& context);

// One gate.
GateResult check_gate(const GateConfig& gate, const GateContext& context);

// The re-prompt: the stage's prompt followed by the checks that failed.
std::string reprompt_text(const std::string& prompt, const std::vector<GateResult>& gates, int attempt,
                          int max_attempts);

}  // namespace kgym::run
