"""Problem sizes (boxed/kgym_worker_size.py): which constants are sizes,
how an override rewrites them, and how solve_sizes searches, with a cost
model standing in for the reference's forward. No torch needed.

Run: python3 tests/python/test_worker_size.py (the worker modules are
found under boxed/)."""
import ast
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "boxed"))

import kgym_worker_size as size  # noqa: E402

PROBLEM = """
import torch
batch_size = 16
dim = 16384
dim2 = dim * 2
kernel_size, stride = 3, 1
shape = (128, 4096)
big = 2 ** 12
unused = 99999

def get_inputs():
    return [torch.rand(batch_size, dim2, kernel_size), torch.rand(*shape)]

def get_init_inputs():
    return [big]
"""


class SizeConstants(unittest.TestCase):
    def test_sizes_are_the_literals_that_feed_the_inputs_and_are_not_small(self):
        tree = ast.parse(PROBLEM)
        self.assertEqual(size.size_constants(tree),
                         {"batch_size": 16, "dim": 16384, "shape[0]": 128, "shape[1]": 4096, "big": 4096})

    def test_feeding_names_follow_assignments(self):
        names = size.feeding_names(ast.parse(PROBLEM))
        self.assertIn("dim", names)  # through dim2 = dim * 2
        self.assertNotIn("unused", names)
        self.assertNotIn("stride", names)

    def test_constant_expressions_without_names_are_evaluated(self):
        def value(text):
            return size._int_value(ast.parse(text, mode="eval").body)

        self.assertEqual(value("16384 * 2"), 32768)
        self.assertEqual(value("2 ** 20"), 1 << 20)
        self.assertEqual(value("-8"), -8)
        self.assertEqual(value("7 // 2"), 3)
        self.assertIsNone(value("7 // 0"))
        self.assertIsNone(value("2 ** 100"))  # beyond the exponent it evaluates
        self.assertIsNone(value("n * 2"))
        self.assertIsNone(value("True"))
        self.assertIsNone(value("1.5"))

    def test_size_keys(self):
        for key in ("N", "batch_size", "shape[1]", "_x[12]"):
            self.assertTrue(size.is_size_key(key), key)
        for key in ("", "1N", "shape[]", "shape[-1]", "a.b", "N=3"):
            self.assertFalse(size.is_size_key(key), key)


class PatchConstants(unittest.TestCase):
    def test_an_override_rewrites_the_literal_and_relations_still_hold(self):
        tree = size.patch_constants(ast.parse(PROBLEM), {"dim": 64, "shape[1]": 32, "kernel_size": 5})
        scope = {}
        exec(compile(ast.unparse(tree).replace("import torch", ""), "p", "exec"), scope)
        self.assertEqual((scope["dim"], scope["dim2"]), (64, 128))
        self.assertEqual(scope["shape"], (128, 32))
        self.assertEqual((scope["kernel_size"], scope["stride"]), (5, 1))

    def test_a_key_the_problem_does_not_assign_is_skipped_and_logged(self):
        notes = []
        size.patch_constants(ast.parse(PROBLEM), {"nope": 3, "dim": 8}, notes.append, "p.py")
        self.assertEqual(notes, ["overrides not used by p.py (no top-level assignment): nope"])

    def test_scaled_keeps_a_floor(self):
        self.assertEqual(size.scaled({"a": 4096, "b": 16}, 3), {"a": 512, "b": 8})
        self.assertEqual(size.scaled({"a": 4096}, 0), {"a": 4096})


class SolveSizes(unittest.TestCase):
    """`load` is the cost model: overrides -> (bytes, forward ms); the
    module's measure() is replaced by a call of it, recorded."""

    N_PROBLEM = "N = 4096\ndef get_inputs():\n    return [N]\ndef get_init_inputs():\n    return []\n"

    def setUp(self):
        self.measured = []
        written = size.measure

        def measure(load, overrides, seed):
            self.measured.append(dict(overrides))
            return load(overrides)

        size.measure = measure
        self.addCleanup(setattr, size, "measure", written)

    @staticmethod
    def square(overrides):  # an N x N float32 matrix, 1 ms per million elements
        n = overrides["N"]
        return 4 * n * n, n * n / 1e6

    def test_the_largest_sizes_within_the_budget_without_trying_the_written_ones(self):
        solved = size.solve_sizes(self.N_PROBLEM, self.square, {}, max_bytes=4 << 20, max_forward_ms=1e9)
        self.assertEqual(solved["sizes"], {"N": 1024})
        self.assertEqual(solved["factor"], 0.25)
        self.assertEqual(solved["bytes"], 4 << 20)
        self.assertTrue(solved["fits"])
        self.assertEqual(solved["original"], {"N": 4096})
        tried = [m["N"] for m in self.measured]
        self.assertEqual(tried, [8, 16, 32, 64, 128, 256, 512, 1024])  # 2048 predicted at 16 MiB: not run

    def test_the_forward_time_is_a_budget_too(self):
        solved = size.solve_sizes(self.N_PROBLEM, self.square, {}, max_bytes=1 << 40, max_forward_ms=0.1)
        self.assertEqual(solved["sizes"], {"N": 256})

    def test_sizes_that_fit_as_written_are_not_changed(self):
        solved = size.solve_sizes(self.N_PROBLEM, self.square, {}, max_bytes=1 << 40, max_forward_ms=1e9)
        self.assertEqual(solved["sizes"], {})
        self.assertEqual(solved["factor"], 1.0)
        self.assertTrue(solved["fits"])

    def test_nothing_fits_gives_the_smallest_that_ran(self):
        solved = size.solve_sizes(self.N_PROBLEM, self.square, {}, max_bytes=10, max_forward_ms=1e9)
        self.assertEqual(solved["sizes"], {"N": 8})
        self.assertFalse(solved["fits"])

    def test_a_size_the_problem_refuses_is_skipped(self):
        def picky(overrides):
            if overrides["N"] in (64, 128):
                raise ValueError(f"heads must divide {overrides['N']}")
            return self.square(overrides)

        solved = size.solve_sizes(self.N_PROBLEM, picky, {}, max_bytes=4 << 20, max_forward_ms=1e9)
        self.assertEqual(solved["sizes"], {"N": 1024})

    def test_base_overrides_win_and_are_not_solved(self):
        problem = "N = 4096\nM = 4096\ndef get_inputs():\n    return [N, M]\ndef get_init_inputs():\n    return []\n"
        solved = size.solve_sizes(problem, lambda o: (4 * o["N"] * o["M"], 0.0), {"M": 16}, max_bytes=1 << 16,
                                  max_forward_ms=1e9)
        self.assertEqual(solved["original"], {"N": 4096})
        self.assertEqual(solved["sizes"], {"N": 1024})
        self.assertTrue(all(m["M"] == 16 for m in self.measured))

    def test_the_same_failure_at_every_size_is_the_problems_own(self):
        def missing(overrides):
            raise AttributeError("module 'torch' has no attribute 'fancy_op'")

        with self.assertRaisesRegex(AttributeError, "fancy_op"):
            size.solve_sizes(self.N_PROBLEM, missing, {}, max_bytes=1 << 40, max_forward_ms=1e9)

    def test_different_failures_at_every_size_are_reported_together(self):
        def failing(overrides):
            raise RuntimeError(f"bad shape {overrides['N']}")

        with self.assertRaisesRegex(RuntimeError, "runs at none of the sizes tried.*bad shape 2"):
            size.solve_sizes(self.N_PROBLEM, failing, {}, max_bytes=1 << 40, max_forward_ms=1e9)

    def test_a_precision_this_torch_lacks_is_named(self):
        def at_half(overrides):
            raise RuntimeError(f"channels wrong at {overrides['N']}")

        with self.assertRaisesRegex(RuntimeError, "at bfloat16, but runs at its own precision"):
            size.solve_sizes(self.N_PROBLEM, at_half, {}, max_bytes=1 << 40, max_forward_ms=1e9,
                             as_written=("bfloat16", self.square))

    def test_a_problem_without_sizes_is_left_alone(self):
        solved = size.solve_sizes("K = 3\ndef get_inputs():\n    return [K]\n", self.square, {}, 1, 1)
        self.assertEqual((solved["sizes"], solved["original"], solved["fits"]), ({}, {}, True))
        self.assertEqual(self.measured, [])


if __name__ == "__main__":
    unittest.main()
