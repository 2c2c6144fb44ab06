#pragma once
// Readers for the sections of the configuration, shared by config*.cc.
// Each fills its part of Config from the document and records every
// problem in the reader; what it could not read keeps its default.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.h"
#include "core/config.h"
#include "core/config_reader.h"

namespace kgym::config_detail {

// `agent:`; needs nothing else of the config.
// `verifier_mode` is the verifier's (read first): agent.feedback.until
// fast_p needs a speedup, which only performance mode measures.
void read_agent(ConfigReader& reader, const Entry& at, AgentConfig& agent, std::string_view verifier_mode);

// `workflow:`: stages, their prompt files (which must exist) and gates.
void read_workflow(ConfigReader& reader, const Entry& at, WorkflowConfig& workflow);

// `sandbox:`.
void read_sandbox(ConfigReader& reader, const Entry& at, SandboxConfig& sandbox);

// `verifier:`, with tolerances merged over default_tolerance().
void read_verifier(ConfigReader& reader, const Entry& at, VerifierConfig& verifier);

// `devices:` for `backend`: "all", or per device a CPU core list ("0-3,5")
// on cpu, a device index on cuda/npu. Devices may not overlap.
void read_devices(ConfigReader& reader, const Entry& at, const Backend& backend,
                  std::vector<std::string>& devices);

// `build:`.
void read_build(ConfigReader& reader, const Entry& at, BuildConfig& build);

// `executor:` (kind, and slurm's keys with kind slurm).
void read_executor(ConfigReader& reader, const Entry& at, ExecutorConfig& executor);

// Dtype names accepted under verifier.tolerances (torch names without the
// "torch." prefix).
std::span<const std::string_view> known_dtypes();

}  // namespace kgym::config_detail
