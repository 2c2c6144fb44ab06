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
// verification path: `base` (the verifier's defaults or --config, --device,
// --python) with only the case's data taken from the bundle
// (verify::bundle_request). Prints which case it is and every field of the
// bundle's request that was ignored. An error names the file, the entry
// and the rule.
std::expected<verify::OpenedBundle, std::string> open_bundle_to_verify(const std::string& file,
                                                                       const verify::VerifyRequest& base);

// Prints the comparison of `reproduced` with the recorded result (on
// stdout) and returns the exit code: 0 when they agree, 1 when not.
int compare_with_bundle(const verify::OpenedBundle& bundle, const CaseResult& reproduced);

}  // namespace kgym::app
