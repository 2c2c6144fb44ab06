"""The time ratio of a problem's forward run twice per call to once, measured
in one process without kgym: the same conditions as a cpu worker (pinned
core, thread count, glibc malloc thresholds, fresh input clones outside the
timer), batches alternating A B B A, the median of the per-unit log ratios.
It says what doubling the work costs on this machine at this size, so the
fidelity benchmark can tell kgym's error from the workload's own.

Usage: python3 twice_in_process.py PROBLEM.py CORE [NAME=VALUE ...] (overrides)
Prints: ratio lo hi (95 % bootstrap interval over units)
"""
import ctypes
import importlib.util
import math
import os
import random
import re
import statistics
import sys
import time

import torch


def load(path, overrides):
    text = open(path).read()
    for name, value in overrides.items():
        text = re.sub(rf"^{name}\s*=.*$", f"{name} = {value}", text, flags=re.M)
    spec = importlib.util.spec_from_loader("problem", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(text, path, "exec"), module.__dict__)
    return module


def main():
    path, core = sys.argv[1], int(sys.argv[2])
    overrides = dict(arg.split("=", 1) for arg in sys.argv[3:])
    libc = ctypes.CDLL("libc.so.6")
    libc.mallopt(-1, 2**31 - 1)  # M_TRIM_THRESHOLD
    libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD
    os.sched_setaffinity(0, {core})
    torch.set_num_threads(1)
    problem = load(path, overrides)
    torch.manual_seed(1)
    model = problem.Model(*problem.get_init_inputs()).eval()
    inputs = problem.get_inputs()

    def once(args):
        return model(*args)

    def twice(args):
        model(*args)
        return model(*args)

    def batch(fn, calls):
        samples = []
        for _ in range(calls):
            args = [t.clone() if isinstance(t, torch.Tensor) else t for t in inputs]
            start = time.perf_counter_ns()
            output = fn(args)
            samples.append(time.perf_counter_ns() - start)
            del output, args  # as the worker's loop: both freed before the next clone
        return statistics.median(samples)

    with torch.no_grad():
        calls = max(1, int(2e6 / max(batch(once, 5), 1)))  # about 2 ms batches
        units, deadline = [], time.monotonic() + 3
        while time.monotonic() < deadline or len(units) < 8:
            a1, b1 = batch(once, calls), batch(twice, calls)
            b2, a2 = batch(twice, calls), batch(once, calls)
            units.append((math.log(b1 / a1) + math.log(b2 / a2)) / 2)
    rng = random.Random(1)
    boot = sorted(statistics.median(rng.choices(units, k=len(units))) for _ in range(2000))
    print(f"{math.exp(statistics.median(units)):.4f} {math.exp(boot[50]):.4f} {math.exp(boot[1949]):.4f}")


if __name__ == "__main__":
    main()
