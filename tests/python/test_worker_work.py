"""A problem's work for the roofline (boxed/kgym_worker_work.py): the bytes
a kernel must move and the FLOPs of the reference's forward, counted with
torch's counter where it has one and kgym's formulas elsewhere, on small
real models. Needs torch (1.13 or 2.x: the counts are the same on both).

Run: python3 tests/python/test_worker_work.py (the worker modules are
found under boxed/)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "boxed"))

import torch  # noqa: E402

import kgym_worker_work as work  # noqa: E402


def count(model, inputs):
    model.eval()
    return work.count_work(model, inputs, lambda args: model(*args))


class Relu(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(64, 32)

    def forward(self, x):
        return self.fc(x)


class Conv(torch.nn.Module):
    def __init__(self, transposed=False):
        super().__init__()
        cls = torch.nn.ConvTranspose2d if transposed else torch.nn.Conv2d
        self.conv = cls(3, 8, kernel_size=3, bias=False)

    def forward(self, x):
        return self.conv(x)


class Unknown(torch.nn.Module):
    def forward(self, x):
        return torch.linalg.qr(x)[0]


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 16, bias=False)
        self.b = self.a  # the same weight, read once

    def forward(self, x):
        return self.b(self.a(x))


class Work(unittest.TestCase):
    def test_an_elementwise_op_is_one_flop_per_element_and_its_bytes_are_in_plus_out(self):
        w = count(Relu(), [torch.randn(128, 256)])
        self.assertEqual(w["flops"], 128 * 256)
        self.assertEqual(w["bytes_by"], {"inputs": 128 * 256 * 4, "parameters": 0, "outputs": 128 * 256 * 4})
        self.assertEqual(w["uncounted_ops"], {})
        self.assertEqual(w["float_dtypes"], ["float32"])

    def test_a_linear_layer_is_two_m_k_n_and_reads_its_weight_and_bias(self):
        w = count(Linear(), [torch.randn(8, 64)])
        self.assertEqual(w["flops"], 2 * 8 * 64 * 32)
        self.assertEqual(w["bytes_by"]["parameters"], (64 * 32 + 32) * 4)
        self.assertEqual(w["bytes_by"]["outputs"], 8 * 32 * 4)

    def test_a_convolution_counts_each_multiply_add_at_every_output_position(self):
        w = count(Conv(), [torch.randn(2, 3, 10, 10)])
        self.assertEqual(w["flops"], 2 * 2 * (8 * 3 * 3 * 3) * (8 * 8))

    def test_a_transposed_convolution_counts_at_every_input_position(self):
        w = count(Conv(transposed=True), [torch.randn(2, 3, 10, 10)])
        self.assertEqual(w["flops"], 2 * 2 * (3 * 8 * 3 * 3) * (10 * 10))

    def test_a_float64_problem_is_counted_in_its_own_bytes(self):
        model = Linear().double()
        w = count(model, [torch.randn(8, 64, dtype=torch.float64)])
        self.assertEqual(w["bytes_by"]["inputs"], 8 * 64 * 8)
        self.assertEqual(w["float_dtypes"], ["float64"])

    def test_an_op_without_a_formula_is_named_not_counted_as_zero_silently(self):
        w = count(Unknown(), [torch.randn(16, 16)])
        self.assertTrue(w["uncounted_ops"], w)
        self.assertTrue(any("qr" in name or "geqrf" in name for name in w["uncounted_ops"]), w["uncounted_ops"])

    def test_a_weight_used_twice_is_read_once(self):
        w = count(Tied(), [torch.randn(4, 16)])
        self.assertEqual(w["bytes_by"]["parameters"], 16 * 16 * 4)
        self.assertEqual(w["flops"], 2 * (2 * 4 * 16 * 16))

    def test_formulas_alone_give_the_torch_counters_figure_for_what_both_count(self):
        x, wt = torch.randn(2, 3, 10, 10), torch.randn(8, 3, 3, 3)
        out = torch.nn.functional.conv2d(x, wt)
        args = (x, wt, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
        self.assertEqual(work.formula("aten.convolution", args, out), 2 * 2 * 8 * 27 * 64)
        a, b = torch.randn(4, 5), torch.randn(5, 6)
        self.assertEqual(work.formula("aten.mm", (a, b), a @ b), 2 * 4 * 5 * 6)
        self.assertEqual(work.formula("aten.view", (a, [20]), a.view(20)), 0)
        self.assertIsNone(work.formula("aten.linalg_qr", (a,), None))


if __name__ == "__main__":
    unittest.main()
