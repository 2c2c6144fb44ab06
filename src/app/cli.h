#pragma once
// kgym's command line: every subcommand on one CLI11 app, parsed and run.
// main.cc is this with kgym's own verification; the test binary
// kgym-scripted (tests/scripted/) is this with a scripted one, so that the
// end-to-end tests whose subject is not verification get verdicts in
// seconds while everything else they run is kgym's own code.
#include <functional>

#include "core/result.h"
#include "verify/verifier.h"

namespace kgym::app {

// What `kgym verify` and `kgym build` call to decide a request.
using VerifyFn = std::function<CaseResult(const verify::VerifyRequest&)>;

struct CliSeams {
  VerifyFn verify = verify::verify_candidate;
};

int run_cli(int argc, char** argv, const CliSeams& seams = {});

}  // namespace kgym::app
