#pragma once
// `kgym verify --bundle FILE` (docs/repro.md): the bundle opened for a
// verification on this machine, and the comparison of its result with the
// one the bundle recorded. Used by verify_command.cc only.
#include <expected>
#include <string>

#include "core/result.h"
#include "verify/repro_bundle.h"

namespace kgym::app {

// The bundle `file`, checked and extracted, its request ready for the usual
// verification path: `python` (--python) when given, else the interpreter is
// found as for any `kgym verify`. Prints what was changed for this machine.
// An error names the file, the entry and the rule.
std::expected<verify::OpenedBundle, std::string> open_bundle_to_verify(const std::string& file,
                                                                       const std::string& python);

// Prints the comparison of `reproduced` with the recorded result (on
// stdout) and returns the exit code: 0 when they agree, 1 when not.
int compare_with_bundle(const verify::OpenedBundle& bundle, const CaseResult& reproduced);

}  // namespace kgym::app
