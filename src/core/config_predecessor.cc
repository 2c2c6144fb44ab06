#include "core/config_predecessor.h"

#include <array>
#include <utility>

#include <fmt/format.h>

namespace kgym::config_detail {

namespace {

// (pypto-gym's key, what kgym has instead).
constexpr std::array<std::pair<std::string_view, std::string_view>, 25> kKeys = {{
    {"dry_run", "kgym checks the whole config before any work; `kgym cases --config FILE` checks it and lists the cases"},
    {"log_level", "kgym has no log level: each case keeps verify.log and agent.log, the run events.jsonl"},
    {"limit", "select a range in `cases` instead, e.g. cases: \"level1=1:20\""},
    {"output.base_dir", "in kgym it is output.root_dir, under which each run gets output.run_name (default: a timestamp)"},
    {"pypto", "kgym's `agent` section runs the agent (agent.kind: opencode), `workflow` its stages"},
    {"pypto.repo_root", "in kgym it is agent.work_repo (the PyPTO work repository each case gets a copy of)"},
    {"pypto.opencode_bin", "in kgym it is agent.binary (with agent.kind: opencode)"},
    {"pypto.opencode_model", "in kgym it is agent.model (with agent.kind: opencode)"},
    {"pypto.agent", "in kgym it is agent.opencode_agent"},
    {"pypto.timeout_sec", "in kgym it is agent.timeout_sec"},
    {"pypto.skip_pypto_gen", "in kgym: agent.kind: replay with agent.dir, which verifies stored candidates without generating"},
    {"pypto.force_regen", "kgym has no such key: a new run always generates; `kgym run --resume DIR --force` regenerates the unfinished cases"},
    {"pypto.incomplete_workflow_retry", "the nearest in kgym is workflow.max_attempts (runs of one stage of a gated workflow, re-prompted with what failed)"},
    {"pypto.workdir_root", "kgym has no such key: with agent.work_repo each case's workspace is <work_repo>/custom/<level>/<N>_<Name>/"},
    {"pypto.output_format", "kgym has no such key: it reads opencode's JSON event stream itself for tokens, cost and tool calls"},
    {"verifier.framework", "kgym has no such key: the reference is always a torch Model"},
    {"verifier.verify_timeout", "in kgym it is verifier.timeout_sec (verifier.call_timeout_sec bounds each worker request)"},
    {"verifier.verify_rtol", "in kgym it is verifier.tolerances.<dtype>.rtol, e.g. tolerances: {float32: {rtol: 1.0e-3}}"},
    {"verifier.verify_atol", "in kgym it is verifier.tolerances.<dtype>.atol, e.g. tolerances: {float32: {atol: 1.0e-3}}"},
    {"verifier.verifier_mode", "kgym has no such key: its verifier is always its own (static and runtime anti-cheat, correctness, timing); an LLM review can be a workflow gate"},
    {"verifier.validator_agent", "kgym has no such key: no agent takes part in verification (verifier.verifier_mode's note)"},
    {"verifier.skill_timeout_sec", "kgym has no such key: no agent takes part in verification"},
    {"verifier.skill_retry", "kgym has no such key: no agent takes part in verification"},
    {"verifier.skill_retry_interval_sec", "kgym has no such key: no agent takes part in verification"},
    {"verifier.keep_artifacts", "kgym has no such key: a case keeps its verify.log and candidate; a failed `kgym verify` keeps its scratch directory"},
}};

}  // namespace

std::optional<std::string> predecessor_key(std::string_view path) {
  for (const auto& [key, instead] : kKeys) {
    if (key == path) return fmt::format("pypto-gym's key; {} (docs/migrating.md)", instead);
  }
  return std::nullopt;
}

}  // namespace kgym::config_detail
