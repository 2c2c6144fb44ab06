"""The problem as the worker loads it (boxed/kgym_worker_problem.py):
overrides, module constants, declared CASES, import failures, and with
torch the precision casts (problem.precision) and a load with overrides.
The tests that need torch skip without it.

Run: python3 tests/python/test_worker_problem.py (the worker modules are
found under boxed/)."""
import importlib.util
import os
import sys
import tempfile
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "boxed"))

import kgym_worker_problem as problem  # noqa: E402
from kgym_worker_common import WorkerError  # noqa: E402

HAVE_TORCH = importlib.util.find_spec("torch") is not None

PROBLEM = """
import torch
import torch.nn as nn

batch_size = 16
dim = 4096
dim2 = dim * 2

class Model(nn.Module):
    def __init__(self, features):
        super(Model, self).__init__()
        self.scale = nn.Parameter(torch.ones(features))
        self.register_buffer("steps", torch.zeros(1, dtype=torch.int64))

    def forward(self, x, labels):
        return x * self.scale, labels

def get_inputs():
    return [torch.rand(batch_size, dim2), torch.randint(0, 4, (batch_size,))]

def get_init_inputs():
    return [dim2]
"""


class Overrides(unittest.TestCase):
    def test_names_and_indexed_names_with_integers(self):
        self.assertEqual(problem.parse_overrides(["N=8", "shape[1]=32", "N=16"]), {"N": 16, "shape[1]": 32})
        self.assertEqual(problem.parse_overrides(None), {})

    def test_a_bad_override_is_a_usage_error_naming_it(self):
        for item, why in (("N", "expected NAME=INTEGER"), ("1N=3", "expected NAME=INTEGER"),
                          ("N=eight", "not an integer"), ("N=1.5", "not an integer")):
            with self.assertRaises(WorkerError) as caught:
                problem.parse_overrides([item])
            self.assertEqual(caught.exception.kind, "usage")
            self.assertIn(f"'{item}'", caught.exception.message)
            self.assertIn(why, caught.exception.message)


class ModuleFacts(unittest.TestCase):
    def test_module_constants_are_ints_and_int_elements(self):
        module = types.ModuleType("m")
        module.N, module.flag, module._private, module.shape = 8, True, 3, (4, "x", 16)
        module.long = tuple(range(9))  # more than 8 elements: not a shape
        module.ratio = 0.5
        self.assertEqual(problem.module_constants(module), {"N": 8, "shape[0]": 4, "shape[2]": 16})

    def test_declared_cases_keep_only_int_overrides(self):
        module = types.ModuleType("m")
        self.assertEqual(problem.declared_cases(module), [])
        module.CASES = [{"N": 8, "name": "small", 3: 4}, "junk", {"M": 2}]
        self.assertEqual(problem.declared_cases(module), [{"N": 8}, {"M": 2}])
        module.CASES = {"N": 8}
        self.assertEqual(problem.declared_cases(module), [])

    def test_problem_size_keys_of_a_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "p.py")
            with open(path, "w") as f:
                f.write(PROBLEM)
            self.assertEqual(problem.problem_size_keys(path), ["batch_size", "dim"])
            with open(path, "w") as f:
                f.write("def broken(:\n")
            self.assertEqual(problem.problem_size_keys(path), [])
        self.assertEqual(problem.problem_size_keys(os.path.join(tmp, "gone.py")), [])

    def test_plain_data(self):
        self.assertTrue(problem.plain_data([1, 2.0, "a", None, (True, [3])]))
        self.assertFalse(problem.plain_data([1, {"a": 1}]))
        self.assertFalse(problem.plain_data(object()))


class ImportFailures(unittest.TestCase):
    def test_an_extension_build_error_is_a_compile_error_with_the_compilers_lines(self):
        exc = RuntimeError("Error building extension 'x':\n[1/2] c++ ...\nx.cpp:3:1: error: expected ';'\n"
                           "ninja: build stopped: subcommand failed.")
        failure = problem.classify_import_failure(exc)
        self.assertEqual(failure.kind, "compile")
        self.assertEqual(failure.message, "x.cpp:3:1: error: expected ';'")

    def test_anything_else_is_an_import_error(self):
        failure = problem.classify_import_failure(NameError("name 'torhc' is not defined"))
        self.assertEqual(failure.kind, "import")
        self.assertEqual(failure.message, "NameError: name 'torhc' is not defined")

    def test_a_candidate_without_model_new(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model_new.py")
            with open(path, "w") as f:
                f.write("class Model:\n    pass\n")
            with self.assertRaises(WorkerError) as caught:
                problem.load_candidate(path)
            self.assertEqual(caught.exception.kind, "missing")
            self.assertIn("defines no class ModelNew", caught.exception.message)


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class Precision(unittest.TestCase):
    def test_floating_tensors_are_cast_in_every_container(self):
        import torch

        value = {"a": [torch.ones(2), torch.arange(3)], "b": (torch.ones(1, dtype=torch.float64), 7, "s"),
                 "mask": torch.tensor([True, False])}
        cast = problem.at_precision(value, torch.bfloat16)
        self.assertEqual(cast["a"][0].dtype, torch.bfloat16)
        self.assertEqual(cast["a"][1].dtype, torch.int64)
        self.assertIsInstance(cast["b"], tuple)
        self.assertEqual(cast["b"][0].dtype, torch.bfloat16)
        self.assertEqual(cast["b"][1:], (7, "s"))
        self.assertEqual(cast["mask"].dtype, torch.bool)

    def load(self, overrides, precision):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        path = os.path.join(tmp.name, "p.py")
        with open(path, "w") as f:
            f.write(PROBLEM)
        return problem.load_problem(path, overrides, precision)

    def test_a_problem_at_float16_with_overrides(self):
        import torch

        module = self.load({"dim": 8, "batch_size": 4}, "float16")
        self.assertEqual((module.dim, module.dim2), (8, 16))
        x, labels = module.get_inputs()
        self.assertEqual((x.dtype, list(x.shape)), (torch.float16, [4, 16]))
        self.assertEqual(labels.dtype, torch.int64)
        model = module.Model(*module.get_init_inputs())
        self.assertEqual(model.scale.dtype, torch.float16)
        self.assertEqual(model.steps.dtype, torch.int64)  # integer buffers stay
        self.assertEqual(module.kgym_precision, "float16")

    def test_as_written_changes_nothing(self):
        import torch

        for precision in (None, "as_written"):
            module = self.load({}, precision)
            self.assertEqual(module.get_inputs()[0].dtype, torch.float32)
            self.assertFalse(hasattr(module, "kgym_precision"))

    def test_an_unknown_precision_is_a_usage_error(self):
        with self.assertRaises(WorkerError) as caught:
            self.load({}, "float8")
        self.assertEqual(caught.exception.kind, "usage")
        self.assertIn("float32, float16, bfloat16", caught.exception.message)

    def test_a_problem_that_fails_to_import_is_a_reference_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "p.py")
            with open(path, "w") as f:
                f.write("import torch\nraise ValueError('no such shape')\n")
            with self.assertRaises(WorkerError) as caught:
                problem.load_problem(path, {}, None)
            self.assertEqual(caught.exception.kind, "reference")
            self.assertIn("problem import failed: ValueError: no such shape", caught.exception.message)
            with open(path, "w") as f:
                f.write("import torch\nclass Model:\n    pass\n")
            with self.assertRaises(WorkerError) as caught:
                problem.load_problem(path, {}, None)
            self.assertIn("defines no get_inputs, get_init_inputs", caught.exception.message)


if __name__ == "__main__":
    unittest.main()
