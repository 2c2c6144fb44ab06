#pragma once
// Finding the Python interpreter that runs the workers: it must import torch.
#include <chrono>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.h"

namespace kgym::verify {

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

}  // namespace kgym::verify
