#include "worker/python_env.h"

#include <vector>

#include <fmt/format.h>

#include "core/backend.h"
#include "worker/child_process.h"

namespace kgym::worker {

std::vector<std::string> worker_base_env() {
  return {"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "OMP_WAIT_POLICY=PASSIVE"};
}
namespace {

constexpr std::string_view kMarker = "KGYM_TORCH_VERSION=";

// "VERSION BUILD" of the interpreter's torch (the build as the worker's
// torch_build() names it).
std::expected<std::string, std::string> torch_version_of(const std::string& python,
                                                         std::chrono::seconds per_try) {
  auto run = run_captured(
      {python, "-c",
       fmt::format("import torch; v = torch.version; print('{}' + torch.__version__ + ' ' + ("
                   "'rocm ' + v.hip if getattr(v, 'hip', None) else 'cuda ' + v.cuda if getattr(v, 'cuda', None) "
                   "else 'npu' if hasattr(torch, 'npu') else 'cpu'))",
                   kMarker)},
      Clock::now() + per_try);
  if (!run) return std::unexpected(run.error());
  if (auto at = run->output.find(kMarker);
      !run->exit.signaled && run->exit.code == 0 && at != std::string::npos) {
    auto start = at + kMarker.size();
    auto end = run->output.find('\n', start);
    return run->output.substr(start, end == std::string::npos ? std::string::npos : end - start);
  }
  std::string last;
  for (std::size_t pos = 0; pos < run->output.size();) {
    auto end = run->output.find('\n', pos);
    std::string line = run->output.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (!line.empty()) last = line;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return std::unexpected(last.empty() ? run->exit.describe() : last);
}

// Prints kMarker + "yes" when the backend can run, else the reason. argv:
// the backend's name (torch.<name>) and the module that adds it to torch
// ("" when torch has it built in).
constexpr const char* kBackendProbe = R"(import importlib
import sys
import torch
backend, extension = sys.argv[1], sys.argv[2]
try:
    if extension:
        importlib.import_module(extension)
    ok = getattr(torch, backend).is_available()
    why = "" if ok else "torch.%s.is_available() is False" % backend
except Exception as exc:
    ok, why = False, "%s: %s" % (type(exc).__name__, exc)
print("KGYM_BACKEND=" + ("yes" if ok else why))
)";

// The same for a host interpreter: its module imports with the worker's
// environment (argv: the module, then NAME=VALUE items set first).
constexpr const char* kInterpreterProbe = R"(import importlib
import os
import sys
for item in sys.argv[2:]:
    name, _, value = item.partition("=")
    os.environ[name] = value
try:
    import torch
    importlib.import_module(sys.argv[1])
    ok, why = True, ""
except Exception as exc:
    ok, why = False, "%s: %s" % (type(exc).__name__, exc)
print("KGYM_BACKEND=" + ("yes" if ok else why))
)";

}  // namespace

std::expected<void, std::string> check_backend(const std::string& python, const Backend& info,
                                               std::chrono::seconds timeout) {
  if (info.always_available) return {};
  std::vector<std::string> argv{python, "-c", kBackendProbe, std::string(info.name),
                                std::string(info.torch_extension)};
  if (info.host_interpreter()) {
    argv = {python, "-c", kInterpreterProbe, std::string(info.interpreter_module)};
    for (std::string_view item : info.worker_env) argv.emplace_back(item);
  }
  auto run = run_captured(argv, Clock::now() + timeout);
  if (!run) return std::unexpected(run.error());
  constexpr std::string_view marker = "KGYM_BACKEND=";
  auto at = run->output.find(marker);
  std::string answer;
  if (at != std::string::npos) {
    auto start = at + marker.size();
    answer = run->output.substr(start, run->output.find('\n', start) - start);
  } else {
    answer = run->exit.describe();
  }
  if (answer == "yes") return {};
  if (info.host_interpreter()) {
    return std::unexpected(fmt::format(
        "backend {} on its host interpreter needs the {} package, which {} cannot import ({}); set "
        "verifier.python to an interpreter that has it (./dev.sh torch2 makes one with triton and pypto)",
        info.name, info.interpreter_module, python, answer));
  }
  return std::unexpected(
      fmt::format("backend {} is not available to {} ({}); use backend cpu, or set "
                  "verifier.python to an interpreter with {} support",
                  info.name, python, answer, info.runtime_module));
}

std::expected<ResolvedExecution, std::string> resolve_execution(const std::string& python,
                                                                const VerifierConfig& verifier,
                                                                std::chrono::seconds timeout) {
  const Backend& device = backend_named(verifier.backend, verifier.execution);
  auto usable = check_backend(python, device, timeout);
  if (usable) return ResolvedExecution{verifier.execution, ""};
  const Backend* host =
      verifier.execution_auto ? find_backend(verifier.backend, "host_interpreter") : nullptr;
  if (!host) return std::unexpected(usable.error());
  if (auto interpreted = check_backend(python, *host, timeout); !interpreted) {
    return std::unexpected(fmt::format("verifier.execution is auto and neither works: {}; and {}",
                                       usable.error(), interpreted.error()));
  }
  return ResolvedExecution{std::string(host->execution),
                           fmt::format("no {} device for {}: its kernels are checked on the {} host "
                                       "interpreter instead (verifier.execution: auto; correctness only)",
                                       verifier.backend, python, host->interpreter_module)};
}

std::expected<PythonEnv, std::string> resolve_python(const std::optional<std::string>& configured,
                                                     std::chrono::seconds per_try) {
  std::vector<std::string> candidates = configured ? std::vector<std::string>{*configured}
                                                   : std::vector<std::string>{"python3", "/usr/bin/python3"};
  std::vector<std::string> failures;
  for (const auto& python : candidates) {
    auto version = torch_version_of(python, per_try);
    if (version) {
      auto space = version->find(' ');
      return PythonEnv{python, version->substr(0, space),
                       space == std::string::npos ? "" : version->substr(space + 1)};
    }
    failures.push_back(fmt::format("{} ({})", python, version.error()));
  }
  if (configured) {
    return std::unexpected(fmt::format(
        "the configured Python cannot import torch: {}; set verifier.python (or --python) to an interpreter "
        "where `import torch` works",
        failures.front()));
  }
  return std::unexpected(
      fmt::format("no Python with torch found; tried {}; set verifier.python (or --python) to an interpreter "
                  "where `import torch` works",
                  fmt::join(failures, ", ")));
}

}  // namespace kgym::worker
