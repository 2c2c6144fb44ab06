"""Shared by the kgym worker modules: the error type, log helpers and
die_with_parent."""

import ctypes
import os
import shutil
import sys
import tempfile
import time
import traceback

# When this worker process began (CLOCK_MONOTONIC, the clock of kgym's
# steady_clock): set at import for a new interpreter, reset by the zygote's
# child at its fork. The hello reports it so kgym can tell the worker's start
# apart from the work that follows.
_started_ns = time.monotonic_ns()


def mark_started():
    global _started_ns
    _started_ns = time.monotonic_ns()


def started_ns():
    return _started_ns


class WorkerError(Exception):
    """An expected failure with a kind the parent maps to a verdict."""

    def __init__(self, kind, message, detail=""):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.detail = detail


def log(*parts):
    print("[kgym-worker]", *parts, file=sys.stderr, flush=True)


def last_line(text):
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[-1] if lines else ""


_MEMORY_SIGNS = ("can't allocate memory", "Cannot allocate memory", "not enough memory", "out of memory",
                 "std::bad_alloc")


def memory_note(exc):
    """For an allocation failure: what memory the process had and the fix;
    "" for any other exception."""
    text = str(exc)
    if not isinstance(exc, MemoryError) and not any(sign in text for sign in _MEMORY_SIGNS):
        return ""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    where = f"address space limited to {limit >> 20} MB, " if limit != resource.RLIM_INFINITY else ""
    return (f" [out of memory: {where}peak resident {peak_mb:.0f} MB; shrink the problem: problem.size: auto "
            f"(--size auto) or a smaller budget (--size '{{max_bytes: 16777216}}'), or --override NAME=VALUE]")


def missing_note(exc):
    """For something this interpreter lacks (a torch op of a later torch, a
    module that is not installed): what to change; "" otherwise."""
    text = str(exc)
    if isinstance(exc, AttributeError) and text.startswith("module 'torch"):
        import torch

        return (f" [this torch ({torch.__version__}) lacks it: the problem needs a newer torch; point "
                f"verifier.python (--python) at an interpreter with one]")
    for dtype, name in (("'Half'", "float16"), ("'BFloat16'", "bfloat16")):
        if "not implemented for " + dtype in text:
            return (f" [this torch has no kernel for that op in {name} on this device: choose another "
                    f"problem.precision (--precision)]")
    if isinstance(exc, ModuleNotFoundError):
        return f" [the problem needs the module '{exc.name}', which this interpreter does not have]"
    return ""


def exception_line(exc):
    text = last_line(exc)
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return line + memory_note(exc) + missing_note(exc)


def traceback_tail(exc, lines=30):
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return "\n".join(text.splitlines()[-lines:])


def die_with_parent():
    """Ends this worker when the process that started it dies.

    Workers run in their own process groups, so a signal to the parent's group
    does not reach them; PR_SET_PDEATHSIG makes the kernel send SIGKILL
    instead. Linux only; elsewhere a no-op.
    """
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig, sigkill = 1, 9
        libc.prctl(pr_set_pdeathsig, sigkill, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def torch_build(torch):
    """What this torch was built for: "cuda 13.2", "rocm 6.2", "npu" or "cpu"."""
    if getattr(torch.version, "hip", None):
        return f"rocm {torch.version.hip}"
    if getattr(torch.version, "cuda", None):
        return f"cuda {torch.version.cuda}"
    if "torch_npu" in sys.modules or hasattr(torch, "npu"):
        return "npu"
    return "cpu"


def setup_compile_env(scratch, compile_cache):
    """Private extension dir per worker; identical sources rebuild via the
    ccache directory the parent gave (CCACHE_DIR), if any.
    Temporary files and torch's compile caches go inside the scratch dir too:
    torch 2 asks tempfile for a directory the first time it imports
    torch._dynamo (lazily, in a forward), and tempfile tries each candidate
    directory by creating a file in it; done here, before the escape guard,
    the answer is cached and inside."""
    os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(scratch, "torch_extensions")
    os.makedirs(os.environ["TORCH_EXTENSIONS_DIR"], exist_ok=True)
    os.environ["TMPDIR"] = os.path.join(scratch, "tmp")
    os.makedirs(os.environ["TMPDIR"], exist_ok=True)
    tempfile.tempdir = None
    tempfile.gettempdir()
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(scratch, "torchinductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(scratch, "triton")
    ccache = shutil.which("ccache")
    # ccache only in the directory the parent gave this build (its key's own,
    # docs/build.md "The compile caches"), never a default one shared by all.
    given = os.environ.get("CCACHE_DIR") and not os.environ.get("CCACHE_DISABLE")
    if not compile_cache or not given:
        os.environ["CCACHE_DISABLE"] = "1"  # torch 2 may put ccache before the compiler itself
        return
    if not ccache or "CXX" in os.environ:
        return
    compiler = shutil.which("g++") or shutil.which("c++")
    if not compiler:
        return
    os.environ.setdefault("CCACHE_CONFIGPATH", os.devnull)
    os.environ["CCACHE_BASEDIR"] = scratch
    os.environ["CCACHE_NOHASHDIR"] = "1"
    # pch_defines, time_macros: a build may include the precompiled header
    # (kgym_worker_build.py), which ccache then hashes.
    os.environ.setdefault("CCACHE_SLOPPINESS", "pch_defines,time_macros,include_file_mtime,include_file_ctime")
    if torch_wraps_compiler():
        return
    bin_dir = os.path.join(scratch, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    # The name contains "g++" so torch's compiler check accepts the wrapper.
    wrapper = os.path.join(bin_dir, "ccache-g++")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec "{ccache}" "{compiler}" "$@"\n')
    os.chmod(wrapper, 0o755)
    os.environ["CXX"] = wrapper


def torch_wraps_compiler():
    """Whether torch's cpp_extension puts ccache before the compiler itself
    when ccache is on PATH (newer torch 2 releases): a wrapper of ours then
    runs as `ccache ccache-g++`, which ccache refuses."""
    from torch.utils import cpp_extension

    return hasattr(cpp_extension, "_wrap_compiler") and not os.environ.get("TORCH_NO_COMPILER_WRAPPER")
