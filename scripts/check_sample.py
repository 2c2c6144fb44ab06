#!/usr/bin/python3
"""Quick self-check of the bundled sample set (data/sample).

For every problem <level>/<N>_<Name>.py it builds the reference Model, times its
forward, and, when data/sample/solutions/<level>/<N>_<Name>/model_new.py exists,
builds ModelNew (loading the reference's state_dict, strict=False), compares the
outputs on a few seeds with torch.allclose(rtol=1e-3, atol=1e-4) and times the
candidate forward.

The first line of each solution's docstring says what it is and so what this
script expects of it:

    "Honest ..."                 -> OK
    "Calls the library op ..."   -> OK   (the harness's anti-cheat layer flags it)
    "Deliberately wrong ..."     -> MISMATCH
    "Deliberately crashes ..."   -> CRASH
    "Deliberately hangs ..."     -> TIMEOUT

Ordinary solutions run inside this process. Solutions whose docstring mentions
a crash or a hang run in a child process (this script with --child) under a
timeout, unless --skip-crash / --skip-hang leave them out. The real harness
isolates every candidate; this script is only a fast check for people editing
the sample set.

Run with the Python that has torch, e.g.:
    /usr/bin/python3 scripts/check_sample.py --skip-hang
Exit status: 0 when every result is the expected one, 1 otherwise, 2 on bad usage.
"""

import argparse
import ast
import importlib.util
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

RTOL = 1e-3
ATOL = 1e-4
# max_rel = max |cand - ref| / (|ref| + ATOL / RTOL): on the same scale as allclose, so
# max_rel <= RTOL exactly when torch.allclose(rtol=RTOL, atol=ATOL) passes.
REL_FLOOR = ATOL / RTOL
MODEL_SEED = 1234
SLOW_REFERENCE_MS = 100.0
CHILD_MARKER = "KGYM_CHECK_RESULT "

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SAMPLE_DIR = REPO_ROOT / "data" / "sample"
PROBLEM_NAME = re.compile(r"^(\d+)_(\w+)\.py$")


# ----------------------------------------------------------------------------- solution kinds

def solution_docstring(path):
    """First line of the module docstring, read without importing the file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    doc = ast.get_docstring(tree) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def solution_kind(first_line):
    low = first_line.lower()
    if low.startswith("deliberately wrong"):
        return "wrong", "MISMATCH"
    if low.startswith("deliberately crash") or "crash" in low or "segfault" in low:
        return "crash", "CRASH"
    if low.startswith("deliberately hang") or re.search(r"\bhang", low):
        return "hang", "TIMEOUT"
    if low.startswith("calls the library op") or low.startswith("calls torch"):
        return "calls-torch", "OK"
    if low.startswith("honest"):
        return "honest", "OK"
    return "unlabelled", "OK"


# ----------------------------------------------------------------------------- loading

def load_module(path, unique_name):
    spec = importlib.util.spec_from_file_location(unique_name, str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[unique_name] = module
    spec.loader.exec_module(module)
    return module


def list_problems(level_dir):
    found = []
    for path in level_dir.iterdir():
        match = PROBLEM_NAME.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return [path for _, path in sorted(found)]


# ----------------------------------------------------------------------------- measuring

def clone_all(values):
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def median_ms(model, inputs, repeats):
    with torch.no_grad():
        for _ in range(2):
            model(*clone_all(inputs))
        samples = []
        for _ in range(repeats):
            args = clone_all(inputs)
            start = time.perf_counter_ns()
            model(*args)
            samples.append((time.perf_counter_ns() - start) / 1e6)
    return statistics.median(samples)


def compare(ref, out):
    """Returns (ok, max_abs, max_rel, note)."""
    if not isinstance(out, torch.Tensor):
        return False, None, None, "candidate returned %s, not a tensor" % type(out).__name__
    if out.shape != ref.shape:
        return False, None, None, "shape %s, expected %s" % (tuple(out.shape), tuple(ref.shape))
    if out.dtype != ref.dtype:
        return False, None, None, "dtype %s, expected %s" % (out.dtype, ref.dtype)
    diff = (out.double() - ref.double()).abs()
    if diff.numel() == 0:
        return True, 0.0, 0.0, ""
    max_abs = diff.max().item()
    max_rel = (diff / (ref.double().abs() + REL_FLOOR)).max().item()
    ok = torch.allclose(out, ref, rtol=RTOL, atol=ATOL)
    return ok, max_abs, max_rel, ""


def check_case(problem_path, solution_path, seeds, repeats):
    """Runs one problem (and its solution, if given) in this process; returns a result dict."""
    result = {"ref_ms": None, "cand_ms": None, "load_s": None, "max_abs": None,
              "max_rel": None, "status": "REF", "note": ""}
    tag = re.sub(r"\W", "_", problem_path.stem)
    problem = load_module(problem_path, "kgym_sample_problem_" + tag)
    init_inputs = problem.get_init_inputs()
    torch.manual_seed(MODEL_SEED)
    reference = problem.Model(*init_inputs).eval()

    torch.manual_seed(seeds[0])
    first_inputs = problem.get_inputs()
    torch.manual_seed(seeds[0] + 1)
    other_inputs = problem.get_inputs()
    notes = []
    if all(torch.equal(a, b) for a, b in zip(first_inputs, other_inputs)
           if isinstance(a, torch.Tensor)):
        notes.append("get_inputs ignores the seed")
    result["ref_ms"] = median_ms(reference, first_inputs, repeats)
    if result["ref_ms"] > SLOW_REFERENCE_MS:
        notes.append("reference slower than %.0f ms" % SLOW_REFERENCE_MS)

    if solution_path is None:
        result["note"] = "; ".join(notes)
        return result

    try:
        start = time.perf_counter()
        solution = load_module(solution_path, "kgym_sample_solution_" + tag)
        result["load_s"] = time.perf_counter() - start
        torch.manual_seed(MODEL_SEED)
        candidate = solution.ModelNew(*init_inputs).eval()
        load_report = candidate.load_state_dict(reference.state_dict(), strict=False)
        if load_report.unexpected_keys:
            notes.append("ModelNew lacks " + ",".join(load_report.unexpected_keys))
    except Exception as error:  # a broken candidate is an outcome here, not a script failure
        result["status"] = "ERROR"
        result["note"] = "building ModelNew: %s: %s" % (type(error).__name__, error)
        return result

    worst_abs, worst_rel, status = 0.0, 0.0, "OK"
    for seed in seeds:
        torch.manual_seed(seed)
        inputs = problem.get_inputs()
        try:
            with torch.no_grad():
                expected = reference(*clone_all(inputs))
                actual = candidate(*clone_all(inputs))
        except Exception as error:
            result["status"] = "ERROR"
            result["note"] = "seed %d: %s: %s" % (seed, type(error).__name__, error)
            return result
        ok, max_abs, max_rel, why = compare(expected, actual)
        if why:
            notes.append("seed %d: %s" % (seed, why))
        if max_abs is not None:
            worst_abs, worst_rel = max(worst_abs, max_abs), max(worst_rel, max_rel)
        if not ok:
            status = "MISMATCH"
    result.update(status=status, max_abs=worst_abs, max_rel=worst_rel)
    result["cand_ms"] = median_ms(candidate, first_inputs, repeats)
    result["note"] = "; ".join(notes)
    return result


def check_case_isolated(problem_path, solution_path, seeds, repeats, timeout_s):
    """Runs check_case in a child process so a crash or a hang cannot take this script down."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child",
               str(problem_path), str(solution_path),
               "--seeds", ",".join(str(s) for s in seeds), "--repeat", str(repeats)]
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    result = {"ref_ms": None, "cand_ms": None, "load_s": None, "max_abs": None,
              "max_rel": None, "status": "ERROR", "note": ""}
    try:
        stdout, stderr = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        result.update(status="TIMEOUT", note="killed after %d s" % timeout_s)
        return result
    for line in stdout.splitlines():
        if line.startswith(CHILD_MARKER):
            result.update(json.loads(line[len(CHILD_MARKER):]))
            return result
    if child.returncode < 0:
        name = signal.Signals(-child.returncode).name
        result.update(status="CRASH", note="child killed by %s" % name)
    else:
        tail = (stderr.strip().splitlines() or ["(no output)"])[-1]
        result["note"] = "child exited %d: %s" % (child.returncode, tail[:120])
    return result


# ----------------------------------------------------------------------------- report

def fmt(value, pattern):
    return "-" if value is None else pattern % value


def main(argv):
    parser = argparse.ArgumentParser(
        description="Self-check of the kgym sample set: every honest solution passes, "
                    "every deliberately broken one fails the way its docstring says.")
    parser.add_argument("--sample-dir", type=Path, default=DEFAULT_SAMPLE_DIR)
    parser.add_argument("--level", default="level1")
    parser.add_argument("--only", action="append", default=[],
                        help="check only problems whose file name contains this (repeatable)")
    parser.add_argument("--skip-hang", action="store_true",
                        help="skip solutions whose docstring says they hang")
    parser.add_argument("--skip-crash", action="store_true",
                        help="skip solutions whose docstring says they crash")
    parser.add_argument("--problems-only", action="store_true",
                        help="time the reference models only, load no solution")
    parser.add_argument("--timeout", type=int, default=120,
                        help="seconds allowed to an isolated (crash/hang) solution, compile included")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated input seeds")
    parser.add_argument("--repeat", type=int, default=20, help="timed forward calls per model")
    parser.add_argument("--child", nargs=2, metavar=("PROBLEM", "SOLUTION"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        parser.error("--seeds must be comma-separated integers, got %r" % args.seeds)
    if not seeds:
        parser.error("--seeds must name at least one seed")

    if "TORCH_EXTENSIONS_DIR" not in os.environ:
        # A fresh build directory per run: no stale extension from an earlier edit is reused.
        build_dir = tempfile.mkdtemp(prefix="kgym_sample_ext_")
        os.environ["TORCH_EXTENSIONS_DIR"] = build_dir
    else:
        build_dir = None

    if args.child:
        result = check_case(Path(args.child[0]), Path(args.child[1]), seeds, args.repeat)
        print(CHILD_MARKER + json.dumps(result), flush=True)
        return 0

    level_dir = args.sample_dir / args.level
    if not level_dir.is_dir():
        parser.error("no problem directory %s" % level_dir)
    problems = [p for p in list_problems(level_dir)
                if not args.only or any(s in p.name for s in args.only)]
    if not problems:
        parser.error("no problem matches in %s" % level_dir)

    print("torch %s, %d intra-op thread(s), rtol=%g atol=%g, seeds %s, extensions in %s"
          % (torch.__version__, torch.get_num_threads(), RTOL, ATOL, seeds,
             os.environ["TORCH_EXTENSIONS_DIR"]))
    header = "%-22s %-12s %8s %8s %6s %7s %9s %9s  %-9s %-9s %s" % (
        "case", "solution", "ref_ms", "cand_ms", "ratio", "load_s", "max_abs", "max_rel",
        "status", "expected", "note")
    print(header)
    print("-" * len(header))

    unexpected, total_load = 0, 0.0
    for problem_path in problems:
        case_id = "%s/%s" % (args.level, problem_path.stem)
        solution_path = args.sample_dir / "solutions" / args.level / problem_path.stem / "model_new.py"
        kind, expected = "-", "REF"
        if args.problems_only or not solution_path.is_file():
            solution_path = None
        else:
            kind, expected = solution_kind(solution_docstring(solution_path))

        if kind == "hang" and args.skip_hang or kind == "crash" and args.skip_crash:
            print("%-22s %-12s %8s %8s %6s %7s %9s %9s  %-9s %-9s %s" % (
                case_id, kind, "-", "-", "-", "-", "-", "-", "SKIP", expected, "--skip-" + kind))
            continue
        if kind in ("hang", "crash"):
            result = check_case_isolated(problem_path, solution_path, seeds, args.repeat,
                                         args.timeout)
        else:
            try:
                result = check_case(problem_path, solution_path, seeds, args.repeat)
            except Exception as error:  # the problem file itself is broken
                result = {"ref_ms": None, "cand_ms": None, "load_s": None, "max_abs": None,
                          "max_rel": None, "status": "ERROR",
                          "note": "reference: %s: %s" % (type(error).__name__, error)}
        ratio = None
        if result["ref_ms"] and result["cand_ms"]:
            ratio = result["cand_ms"] / result["ref_ms"]
        total_load += result["load_s"] or 0.0
        if result["status"] != expected:
            unexpected += 1
        print("%-22s %-12s %8s %8s %6s %7s %9s %9s  %-9s %-9s %s" % (
            case_id, kind, fmt(result["ref_ms"], "%.3f"), fmt(result["cand_ms"], "%.3f"),
            fmt(ratio, "%.2fx"), fmt(result["load_s"], "%.1f"), fmt(result["max_abs"], "%.1e"),
            fmt(result["max_rel"], "%.1e"), result["status"], expected, result["note"]),
            flush=True)

    print("-" * len(header))
    print("%d case(s), %d not as expected; solution load (compile) time %.1f s"
          % (len(problems), unexpected, total_load))
    print("ratio = candidate ms / reference ms (lower is faster); "
          "max_rel = max |cand-ref| / (|ref| + %g), passes allclose iff <= %g" % (REL_FLOOR, RTOL))
    if build_dir:
        shutil.rmtree(build_dir, ignore_errors=True)
    return 0 if unexpected == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
