"""The CPU lease as the candidate worker holds it (docs/anti-cheat.md,
"The lease"). The parent enforces the leased cores from outside (a cpuset
cgroup) and reads the candidate's CPU time from outside; what only the
process itself can do is here:

- forbid_affinity_changes() installs a seccomp filter, before any
  candidate code is imported, that kills the process (SIGSYS) when any of
  its threads or children calls sched_setaffinity: the cores a worker got
  are final, with or without a cgroup. The parent reports the death as
  `runtime.lease`. A seccomp filter cannot be removed, and it is inherited
  by every thread and child.
- LeaseCheck, after every timed call, compares the process's thread count
  and torch's intra-op thread count with what they were after the first
  timed call, and the main thread's affinity with the lease; after every
  batch it reads the affinity of every thread. A change is `runtime.lease`.

Standard library and torch only; x86_64 and aarch64 (elsewhere the filter
is not installed and only the checks run).
"""

import ctypes
import os
import platform
import struct

from kgym_worker_runtime import cheat_error

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ALLOW = 0x7FFF0000
X32_SYSCALL_BIT = 0x40000000
# (audit arch, sched_setaffinity number) per machine.
ARCHES = {"x86_64": (0xC000003E, 203), "aarch64": (0xC00000B7, 122)}

BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_AND_K = 0x54
BPF_RET_K = 0x06


def affinity_filter_program(arch, number):
    """The classic-BPF program: kill on sched_setaffinity, allow the rest."""

    def op(code, jt, jf, k):
        return struct.pack("HBBI", code, jt, jf, k)

    return [
        op(BPF_LD_W_ABS, 0, 0, 4),                 # seccomp_data.arch
        op(BPF_JEQ_K, 0, 4, arch),                 # another arch: allow
        op(BPF_LD_W_ABS, 0, 0, 0),                 # seccomp_data.nr
        op(BPF_AND_K, 0, 0, ~X32_SYSCALL_BIT & 0xFFFFFFFF),
        op(BPF_JEQ_K, 0, 1, number),
        op(BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        op(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]


def forbid_affinity_changes():
    """Installs the filter; returns None, or why it could not."""
    machine = platform.machine()
    if machine not in ARCHES:
        return f"no affinity filter on {machine}"
    program = b"".join(affinity_filter_program(*ARCHES[machine]))
    count = len(program) // 8
    filters = ctypes.create_string_buffer(program)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(count, ctypes.addressof(filters))
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
        prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    except (OSError, AttributeError) as exc:
        return f"no prctl: {exc}"
    if prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        return f"PR_SET_NO_NEW_PRIVS failed: {os.strerror(ctypes.get_errno())}"
    if prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0:
        return f"seccomp failed: {os.strerror(ctypes.get_errno())}"
    return None


def parse_core_list(text):
    cores = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        cores.update(range(int(lo), int(hi) + 1) if sep else [int(lo)])
    return cores


def thread_affinities():
    """{tid: cores} of every thread of this process, from /proc."""
    found = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return found
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("Cpus_allowed_list:"):
                        found[int(tid)] = parse_core_list(line.split(":", 1)[1])
                        break
        except (OSError, ValueError):
            continue
    return found


def thread_count():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


class LeaseCheck:
    """The per-call and per-batch checks of the candidate worker's lease.

    The reference worker runs them too, with `enforce` off: the time they
    take between calls is then the same on both sides, which the parent's
    clock check compares (verify/timing_checks.h)."""

    def __init__(self, torch, enforce=True):
        self.torch = torch
        self.enforce = enforce
        self.cores = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        self.threads = None  # thread count after the first timed call
        self.torch_threads = torch.get_num_threads()
        self.calls = 0

    def fail(self, evidence):
        if self.enforce:
            raise cheat_error({"rule": "runtime.lease", "evidence": evidence})

    def after_call(self):
        """After every warm-up and timed call, outside its timer."""
        self.calls += 1
        count = thread_count()
        if self.threads is None:
            # After the first call, so that pools a kernel (or the cache
            # flush) starts on first use are counted in.
            self.threads = count
        elif count is not None and count > self.threads:
            self.fail(f"timed call {self.calls}: the process has {count} threads, {self.threads} when timing "
                      f"began (a kernel that starts threads during timing)")
        torch_threads = self.torch.get_num_threads()
        if torch_threads != self.torch_threads:
            self.fail(f"timed call {self.calls}: torch's intra-op threads changed from {self.torch_threads} to "
                      f"{torch_threads} (set_num_threads / omp_set_num_threads)")
        if self.cores is not None:
            now = set(os.sched_getaffinity(0))
            if not now <= self.cores:
                self.fail(f"timed call {self.calls}: the worker's affinity is {sorted(now)}, its lease "
                          f"{sorted(self.cores)}")

    def end_batch(self):
        if self.cores is None:
            return
        for tid, cores in thread_affinities().items():
            if not cores <= self.cores:
                self.fail(f"thread {tid} may run on cores {sorted(cores)}, outside the lease {sorted(self.cores)}")
