"""The workers' heap (boxed/kgym_worker_devices.py): with glibc's thresholds
fixed (steady_allocator) a heap grown by prime_heap serves a later block
from resident pages, where an unprimed heap page-faults it in. Each case
runs in a fresh interpreter, whose heap has no history. No torch needed.

Run: python3 tests/python/test_worker_heap.py (the worker modules are
found under boxed/)."""
import os
import subprocess
import sys
import unittest

PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "boxed")

# Prints the minor faults of writing one 24 MB block after the set-up.
PROBE = r"""
import ctypes, resource, sys
sys.path.insert(0, sys.argv[1])
import kgym_worker_devices as d
if not d.steady_allocator():
    print("no-glibc")
    sys.exit(0)
primed = d.prime_heap(int(sys.argv[2]))
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
size = 24 << 20
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
block = libc.malloc(size)
libc.memset(block, 1, size)
print(primed, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults_after(prime_bytes):
    out = subprocess.run([sys.executable, "-c", PROBE, PYTHON_DIR, str(prime_bytes)], check=True,
                         capture_output=True, text=True).stdout.split()
    if out == ["no-glibc"]:
        raise unittest.SkipTest("not glibc: no mallopt")
    return int(out[0]), int(out[1])


class PrimedHeap(unittest.TestCase):
    def test_a_primed_heap_serves_a_block_without_faults(self):
        primed, faults = faults_after(64 << 20)
        self.assertEqual(primed, 64 << 20)
        self.assertLess(faults, 64)  # 24 MB is 6,144 pages of 4 KB

    def test_an_unprimed_heap_faults_the_block_in(self):
        primed, faults = faults_after(0)
        self.assertEqual(primed, 0)
        self.assertGreater(faults, 4096)


if __name__ == "__main__":
    unittest.main()
