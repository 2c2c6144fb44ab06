#pragma once
// What a verifier backend (`verifier.backend`: cpu, cuda, npu) means to each
// layer, in one place: the static rules ask it what counts as the
// candidate's own kernel, SPEC.md what to tell the agent, the scheduler and
// the verifier which variables select a device, the timing which clock it
// uses, the comparison its tolerance table. Adding a backend means adding
// one entry here (backend.cc); no layer compares backend names.
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"

namespace kgym {

enum class BackendId { kCpu, kCuda, kNpu };

// A Python decorator that makes a function the candidate's own kernel
// (`@triton.jit`: module "triton", name "jit").
struct KernelDecorator {
  std::string_view module;
  std::string_view name;
};

struct Backend {
  BackendId id = BackendId::kCpu;
  std::string_view name;  // as verifier.backend spells it
  // verifier.execution: "device" (the backend's own device) or
  // "host_interpreter" (its kernel language's interpreter on this host's
  // CPU: Triton for cuda, PyPTO for npu; docs/backends.md). Each pair is its
  // own entry of the table.
  std::string_view execution = "device";

  // Static rules (static_check/rules.cc). Sources built with load_inline
  // count as a kernel when they define a CUDA __global__ function
  // (`inline_needs_global`) or else any C++ function with statements;
  // `decorators` make a Python function a kernel too.
  bool inline_needs_global = false;
  std::vector<KernelDecorator> decorators;
  std::string_view no_inline_kernel;  // the finding when the load_inline sources hold none
  std::string_view no_kernel;         // the finding when nothing counts as a kernel

  // What SPEC.md tells the agent its kernel must be.
  std::string_view spec_rules;
  // How reference and candidate are timed (docs/anti-cheat.md "Timing", docs/backends.md).
  std::string_view timing_method;
  // Where its devices are: "all" of a CPU is its cores; CUDA and NPU devices
  // are indices. Device selection for the agent (agent.needs_device) and for
  // the verifier's workers.
  bool devices_are_cores = false;
  // Whether `problem.size` left unset means `auto`: KernelBench's sizes are
  // a GPU's, which a CPU runs out of memory or time on.
  bool sizes_automatically = false;
  // Where a Slurm task finds the devices it was granted (docs/cluster.md):
  // variables that list them as the task sees them, renumbered from 0.
  std::vector<std::string_view> granted_devices_env;
  std::vector<std::string_view> agent_device_env;
  std::vector<std::string_view> worker_device_env;
  // Runtime anti-cheat: glue ops of device runtimes (copies to and from the
  // device, streams) are allowed on top of the common glue.
  bool device_glue = false;
  // Warm workers fork from a parent; CUDA and NPU runtimes do not survive a
  // fork, so `warm_workers: auto` means on only where this is true.
  bool forks_workers = false;
  // Whether every interpreter with torch can run it; otherwise kgym checks
  // (verify/python_env) and names the module whose absence it found.
  bool always_available = false;
  std::string_view runtime_module;
  // The Python module that adds the backend to torch, imported before
  // torch.<name>.is_available() is asked ("" when torch has it built in).
  std::string_view torch_extension;
  // The torch build ("cuda 13.2") that builds this backend's candidates
  // without a device: `kgym verify` then builds and ends as
  // device_unavailable. "" when a device is needed to build.
  std::string_view builds_on_torch = "";

  // Host interpreters. The workers' tensors and timing path ("cpu"; "" =
  // `name`), the module the interpreter needs (the interpreter check imports
  // it), what the candidate's worker gets in its environment before it
  // imports anything, and whether load_inline sources can run at all (CUDA
  // C++ cannot without a GPU: such a candidate is device_unavailable).
  std::string_view worker_backend;
  std::string_view interpreter_module;
  std::vector<std::string_view> worker_env;
  // Ops the interpreter itself runs through the dispatcher when it hands
  // results back (Triton's rebinds storages: aten.set_), allowed in the op
  // trace beside the common glue.
  std::vector<std::string_view> interpreter_glue;
  bool runs_inline_kernels = true;
  // Whether the candidate's speed is measured (timed against the
  // reference); an interpreter's never is. `simulates` names the
  // performance model whose estimate is recorded instead ("" = none).
  bool measures_speed = true;
  std::string_view simulates;

  // The backend the workers are started with: `worker_backend` or `name`.
  std::string_view worker_name() const { return worker_backend.empty() ? name : worker_backend; }
  bool host_interpreter() const { return execution != "device"; }

  // The tolerance for comparing outputs of `dtype` when the config sets none.
  Tolerance default_tolerance(const std::string& dtype) const;
};

// Whether the problems are sized automatically: problem.size, or when unset
// the backend's default.
bool sizes_automatically(const ProblemSize& size, const Backend& backend);

// Every backend and execution, in the order the docs list them, and the
// backends' names.
std::span<const Backend> all_backends();
std::vector<std::string_view> backend_names();
// The backend named `name` run by `execution`; nullptr for a pair that is
// not one (the config reports it with the list of names).
const Backend* find_backend(std::string_view name, std::string_view execution = "device");
// The executions `name` has ("device" first).
std::vector<std::string_view> executions_of(std::string_view name);
// The backend of validated config values; cpu for anything else.
const Backend& backend_named(std::string_view name, std::string_view execution = "device");
// The backend a verifier config runs: verifier.backend by verifier.execution.
const Backend& backend_of(const VerifierConfig& verifier);

// The one tolerance lookup: the configured tolerance for `dtype`, else the
// backend's default table's (config.h's default_tolerance() on every
// backend today).
Tolerance tolerance_for(const std::map<std::string, Tolerance>& configured, const std::string& dtype,
                        const Backend& backend = backend_named("cpu"));

}  // namespace kgym
