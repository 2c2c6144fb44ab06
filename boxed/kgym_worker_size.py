"""Problem sizes for the kgym worker (docs/config.md "Problem sizes").

KernelBench problems are sized for GPUs (a level-1 input can be 6 GB). A
problem's sizes are its module-level integer constants: `N = 4096`,
`depth, height, width = 24, 48, 48`, and the integer elements of a tuple or
list literal (`shape = (128, 4096)`, keyed `shape[1]`). The constants that
feed `get_inputs()` / `get_init_inputs()` (directly or through other
module-level assignments) and are at least MIN_SIZE are sizes; smaller ones
(kernel sizes, strides, small channel counts, flags) are structure and
never change. An override rewrites the literal itself, so every relation
the file states (`dim2 = dim1 * 2`) still holds.

`solve_sizes` shrinks every size by one common factor 2**-k (powers of two
keep the divisibility the file's sizes have, e.g. heads dividing a width),
probing the reference from the smallest sizes up, until inputs + outputs +
parameters fit `max_bytes` and one forward on one core fits
`max_forward_ms`. It never allocates the problem at its written size unless
the prediction from the smaller steps says that fits. Standard library and
torch only.
"""

import ast
import re
import time

MIN_SIZE = 8
_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?$")


def is_size_key(key):
    """`NAME` or `NAME[INDEX]`."""
    return bool(_KEY.match(key))


def _int_value(node):
    """The int a constant expression without names evaluates to
    (`4096`, `16384 * 2`, `2 ** 20`), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_value(node.operand)
        return -inner if inner is not None else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Pow)):
        left, right = _int_value(node.left), _int_value(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Pow):
            return left ** right if 0 <= right <= 64 and abs(left) < 2 ** 16 else None
        if isinstance(node.op, ast.FloorDiv):
            return left // right if right else None
        return {ast.Add: left + right, ast.Sub: left - right, ast.Mult: left * right}[type(node.op)]
    return None


def _literal_sites(tree):
    """Every rewritable int at the module's top level, in file order:
    (key, value, setter) where setter(new_value) rewrites the literal."""
    sites = []

    def replace_in(container, index, old):
        def setter(value):
            container[index] = ast.copy_location(ast.Constant(value=value), old)
        return setter

    def set_value(node):
        def setter(value):
            node.value = ast.copy_location(ast.Constant(value=value), node.value)
        return setter

    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        if isinstance(target, ast.Name):
            number = _int_value(value)
            if number is not None:
                sites.append((target.id, number, set_value(node)))
            elif isinstance(value, (ast.Tuple, ast.List)):
                for i, element in enumerate(value.elts):
                    number = _int_value(element)
                    if number is not None:
                        sites.append((f"{target.id}[{i}]", number, replace_in(value.elts, i, element)))
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for i, (name, element) in enumerate(zip(target.elts, value.elts)):
                number = _int_value(element)
                if isinstance(name, ast.Name) and number is not None:
                    sites.append((name.id, number, replace_in(value.elts, i, element)))
    return sites


def patch_constants(tree, overrides, log=None, path=""):
    """Rewrites the literals named by `overrides` ({key: int}; keys as in
    `_literal_sites`) so that every later use sees the new value. A key the
    problem does not assign is skipped (and logged): one set of overrides
    serves a whole campaign, and problems name their sizes differently."""
    remaining = dict(overrides)
    for key, _, setter in _literal_sites(tree):
        if key in remaining:
            setter(remaining.pop(key))
    if remaining and log:
        log(f"overrides not used by {path} (no top-level assignment): {', '.join(sorted(remaining))}")
    return tree


def _names_in(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def feeding_names(tree):
    """The module-level names that get_inputs() and get_init_inputs() read,
    directly or through other top-level assignments."""
    wanted = set()
    assigned = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in ("get_inputs", "get_init_inputs"):
            wanted |= _names_in(node)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name in _names_in(target):
                    assigned.setdefault(name, set()).update(_names_in(node.value))
    frontier = list(wanted)
    while frontier:
        for name in assigned.get(frontier.pop(), ()):
            if name not in wanted:
                wanted.add(name)
                frontier.append(name)
    return wanted


def size_constants(tree):
    """{key: value} of the sizes: the literals that feed the inputs, at
    least MIN_SIZE."""
    feeding = feeding_names(tree)
    sizes = {}
    for key, value, _ in _literal_sites(tree):
        if _KEY.match(key).group(1) in feeding and value >= MIN_SIZE:
            sizes[key] = value
    return sizes


def scaled(sizes, k):
    """Every size times 2**-k, rounded, never below MIN_SIZE."""
    return {key: max(MIN_SIZE, int(round(value / 2 ** k))) for key, value in sizes.items()}


def _tensor_bytes(values):
    import torch

    total = 0
    stack = list(values)
    while stack:
        v = stack.pop()
        if isinstance(v, torch.Tensor):
            total += v.numel() * v.element_size()
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return total


def measure(load, overrides, seed):
    """Loads the problem with `overrides`, builds the model and runs one
    forward on one core. Returns (bytes, forward_ms): inputs + outputs +
    parameters and buffers; the forward's time is the best of up to three
    (the first call pays for lazy set-up)."""
    import torch

    problem = load(overrides)
    torch.manual_seed(seed)
    init_inputs = list(problem.get_init_inputs())
    model = problem.Model(*init_inputs)
    model.eval()
    torch.manual_seed(seed)
    inputs = list(problem.get_inputs())
    held = _tensor_bytes(inputs) + _tensor_bytes(list(model.parameters()) + list(model.buffers()))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        best = None
        out_bytes = 0
        for _ in range(3):
            start = time.perf_counter()
            with torch.no_grad():
                output = model(*inputs)
            elapsed = (time.perf_counter() - start) * 1e3
            out_bytes = _tensor_bytes([output])
            del output
            best = elapsed if best is None else min(best, elapsed)
            if elapsed > 200:  # a slow forward is measured once
                break
    finally:
        torch.set_num_threads(threads)
    return held + out_bytes, best


def solve_sizes(source, load, base_overrides, max_bytes, max_forward_ms, seed=0, log=None, as_written=None):
    """The sizes to run the problem at: a dict with `sizes` ({key: value},
    the overrides to apply on top of `base_overrides`, which always win),
    `original` ({key: value} as written), `factor` (2**-k), `bytes` and
    `forward_ms` at those sizes, and `fits` (False when even the smallest
    sizes that run exceed the budget, or none ran).

    `load(overrides)` imports the problem with overrides applied.
    `as_written`: (precision, load) at the problem's own precision, when
    `load` casts to another: a problem that runs at no size is tried there
    once, so that a kernel this torch lacks at that precision (whose error
    need not say so: a bfloat16 ConvTranspose3d on the CPU complains of
    channels) is named for what it is."""
    tree = ast.parse(source)
    original = {key: value for key, value in size_constants(tree).items() if key not in base_overrides}
    result = {"original": original, "sizes": {}, "factor": 1.0, "bytes": None, "forward_ms": None, "fits": True}
    if not original:
        return result
    top = max(original.values())
    k_tiny = 0
    while top / 2 ** k_tiny > MIN_SIZE:
        k_tiny += 1
    chosen = None  # (k, bytes, ms) of the largest sizes that fit
    smallest_run = None  # (k, bytes, ms) of the smallest sizes that ran
    last = None  # (bytes, ms) of the previous step that ran
    growth = (1.0, 1.0)
    errors = []
    last_error = None
    gap = 0  # steps since the last that ran
    for k in range(k_tiny, -1, -1):
        if last is not None:
            # The next step costs about what the last one grew by, again
            # (once more for each step between that failed).
            predicted = (last[0] * growth[0] ** (gap + 1), last[1] * growth[1] ** (gap + 1))
            if predicted[0] > 2 * max_bytes or predicted[1] > 2 * max_forward_ms:
                break
        overrides = dict(base_overrides)
        overrides.update(scaled(original, k))
        try:
            nbytes, ms = measure(load, overrides, seed)
        except Exception as exc:
            # A size the problem does not accept (sizes whose ratio it
            # checks, e.g. a width its heads must divide, come right at
            # another step) or memory: try the next.
            last_error = exc
            errors.append(f"2**-{k}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            gap += 1
            continue
        if log:
            log(f"size 2**-{k}: {nbytes} bytes, forward {ms:.3f} ms")
        if last is not None:
            growth = (max(1.0, (nbytes / max(last[0], 1)) ** (1 / (gap + 1))),
                      max(1.0, (ms / max(last[1], 1e-3)) ** (1 / (gap + 1))))
        last = (nbytes, ms)
        gap = 0
        if smallest_run is None:
            smallest_run = (k, nbytes, ms)
        if nbytes <= max_bytes and ms <= max_forward_ms:
            chosen = (k, nbytes, ms)
        else:
            break
    pick = chosen or smallest_run
    if pick is None:
        # The same failure at every size is the problem's own (a missing op,
        # a missing module): report it as it is.
        if last_error is not None and len({e.split(": ", 1)[1] for e in errors}) == 1:
            raise last_error
        tried = "; ".join(errors[-2:])
        if as_written is not None:
            precision, load_as_written = as_written
            # From the smallest sizes up (the smallest may be too small for
            # the problem's own shapes), never the sizes as written.
            for k in range(k_tiny, max(0, k_tiny - 6), -1):
                try:
                    measure(load_as_written, dict(base_overrides, **scaled(original, k)), seed)
                except Exception:
                    continue
                raise RuntimeError(
                    f"the reference runs at none of the sizes tried at {precision}, but runs at its own precision: "
                    f"this torch lacks a {precision} kernel on this device for one of its ops ({tried}); choose "
                    f"another problem.precision (--precision)")
        raise RuntimeError("the reference runs at none of the sizes tried (" + tried + ")")
    k, nbytes, ms = pick
    result.update(sizes={key: value for key, value in scaled(original, k).items() if value != original[key]},
                  factor=2.0 ** -k, bytes=nbytes, forward_ms=ms, fits=chosen is not None)
    return result
