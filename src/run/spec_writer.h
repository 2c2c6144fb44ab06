#pragma once
// What the agent sees: SPEC.md (the contract of the case, from a probe run of
// the reference) and prompt.md (the instruction pointing at it).
#include <string>

#include "core/case_set.h"
#include "core/config.h"
#include "worker/probe.h"

namespace kgym::run {

std::string render_spec(const Case& c, const Config& config, const worker::ProbeResult& probe);
std::string render_prompt(const Case& c, const Config& config);

}  // namespace kgym::run
