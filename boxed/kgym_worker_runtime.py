"""Runtime observations of the kgym worker (docs/anti-cheat.md, runtime layer).

The worker reports what it saw; the C++ parent decides the verdict:

- OpTrace records every dispatcher-level op (aten::...) a forward executes,
  including the ones a load_inline extension calls from C++.
- observe_call() compares the inputs with a pristine copy taken before the
  call (mutation), checks whether an output shares memory with an input
  (alias) and whether each output is a plain, dense tensor.
- EscapeGuard is a Python audit hook, installed in the candidate worker
  before the candidate is imported, that refuses signals, forks,
  subprocesses, sockets and writes outside the candidate directory, and
  remembers each attempt as a finding with a runtime rule id.

Standard library and torch only; torch 1.13 and 2.x.
"""

import collections
import os
import sys

from kgym_worker_common import WorkerError
from kgym_worker_devices import flat_values

# ---------------------------------------------------------------- op trace


def op_name(func):
    """'aten.relu.default' -> 'aten.relu' (overloads folded together)."""
    text = str(func)
    head, sep, _ = text.rpartition(".")
    return head if sep and head.count(".") >= 1 else text


def make_op_trace():
    """A context manager counting dispatcher ops, or None when this torch has
    no TorchDispatchMode."""
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError:
        return None

    class OpTrace(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.counts = collections.Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.counts[op_name(func)] += 1
            return func(*args, **(kwargs or {}))

    return OpTrace()


def warm_op_trace(torch):
    """One op under the op trace before any request: torch 2 imports the
    machinery of dispatch modes lazily, on the first traced call (about 1 s),
    which the timing's warm-up would otherwise take for what a call costs."""
    tracer = make_op_trace()
    if tracer is not None:
        with tracer:
            torch.zeros(1).add_(1)


# ---------------------------------------------------------------- observations


def tensor_list(values):
    import torch

    return [(i, v) for i, v in enumerate(values) if isinstance(v, torch.Tensor)]


def storage_span(t):
    """(first byte, one past the last byte) of the memory a strided tensor can
    reach, or None for an empty one."""
    if t.numel() == 0:
        return None
    start = t.data_ptr()
    extent = sum((size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride()))
    return start, start + (extent + 1) * t.element_size()


def pristine_copy(inputs):
    """A private copy of every tensor input (None for other values)."""
    import torch

    return [v.detach().clone() if isinstance(v, torch.Tensor) else None for v in inputs]


def differs(before, after):
    """Number of elements that changed (NaN in both places counts as equal)."""
    import torch

    if before.shape != after.shape or before.dtype != after.dtype:
        return before.numel() or 1
    if before.is_floating_point() or before.is_complex():
        same = (before == after) | (torch.isnan(before) & torch.isnan(after))
    else:
        same = before == after
    return int((~same).sum())


def observe_call(inputs, pristine, output):
    """Facts about one forward call: which inputs changed, which outputs alias
    an input, which outputs are not plain dense tensors."""
    import torch

    observed = {"mutated_inputs": [], "aliases": [], "output_problems": []}
    for index, value in enumerate(inputs):
        before = pristine[index]
        if before is None or not isinstance(value, torch.Tensor):
            continue
        changed = differs(before, value.detach())
        if changed:
            observed["mutated_inputs"].append(
                {"input": index, "changed": changed, "numel": before.numel(),
                 "evidence": f"forward changed input {index} ({describe_tensor(before)}): "
                             f"{changed} of {before.numel()} elements differ from a copy taken before the call"})
    spans = [(i, storage_span(t)) for i, t in tensor_list(inputs) if t.layout == torch.strided]
    position = 0
    for value in flat_values(output):
        here = position
        position += 1
        if isinstance(value, (bool, int, float)) or value is None:
            continue
        if not isinstance(value, torch.Tensor):
            observed["output_problems"].append(
                {"output": here, "kind": "type",
                 "evidence": f"output {here} is a {type(value).__module__}.{type(value).__name__}, not a torch.Tensor"})
            continue
        if type(value) not in (torch.Tensor, torch.nn.Parameter):
            observed["output_problems"].append(
                {"output": here, "kind": "type",
                 "evidence": f"output {here} is a tensor subclass {type(value).__module__}.{type(value).__name__}"})
            continue
        if value.layout != torch.strided:
            observed["output_problems"].append(
                {"output": here, "kind": "layout", "evidence": f"output {here} has layout {value.layout}"})
            continue
        zero_dims = [d for d, (size, stride) in enumerate(zip(value.shape, value.stride())) if size > 1 and stride == 0]
        if zero_dims:
            observed["output_problems"].append(
                {"output": here, "kind": "layout",
                 "evidence": f"output {here} ({describe_tensor(value)}) repeats memory: stride 0 in dim "
                             f"{', '.join(map(str, zero_dims))} (an expanded view, not a dense result)"})
        span = storage_span(value)
        if span is None:
            continue
        for index, input_span in spans:
            if input_span and span[0] < input_span[1] and input_span[0] < span[1]:
                observed["aliases"].append(
                    {"output": here, "input": index,
                     "evidence": f"output {here} shares memory with input {index} ({describe_tensor(value)})"})
    return observed


def describe_tensor(t):
    return f"{str(t.dtype).replace('torch.', '')}{list(t.shape)}"


# ---------------------------------------------------------------- escape guard


class EscapeAttempt(PermissionError):
    """Raised into candidate code that tried to leave its sandbox."""


WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
PATH_EVENTS = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod", "os.chown",
               "os.link", "os.symlink", "os.utime", "shutil.rmtree", "shutil.copyfile", "shutil.move",
               "shutil.copytree", "shutil.chown"}
SUBPROCESS_EVENTS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile",
                     "pty.spawn"}


class EscapeGuard:
    """Audit hook for the candidate worker. Active only while candidate code
    may run (import, build, forward); the worker's own bookkeeping in
    between is not watched. Subprocesses are allowed only to
    torch.utils.cpp_extension while the candidate is imported (the
    load_inline build runs the compiler)."""

    def __init__(self, candidate_dir):
        self.allowed_dirs = [os.path.realpath(candidate_dir)]
        self.findings = []
        self.phase = None  # None (inactive), "import", "build", "forward"
        self.inside = False
        self.real_exit = os._exit
        self.build_module = None
        # Whether torch's extension builder may run its compiler: not when
        # the builds were made before the verification (kgym_worker_build.py).
        self.extension_builds = True

    def install(self):
        sys.addaudithook(self.hook)
        guard = self

        def guarded_exit(status=0):
            if guard.phase is None:
                guard.real_exit(status)
            guard.record("runtime.process_exit", f"os._exit({status}) called during {guard.phase}")

        # os._exit raises no audit event; the worker's own exits use
        # real_exit (see serve()).
        os._exit = guarded_exit
        try:
            import posix

            posix._exit = guarded_exit
        except ImportError:
            pass

    def record(self, rule, evidence):
        self.findings.append({"rule": rule, "evidence": evidence})
        raise EscapeAttempt(f"kgym: {evidence} is not allowed")

    def take_findings(self):
        findings, self.findings = self.findings, []
        return findings

    def from_extension_build(self):
        if self.build_module is None:
            module = sys.modules.get("torch.utils.cpp_extension")
            self.build_module = vars(module) if module else None
        frame = sys._getframe(2)
        while frame is not None:
            if self.build_module is not None and frame.f_globals is self.build_module:
                return True
            frame = frame.f_back
        return False

    def outside(self, path):
        if isinstance(path, int):
            return False
        try:
            real = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        if real == os.devnull:
            return False
        return not any(real == d or real.startswith(d + os.sep) for d in self.allowed_dirs)

    def hook(self, event, args):
        if self.phase is None or self.inside:
            return
        self.inside = True
        try:
            self.check(event, args)
        finally:
            self.inside = False

    def check(self, event, args):
        if event in ("os.kill", "os.killpg"):
            target, sig = args[0], args[1]
            whom = "its parent" if target == os.getppid() else "itself" if target == os.getpid() else f"pid {target}"
            self.record("runtime.signal", f"{event}({target}, {sig}) signals {whom} during {self.phase}")
        elif event == "signal.pthread_kill":
            self.record("runtime.signal", f"signal.pthread_kill{tuple(args)} during {self.phase}")
        elif event in ("os.fork", "os.forkpty"):
            self.record("runtime.fork", f"{event}() during {self.phase}")
        elif event in SUBPROCESS_EVENTS:
            if self.phase in ("import", "build") and self.extension_builds and self.from_extension_build():
                return
            command = args[1] if event == "subprocess.Popen" and len(args) > 1 else args[0] if args else ""
            self.record("runtime.subprocess", f"{event} {str(command)[:120]} during {self.phase}")
        elif event.startswith("socket."):
            self.record("runtime.socket", f"{event}{tuple(str(a)[:60] for a in args)} during {self.phase}")
        elif event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                mode is None and isinstance(flags, int) and flags & WRITE_FLAGS)
            if writes and self.outside(path):
                self.record("runtime.write_outside",
                            f"open({os.fsdecode(path)!s}, {mode or oct(flags)}) outside {self.allowed_dirs[0]} "
                            f"during {self.phase}")
        elif event in PATH_EVENTS:
            for path in args[:2]:
                if isinstance(path, (str, bytes)) and self.outside(path):
                    self.record("runtime.write_outside",
                                f"{event}({os.fsdecode(path)}) outside {self.allowed_dirs[0]} during {self.phase}")


def cheat_error(finding):
    error = WorkerError("cheat", finding["evidence"])
    error.rule = finding["rule"]
    return error


# ---------------------------------------------------------------- clock guard

# The clocks and timing code a candidate could replace to shorten its own
# times. The worker times with its own references (kgym_worker_devices.now_ns,
# taken before the candidate is imported), so a replacement gains nothing;
# it is still an attempt, and is reported as one.
TIME_FUNCTIONS = ("perf_counter_ns", "perf_counter", "monotonic_ns", "monotonic", "process_time_ns",
                  "process_time", "time_ns", "time", "thread_time_ns", "thread_time", "clock_gettime",
                  "clock_gettime_ns")
TIMING_METHODS = ("start_timer", "stop_timer", "time_calls", "copy_out", "flush_cache", "synchronize", "event")


class ClockGuard:
    """Remembers, before the candidate is imported, what the names the
    timing path depends on refer to (the time module's clocks, the worker's
    own clock reference, the backends' timing methods, the worker's ops),
    and after each request of the candidate names every one that changed:
    a finding with rule runtime.clock. Code that rewrites the clock below
    Python (the vDSO, clock_gettime) is not seen here; the parent's clock
    around each batch is the check for that (docs/anti-cheat.md)."""

    def __init__(self):
        self.watched = []  # (owner, attribute, label, object at install)
        self.instances = []  # (object, names, label): names that must not appear in its __dict__

    def watch(self, owner, names, label):
        for name in names:
            if hasattr(owner, name):
                self.watched.append((owner, name, f"{label}.{name}", getattr(owner, name)))

    def watch_instance(self, obj, names, label):
        self.instances.append((obj, tuple(names), label))

    def install(self, backends, sides):
        import time as time_module

        import kgym_worker_devices

        self.watch(time_module, TIME_FUNCTIONS, "time")
        self.watch(kgym_worker_devices, ("now_ns",), "kgym_worker_devices")
        for backend in backends:
            self.watch(backend, [n for n in TIMING_METHODS if n in vars(backend)], backend.__name__)
        for side in sides:
            self.watch(side, [n for n in vars(side) if n.startswith("op_") or n == "OPS"], side.__name__)
            ops = vars(side).get("OPS")
            if isinstance(ops, dict):
                self.watch_ops(ops, side.__name__)

    def watch_ops(self, ops, label):
        for name, handler in list(ops.items()):
            self.watched.append((ops, name, f"{label}.OPS[{name!r}]", handler))

    def changes(self):
        found = []
        for owner, name, label, original in self.watched:
            if isinstance(owner, dict):
                now = owner.get(name)
            else:
                now = getattr(owner, name, None)
            if now is not original:
                found.append(f"{label} was replaced (now {describe_object(now)})")
        for obj, names, label in self.instances:
            shadowed = sorted(n for n in names if n in getattr(obj, "__dict__", {}))
            if shadowed:
                found.append(f"{label}.{', '.join(shadowed)} shadowed on the instance")
        return found

    def finding(self):
        found = self.changes()
        if not found:
            return None
        return {"rule": "runtime.clock",
                "evidence": "the candidate changed the timing code of its own process: " + "; ".join(found[:4])}


def describe_object(value):
    kind = type(value).__name__
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    module = getattr(value, "__module__", None)
    return f"{kind} {module + '.' if module else ''}{name}" if name else kind
