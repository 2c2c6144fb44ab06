"""Device backends (cpu, cuda, npu) and tensor (de)serialization for the
kgym worker. Standard library and torch only; torch is imported lazily."""

import ctypes
import io
import os
import time

from kgym_worker_common import WorkerError

# The worker's own clock, taken when this module is imported, before any
# candidate code runs: a candidate that later replaces time.perf_counter_ns
# (from Python or, through pybind11, from C++) does not change what the
# timers read. kgym_worker_runtime.ClockGuard notices the replacement.
now_ns = time.perf_counter_ns


def parse_cores(spec):
    if not spec or spec == "all":
        return None
    cores = []
    for part in spec.split(","):
        lo, sep, hi = part.partition("-")
        cores.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
    return cores


def map_tensors(obj, fn):
    import torch

    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(map_tensors(item, fn) for item in obj)
    if isinstance(obj, dict):
        return {key: map_tensors(value, fn) for key, value in obj.items()}
    return obj


def last_level_cache_bytes():
    """Size of the largest CPU cache cpu0 reports, or None when unreadable."""
    largest = None
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = os.listdir(base)
    except OSError:
        return None
    for entry in entries:
        try:
            with open(os.path.join(base, entry, "size")) as f:
                text = f.read().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
        digits = text[:-1] if scale != 1 else text
        if digits.isdigit():
            largest = max(largest or 0, int(digits) * scale)
    return largest


# glibc mallopt parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_MAX = 32 << 20  # the largest value glibc accepts on 64-bit


def steady_allocator():
    """Fixes glibc's malloc thresholds so that every worker allocates alike.

    By default glibc returns freed memory at the top of the heap to the
    kernel and serves large blocks with fresh mmaps, with thresholds that
    move with the process's history. A timed call whose inputs were just
    cloned and whose outputs were just freed then page-faults its buffers
    back in: hundreds of faults per call for a 1 MB elementwise kernel, more
    than its compute, and a different amount in two processes with different
    histories. With the thresholds fixed, blocks up to 32 MB come from a heap
    that is never trimmed, so after warm-up a call reuses resident memory.
    Returns whether it applied (False off glibc)."""
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    trimmed = mallopt(M_TRIM_THRESHOLD, 2**31 - 1)
    mapped = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)
    return bool(trimmed and mapped)


HEAP_PRIME_CHUNK = 16 << 20  # below the mmap threshold: from the heap


def prime_heap(nbytes):
    """Grows the (never trimmed) heap by about `nbytes` of resident pages:
    blocks below the mmap threshold, each written once, then freed. A new
    worker's heap otherwise grows during its first timed calls, which then
    page-fault their buffers in: 6,144 faults and 20.6 ms instead of 13.2
    for the first calls of a 25 MB Softplus (getrusage), while the workers
    that had run longer did not. With libc's own malloc and memset, so that
    the outside sampler counts none of it as torch's library time. Returns
    the bytes primed."""
    try:
        libc = ctypes.CDLL(None)
        malloc, free, memset = libc.malloc, libc.free, libc.memset
    except (OSError, AttributeError):
        return 0
    malloc.restype = ctypes.c_void_p
    malloc.argtypes = [ctypes.c_size_t]
    free.argtypes = [ctypes.c_void_p]
    memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    blocks, primed = [], 0
    while primed < nbytes:
        size = min(HEAP_PRIME_CHUNK, nbytes - primed)
        block = malloc(size)
        if not block:
            break
        memset(block, 0, size)
        blocks.append(block)
        primed += size
    for block in reversed(blocks):
        free(block)
    return primed


class CpuBackend:
    """Timing on the host: perf_counter_ns around each call.

    Every timed call gets fresh copies of the inputs, made (and, with
    cache_flush, followed by a cache-evicting write) before its timer starts,
    so neither the copy nor the flush is measured. Both roles use this path.
    """

    name = "cpu"

    def __init__(self, threads, cores):
        import torch

        self.torch = torch
        self.steady_allocator = steady_allocator()
        self.heap_primed = 0
        # Where the last call's first output tensor on the host lay (the
        # next call's inputs are placed from it: placed_copies); None
        # before the first.
        self.last_output_ptr = None
        self.flush_buffer = None
        self.flush_value = 0
        self.kept_buffers = {}
        self.cores = parse_cores(cores)
        if self.cores is not None and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, self.cores)
        if threads > 0:
            torch.set_num_threads(threads)

    def prime_heap(self, nbytes):
        """The heap grown once to the most a `time` request asked for
        (prime_heap above); only with the steady allocator, whose heap is
        never trimmed."""
        if self.steady_allocator and nbytes > self.heap_primed:
            prime_heap(nbytes)
            self.heap_primed = nbytes

    def to_device(self, obj):
        return obj

    def module_to_device(self, module):
        return module

    def synchronize(self):
        pass

    def flush_bytes(self):
        # Twice the last-level cache, at least 32 MB.
        return max(2 * (last_level_cache_bytes() or 0), 32 << 20)

    def flush_cache(self):
        if self.flush_buffer is None:
            self.flush_buffer = self.to_device(self.torch.empty(self.flush_bytes() // 4, dtype=self.torch.int32))
        self.flush_value = (self.flush_value + 1) & 0xFF
        self.flush_buffer.fill_(self.flush_value)
        self.synchronize()

    def start_timer(self):
        self.synchronize()
        return now_ns()

    def stop_timer(self, start):
        self.synchronize()
        return now_ns() - start

    def time_calls(self, fn, fresh_inputs, warmup, calls, traced=(), trace=None, flush=False, after_call=None,
                   keep=None):
        """Runs `warmup` untimed then `calls` timed calls; call i (counting the
        untimed ones) is fn(fresh_inputs(i)).

        Calls whose position is in `traced` run under trace() (a context
        manager with `counts`) and count as untimed: their time is the
        tracer's. Every call is timed alike, so the parent can tell the
        time between calls from the time inside them. Returns (per timed
        call nanoseconds, None for a traced one; the untimed calls'
        nanoseconds together; each timed call's output, copied as copy_out
        does; the traced positions' op counts). `after_call`, when given,
        runs after every call, outside its timer (the candidate's lease
        check, boxed/kgym_worker_lease.py). `keep(output, slot)`, when
        given, takes each timed call's output instead of copy_out (the
        `time` op writes it into the batch's sealed output file)."""
        after_call = after_call or (lambda: None)
        traced = set(traced) if trace is not None else set()
        samples, kept, traces, untimed_ns = [], [], [], 0
        for position in range(warmup + calls):
            args = fresh_inputs(position)
            timed = position >= warmup
            if flush and timed:
                self.flush_cache()
            if position in traced:
                tracer = trace()  # None where this torch cannot trace
                start = self.start_timer()
                if tracer is None:
                    output = fn(args)
                else:
                    with tracer:
                        output = fn(args)
                elapsed = self.stop_timer(start)
                traces.append({"position": position, "op_trace": None if tracer is None else dict(tracer.counts)})
            else:
                start = self.start_timer()
                output = fn(args)
                elapsed = self.stop_timer(start)
            if timed and position not in traced:
                samples.append(elapsed)
            else:
                untimed_ns += elapsed
                if timed:
                    samples.append(None)
            self.note_output(output)
            if timed:
                kept.append((keep or self.copy_out)(output, position - warmup))
            del output, args
            after_call()
        return samples, untimed_ns, kept, traces

    def note_output(self, output):
        """Keeps where a call's first output tensor on the host lay
        (last_output_ptr)."""
        for value in flat_values(output):
            if isinstance(value, self.torch.Tensor) and value.device.type == "cpu" and value.numel():
                self.last_output_ptr = value.data_ptr()
                return

    def copy_out(self, output, slot=0):
        """The output's tensors, flattened as flatten_outputs does, copied into
        buffers this backend keeps from batch to batch (one set per timed
        position `slot`); other values as they are.

        Holding the timed output itself would keep its block allocated for
        the rest of the batch, so the calls after it would get other blocks
        than the calls before it: in the fidelity benchmark a reference
        worker that held one output per batch ran up to 5 % slower than one
        that did not. The copy leaves every timed call the same allocations,
        and is taken as soon as the call's timer stopped, so work the call
        left running cannot finish the output later."""
        torch = self.torch
        flat = flat_values(output)
        for index, value in enumerate(flat):
            if isinstance(value, torch.Tensor):
                key = (slot, index, tuple(value.shape), value.dtype, value.device)
                buffer = self.kept_buffers.get(key)
                if buffer is None:
                    buffer = self.kept_buffers[key] = torch.empty(value.shape, dtype=value.dtype, device=value.device)
                buffer.copy_(value.detach())
                flat[index] = buffer
        self.synchronize()
        return flat

    def copy_bandwidth_gbs(self, nbytes=128 << 20, repeats=5):
        """Best copy rate (bytes read + bytes written per ns) of a buffer far
        larger than the caches."""
        torch = self.torch
        src = self.to_device(torch.ones(nbytes // 4, dtype=torch.float32))
        dst = torch.empty_like(src)
        dst.copy_(src)
        best = None
        for _ in range(repeats):
            start = self.start_timer()
            dst.copy_(src)
            elapsed = self.stop_timer(start)
            best = elapsed if best is None else min(best, elapsed)
        return 2 * nbytes / max(best, 1)


class CudaBackend(CpuBackend):
    """Timing with CUDA events recorded on the current stream, plus whatever
    work of the call outlives its end event on other streams.

    Before a timed call the device is synchronised (nothing earlier still
    runs) and the L2 flushed with a 256 MB memset outside the timer. After
    it the end event is recorded on the current stream and waited for; then
    the whole device is synchronised, which also waits for kernels the call
    left on side streams. The time between the two waits, less what an idle
    device-wide synchronise costs, is added to the events' time: a kernel
    launched on another stream that returns before it finishes is timed to
    its end. Outputs are copied only after the device-wide synchronise."""

    name = "cuda"
    idle_sync_ns = None

    def __init__(self, threads, cores):
        import torch

        if not torch.cuda.is_available():
            raise WorkerError("unsupported", "backend cuda: torch.cuda.is_available() is False on this machine")
        super().__init__(threads, cores)

    def note_output(self, output):
        """A device's inputs are its own copies: nothing is placed."""

    def to_device(self, obj):
        return map_tensors(obj, lambda t: t.cuda())

    def module_to_device(self, module):
        return module.cuda()

    def synchronize(self):
        self.torch.cuda.synchronize()

    def flush_bytes(self):
        return 256 << 20

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def idle_sync(self):
        """What waiting for an event and then the whole device costs when
        nothing runs: the least of a few tries, measured once."""
        if self.idle_sync_ns is None:
            tries = []
            for _ in range(20):
                end = self.event()
                end.record()
                end.synchronize()
                start = now_ns()
                self.synchronize()
                tries.append(now_ns() - start)
            self.idle_sync_ns = min(tries)
        return self.idle_sync_ns

    def start_timer(self):
        self.synchronize()
        start, end = self.event(), self.event()
        start.record()
        return start, end

    def stop_timer(self, timer):
        start, end = timer
        end.record()
        end.synchronize()  # the current stream's work
        current_done = now_ns()
        self.synchronize()  # every stream's
        waited = now_ns() - current_done
        return int(start.elapsed_time(end) * 1e6) + max(0, waited - self.idle_sync())


class NpuBackend(CudaBackend):
    """Timing with torch_npu events; same structure as CUDA."""

    name = "npu"

    def __init__(self, threads, cores):
        try:
            import torch_npu  # noqa: F401
        except ImportError as exc:
            raise WorkerError("unsupported", f"backend npu needs torch_npu, which cannot be imported: {exc}")
        CpuBackend.__init__(self, threads, cores)

    def to_device(self, obj):
        return map_tensors(obj, lambda t: t.npu())

    def module_to_device(self, module):
        return module.npu()

    def synchronize(self):
        self.torch.npu.synchronize()

    def event(self):
        return self.torch.npu.Event(enable_timing=True)


BACKENDS = {"cpu": CpuBackend, "cuda": CudaBackend, "npu": NpuBackend}


# ---------------------------------------------------------------- tensors


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def describe(value):
    import torch

    if isinstance(value, torch.Tensor):
        return {"kind": "tensor", "dtype": dtype_name(value.dtype), "shape": list(value.shape), "repr": ""}
    if isinstance(value, bool):
        kind = "bool"
    elif isinstance(value, int):
        kind = "int"
    elif isinstance(value, float):
        kind = "float"
    else:
        kind = "other"
    return {"kind": kind, "dtype": "", "shape": [], "repr": repr(value)[:80]}


def flat_values(output):
    """The values of a model output in order, lists and tuples flattened.

    Without a nested recursive function: one refers to itself through its
    closure, a cycle that kept the list it filled (and so every call's
    output) alive until Python's cyclic collector ran. The timed calls then
    allocated past a growing heap instead of reusing freed blocks, and
    page-faulted their outputs in: 4x slower for a 2 MB output, in regimes
    that came and went with the collector."""
    flat, pending = [], [output]
    while pending:
        value = pending.pop()
        if isinstance(value, (list, tuple)):
            pending.extend(reversed(value))
        else:
            flat.append(value)
    return flat


def flatten_outputs(output):
    """The model output as a flat list of CPU tensors (tuples/lists flattened)."""
    import torch

    def tensor(value):
        if isinstance(value, torch.Tensor):
            return value.detach().to("cpu").contiguous()
        if isinstance(value, (bool, int, float)):
            return torch.tensor(value)
        raise WorkerError("exception", f"forward returned an unsupported {type(value).__name__}")

    return [tensor(value) for value in flat_values(output)]


def tensor_bytes(tensor):
    """Zero-copy view of a contiguous CPU tensor's bytes (no numpy needed).
    The view keeps the tensor alive: the caller may drop its last reference
    before the bytes are sent, and a freed block is soon reused."""
    nbytes = tensor.numel() * tensor.element_size()
    if nbytes == 0:
        return b""
    if tensor.is_complex():
        raise WorkerError("exception", f"output dtype {dtype_name(tensor.dtype)} is not supported")
    raw = (ctypes.c_char * nbytes).from_address(tensor.data_ptr())
    raw.owner = tensor
    return memoryview(raw).cast("B")


def save_to_bytes(obj):
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def load_from(source):
    import torch

    if isinstance(source, (bytes, bytearray)):
        source = io.BytesIO(source)
    try:
        return torch.load(source, map_location="cpu", weights_only=False)
    except TypeError:  # torch without the weights_only parameter
        if hasattr(source, "seek"):
            source.seek(0)
        return torch.load(source, map_location="cpu")


def signed_normal_inputs(inputs, seed):
    """The problem's inputs with every floating tensor replaced by standard
    normal values of the same shape and dtype (from its own generator seeded
    with the trial seed), so a kernel that is only right on the problem's
    distribution (ReLU on torch.rand is the identity) is caught."""
    import torch

    generator = torch.Generator().manual_seed(seed)

    def redraw(t):
        if not t.is_floating_point():
            return t
        return torch.randn(t.shape, generator=generator, dtype=torch.float32).to(t.dtype)

    return [redraw(v) if isinstance(v, torch.Tensor) else v for v in inputs]
