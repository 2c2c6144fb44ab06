#pragma once
// Finding the Python interpreter that runs the workers: it must import torch.
#include <chrono>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/config.h"

namespace kgym::worker {

// The environment ("NAME=VALUE") every worker interpreter starts with, warm
// parents included (a zygote's forks keep what it loaded with): no bytecode
// files, unbuffered logs, and OpenMP threads that sleep when their parallel
// region ends instead of spinning. A spinning thread keeps its core busy
// after the reply, while the other side is timed on the shared cores; both
// sides wait alike (docs/anti-cheat.md "The lease").
std::vector<std::string> worker_base_env();

struct PythonEnv {
  std::string python;         // the interpreter as given or found on PATH
  std::string torch_version;  // torch.__version__
  std::string torch_build;    // "cpu", "cuda 13.2", "rocm 6.2", "npu"
};

// The configured interpreter if any (it must import torch), else the first
// of `python3` on PATH and /usr/bin/python3 that imports torch. The error
// names every interpreter tried, why each failed, and how to set
// `verifier.python` / `--python`. Each probe is bounded by `per_try`.
std::expected<PythonEnv, std::string> resolve_python(const std::optional<std::string>& configured,
                                                     std::chrono::seconds per_try = std::chrono::seconds(60));

// Whether `python` can run kernels on `backend`: always for "cpu"; for
// "cuda" torch.cuda.is_available(), for "npu" torch_npu imports and
// torch.npu.is_available(); on a host interpreter, its module (triton,
// pypto) imports. The error says what is missing and what to change
// (backend or interpreter). Bounded by `timeout`.
std::expected<void, std::string> check_backend(const std::string& python, const Backend& backend,
                                               std::chrono::seconds timeout = std::chrono::seconds(120));

// The execution a verification runs, checked like check_backend: the
// configured one, or for `execution: auto` the device when `python` can use
// it, else the backend's host interpreter when `python` has that. `note`
// says, when auto chose the interpreter, why; the error names both checks.
struct ResolvedExecution {
  std::string execution;
  std::string note;
};
std::expected<ResolvedExecution, std::string> resolve_execution(
    const std::string& python, const VerifierConfig& verifier,
    std::chrono::seconds timeout = std::chrono::seconds(120));

}  // namespace kgym::worker
