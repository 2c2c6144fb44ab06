"""The worker's pure helpers around inputs and outputs: core lists, the
notes an error line gets, and with torch the input sets timed calls get
(kgym_worker_shared.py: sealed shared memory), the signed normal redraw, output flattening and the problem
lint (boxed/kgym_worker_lint.py) on tiny problems. The tests that need
torch skip without it.

Run: python3 tests/python/test_worker_inputs.py (the worker modules are
found under boxed/)."""
import importlib.util
import os
import sys
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "boxed"))

import kgym_worker_common as common  # noqa: E402
import kgym_worker_devices as devices  # noqa: E402
import kgym_worker_lease as lease  # noqa: E402
import kgym_worker_shared as shared  # noqa: E402
from kgym_worker_lint import lint_problem  # noqa: E402

HAVE_TORCH = importlib.util.find_spec("torch") is not None


class CoreLists(unittest.TestCase):
    def test_a_device_spec(self):
        self.assertEqual(devices.parse_cores("0-2,5"), [0, 1, 2, 5])
        self.assertEqual(devices.parse_cores("3"), [3])
        self.assertIsNone(devices.parse_cores("all"))
        self.assertIsNone(devices.parse_cores(""))

    def test_a_kernel_core_list(self):
        self.assertEqual(lease.parse_core_list("0-3,8,10-11\n"), {0, 1, 2, 3, 8, 10, 11})
        self.assertEqual(lease.parse_core_list("\n"), set())


class ErrorLines(unittest.TestCase):
    def test_the_last_line_of_the_message(self):
        self.assertEqual(common.exception_line(ValueError("first\n\n  last  \n")), "ValueError: last")
        self.assertEqual(common.exception_line(KeyError()), "KeyError")

    def test_memory_failures_name_the_fix(self):
        for exc in (MemoryError(), RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried")):
            line = common.exception_line(exc)
            self.assertIn("[out of memory: ", line)
            self.assertIn("problem.size: auto", line)
            self.assertIn("--override NAME=VALUE", line)
        self.assertNotIn("out of memory", common.exception_line(ValueError("bad shape")))

    def test_what_this_interpreter_lacks_is_named(self):
        missing = ModuleNotFoundError("No module named 'einops'", name="einops")
        self.assertIn("needs the module 'einops'", common.exception_line(missing))
        half = RuntimeError("\"addmm_impl_cpu_\" not implemented for 'Half'")
        self.assertIn("no kernel for that op in float16", common.exception_line(half))
        bfloat = RuntimeError("\"slow_conv3d\" not implemented for 'BFloat16'")
        self.assertIn("in bfloat16", common.exception_line(bfloat))

    @unittest.skipUnless(HAVE_TORCH, "needs torch")
    def test_an_op_of_a_later_torch(self):
        import torch

        try:
            torch.kgym_no_such_op
        except AttributeError as exc:
            self.assertIn(f"this torch ({torch.__version__}) lacks it", common.exception_line(exc))


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class InputSets(unittest.TestCase):
    def test_shared_sets_come_back_as_drawn(self):
        import torch

        x = torch.tensor([0.5, -1.25])
        labels = torch.tensor([3, 1])
        transposed = torch.arange(6.0).view(2, 3).t()
        sets = [[x, (labels, {"l": labels}), 4, None], [transposed, torch.ones(2, dtype=torch.bfloat16)]]
        fd, layouts = shared.write_sets(sets)
        try:
            view = shared.SharedSets(fd, layouts)
            first, second = view.inputs(0), view.inputs(1)
        finally:
            os.close(fd)
        self.assertEqual(first[0].tolist(), [0.5, -1.25])
        self.assertEqual(first[1][0].tolist(), [3, 1])
        self.assertEqual(first[1][1]["l"].tolist(), [3, 1])
        self.assertEqual(first[2:], [4, None])
        self.assertTrue(torch.equal(second[0], transposed))
        self.assertEqual(second[0].stride(), transposed.stride())
        self.assertEqual(second[1].dtype, torch.bfloat16)

    def test_a_placed_copy_lies_at_its_phase_and_holds_the_values(self):
        import torch

        for dtype in (torch.float32, torch.float64, torch.int64, torch.bfloat16):
            source = torch.arange(5000).to(dtype).view(50, 100)
            for phase in (0, 64, 2048, 4032):
                copy = shared.fresh_copy(source, phase)
                self.assertEqual(copy.data_ptr() % shared.PAGE_PHASES, phase)
                self.assertTrue(torch.equal(copy, source))
                self.assertTrue(copy.is_contiguous())
                self.assertEqual((copy.shape, copy.dtype), (source.shape, source.dtype))
                copy.add_(1)  # the copy is the call's own
                self.assertTrue(torch.equal(source, torch.arange(5000).to(dtype).view(50, 100)))

    def test_a_set_is_placed_from_the_last_output(self):
        import torch

        inputs = [torch.rand(2048), (torch.rand(4096), 3)]
        placed = shared.placed_copies(inputs, 0x7F00_0E40)
        self.assertEqual(placed[0].data_ptr() % 4096, shared.input_phase(0xE40, 0))
        self.assertEqual(placed[1][0].data_ptr() % 4096, shared.input_phase(0xE40, 1))
        self.assertEqual(placed[1][1], 3)
        self.assertTrue(torch.equal(placed[1][0], inputs[1][0]))
        plain = shared.placed_copies(inputs, None)
        self.assertEqual(plain[0].storage_offset(), 0)

    def test_small_tensors_and_bools_are_plain_copies(self):
        import torch

        for source in (torch.rand(8), torch.ones(10000, dtype=torch.bool)):
            copy = shared.fresh_copy(source, 2048)
            self.assertTrue(torch.equal(copy, source))
            self.assertEqual(copy.storage_offset(), 0)

    def test_inputs_lie_half_a_page_from_the_last_output_and_apart(self):
        phases = [shared.input_phase(0xE40, k) for k in range(20)]
        self.assertEqual(phases[0], 0x640)
        for phase in phases:
            self.assertEqual(phase % shared.PHASE_STEP, 0)
            self.assertGreaterEqual(min((phase - 0xE40) % 4096, (0xE40 - phase) % 4096), 1024)
        self.assertEqual(len(set(phases[:8])), 8)
        self.assertEqual(shared.input_phase(0x7C1, 0), 0xFC0)  # a cache line below, never past the page

    def test_a_shared_set_is_sealed_and_a_write_stays_private(self):
        import mmap

        import torch

        fd, layouts = shared.write_sets([[torch.rand(1024)]])
        try:
            drawn = shared.SharedSets(fd, layouts).inputs(0)[0].clone()
            mine = shared.SharedSets(fd, layouts).inputs(0)[0]
            mine.zero_()  # the candidate writes its inputs
            self.assertTrue(torch.equal(shared.SharedSets(fd, layouts).inputs(0)[0], drawn))
            with self.assertRaises(OSError):
                os.write(fd, b"x")
            with self.assertRaises(OSError):
                mmap.mmap(fd, 4096, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)

    def test_an_unsealed_file_is_refused(self):
        fd = os.memfd_create("plain")
        try:
            os.write(fd, b"\0" * 64)
            with self.assertRaises(common.WorkerError):
                shared.SharedSets(fd, [[]])
        finally:
            os.close(fd)

    def test_outputs_are_written_sealed(self):
        import fcntl

        import torch

        fd, layouts = shared.write_outputs([[torch.arange(3.0)], [torch.zeros(2, 2), torch.tensor(1)]])
        try:
            self.assertEqual(len(layouts), 2)
            self.assertEqual(layouts[1][0]["shape"], [2, 2])
            self.assertEqual(layouts[0][0]["offset"] % shared.ALIGN, 0)
            seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
            self.assertEqual(seals & shared.NEEDED_SEALS, shared.NEEDED_SEALS)
            data = os.pread(fd, 12, layouts[0][0]["offset"])
            self.assertEqual(torch.frombuffer(bytearray(data), dtype=torch.float32).tolist(), [0.0, 1.0, 2.0])
        finally:
            os.close(fd)

    def test_signed_normal_inputs_redraw_floats_alike_for_a_seed(self):
        import torch

        inputs = [torch.rand(1000), torch.arange(4), 3, torch.rand(2, dtype=torch.float64)]
        a = devices.signed_normal_inputs(inputs, 11)
        b = devices.signed_normal_inputs(inputs, 11)
        self.assertTrue(torch.equal(a[0], b[0]))
        self.assertLess(float(a[0].min()), 0.0)  # no longer torch.rand's [0, 1)
        self.assertIs(a[1], inputs[1])
        self.assertEqual(a[2], 3)
        self.assertEqual(a[3].dtype, torch.float64)
        self.assertFalse(torch.equal(devices.signed_normal_inputs(inputs, 12)[0], a[0]))

    def test_outputs_flatten_to_cpu_tensors(self):
        import torch

        flat = devices.flatten_outputs((torch.ones(2, 3).t(), [2.5, (True, 4)]))
        self.assertEqual([t.dtype for t in flat], [torch.float32, torch.float32, torch.bool, torch.int64])
        self.assertTrue(flat[0].is_contiguous())
        with self.assertRaises(common.WorkerError) as caught:
            devices.flatten_outputs({"y": torch.ones(1)})
        self.assertIn("unsupported dict", caught.exception.message)

    def test_a_timed_call_finds_the_last_ones_output_freed(self):
        """Each call's output and inputs are freed when the next call starts,
        with Python's cyclic collector off: a reference cycle in the harness
        (a recursive closure did this) keeps them until the collector runs,
        and the allocator then hands the timed calls fresh pages to fault in."""
        import gc
        import weakref

        import torch

        backend = devices.CpuBackend(0, None)
        writer = shared.SealedWriter("kgym-test-outputs")

        def into_file(output, slot):
            return [writer.put(t) for t in devices.flatten_outputs(output)]

        for keep in (None, into_file):
            refs, alive = [], []

            def forward(args):
                alive.append(sum(ref() is not None for ref in refs))
                output = (args[0] * 2, [args[0] + 1, (args[0] - 1,)])
                refs.extend(weakref.ref(t) for t in (args[0], output[0], output[1][0]))
                return output

            gc.disable()
            try:
                backend.time_calls(forward, lambda position: [torch.ones(64) * position], 1, 4, keep=keep)
            finally:
                gc.enable()
            self.assertEqual(alive, [0] * 5, f"keep={keep}")
        writer.close()

    def test_describe(self):
        import torch

        self.assertEqual(devices.describe(torch.zeros(2, 3, dtype=torch.float16)),
                         {"kind": "tensor", "dtype": "float16", "shape": [2, 3], "repr": ""})
        self.assertEqual(devices.describe(True)["kind"], "bool")
        self.assertEqual(devices.describe(4)["repr"], "4")
        self.assertEqual(devices.describe(0.5)["kind"], "float")
        self.assertEqual(len(devices.describe("x" * 200)["repr"]), 80)


def lint_of(forward, get_inputs, seed=3, tolerance=(1e-5, 1e-5)):
    """The lint findings' kinds for a problem whose Model computes
    forward(x) on get_inputs()."""
    import torch

    class Model(torch.nn.Module):
        def forward(self, *inputs):
            return forward(*inputs)

    module = types.SimpleNamespace(Model=Model, get_inputs=get_inputs, get_init_inputs=lambda: [])
    findings, forward_ms, peak_mb = lint_problem(module, seed, tolerance)
    assert forward_ms >= 0 and peak_mb > 0
    return sorted(f["kind"] for f in findings)


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class Lint(unittest.TestCase):
    def test_a_sound_problem_is_clean(self):
        import torch

        self.assertEqual(lint_of(lambda x: torch.softmax(x * 3, dim=1), lambda: [torch.randn(4, 8)]), [])

    def test_an_output_of_zeros(self):
        import torch

        # Near zero for any input: so also the same for two input draws.
        self.assertEqual(lint_of(lambda x: x * 1e-9, lambda: [torch.rand(4, 8)]),
                         ["input_independent", "zero_output"])

    def test_a_constant_output(self):
        import torch

        self.assertEqual(lint_of(lambda x: torch.softmax(x, dim=1) * 0 + 0.5, lambda: [torch.rand(4, 8)]),
                         ["constant_output", "input_independent"])

    def test_randomness_in_the_forward(self):
        import torch

        self.assertEqual(lint_of(lambda x: x + torch.rand_like(x), lambda: [torch.rand(4, 8)]),
                         ["not_self_consistent"])

    def test_non_finite_outputs(self):
        import torch

        self.assertIn("non_finite_output", lint_of(lambda x: torch.log(x - 2), lambda: [torch.rand(4, 8)]))

    def test_identity_on_the_given_inputs_only(self):
        import torch

        findings = lint_of(torch.relu, lambda: [torch.rand(4, 8)])
        self.assertEqual(findings, ["identity_on_given_inputs"])
        finding = lint_problem(types.SimpleNamespace(Model=lambda: torch.nn.ReLU(), get_inputs=lambda: [torch.rand(4)],
                                                     get_init_inputs=lambda: []), 3, (1e-5, 1e-5))[0][0]
        self.assertEqual(finding["evidence"], "output 0 equals input 0 on get_inputs(); not on signed normal inputs, "
                                              "which verification adds: an identity kernel fails there")
        self.assertTrue(finding["note"])  # verification catches it: not a finding that fails the lint

    def test_identity_on_every_input_is_a_finding(self):
        import torch

        finding = lint_problem(types.SimpleNamespace(Model=lambda: torch.nn.Identity(),
                                                     get_inputs=lambda: [torch.randn(4)],
                                                     get_init_inputs=lambda: []), 3, (1e-5, 1e-5))[0][0]
        self.assertEqual(finding["kind"], "identity_on_given_inputs")
        self.assertFalse(finding["note"])


if __name__ == "__main__":
    unittest.main()
