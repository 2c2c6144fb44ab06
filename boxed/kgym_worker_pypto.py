"""PyPTO kernels on the host (verifier.execution: host_interpreter, backend
npu; docs/backends.md).

Without an NPU (ASCEND_HOME_PATH unset) a `@pypto.frontend.jit` kernel runs
in PyPTO's SIM mode: it is compiled and its time estimated by PyPTO's cost
model, but nothing is written to its outputs. The numbers come from PyPTO's
"pass verify" interpreter, which runs the kernel's tensor graph with a
torch-based calculator. install() prepares both, before the candidate is
imported, in the candidate worker only:

- every kernel runs in SIM mode with the interpreter on, whatever its
  decorator asked for;
- the interpreter is given the caller's tensors (pypto 0.2.0 hands it
  zero-filled copies on a host without the device runtime, and the SIM run
  then copies those back over inputs and outputs: silent garbage);
- the calculator is loaded from a build made once, outside the candidate's
  box (`python kgym_worker_pypto.py build-calculator`, run by
  `./dev.sh torch2`): pypto builds it with cmake in every process, with a C++
  standard that torch >= 2.10 refuses;
- while a kernel runs the op trace is paused: the calculator's torch ops are
  the interpreter's, not the candidate's (a kernel body may only use pypto,
  static.kernel_body);
- after each kernel call its cost-model estimate (the AICore end-to-end time
  of CostModelSimulationOutput/merged_swimlane.json, in microseconds) is
  kept, and the call's output folder removed; take_simulated() hands the
  sum over one forward's calls to the worker's facts.

The values are the kernel's tensor-graph semantics: PyPTO's interpreter
does not run the tiled, lowered code, whose agreement it only logs.

Standard library and torch only at import; pypto when installed.
"""

import ctypes
import glob
import json
import os
import shutil
import subprocess
import sys

_state = {"simulated_us": [], "sources": set(), "installed": False}

# CMake's C++17 flag mapped to C++20: the calculator's CMakeLists pins 17,
# which torch's headers refuse from 2.10 on.
CXX20_OVERRIDE = """set(CMAKE_CXX17_STANDARD_COMPILE_OPTION "-std=c++20")
set(CMAKE_CXX17_EXTENSION_COMPILE_OPTION "-std=gnu++20")
"""


def calculator_dir():
    """Where the calculator for this interpreter's torch is kept: below the
    interpreter's prefix, one directory per torch version."""
    import torch

    root = os.environ.get("KGYM_PYPTO_CALCULATOR") or os.path.join(sys.prefix, "share", "kgym-pypto-calculator")
    return os.path.join(root, "torch-" + torch.__version__.split("+")[0])


def calculator_library(directory=None):
    return os.path.join(directory or calculator_dir(), "install", "lib", "libtile_fwk_calculator.so")


def build_calculator(directory=None, jobs=None):
    """Configures, builds and installs pypto's calculator into `directory`
    (trusted: run by the installer, never in a candidate's process)."""
    import pypto
    import torch

    directory = directory or calculator_dir()
    library = calculator_library(directory)
    if os.path.exists(library):
        return library
    source = os.path.join(os.path.dirname(pypto.__file__), "lib", "calculator")
    build = os.path.join(directory, "build")
    os.makedirs(build, exist_ok=True)
    override = os.path.join(directory, "cxx20_override.cmake")
    with open(override, "w") as f:
        f.write(CXX20_OVERRIDE)
    cmake = shutil.which("cmake") or "cmake"
    steps = [
        [cmake, "-S", source, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
         "-DCMAKE_INSTALL_PREFIX=" + os.path.join(directory, "install"),
         "-DPY3_MOD_TORCH_VERSION=" + str(torch.__version__),
         "-DPY3_MOD_TORCH_ROOT_PATH=" + os.path.dirname(torch.__file__),
         "-DPY3_MOD_TORCH_C_GLIBCXX_USE_CXX11_ABI=" + str(int(torch._C._GLIBCXX_USE_CXX11_ABI)),
         "-DCMAKE_USER_MAKE_RULES_OVERRIDE_CXX=" + override],
        [cmake, "--build", build, "-j", str(jobs or os.cpu_count() or 2)],
        [cmake, "--install", build, "--prefix", os.path.join(directory, "install")],
    ]
    for step in steps:
        run = subprocess.run(step, capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError("pypto calculator build failed: %s\n%s\n%s"
                               % (" ".join(step), run.stdout[-3000:], run.stderr[-3000:]))
    shutil.rmtree(build, ignore_errors=True)
    return library


def aicore_end_to_end_us(swimlane_path):
    """PyPTO's 'AICore End-to-End Time' from a merged_swimlane.json: the span
    of the complete events on the AIC/AIV lanes, in microseconds."""
    with open(swimlane_path) as f:
        events = json.load(f)["traceEvents"]
    lanes = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    spans = [e for e in events if e.get("ph") == "X"
             and lanes.get((e["pid"], e.get("tid")), "").startswith(("AIC", "AIV"))]
    if not spans:
        return None
    return max(e["ts"] + e["dur"] for e in spans) - min(e["ts"] for e in spans)


def total_cycles_us(report_path):
    """'Total Cycles' of _simulate.stat.report.txt at the cost model's 1.8 GHz."""
    import re

    try:
        with open(report_path) as f:
            found = re.search(r"Total Cycles\.*:\s*(\d+)", f.read())
    except OSError:
        return None
    return int(found.group(1)) / 1800.0 if found else None


def record_simulation(output_root, before):
    """The estimate of the call that made the newest output folder under
    `output_root`; the folders the call made are removed."""
    made = sorted(set(glob.glob(os.path.join(output_root, "output_*"))) - before, key=os.path.getmtime)
    for folder in made:
        simulation = os.path.join(folder, "CostModelSimulationOutput")
        swimlane = os.path.join(simulation, "merged_swimlane.json")
        value, source = None, None
        if os.path.exists(swimlane):
            value, source = aicore_end_to_end_us(swimlane), "AICore end-to-end time of merged_swimlane.json"
        if value is None:
            value = total_cycles_us(os.path.join(simulation, "_simulate.stat.report.txt"))
            source = "Total Cycles of _simulate.stat.report.txt / 1.8 GHz"
        if value is not None:
            _state["simulated_us"].append(value)
            _state["sources"].add(source)
        shutil.rmtree(folder, ignore_errors=True)


def take_simulated():
    """The cost model's estimate summed over the kernel calls since the last
    take, or None when no kernel call produced one."""
    values, sources = _state["simulated_us"], _state["sources"]
    _state["simulated_us"], _state["sources"] = [], set()
    if not values:
        return None
    return {"value": sum(values), "unit": "us", "kernel_calls": len(values),
            "source": "pypto %s cost model: %s" % (_pypto_version(), "; ".join(sorted(sources)))}


def _pypto_version():
    try:
        from importlib.metadata import version

        return version("pypto")
    except Exception:
        return "?"


def install(scratch):
    """Prepares pypto in this (candidate) process; raises RuntimeError with
    the fix when it cannot run here."""
    if _state["installed"]:
        return
    # Any ASCEND_HOME_PATH makes pypto load the device runtime.
    os.environ.pop("ASCEND_HOME_PATH", None)
    output_root = os.path.join(scratch, "pypto_output")
    os.makedirs(output_root, exist_ok=True)
    os.environ["TILE_FWK_OUTPUT_DIR"] = output_root
    os.environ["PYPTO_HOME"] = os.path.join(scratch, "pypto_home")
    os.environ["ASCEND_PROCESS_LOG_PATH"] = os.path.join(scratch, "pypto_log")
    library = calculator_library()
    if not os.path.exists(library):
        raise RuntimeError(
            "PyPTO's interpreter calculator is not built for this interpreter (%s is missing); build it once "
            "with `%s kgym_worker_pypto.py build-calculator` (./dev.sh torch2 does)" % (library, sys.executable))
    import pypto  # noqa: F401
    from pypto import pypto_impl
    from pypto._utils import BuildOnlineManager
    from pypto.frontend.parser import entry
    from pypto.runtime import _pto_verify_datas
    from torch.utils._python_dispatch import _disable_current_modes

    ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)

    def build_and_load_calculator(self):
        self.calculator_loaded = True

    BuildOnlineManager.build_and_load_calculator = build_and_load_calculator
    kept = []

    def setup_verify_data(pto_tensors):
        # The caller's own tensors, not zero-filled host copies.
        kept[:] = list(pto_tensors)
        pypto_impl.SetVerifyData(entry._pto_to_tensor_data(list(pto_tensors)), [], _pto_verify_datas.get_data())

    entry.JitCallableWrapper._setup_verify_data = staticmethod(setup_verify_data)

    wrapper_init = entry.JitCallableWrapper.__init__
    wrapper_call = entry.JitCallableWrapper.__call__

    def init(self, *args, **kwargs):
        wrapper_init(self, *args, **kwargs)
        self._runtime_options = dict(self._runtime_options or {}, run_mode=pypto.RunMode.SIM.value)
        self._verify_options = dict(self._verify_options or {}, enable_pass_verify=True)

    def call(self, *args, **kwargs):
        before = set(glob.glob(os.path.join(output_root, "output_*")))
        try:
            with _disable_current_modes():
                return wrapper_call(self, *args, **kwargs)
        finally:
            record_simulation(output_root, before)

    entry.JitCallableWrapper.__init__ = init
    entry.JitCallableWrapper.__call__ = call
    _state["installed"] = True


def install_or_fail(scratch):
    """install(), its failure a worker error the parent reports as such."""
    from kgym_worker_common import WorkerError

    try:
        install(scratch)
    except Exception as exc:
        raise WorkerError("unsupported", f"PyPTO's host interpreter cannot run here: {exc}")


def installed():
    return _state["installed"]


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "build-calculator":
        print(build_calculator(sys.argv[2] if len(sys.argv) > 2 else None))
    else:
        print("usage: kgym_worker_pypto.py build-calculator [DIR]", file=sys.stderr)
        sys.exit(2)
