#pragma once
// Verification of one candidate against one problem (ARCHITECTURE.md "Trust
// model" 2-4): the reference and the candidate run in two separate Python
// worker processes; the parent (this code) generates the per-trial seeds,
// relays the reference's inputs to the candidate, receives every output and
// compares them itself; in performance mode it times both sides with the
// same method. Every outcome is a CaseResult, never an exception.
#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/result.h"
#include "worker/zygote.h"

namespace kgym::verify {

// The stages of a request, one per request.
enum class VerifyStage {
  // `kgym verify`: the candidate built first, in its own scratch dir, then
  // verified.
  kBuildThenVerify,
  // The build alone (a run's build stage, `kgym build`): the candidate
  // imported once, boxed and with no device, every extension it builds
  // kept in scratch_dir/prebuilt; pass when it built.
  kBuild,
  // A run's verification: the candidate's workers load the build stage's
  // output (`prebuilt`) and never build.
  kVerifyPrebuilt,
  // No device of the backend here, but an interpreter that can build for it
  // (a CUDA build of torch with nvcc): the candidate is checked statically
  // and built, and the verification ends as device_unavailable (`no_device`).
  kBuildWithoutDevice,
};

// Whether the request stops after the build (kBuild, kBuildWithoutDevice).
inline bool builds_only(VerifyStage stage) {
  return stage == VerifyStage::kBuild || stage == VerifyStage::kBuildWithoutDevice;
}

struct VerifyRequest {
  std::string case_id;                // for the result; may be "" for ad-hoc use
  std::filesystem::path problem;      // the reference problem file
  std::filesystem::path candidate;    // the candidate file (defines ModelNew)
  std::filesystem::path scratch_dir;  // writable, private to this verification
  std::string python;                 // resolved interpreter
  VerifierConfig config;
  std::map<std::string, long long> overrides;  // the user's and problem.size's, merged
  // What problem.size chose (recorded in result.json's problem.sizes); the
  // chosen sizes are already in `overrides`.
  std::optional<ProblemSizes> sizes;
  // Set when the sizes are still to be chosen (`kgym verify` with
  // problem.size auto): the reference worker solves them for this budget as
  // it loads the problem, and every later load uses them.
  std::optional<ProblemSize> solve_sizes;
  std::string precision = "as_written";  // problem.precision
  std::string device = "all";            // cpu: core list ("0-3", "all")
  std::uint64_t run_seed = 0;            // trial seeds are derived from it
  // The candidate worker's OS sandbox (worker/candidate_sandbox.h) and the
  // directories it must not see (the dataset, the runs).
  SandboxConfig sandbox;
  std::vector<std::filesystem::path> sandbox_hidden;
  // The static anti-cheat gate (verify/static_gate.h). Not part of the JSON
  // form: only tests of the worker pipeline, whose candidates have no
  // kernel on purpose, turn it off.
  bool static_checks = true;
  // The runtime op trace (verify/runtime_checks.h). Not part of the JSON
  // form: only tests of the worker pipeline, whose candidates compute with
  // torch ops on purpose, turn it off; the other runtime checks stay on.
  bool op_trace = true;
  // Timing-fidelity checks (`kgym verify --candidate-is-reference`): the
  // candidate file is a problem file whose Model runs in the candidate's
  // place in a second reference-role worker (A/A when it is the problem
  // itself; a baseline run's candidate, agent.kind: reference). No static
  // checks; the result is marked `baseline`.
  bool candidate_is_reference = false;
  // The problem file is not the dataset's own but came with untrusted data
  // (a reproduction bundle): the reference workers then run as the
  // candidate's uid, without capabilities, in PID and network namespaces
  // (kgym-box under unshare). Not part of the JSON form.
  bool untrusted_problem = false;
  // `kgym-check` in an agent's box (agent.self_check, docs/agents.md "A
  // check in the box"): correctness only, one trial on get_inputs() and one
  // on signed normal values, no held-out shape. Never a verdict of the run.
  bool self_check = false;
  // What the request does about the candidate's build (docs/build.md).
  VerifyStage stage = VerifyStage::kBuildThenVerify;
  // kVerifyPrebuilt: the build stage's output, which the candidate's
  // workers load from.
  std::filesystem::path prebuilt;
  // kBuildWithoutDevice: why there is no device (`kgym verify` decides it;
  // not part of the JSON form).
  std::string no_device;
  // The problem's init inputs as plain values (the probe's init_values):
  // the build stage builds ModelNew with them, so that what its __init__
  // builds is built there too. Unset: `kgym verify` probes for them when
  // the candidate may build outside its module level.
  std::optional<nlohmann::json> init_inputs;
  // Where the precompiled headers of torch's extension headers are kept
  // (null: builds without them).
  std::optional<std::filesystem::path> pch_root;
  // Their directory for this torch and compiler, when the caller found it
  // already (a run, once); else the build asks for it under pch_root.
  std::optional<std::filesystem::path> pch_dir;
  // The device's warm worker parents (worker/warm_pool.h), when the run
  // keeps them; without them (or when they fail) workers start cold.
  std::optional<worker::WarmEndpoints> warm;
  // What the verification is doing, for `kgym verify`'s status line on a
  // terminal: each line verify.log gets, as it gets it, and during the
  // timing one per batch ("timing: warming up, batch 3 ..."), which the log
  // does not hold. Not part of the JSON form; called on the verifying
  // thread, outside the timed batches.
  std::function<void(const std::string&)> on_progress;
};

// JSON form of the request (the scheduler writes it for `kgym verify
// --request FILE`). Missing optional keys take the defaults;
// verify_request_from_json throws nlohmann::json::exception when "problem"
// or "candidate" is missing or a value has the wrong type.
nlohmann::json to_json(const VerifyRequest& r);
VerifyRequest verify_request_from_json(const nlohmann::json& j);

// Runs the verification; writes worker logs to scratch_dir/verify.log
// (events of the parent, then each worker's stdout/stderr). Trials run with
// seeds derived from run_seed (at least 3 trials; recorded in
// correctness.seeds). Blocks for at most config.timeout plus a few seconds
// of worker shutdown.
CaseResult verify_candidate(const VerifyRequest& req);

// The precompiled torch/extension.h (docs/build.md "Faster cold builds"):
// the directory of its variants for `python`'s torch and compiler under
// `root`; with `wanted` (a build's manifest.json) the variants its builds
// lacked are compiled first (`built`: their flag sets, in JSON). Runs the
// worker's trusted `pch` command under the root's lock, until `deadline`.
struct PrecompiledHeaders {
  std::filesystem::path dir;
  std::vector<std::string> built;
  double built_s = 0;
};
std::expected<PrecompiledHeaders, std::string> precompiled_headers(
    const std::string& python, const std::filesystem::path& worker_script, const std::filesystem::path& root,
    const std::filesystem::path& wanted, std::chrono::steady_clock::time_point deadline);

}  // namespace kgym::verify
