"""Input sets and timed outputs in sealed shared memory (docs/worker-protocol.md,
"Shared memory"). Standard library and torch only; torch is imported lazily.

The reference worker writes the sets it draws from the problem's
get_inputs() into a memfd and seals it (no write, grow, shrink, nor a seal
removed, by anyone); the parent hands that descriptor to the workers of a
batch with the batch's request, never earlier. A worker maps it privately:
a call's inputs view the file's pages, and a call that writes its inputs
writes a copy of its own. Each worker writes its timed calls' outputs into
a memfd of its own and seals it before it replies; the parent refuses
outputs that arrive unsealed, so no output can change after the reply."""

import ctypes
import errno
import fcntl
import itertools
import mmap
import os
import time

from kgym_worker_common import WorkerError
from kgym_worker_devices import dtype_name, map_tensors, tensor_bytes

ALIGN = 64  # every tensor's bytes start on a 64-byte boundary
NEEDED_SEALS = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK
ALL_SEALS = NEEDED_SEALS | fcntl.F_SEAL_SEAL
MADV_POPULATE_READ = getattr(mmap, "MADV_POPULATE_READ", 22)  # Linux 5.14
# Sealing against writes fails with EBUSY while the kernel itself holds a
# transient extra reference to one of the file's pages (it has happened to an
# honest candidate on a loaded machine); the kernel waits about 150 ms before
# it answers so, and these waits follow, about 3 s in all, before the seal
# is given up.
SEAL_RETRY_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)


def add_seals(fd, seals):
    """F_ADD_SEALS, tried again while the kernel answers EBUSY."""
    for wait in SEAL_RETRY_S + (None,):
        try:
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or wait is None:
                raise
            time.sleep(wait)


# Within a 4 KiB page: a load whose address matches an earlier store's in
# its low 12 bits waits for that store on x86 ("4K aliasing"). A kernel
# streaming from an input into an output that lie a multiple of 4 KiB apart
# (give or take a cache line) runs up to 1.6x slower: measured on a 25 MB
# ReLU, 2.4 ms against 1.5. Where the allocator puts a fresh copy depends on
# the worker's heap history, so two workers timing the same kernel differed
# by that much for their whole lives.
PAGE_PHASES = 4096
PHASE_STEP = 64  # the copies stay aligned to a cache line


def fresh_copy(tensor, phase=None):
    """A new tensor holding `tensor`'s values. A dense CPU tensor is copied
    with libc's memmove, not torch's copy kernel: the timing samples both
    sides' processes from outside and counts time in torch's library code
    as library compute (docs/anti-cheat.md "Library compute, seen from
    outside"), so the harness's own copies stay out of it.

    With `phase` (a multiple of PHASE_STEP below PAGE_PHASES), a dense CPU
    tensor of at least a page is placed so that its address lies at that
    offset within a 4 KiB page: a contiguous view, at a cache-line-aligned
    offset, into a block a page larger than it."""
    import torch

    if tensor.device.type != "cpu" or not tensor.is_contiguous() or tensor.is_complex():
        return tensor.clone()
    nbytes = tensor.numel() * tensor.element_size()
    out = None
    if phase is not None and nbytes >= PAGE_PHASES and tensor.dtype != torch.bool:
        block = torch.empty(nbytes + PAGE_PHASES, dtype=torch.uint8)
        skip = (phase - block.data_ptr()) % PAGE_PHASES
        if skip % tensor.element_size() == 0:
            try:
                out = block[skip : skip + nbytes].view(tensor.dtype).view(tensor.shape)
            except (RuntimeError, TypeError):  # a dtype bytes cannot be viewed as
                out = None
        del block
    if out is None:
        out = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    if nbytes:
        ctypes.memmove(out.data_ptr(), tensor.data_ptr(), nbytes)
    return out


def input_phase(output_phase, index):
    """Where input tensor `index` of a call goes within its page, given where
    the last call's first output lay: input 0 half a page from it, the
    others a sixteenth of a page apart, cycling through the half page
    opposite the output, so that none lies within a quarter page of it."""
    step, half, quarter = PAGE_PHASES // 16, PAGE_PHASES // 2, PAGE_PHASES // 4
    offset = half + (index * step + quarter) % half - quarter
    return (output_phase + offset) % PAGE_PHASES // PHASE_STEP * PHASE_STEP


def placed_copies(inputs, last_output_ptr):
    """A call's fresh copies of `inputs` (a set as mapped), each tensor
    placed by input_phase from where the worker's last call put its first
    output, so that no worker's calls run with aliased loads and stores
    because of its heap's history; plain copies before any output."""
    if last_output_ptr is None:
        return map_tensors(inputs, fresh_copy)
    output_phase, index = last_output_ptr % PAGE_PHASES, itertools.count()
    return map_tensors(inputs, lambda t: fresh_copy(t, input_phase(output_phase, next(index))))


class SealedWriter:
    """Tensors appended to a new memfd, then sealed."""

    def __init__(self, name):
        self.fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        self.size = 0

    def _write(self, data):
        view = memoryview(data).cast("B")
        self.size += view.nbytes
        while len(view):
            written = os.write(self.fd, view)
            view = view[written:]

    def put(self, tensor):
        """Appends a CPU tensor's bytes; returns where they lie."""
        tensor = tensor.detach().to("cpu")
        flat = tensor.contiguous()
        pad = (-self.size) % ALIGN
        if pad:
            self._write(b"\0" * pad)
        offset = self.size
        data = tensor_bytes(flat)
        if len(data):
            self._write(data)
        described = {"dtype": dtype_name(tensor.dtype), "shape": list(tensor.shape), "offset": offset,
                     "nbytes": len(data)}
        if not tensor.is_contiguous():
            described["stride"] = list(tensor.stride())
        return described

    def seal(self):
        """Seals the file and hands its descriptor over (the caller closes it)."""
        add_seals(self.fd, ALL_SEALS)
        fd, self.fd = self.fd, None
        return fd

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def describe_value(value, writer):
    """One value of an input set as a layout entry, its tensors written."""
    import torch

    if isinstance(value, torch.Tensor):
        return {"tensor": writer.put(value)}
    if isinstance(value, (list, tuple)):
        return {"list" if isinstance(value, list) else "tuple": [describe_value(v, writer) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: describe_value(v, writer) for k, v in value.items()}}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    raise WorkerError("reference", f"get_inputs() returned a {type(value).__name__}, which cannot be shared")


def write_sets(sets, name="kgym-sets"):
    """A sealed memfd holding `sets` (lists of get_inputs() values); returns
    (its descriptor, one layout per set)."""
    writer = SealedWriter(name)
    try:
        layouts = [[describe_value(v, writer) for v in one] for one in sets]
        return writer.seal(), layouts
    finally:
        writer.close()


def write_outputs(calls, name="kgym-outputs"):
    """A sealed memfd holding each call's flat outputs (lists of tensors);
    returns (its descriptor, per call the list of where each output lies)."""
    writer = SealedWriter(name)
    try:
        layouts = [[writer.put(t) for t in outputs] for outputs in calls]
        return writer.seal(), layouts
    finally:
        writer.close()


def check_sealed(fd, what):
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except OSError as exc:
        raise WorkerError("protocol", f"{what}: not a memfd ({exc})")
    if seals & NEEDED_SEALS != NEEDED_SEALS:
        raise WorkerError("protocol", f"{what}: the shared memory is not sealed")


class SharedSets:
    """A sealed file of input sets, mapped privately (copy on write)."""

    def __init__(self, fd, layouts):
        check_sealed(fd, "input sets")
        if not isinstance(layouts, list):
            raise WorkerError("protocol", "input sets without their layout")
        self.layouts = layouts
        size = os.fstat(fd).st_size
        self.map = None
        if size:
            self.map = mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
            try:
                # Page tables filled now, not by the first call that reads a
                # page (pages are shared until a call writes one).
                self.map.madvise(MADV_POPULATE_READ)
            except (OSError, ValueError, AttributeError):
                pass

    def inputs(self, index):
        if not 0 <= index < len(self.layouts):
            raise WorkerError("protocol", f"no input set {index} in a file of {len(self.layouts)}")
        return [self._value(entry) for entry in self.layouts[index]]

    def _value(self, entry):
        import torch

        if "tensor" in entry:
            t = entry["tensor"]
            dtype = getattr(torch, t["dtype"], None)
            if not isinstance(dtype, torch.dtype):
                raise WorkerError("protocol", f"input dtype {t['dtype']!r}")
            shape = [int(n) for n in t["shape"]]
            numel = 1
            for n in shape:
                numel *= n
            if numel == 0 or int(t["nbytes"]) == 0:
                flat = torch.empty(shape, dtype=dtype)
            else:
                flat = torch.frombuffer(self.map, dtype=dtype, count=numel, offset=int(t["offset"])).view(shape)
            if "stride" in t:
                strided = torch.empty_strided(shape, [int(s) for s in t["stride"]], dtype=dtype)
                strided.copy_(flat)
                return strided
            return flat
        if "list" in entry:
            return [self._value(v) for v in entry["list"]]
        if "tuple" in entry:
            return tuple(self._value(v) for v in entry["tuple"])
        if "dict" in entry:
            return {k: self._value(v) for k, v in entry["dict"].items()}
        return entry.get("value")
