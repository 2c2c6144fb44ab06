"""The time ratio of a problem's forward run twice per call to once, measured
in one process without kgym's workers. "Twice" is what the fidelity
benchmark's candidate does: one module call whose forward runs the
original forward twice, so the module-call overhead is paid once, as by
the honest model. It uses the worker's own problem loading (with
overrides), cpu backend (pinned core, one thread, steady allocator) and
timing loop (a fresh input set per call, cloned outside the timer),
batches alternating
A B B A, and prints the median of the per-unit log ratios. It says what
doubling the work costs on this machine at this size, so the fidelity
benchmark can tell kgym's error from the workload's own.

Usage: python3 twice_in_process.py PROBLEM.py CORE [NAME=VALUE ...] (overrides)
Prints: ratio lo hi (95 % bootstrap interval over units)
"""
import math
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "boxed"))

import torch  # noqa: E402

from kgym_worker_problem import load_problem, parse_overrides  # noqa: E402
from kgym_worker_devices import CpuBackend, map_tensors  # noqa: E402


def main():
    path, core = sys.argv[1], sys.argv[2]
    backend = CpuBackend(1, core)
    problem = load_problem(path, parse_overrides(sys.argv[3:]))
    torch.manual_seed(1)
    init_inputs = problem.get_init_inputs()
    model = problem.Model(*init_inputs).eval()
    forward_once = problem.Model.forward

    class Twice(problem.Model):
        def forward(self, *args):
            forward_once(self, *args)
            return forward_once(self, *args)

    doubled = Twice(*init_inputs).eval()
    doubled.load_state_dict(model.state_dict())

    def once(args):
        return model(*args)

    def twice(args):
        return doubled(*args)

    seeds = iter(range(1 << 20))

    def batch(fn, calls):
        # Each call on an input set of its own, drawn before the batch, as
        # kgym's timing does.
        sets = []
        for _ in range(3 + calls):
            torch.manual_seed(next(seeds))
            sets.append(list(problem.get_inputs()))
        samples, _, _, _ = backend.time_calls(
            fn, lambda position: map_tensors(sets[position], lambda t: t.clone()), 3, calls)
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
