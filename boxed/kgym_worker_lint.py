"""Problem lint for the kgym worker (`kgym lint`, docs/anti-cheat.md
"Problem lint"): the reference alone, run a few times, checked for what
makes a problem exploitable or unusable. Standard library and torch only."""

import time

from kgym_worker_devices import flatten_outputs, signed_normal_inputs


def lint_problem(problem, seed, tolerance):
    """Runs the reference alone a few times and returns findings that make
    the problem exploitable or unusable (docs/anti-cheat.md "Problem
    lint"), with evidence."""
    import resource

    import torch

    findings = []

    def add(kind, evidence, note=False):
        # A note: what verification already catches (it never makes the exit 1).
        findings.append({"kind": kind, "evidence": evidence, "note": note})

    def close(a, b):
        return len(a) == len(b) and all(
            x.shape == y.shape and x.dtype == y.dtype and torch.allclose(x.double(), y.double(), rtol=tolerance[1],
                                                                         atol=tolerance[0], equal_nan=True)
            for x, y in zip(a, b))

    torch.manual_seed(seed)
    init_inputs = list(problem.get_init_inputs())
    model = problem.Model(*init_inputs)
    model.eval()

    def inputs_for(s, normal=False):
        torch.manual_seed(s)
        inputs = list(problem.get_inputs())
        return signed_normal_inputs(inputs, s) if normal else inputs

    def run(inputs):
        with torch.no_grad():
            return flatten_outputs(model(*[v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]))

    first_inputs = inputs_for(seed)
    start = time.perf_counter()
    first = run(first_inputs)
    forward_ms = (time.perf_counter() - start) * 1e3
    floating = [t for t in first if t.is_floating_point() and t.numel() > 0]
    if any(not torch.isfinite(t).all() for t in floating):
        add("non_finite_output", "the reference output on get_inputs() has NaN or Inf")
    if floating and all(float(t.abs().max()) <= tolerance[0] for t in floating):
        add("zero_output", f"every output is within atol={tolerance[0]:g} of 0 (max |y| = "
                           f"{max(float(t.abs().max()) for t in floating):.3g}): a zero kernel passes")
    elif floating and all(t.numel() > 1 and float(t.max() - t.min()) <= tolerance[0] + tolerance[1] * float(t.abs().max())
                          for t in floating):
        add("constant_output", f"every output is one value ({float(floating[0].flatten()[0]):.6g}): "
                               "a constant kernel passes")
    again = run(first_inputs)
    if not close(first, again):
        add("not_self_consistent", "the same inputs twice give different outputs (training-mode dropout, "
                                   "unseeded randomness): no candidate can match it")
    other_inputs = inputs_for(seed + 1)
    if close(first, run(other_inputs)) and not close(
            [t for t in first_inputs if isinstance(t, torch.Tensor)],
            [t for t in other_inputs if isinstance(t, torch.Tensor)]):
        add("input_independent", "two different input draws give the same outputs within tolerance: "
                                 "a kernel that ignores its inputs passes")
    tensors_in = [t for t in first_inputs if isinstance(t, torch.Tensor)]
    for o_index, out in enumerate(first):
        for i_index, x in enumerate(tensors_in):
            if close([out], [x]):
                normal_inputs = inputs_for(seed, normal=True)
                normal_out = run(normal_inputs)
                normal_tensors = [t for t in normal_inputs if isinstance(t, torch.Tensor)]
                still = o_index < len(normal_out) and close([normal_out[o_index]], [normal_tensors[i_index]])
                add("identity_on_given_inputs",
                    f"output {o_index} equals input {i_index} on get_inputs()"
                    + ("" if still else "; not on signed normal inputs, which verification adds: an identity "
                                        "kernel fails there"),
                    note=not still)
    return findings, forward_ms, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
