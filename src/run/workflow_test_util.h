#pragma once
// For the lifecycle and loop tests: a one-stage workflow ("develop") whose
// only gate is a command, with its prompt template written to `prompt`.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/config.h"

namespace kgym::run {

inline WorkflowConfig command_gate_workflow(const std::filesystem::path& prompt,
                                            std::vector<std::string> argv, std::string marker,
                                            std::chrono::seconds timeout, int max_attempts) {
  std::ofstream(prompt) << "Develop {case_id}\n";
  GateConfig gate;
  gate.kind = "command";
  gate.argv = std::move(argv);
  gate.marker = std::move(marker);
  gate.timeout = timeout;
  StageConfig stage;
  stage.name = "develop";
  stage.prompt = prompt;
  stage.gates = {gate};
  WorkflowConfig workflow;
  workflow.stages = {stage};
  workflow.max_attempts = max_attempts;
  return workflow;
}

}  // namespace kgym::run
