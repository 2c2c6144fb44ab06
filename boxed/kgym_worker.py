#!/usr/bin/env python3
"""kgym Python worker.

Runs one side of a verification (the reference problem or the candidate
kernel) in its own process, or probes or lints a problem once
(kgym_worker_problem.py). Standard library and
torch only; runs on torch 1.13 and 2.x. The wire protocol is described in
docs/worker-protocol.md: requests arrive on fd 3, responses leave on fd 4,
each message is one JSON header line followed by the raw payloads whose byte
sizes the header lists. stdout and stderr are log text only.
"""

import argparse
import json
import os
import sys
import time

from kgym_worker_build import construct_for_builds, install_builds, pch
from kgym_worker_channel import Channel
from kgym_worker_common import (
    WorkerError,
    die_with_parent,
    exception_line,
    log,
    setup_compile_env,
    torch_build,
    started_ns,
    traceback_tail,
)
from kgym_worker_devices import (
    BACKENDS,
    describe,
    dtype_name,
    flatten_outputs,
    last_level_cache_bytes,
    map_tensors,
    load_from,
    now_ns,
    save_to_bytes,
    signed_normal_inputs,
    tensor_bytes,
)
from kgym_worker_lease import LeaseCheck, forbid_affinity_changes
from kgym_worker_problem import (
    declared_cases,
    lint,
    load_candidate,
    load_problem,
    module_constants,
    probe,
    problem_size_keys,
    solved_overrides,
)
from kgym_worker_shared import SealedWriter, SharedSets, placed_copies, write_sets
from kgym_worker_work import op_work
from kgym_worker_runtime import (
    TIMING_METHODS,
    ClockGuard,
    EscapeGuard,
    cheat_error,
    make_op_trace,
    observe_call,
    pristine_copy,
    warm_op_trace,
)

PROTOCOL_VERSION = 1
# The escape guard's phase while the candidate worker serves each op.
CANDIDATE_PHASES = {"import": "import", "build": "build", "trial": "forward", "time": "forward"}
REQUEST_FD = 3
RESPONSE_FD = 4


# ---------------------------------------------------------------- roles


class Side:
    """State shared by both roles: the backend, the model and the timing path."""

    def __init__(self, args):
        self.args = args
        self.backend = BACKENDS[args.backend](args.threads, args.cores)
        self.model = None
        self.channel = None
        self.request_fds = []  # the current request's descriptors (serve() closes them)
        # The lease check around the timed calls, made at the first timed
        # batch: enforced for the candidate; the trusted reference runs it
        # too so that both sides spend the same between calls.
        self.lease_check = None
        self.watch_lease = False

    def forward(self, inputs):
        import torch

        with torch.no_grad():
            return self.model(*inputs)

    def observed_forward(self, inputs, trace):
        """One forward with the runtime observations (docs/anti-cheat.md):
        a pristine copy of the inputs is compared after the call, outputs
        are checked for aliasing and plain dense tensors, and with `trace`
        every dispatcher op is counted. Returns (flat outputs, facts)."""
        pristine = pristine_copy(inputs)
        tracer = make_op_trace() if trace else None
        try:
            if tracer is not None:
                with tracer:
                    output = self.forward(inputs)
            else:
                output = self.forward(inputs)
            self.backend.synchronize()
        except WorkerError:
            raise
        except Exception as exc:
            raise WorkerError("exception", exception_line(exc), traceback_tail(exc))
        facts = observe_call(inputs, pristine, output)
        for problem in facts["output_problems"]:
            if problem["kind"] == "type":
                raise cheat_error({"rule": "runtime.output_type", "evidence": problem["evidence"]})
        if tracer is not None:
            facts["op_trace"] = dict(tracer.counts)
        elif trace:
            facts["op_trace"] = None  # this torch cannot trace
        simulator = sys.modules.get("kgym_worker_pypto")
        if simulator is not None and simulator.installed():
            facts["simulated"] = simulator.take_simulated()
        return flatten_outputs(output), facts

    def outputs_reply(self, outputs):
        return (
            {"outputs": [{"dtype": dtype_name(t.dtype), "shape": list(t.shape)} for t in outputs]},
            [tensor_bytes(t) for t in outputs],
        )

    def batch_sets(self, header, count):
        """The input set of each of `count` call positions: `positions[i]` =
        [file, set] of the sealed files passed with the request (their
        layouts in `files`, in descriptor order)."""
        files, positions = header.get("files"), header.get("positions")
        fds = getattr(self, "request_fds", [])
        if not isinstance(files, list) or len(files) != len(fds) or not isinstance(positions, list):
            raise WorkerError("protocol", f"{header.get('op')} without its input sets")
        if len(positions) < count:
            raise WorkerError("protocol", f"{count} calls need as many input sets, {len(positions)} given")
        shared = [SharedSets(fd, layouts) for fd, layouts in zip(fds, files)]
        chosen = []
        for entry in positions[:count]:
            file, index = int(entry[0]), int(entry[1])
            if not 0 <= file < len(shared):
                raise WorkerError("protocol", f"no input file {file}")
            chosen.append((shared[file], index))
        return chosen

    def op_time(self, header, payloads):
        """Runs `warmup` untimed then `calls` timed calls, call i on input
        set `positions[i]` of the sealed files passed with this request, and
        replies with every timed call's output in a sealed file of its own
        (kgym_worker_shared.py). Payload 0, when present, holds one byte per
        call: nonzero runs that call under the op trace, untimed."""
        if self.model is None:
            raise WorkerError("protocol", "time before the model was built")
        # CPU time of all its threads over the batch (its load, not others').
        cpu_start = time.process_time_ns()
        warmup, calls = int(header.get("warmup", 0)), int(header["calls"])
        sets = self.batch_sets(header, warmup + calls)
        mask = bytes(payloads[0]) if payloads else b""
        traced = [i for i in range(min(len(mask), warmup + calls)) if mask[i]]
        backend = self.backend
        backend.prime_heap(int(header.get("heap_bytes", 0)))  # before any call: none page-faults its buffers

        def fresh_inputs(position):
            # A copy of the mapped set, made before the call's timer: the
            # call finds its inputs where a caller's freshly made tensors
            # would be (in the caches, in blocks the allocator reuses), not
            # in pages another process wrote long ago; both sides alike.
            shared, index = sets[position]
            mapped = shared.inputs(index)
            moved = backend.to_device(mapped)  # a device backend copies already
            return placed_copies(mapped, backend.last_output_ptr) if moved is mapped else moved

        import torch

        model = self.model
        if self.lease_check is None:
            self.lease_check = LeaseCheck(torch, enforce=self.watch_lease)
        lease = self.lease_check
        # Each timed call's output goes into the batch's output file as soon
        # as its timer stopped (one copy; the call's own block is freed, so
        # every call gets the same allocations); the file is sealed before
        # the reply.
        writer = SealedWriter("kgym-outputs")

        def keep(output, slot):
            return [writer.put(t) for t in flatten_outputs(output)]

        try:
            # no_grad is entered once, outside the timed window.
            with torch.no_grad():
                samples, untimed_ns, layouts, traces = backend.time_calls(
                    lambda args: model(*args), fresh_inputs, warmup, calls, traced, make_op_trace,
                    bool(header.get("cache_flush", False)), lease.after_call if lease else None, keep,
                )
            if lease:
                lease.end_batch()
            fd = writer.seal()
        except WorkerError:
            raise
        except Exception as exc:
            raise WorkerError("exception", exception_line(exc), traceback_tail(exc))
        finally:
            writer.close()
        del sets
        return {"ns": samples, "untimed_ns": untimed_ns, "outputs": layouts, "traced": traces,
                "cpu_ns": time.process_time_ns() - cpu_start,
                "elapsed_ns": now_ns() - self.channel.received_ns}, [], [fd]

class ReferenceSide(Side):
    def __init__(self, args):
        super().__init__(args)
        self.problem = None

    def op_load(self, header, payloads):
        import torch

        start = time.perf_counter()
        overrides = {k: int(v) for k, v in header.get("overrides", {}).items()}
        sizes = None
        if header.get("size"):
            overrides, sizes = solved_overrides(argparse.Namespace(
                problem=header["problem"], override=[f"{k}={v}" for k, v in overrides.items()],
                size_max_bytes=int(header["size"]["max_bytes"]),
                size_max_forward_ms=float(header["size"]["max_forward_ms"]), seed=int(header["seed"]),
                precision=header.get("precision")))
        precision = header.get("precision")
        self.problem = load_problem(header["problem"], overrides, precision)
        try:
            torch.manual_seed(int(header["seed"]))
            init_inputs = list(self.problem.get_init_inputs())
            model = self.problem.Model(*init_inputs)
            model.eval()
        except Exception as exc:
            raise WorkerError("reference", f"building Model failed: {exception_line(exc)}", traceback_tail(exc))
        self.model = self.backend.module_to_device(model)
        state = {"init_inputs": init_inputs, "state_dict": model.state_dict(), "seed": int(header["seed"]),
                 "precision": precision}
        with open(header["state_out"], "wb") as f:
            f.write(save_to_bytes(state))
        return {
            "init_inputs": [describe(v) for v in init_inputs],
            "parameters": len(state["state_dict"]),
            "constants": module_constants(self.problem),
            "cases": declared_cases(self.problem),
            "size_keys": problem_size_keys(header["problem"]),
            "load_s": time.perf_counter() - start,
            **({"sizes": sizes} if sizes is not None else {}),
        }, []

    def op_trial(self, header, payloads):
        import torch

        if self.model is None:
            raise WorkerError("protocol", "trial before load")
        if payloads:  # relayed inputs: this reference stands in for a candidate (A/A checks)
            outputs, facts = self.observed_forward(self.backend.to_device(load_from(payloads[0])), False)
            reply, buffers = self.outputs_reply(outputs)
            return dict(reply, runtime=facts), buffers
        seed = int(header["seed"])
        torch.manual_seed(seed)
        try:
            inputs = list(self.problem.get_inputs())
        except Exception as exc:
            raise WorkerError("reference", f"get_inputs failed: {exception_line(exc)}", traceback_tail(exc))
        distribution = header.get("distribution", "given")
        if distribution == "normal":
            inputs = signed_normal_inputs(inputs, seed)
        elif distribution != "given":
            raise WorkerError("protocol", f"unknown input distribution '{distribution}'")
        blob = save_to_bytes(inputs)
        outputs, facts = self.observed_forward(self.backend.to_device(inputs), False)
        reply, buffers = self.outputs_reply(outputs)
        reply["inputs"] = [describe(v) for v in inputs]
        reply["runtime"] = facts
        return reply, [blob] + buffers

    def op_bandwidth(self, header, payloads):
        return {"gbs": self.backend.copy_bandwidth_gbs(), "llc_bytes": last_level_cache_bytes()}, []

    def op_sets(self, header, payloads):
        """Input sets for timed calls: per group of seeds a sealed file
        (kgym_worker_shared.py) of get_inputs() drawn under each seed
        (torch's, Python's and, when the problem uses it, numpy's generators
        seeded alike), so every set has the structure the problem builds
        into its inputs. Replies each file's layouts in `groups`, the files
        as descriptors in the same order."""
        import random

        import torch

        if self.problem is None:
            raise WorkerError("protocol", "sets before load")
        start = now_ns()
        groups, fds = [], []
        numpy = sys.modules.get("numpy")
        try:
            for group in header.get("groups", []):
                sets = []
                for seed in group:
                    seed = int(seed)
                    torch.manual_seed(seed)
                    random.seed(seed)
                    if numpy is not None:
                        numpy.random.seed(seed & 0xFFFFFFFF)
                    try:
                        sets.append(list(self.problem.get_inputs()))
                    except Exception as exc:
                        raise WorkerError("reference", f"get_inputs failed: {exception_line(exc)}",
                                          traceback_tail(exc))
                fd, layouts = write_sets(sets)
                fds.append(fd)
                groups.append({"sets": layouts, "bytes": os.fstat(fd).st_size})
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        return {"make_ns": now_ns() - start, "groups": groups}, [], fds

    def op_compile(self, header, payloads):
        """The reference through torch.compile (verifier.baselines: compile):
        compiles the loaded model and makes its first calls, untimed, on
        get_inputs() drawn under `seed`; later `time` requests call the
        compiled model. Replies `compile_s`, or `unavailable` and why (a torch
        without torch.compile, or compiling failed): the eager timing stands
        either way, so this is never an error of the case."""
        import torch

        if self.model is None or self.problem is None:
            raise WorkerError("protocol", "compile before load")
        if not callable(getattr(torch, "compile", None)):
            return {"unavailable": f"this torch ({torch.__version__}) has no torch.compile"}, []
        # Inductor's caches and temporary files in this worker's scratch; its
        # C++ builds on the cores the worker has, not in a pool of processes.
        setup_compile_env(self.args.scratch, False)
        os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
        start = time.perf_counter()
        try:
            torch.manual_seed(int(header.get("seed", 0)))
            inputs = self.backend.to_device(list(self.problem.get_inputs()))
            compiled = torch.compile(self.model, dynamic=False)
            with torch.no_grad():
                for _ in range(2):  # the first call compiles; the second shows it holds
                    compiled(*inputs)
            self.backend.synchronize()
        except Exception as exc:
            log(f"torch.compile failed: {exception_line(exc)}\n{traceback_tail(exc)}")
            return {"unavailable": f"torch.compile failed: {exception_line(exc)}"[:500]}, []
        self.model = compiled
        return {"compile_s": time.perf_counter() - start}, []

    OPS = {"load": op_load, "trial": op_trial, "time": Side.op_time,
           "bandwidth": op_bandwidth, "work": op_work, "sets": op_sets, "compile": op_compile}


class CandidateSide(Side):
    def __init__(self, args):
        super().__init__(args)
        self.module = None
        self.guard = None  # the EscapeGuard, set by serve()
        self.extensions = None  # the ExtensionBuilds of its import, if any

    def op_import(self, header, payloads):
        start = time.perf_counter()
        # The build stage records the builds; a verification loads them and
        # may run no compiler (kgym_worker_build.py).
        extensions = self.extensions = install_builds(header, self.guard)
        self.module = load_candidate(header["candidate"])
        if extensions is not None and extensions.mode == "build" and isinstance(header.get("init_inputs"), list):
            construct_for_builds(self.module, header["init_inputs"])
        reply = {"import_s": time.perf_counter() - start}
        if extensions is not None and extensions.mode == "build":
            extensions.write_manifest()
            reply["extensions"] = len(extensions.entries)
        elif extensions is not None:
            extensions.check_import()
        return reply, []

    def op_build(self, header, payloads):
        import torch

        if self.module is None:
            raise WorkerError("protocol", "build before import")
        state = load_from(header["state"])
        try:
            torch.manual_seed(int(state["seed"]))
            model = self.module.ModelNew(*state["init_inputs"])
            if state.get("precision") and state["precision"] != "as_written":
                model.to(getattr(torch, state["precision"]))  # as the reference's Model
        except Exception as exc:
            raise WorkerError("exception", f"ModelNew(...) failed: {exception_line(exc)}", traceback_tail(exc))
        reference = state["state_dict"]
        own = model.state_dict()
        matching = {
            name: value
            for name, value in reference.items()
            if name in own and tuple(own[name].shape) == tuple(value.shape)
        }
        if matching:
            model.load_state_dict(matching, strict=False)
        model.eval()
        self.model = self.backend.module_to_device(model)
        return {"loaded": len(matching), "reference_entries": len(reference), "own_entries": len(own)}, []

    def op_trial(self, header, payloads):
        if self.model is None:
            raise WorkerError("protocol", "trial before build")
        inputs = self.backend.to_device(load_from(payloads[0]))
        outputs, facts = self.observed_forward(inputs, bool(header.get("trace", True)))
        reply, buffers = self.outputs_reply(outputs)
        return dict(reply, runtime=facts), buffers

    OPS = {"import": op_import, "build": op_build, "trial": op_trial, "time": Side.op_time}


def serve(args):
    import torch

    channel = Channel(REQUEST_FD, RESPONSE_FD)
    guard = None
    clock_guard = None
    try:
        if args.role == "candidate":
            setup_compile_env(args.scratch, args.compile_cache == "on")
        warm_op_trace(torch)
        if args.role == "candidate" and os.environ.get("KGYM_HOST_INTERPRETER") == "pypto":
            import kgym_worker_pypto  # trusted, before the candidate is imported

            kgym_worker_pypto.install_or_fail(args.scratch)
        if args.role == "candidate":
            # Before any candidate code is imported; audit hooks cannot be
            # removed once added.
            guard = EscapeGuard(args.scratch)
            guard.install()
        side = ReferenceSide(args) if args.role == "reference" else CandidateSide(args)
        side.channel = channel
        if args.role == "candidate":
            side.guard = guard
            clock_guard = ClockGuard()
            clock_guard.install(list(BACKENDS.values()), [Side, CandidateSide])
            clock_guard.watch(sys.modules[__name__], ["now_ns"], "worker")
            clock_guard.watch_instance(side.backend, TIMING_METHODS, "backend")
            clock_guard.watch_instance(side, ["op_time", "batch_sets", "forward"], "worker")
            if os.environ.get("KGYM_HOST_INTERPRETER"):  # no timing; PyPTO pins its own threads
                log("lease: not watched on a host interpreter (no timing)")
            else:
                # Pinned to the lease by the backend just now; from here on
                # the cores are final (boxed/kgym_worker_lease.py).
                side.watch_lease = True
                unfiltered = forbid_affinity_changes()
                if unfiltered:
                    log(f"lease: {unfiltered}; affinity is checked after every timed call instead")
        channel.send(
            {"ok": True, "op": "hello", "protocol": PROTOCOL_VERSION, "torch_version": torch.__version__,
             "torch_build": torch_build(torch), "python": sys.executable,
             "role": args.role, "pid": os.getpid(), "started_ns": started_ns(), "ready_ns": time.monotonic_ns(),
             "cores": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
             "steady_allocator": side.backend.steady_allocator,
             # Whether this torch traces dispatcher ops: the parent trusts
             # the reference's answer, so a candidate's null trace on the
             # same torch is a trace switched off.
             "can_trace": make_op_trace() is not None}
        )
    except WorkerError as exc:
        channel.send({"ok": False, "op": "hello", "error_kind": exc.kind, "error": exc.message})
        return 1
    while True:
        try:
            header, payloads, fds = channel.receive()
        except (ValueError, WorkerError) as exc:
            log("bad request:", exc)
            channel.send({"ok": False, "error_kind": "protocol", "error": f"bad request: {exc}"})
            return 1
        if header is None or header.get("op") == "exit":
            return 0
        side.request_fds = fds
        op = header.get("op")
        handler = type(side).OPS.get(op)
        out_fds = []
        start = time.perf_counter()
        if guard is not None:
            guard.phase = CANDIDATE_PHASES.get(op)
        try:
            if handler is None:
                raise WorkerError("protocol", f"unknown op '{op}' for role {args.role}")
            answer = handler(side, header, payloads)
            reply, out_payloads = answer[0], answer[1]
            out_fds = answer[2] if len(answer) > 2 else []
            # A build refused after the import (a lazy one), even when the
            # candidate caught the refusal.
            if getattr(side, "extensions", None) is not None:
                side.extensions.check_import()
            reply = dict(reply, ok=True, op=op, elapsed_s=time.perf_counter() - start)
        except WorkerError as exc:
            log(f"{op} failed ({exc.kind}): {exc.message}\n{exc.detail}")
            reply, out_payloads = {"ok": False, "op": op, "error_kind": exc.kind, "error": exc.message,
                                   "detail": exc.detail, "rule": getattr(exc, "rule", None)}, []
        except SystemExit as exc:
            if guard is None:
                raise
            # Recorded like the other escapes: the candidate tried to end
            # the worker (sys.exit, exit(), raise SystemExit).
            guard.findings.append({"rule": "runtime.process_exit",
                                   "evidence": f"SystemExit({exc.code!r}) raised during {guard.phase or op}"})
            reply, out_payloads = {"ok": False, "op": op}, []
        except Exception as exc:  # an unexpected failure of the worker itself
            log(traceback_tail(exc, 60))
            kind = "reference" if args.role == "reference" else "exception"
            reply, out_payloads = {"ok": False, "op": op, "error_kind": kind, "error": exception_line(exc),
                                   "detail": traceback_tail(exc)}, []
        if guard is not None:
            guard.phase = None
            findings = guard.take_findings()
            clock = clock_guard.finding() if clock_guard is not None else None
            if clock is not None:
                findings.append(clock)
            if findings:
                # An escape attempt outranks whatever the call returned: the
                # candidate may have caught the refusal and carried on.
                first = findings[0]
                log(f"{op}: escape attempt {first['rule']}: {first['evidence']}")
                reply, out_payloads = {"ok": False, "op": op, "error_kind": "cheat", "rule": first["rule"],
                                       "error": first["evidence"], "detail": ""}, []
        # A request's descriptors are the handler's only while it runs (a
        # mapping it made stays valid); a reply's are closed once sent.
        for fd in fds:
            os.close(fd)
        side.request_fds = []
        if not reply.get("ok"):
            for fd in out_fds:
                os.close(fd)
            out_fds = []
        channel.send(reply, out_payloads, out_fds)
        for fd in out_fds:
            os.close(fd)


def main(argv):
    die_with_parent()
    parser = argparse.ArgumentParser(prog="kgym_worker")
    sub = parser.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("probe")
    p.add_argument("--problem", required=True)
    p.add_argument("--override", action="append", default=[])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", required=True)
    p.add_argument("--size-max-bytes", type=int, default=0)
    p.add_argument("--precision", default=None)
    p.add_argument("--size-max-forward-ms", type=float, default=0.0)
    lint_parser = sub.add_parser("lint")
    lint_parser.add_argument("--problem", required=True)
    lint_parser.add_argument("--override", action="append", default=[])
    lint_parser.add_argument("--seed", type=int, default=0)
    lint_parser.add_argument("--threads", type=int, default=1)
    lint_parser.add_argument("--atol", type=float, default=1e-4)
    lint_parser.add_argument("--rtol", type=float, default=1e-3)
    lint_parser.add_argument("--out", required=True)
    lint_parser.add_argument("--size-max-bytes", type=int, default=0)
    lint_parser.add_argument("--precision", default=None)
    lint_parser.add_argument("--size-max-forward-ms", type=float, default=0.0)
    s = sub.add_parser("serve")
    s.add_argument("--role", choices=["reference", "candidate"], required=True)
    s.add_argument("--backend", choices=sorted(BACKENDS), default="cpu")
    s.add_argument("--threads", type=int, default=0)
    s.add_argument("--cores", default="all")
    s.add_argument("--scratch", required=True)
    s.add_argument("--compile-cache", choices=["on", "off"], default="on")
    pch_parser = sub.add_parser("pch")
    pch_parser.add_argument("--root", required=True)
    pch_parser.add_argument("--wanted", default=None)
    z = sub.add_parser("zygote")
    z.add_argument("--role", choices=["reference", "candidate"], required=True)
    z.add_argument("--sandbox", choices=["none", "unshare", "bwrap"], default="none")
    args = parser.parse_args(argv)
    if args.mode == "zygote":
        import kgym_worker_zygote

        return kgym_worker_zygote.run(args, main)
    if args.mode == "lint":
        return lint(args)
    if args.mode == "pch":
        try:
            return pch(args)
        except WorkerError as exc:
            print(json.dumps({"error": exc.message}))
            return 1
    return probe(args) if args.mode == "probe" else serve(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
