#include "core/backend.h"

#include <array>

namespace kgym {
namespace {

// What SPEC.md tells the agent its kernel must be, per backend.
constexpr std::string_view kCpuRules =
    "CPU: the computation must run in your own C++ code built with\n"
    "`torch.utils.cpp_extension.load_inline` (OpenMP and SIMD are welcome: pass\n"
    "`extra_cflags=['-O3', '-fopenmp']`, `extra_ldflags=['-fopenmp']`). Torch's own operators may\n"
    "only allocate and reshape; calling them for the computation itself is not a kernel.";
constexpr std::string_view kCudaRules =
    "CUDA: the computation must run in your own CUDA kernels (`__global__` functions built with\n"
    "`torch.utils.cpp_extension.load_inline`, or Triton `@triton.jit` kernels).";
constexpr std::string_view kNpuRules =
    "NPU: the computation must run in your own kernels (PyPTO `pypto.jit`, or AscendC via "
    "torch_npu).";

// On the host, under the language's interpreter (docs/backends.md).
constexpr std::string_view kTritonHostRules =
    "CUDA checked without a GPU (verifier.execution: host_interpreter): the computation must run in\n"
    "your own Triton `@triton.jit` kernels, which run under Triton's interpreter (TRITON_INTERPRET=1)\n"
    "on the CPU. Inputs arrive as CPU tensors: allocate outputs like them (`torch.empty_like(x)`),\n"
    "never on `device='cuda'`. CUDA C++ (`load_inline`) cannot run here. A kernel's body may use\n"
    "only Triton (`tl.*`), its arguments and other `@triton.jit` functions. Correctness only: no\n"
    "speedup is measured.";
constexpr std::string_view kPyptoHostRules =
    "NPU checked without an NPU (verifier.execution: host_interpreter): the computation must run in\n"
    "your own PyPTO kernel (`@pypto.frontend.jit`, parameters typed `pypto.Tensor(shape, dtype)`,\n"
    "outputs written in place), which runs under PyPTO's host interpreter on CPU tensors. Torch may\n"
    "only allocate and reshape around it. Correctness only: PyPTO's cost model estimates the time\n"
    "(recorded as simulated, never as a speedup).";

const std::array<Backend, 5>& table() {
  static const std::array<Backend, 5> backends{
      Backend{
          .id = BackendId::kCpu,
          .name = "cpu",
          .no_inline_kernel = "the load_inline sources define no function with statements",
          .no_kernel = "no load_inline kernel is defined",
          .spec_rules = kCpuRules,
          .timing_method = "perf_counter_ns around a synchronous call",
          .devices_are_cores = true,
          .sizes_automatically = true,
          .forks_workers = true,
          .always_available = true,
          .runtime_module = "torch",
      },
      Backend{
          .id = BackendId::kCuda,
          .name = "cuda",
          .inline_needs_global = true,
          .decorators = {{"triton", "jit"}},
          .no_inline_kernel = "the load_inline sources define no __global__ kernel",
          .no_kernel = "no CUDA (load_inline) or Triton (@triton.jit) kernel is defined",
          .spec_rules = kCudaRules,
          .timing_method = "CUDA events, all streams synchronized",
          .granted_devices_env = {"CUDA_VISIBLE_DEVICES"},
          .agent_device_env = {"CUDA_VISIBLE_DEVICES"},
          .device_glue = true,
          .runtime_module = "CUDA",
          .builds_on_torch = "cuda ",
      },
      Backend{
          .id = BackendId::kNpu,
          .name = "npu",
          .decorators = {{"pypto", "jit"}, {"pypto.frontend", "jit"}},
          .no_inline_kernel = "the load_inline sources define no function with statements",
          .no_kernel = "no pypto.jit kernel is defined",
          .spec_rules = kNpuRules,
          .timing_method = "NPU events",
          .granted_devices_env = {"ASCEND_RT_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES"},
          // PyPTO kernels take their device from TILE_FWK_DEVICE_ID.
          .agent_device_env = {"TILE_FWK_DEVICE_ID"},
          .worker_device_env = {"TILE_FWK_DEVICE_ID"},
          .device_glue = true,
          .runtime_module = "torch_npu",
          .torch_extension = "torch_npu",
      },
      Backend{
          .id = BackendId::kCuda,
          .name = "cuda",
          .execution = "host_interpreter",
          .decorators = {{"triton", "jit"}},
          .no_inline_kernel = "CUDA C++ (load_inline) kernels need a GPU",
          .no_kernel = "no Triton (@triton.jit) kernel is defined",
          .spec_rules = kTritonHostRules,
          .timing_method = "none: Triton's interpreter on the host (correctness only)",
          .devices_are_cores = true,
          .sizes_automatically = true,
          .runtime_module = "triton",
          .worker_backend = "cpu",
          .interpreter_module = "triton",
          // Read when triton is imported: every @triton.jit kernel is then
          // an InterpretedFunction that runs on the CPU through numpy.
          .worker_env = {"TRITON_INTERPRET=1", "KGYM_HOST_INTERPRETER=triton"},
          .interpreter_glue = {"aten.set_"},
          .runs_inline_kernels = false,
          .measures_speed = false,
      },
      Backend{
          .id = BackendId::kNpu,
          .name = "npu",
          .execution = "host_interpreter",
          .decorators = {{"pypto", "jit"}, {"pypto.frontend", "jit"}},
          .no_inline_kernel = "AscendC (load_inline) kernels need an NPU",
          .no_kernel = "no PyPTO (@pypto.frontend.jit) kernel is defined",
          .spec_rules = kPyptoHostRules,
          .timing_method = "none: PyPTO's host interpreter (correctness only); its cost model's estimate",
          .devices_are_cores = true,
          .sizes_automatically = true,
          .runtime_module = "pypto",
          .worker_backend = "cpu",
          .interpreter_module = "pypto",
          // The candidate worker prepares PyPTO's interpreter before the
          // candidate is imported (boxed/kgym_worker_pypto.py).
          .worker_env = {"KGYM_HOST_INTERPRETER=pypto"},
          .runs_inline_kernels = false,
          .measures_speed = false,
          .simulates = "pypto cost model",
      },
  };
  return backends;
}

}  // namespace

Tolerance default_tolerance(const std::string& dtype) {
  // Tight enough that computing in a narrower type fails (float64 done in
  // float32 errs by ~6e-8 relative; float32 done in bfloat16 by ~4e-3), loose
  // enough for an honest kernel that reorders a long reduction.
  if (dtype == "float64" || dtype == "complex128") return {1e-8, 1e-8};
  if (dtype == "float32" || dtype == "complex64") return {1e-4, 1e-3};
  if (dtype == "float16") return {1e-2, 1e-2};
  if (dtype == "bfloat16") return {2e-2, 2e-2};
  return {0, 0};  // integers and bool compare exactly
}

// One table on every backend today; a backend whose arithmetic differs
// gets its own here.
Tolerance Backend::default_tolerance(const std::string& dtype) const {
  return kgym::default_tolerance(dtype);
}

std::span<const Backend> all_backends() { return table(); }

std::vector<std::string_view> backend_names() {
  std::vector<std::string_view> names;
  for (const Backend& b : table()) {
    if (!b.host_interpreter()) names.push_back(b.name);
  }
  return names;
}

const Backend* find_backend(std::string_view name, std::string_view execution) {
  for (const Backend& b : table()) {
    if (b.name == name && b.execution == execution) return &b;
  }
  return nullptr;
}

std::vector<std::string_view> executions_of(std::string_view name) {
  std::vector<std::string_view> executions;
  for (const Backend& b : table()) {
    if (b.name == name) executions.push_back(b.execution);
  }
  return executions;
}

const Backend& backend_named(std::string_view name, std::string_view execution) {
  const Backend* b = find_backend(name, execution);
  return b ? *b : table().front();
}

const Backend& backend_of(const VerifierConfig& verifier) {
  return backend_named(verifier.backend, verifier.execution);
}

bool sizes_automatically(const ProblemSize& size, const Backend& backend) {
  if (size.kind == ProblemSize::Kind::kByBackend) return backend.sizes_automatically;
  return size.kind == ProblemSize::Kind::kAuto;
}

Tolerance tolerance_for(const std::map<std::string, Tolerance>& configured, const std::string& dtype,
                        const Backend& backend) {
  auto it = configured.find(dtype);
  return it != configured.end() ? it->second : backend.default_tolerance(dtype);
}

}  // namespace kgym
