"""The CUDA timing path of the worker (boxed/kgym_worker_devices.py,
CudaBackend) against a fake torch.cuda: a scripted device with a current
stream, side streams and a clock. No GPU needed.

Run: python3 tests/python/test_cuda_timing.py (the worker modules are
found under boxed/)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "boxed"))

import kgym_worker_devices as devices  # noqa: E402


class FakeDevice:
    """One clock in ns. Work is queued on the current stream or a side
    stream; waiting for an event runs the current stream's queue, a
    device-wide synchronise runs both. Every call is logged."""

    def __init__(self):
        self.now = 0
        self.current = 0  # ns of work queued on the current stream
        self.side = 0  # ns of work queued on side streams
        self.log = []
        self.sync_cost = 5_000

    def clock(self):
        return self.now

    def launch(self, ns, side=False):
        self.log.append("launch-side" if side else "launch")
        if side:
            self.side += ns
        else:
            self.current += ns

    def synchronize(self):
        self.log.append("synchronize")
        self.now += self.current + self.side + self.sync_cost
        self.current = self.side = 0


class FakeEvent:
    def __init__(self, device):
        self.device = device
        self.at = None

    def record(self):
        self.device.log.append("record")
        # Recorded on the current stream: it completes when the work queued
        # before it does.
        self.at = self.device.now + self.device.current

    def synchronize(self):
        self.device.log.append("event-synchronize")
        self.device.now = max(self.device.now, self.at)
        self.device.current = 0

    def elapsed_time(self, other):
        return (other.at - self.at) / 1e6  # ms, as torch reports it


class FakeTorch:
    def __init__(self, device):
        cuda = type("cuda", (), {})()
        cuda.synchronize = device.synchronize
        cuda.Event = lambda enable_timing=True: FakeEvent(device)
        self.cuda = cuda


def backend_on(device):
    backend = devices.CudaBackend.__new__(devices.CudaBackend)  # no real CUDA to check for
    backend.torch = FakeTorch(device)
    backend.kept_buffers = {}
    backend.flush_buffer = None
    backend.flush_value = 0
    backend.idle_sync_ns = None
    backend.copy_out = lambda output, slot=0: (device.log.append("copy_out"), output)[1]
    backend.flush_cache = lambda: device.log.append("flush")
    return backend


class CudaTimingTest(unittest.TestCase):
    def setUp(self):
        self.device = FakeDevice()
        self.saved_now = devices.now_ns
        devices.now_ns = self.device.clock
        self.backend = backend_on(self.device)

    def tearDown(self):
        devices.now_ns = self.saved_now

    def time(self, work_ns, side_ns=0, calls=3, flush=True):
        def forward(args):
            self.device.launch(work_ns)
            if side_ns:
                self.device.launch(side_ns, side=True)
            return args

        samples, _, kept, _ = self.backend.time_calls(forward, lambda i: [i], 0, calls, flush=flush)
        return samples, kept

    def test_a_kernel_on_the_current_stream_is_timed_by_its_events(self):
        samples, _ = self.time(200_000)
        self.assertEqual(samples, [200_000] * 3)

    def test_work_left_on_a_side_stream_is_timed_to_its_end(self):
        # 10 us on the current stream, 500 us more on a side stream after
        # forward returned: events alone would say 10 us.
        samples, _ = self.time(10_000, side_ns=500_000)
        self.assertEqual(samples, [510_000] * 3)

    def test_the_device_is_idle_before_the_timer_and_the_cache_flushed_outside_it(self):
        self.time(100_000, calls=2)
        log = [entry for entry in self.device.log if entry != "launch-side"]
        # Calibration of the idle synchronise happens at the first stop.
        first = log.index("flush")
        call = log[first:]
        self.assertEqual(call[:4], ["flush", "synchronize", "record", "launch"])
        self.assertEqual(call[4:7], ["record", "event-synchronize", "synchronize"])

    def test_outputs_are_copied_after_the_device_wide_synchronise(self):
        self.time(100_000, side_ns=50_000, calls=2, flush=False)
        log = self.device.log
        for position, entry in enumerate(log):
            if entry == "copy_out":
                self.assertIn("synchronize", log[position - 3:position])
                before = log[:position]
                self.assertEqual(before[-1], "synchronize")

    def test_an_idle_synchronise_is_not_counted(self):
        self.backend.idle_sync()
        self.assertEqual(self.backend.idle_sync_ns, self.device.sync_cost)


if __name__ == "__main__":
    unittest.main()
