"""Sealing the shared files (boxed/kgym_worker_shared.py): a real memfd
written and sealed, then refused nothing; a seal the kernel answers EBUSY
is tried again on a schedule and given up after it; any other error is
raised at once. No torch needed.

Run: python3 tests/python/test_worker_shared.py (the worker modules are
found under boxed/)."""
import errno
import fcntl
import os
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "boxed"))

import kgym_worker_shared as shared  # noqa: E402
from kgym_worker_common import WorkerError  # noqa: E402


class RealMemfd(unittest.TestCase):
    def test_a_sealed_file_refuses_writes_and_passes_the_check(self):
        writer = shared.SealedWriter("kgym-test")
        writer._write(b"abc" * 100)
        fd = writer.seal()
        try:
            shared.check_sealed(fd, "test")
            with self.assertRaises(OSError):
                os.write(fd, b"x")
            with self.assertRaises(OSError):
                os.ftruncate(fd, 0)
        finally:
            os.close(fd)

    def test_an_unsealed_file_fails_the_check(self):
        fd = os.memfd_create("kgym-test", os.MFD_ALLOW_SEALING)
        try:
            with self.assertRaises(WorkerError):
                shared.check_sealed(fd, "test")
        finally:
            os.close(fd)


class SealRetry(unittest.TestCase):
    def scripted(self, errors):
        """fcntl.fcntl raising `errors` in turn (None: success)."""
        calls = []

        def fake(fd, op, arg):
            calls.append(op)
            error = errors[len(calls) - 1]
            if error is not None:
                raise OSError(error, os.strerror(error))
            return 0

        return fake, calls

    def test_ebusy_is_tried_again_until_the_seal_holds(self):
        fake, calls = self.scripted([errno.EBUSY, errno.EBUSY, None])
        sleeps = []
        with mock.patch.object(fcntl, "fcntl", fake), mock.patch.object(shared.time, "sleep", sleeps.append):
            shared.add_seals(3, shared.ALL_SEALS)
        self.assertEqual(len(calls), 3)
        self.assertEqual(sleeps, list(shared.SEAL_RETRY_S[:2]))

    def test_ebusy_past_the_schedule_is_raised(self):
        attempts = len(shared.SEAL_RETRY_S) + 1
        fake, calls = self.scripted([errno.EBUSY] * attempts)
        sleeps = []
        with mock.patch.object(fcntl, "fcntl", fake), mock.patch.object(shared.time, "sleep", sleeps.append):
            with self.assertRaises(OSError) as caught:
                shared.add_seals(3, shared.ALL_SEALS)
        self.assertEqual(caught.exception.errno, errno.EBUSY)
        self.assertEqual(len(calls), attempts)
        self.assertEqual(sleeps, list(shared.SEAL_RETRY_S))

    def test_other_errors_are_raised_at_once(self):
        fake, calls = self.scripted([errno.EPERM])
        with mock.patch.object(fcntl, "fcntl", fake), mock.patch.object(shared.time, "sleep", lambda s: None):
            with self.assertRaises(OSError) as caught:
                shared.add_seals(3, shared.ALL_SEALS)
        self.assertEqual(caught.exception.errno, errno.EPERM)
        self.assertEqual(len(calls), 1)


if __name__ == "__main__":
    unittest.main()
