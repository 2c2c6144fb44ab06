"""The problem and the candidate as the kgym worker loads them (module
constants, overrides, precision, the candidate's import and its failures),
and the worker's one-shot commands on a problem: `probe` (what the run's
reference probe records) and `lint` (kgym lint). Part of the worker
(kgym_worker.py); standard library and torch only."""

import ast
import importlib.util
import json
import os
import sys
import time
import types

import kgym_worker_size
from kgym_worker_common import WorkerError, exception_line, log, traceback_tail
from kgym_worker_devices import BACKENDS, describe, dtype_name
from kgym_worker_lint import lint_problem


# ---------------------------------------------------------------- loading


def parse_overrides(items):
    overrides = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not kgym_worker_size.is_size_key(name):
            raise WorkerError("usage", f"bad override '{item}': expected NAME=INTEGER (or NAME[INDEX]=INTEGER)")
        try:
            overrides[name] = int(value)
        except ValueError:
            raise WorkerError("usage", f"bad override '{item}': value is not an integer")
    return overrides


PRECISIONS = ("float32", "float16", "bfloat16")


def at_precision(value, dtype):
    """`value` with its floating tensors (in lists, tuples and dicts too)
    cast to `dtype`; integer and bool tensors stay as they are."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(at_precision(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: at_precision(v, dtype) for k, v in value.items()}
    return value


def apply_precision(module, precision):
    """problem.precision: the problem's floating inputs and its Model's
    floating parameters and buffers in `precision` (docs/config.md)."""
    if not precision or precision == "as_written":
        return module
    import torch

    if precision not in PRECISIONS:
        raise WorkerError("usage", f"unknown precision '{precision}': expected one of {', '.join(PRECISIONS)}")
    dtype = getattr(torch, precision)
    written_inputs, written_model = module.get_inputs, module.Model

    def get_inputs():
        return at_precision(list(written_inputs()), dtype)

    written_init = written_model.__init__

    # The class itself is patched, not replaced: problem files call
    # `super(Model, self).__init__()`, which must still find the original.
    def __init__(self, *args, **kwargs):
        written_init(self, *args, **kwargs)
        self.to(dtype)  # floating parameters and buffers only

    written_model.__init__ = __init__
    module.get_inputs = get_inputs
    module.kgym_precision = precision
    return module


def load_problem(path, overrides, precision=None):
    """Imports the problem file as a fresh module with overrides applied, at
    `precision` (None or "as_written": as the file says)."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            source = f.read()
        tree = ast.parse(source, filename=path)
    except (OSError, SyntaxError) as exc:
        raise WorkerError("reference", f"cannot read problem {path}: {exception_line(exc)}")
    tree = kgym_worker_size.patch_constants(tree, overrides, log, path)
    module = types.ModuleType("kgym_problem")
    module.__file__ = path
    sys.modules["kgym_problem"] = module
    try:
        exec(compile(tree, path, "exec"), module.__dict__)
    except Exception as exc:
        raise WorkerError("reference", f"problem import failed: {exception_line(exc)}", traceback_tail(exc))
    missing = [name for name in ("Model", "get_inputs", "get_init_inputs") if not hasattr(module, name)]
    if missing:
        raise WorkerError("reference", f"problem {path} defines no {', '.join(missing)}")
    return apply_precision(module, precision)


def module_constants(module):
    """The module's int constants, and the int elements of its tuple and
    list constants (keyed `NAME[INDEX]`, as overrides name them)."""
    constants = {}
    for name, value in vars(module).items():
        if name.startswith("_"):
            continue
        if isinstance(value, int) and not isinstance(value, bool):
            constants[name] = value
        elif isinstance(value, (tuple, list)) and len(value) <= 8:
            for i, element in enumerate(value):
                if isinstance(element, int) and not isinstance(element, bool):
                    constants[f"{name}[{i}]"] = element
    return constants


def problem_size_keys(path):
    """The problem's size constants (kgym_worker_size: the literals that feed
    its inputs, at least MIN_SIZE), which both problem.size and the held-out
    shape scale."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            return sorted(kgym_worker_size.size_constants(ast.parse(f.read())))
    except (OSError, SyntaxError):
        return []


def declared_cases(module):
    """The problem's module-level CASES: a list of {NAME: int} constant
    overrides, each one more shape to verify; [] when absent or malformed."""
    cases = getattr(module, "CASES", None)
    if not isinstance(cases, (list, tuple)):
        return []
    return [
        {name: value for name, value in case.items() if isinstance(name, str) and isinstance(value, int)}
        for case in cases
        if isinstance(case, dict)
    ]


def load_candidate(path):
    """Imports the candidate file; builds of load_inline extensions happen here."""
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)
    # The candidate is loaded as a package whose path is its own directory
    # (its sibling sources were copied there with it), so a bridge file may
    # import its helpers relatively (`from .kernel_impl import f`, found as
    # kgym_candidate.kernel_impl) as well as plainly (`import kernel_impl`).
    try:
        spec = importlib.util.spec_from_file_location("kgym_candidate", path, submodule_search_locations=[directory])
        module = importlib.util.module_from_spec(spec)
        sys.modules["kgym_candidate"] = module
        spec.loader.exec_module(module)
    except Exception as exc:
        raise classify_import_failure(exc)
    if not hasattr(module, "ModelNew"):
        raise WorkerError("missing", f"candidate {os.path.basename(path)} defines no class ModelNew")
    return module


def classify_import_failure(exc):
    text = str(exc)
    tail = traceback_tail(exc)
    if "Error building extension" in text or "cpp_extension" in tail:
        error_lines = [line.strip() for line in text.splitlines() if "error" in line.lower()]
        compiler_lines = [line for line in error_lines if not line.startswith("Error building")]
        summary = " | ".join((compiler_lines or error_lines)[-3:]) or exception_line(exc)
        return WorkerError("compile", summary, "\n".join(text.splitlines()[-40:]))
    return WorkerError("import", exception_line(exc), tail)


# ---------------------------------------------------------------- probe


def solved_overrides(args):
    """The request's overrides, plus the sizes `problem.size: auto` chose
    when the request gives a budget; and the solver's record (or None)."""
    overrides = parse_overrides(args.override)
    if not getattr(args, "size_max_bytes", None):
        return overrides, None
    try:
        with open(args.problem, "r", encoding="utf-8") as f:
            source = f.read()
        precision = getattr(args, "precision", None)
        as_written = None
        if precision and precision != "as_written":
            as_written = (precision, lambda o: load_problem(args.problem, o, None))
        solved = kgym_worker_size.solve_sizes(
            source, lambda o: load_problem(args.problem, o, precision), overrides, args.size_max_bytes,
            args.size_max_forward_ms, args.seed, log, as_written)
    except WorkerError:
        raise
    except Exception as exc:
        raise WorkerError("reference", exception_line(exc), traceback_tail(exc))
    log(f"sizes: {solved['sizes'] or 'as written'} (factor {solved['factor']}, {solved['bytes']} bytes, "
        f"forward {solved['forward_ms']} ms{'' if solved['fits'] else ', over the budget'})")
    record = dict(solved, policy="auto", overrides=overrides)
    merged = dict(solved["sizes"])
    merged.update(overrides)
    return merged, record


def plain_data(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(plain_data(v) for v in value)
    return False


def probe(args):
    import torch

    try:
        BACKENDS["cpu"](args.threads, None)
        overrides, sizes = solved_overrides(args)
        problem = load_problem(args.problem, overrides, args.precision)
        torch.manual_seed(args.seed)
        init_inputs = list(problem.get_init_inputs())
        model = problem.Model(*init_inputs)
        model.eval()
        torch.manual_seed(args.seed)
        inputs = list(problem.get_inputs())
        start = time.perf_counter()
        with torch.no_grad():
            output = model(*inputs)
        forward_ms = (time.perf_counter() - start) * 1e3
        outputs = output if isinstance(output, (list, tuple)) else [output]
        document = {
            "init_inputs": [describe(v) for v in init_inputs],
            # As values when they are plain data: the build stage builds
            # ModelNew with them, for the kernels a candidate builds there.
            "init_values": init_inputs if plain_data(init_inputs) else None,
            "inputs": [describe(v) for v in inputs],
            "outputs": [describe(v) for v in outputs],
            "constants": module_constants(problem),
            "parameters": [
                f"{name}: {dtype_name(t.dtype)}{list(t.shape)}" for name, t in model.state_dict().items()
            ],
            "forward_ms": forward_ms,
            "torch_version": torch.__version__,
        }
        if sizes is not None:
            document["sizes"] = sizes
        status = 0
    except WorkerError as exc:
        document, status = {"error": exc.message}, 1
    except Exception as exc:
        log(traceback_tail(exc, 60))
        document, status = {"error": exception_line(exc)}, 1
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1)
    os.replace(tmp, args.out)
    return status


# ---------------------------------------------------------------- lint


def lint(args):
    import torch

    try:
        BACKENDS["cpu"](args.threads, None)
        overrides, sizes = solved_overrides(args)
        problem = load_problem(args.problem, overrides, args.precision)
        findings, forward_ms, peak_mb = lint_problem(problem, args.seed, (args.atol, args.rtol))
        document = {"findings": findings, "forward_ms": forward_ms, "peak_rss_mb": peak_mb,
                    "torch_version": torch.__version__}
        if sizes is not None:
            document["sizes"] = sizes
    except WorkerError as exc:
        document = {"findings": [{"kind": "reference_fails", "evidence": exc.message}]}
    except Exception as exc:
        log(traceback_tail(exc, 60))
        document = {"findings": [{"kind": "reference_fails", "evidence": exception_line(exc)}]}
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1)
    os.replace(tmp, args.out)
    return 0
