"""kgym Python worker: the wire protocol's framing (docs/worker-protocol.md).

Each message is one JSON header line followed by the raw payloads whose byte
sizes the header lists; descriptors travel beside the bytes (SCM_RIGHTS).
"""

import json
import os

from kgym_worker_common import WorkerError
from kgym_worker_devices import now_ns


class Channel:
    """The framed protocol over the two sockets, descriptors passed beside
    the bytes (SCM_RIGHTS): a request's arrive with its first byte, a
    reply's leave with its first byte; the header's "fds" counts them."""

    MAX_FDS = 16

    def __init__(self, request_fd, response_fd):
        # Move the protocol fds out of the way (and out of child processes)
        # so candidate code does not stumble on them by number.
        import fcntl
        import socket

        high_in = fcntl.fcntl(request_fd, fcntl.F_DUPFD_CLOEXEC, 100)
        high_out = fcntl.fcntl(response_fd, fcntl.F_DUPFD_CLOEXEC, 100)
        os.close(request_fd)
        os.close(response_fd)
        self.requests = socket.socket(fileno=high_in)
        self.responses = socket.socket(fileno=high_out)
        self.buffer = bytearray()
        self.fds = []  # received, not yet given to a request
        # When the current request's header arrived, on the worker's own
        # clock: a `time` reply says how long the worker took from here,
        # which the parent compares with its own clock.
        self.received_ns = now_ns()

    def _fill(self):
        import array
        import socket

        space = socket.CMSG_SPACE(self.MAX_FDS * array.array("i").itemsize)
        data, ancillary, flags, _ = self.requests.recvmsg(1 << 20, space, getattr(socket, "MSG_CMSG_CLOEXEC", 0))
        for level, kind, raw in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds = array.array("i")
                fds.frombytes(raw[: len(raw) - len(raw) % fds.itemsize])
                self.fds.extend(fds)
        if flags & getattr(socket, "MSG_CTRUNC", 0):
            raise WorkerError("protocol", "more descriptors than a request may carry")
        self.buffer += data
        return len(data)

    def receive(self):
        """The next request: (header, payloads, descriptors); (None, [], [])
        at the end of the channel."""
        while b"\n" not in self.buffer:
            if len(self.buffer) > 1 << 20:
                raise WorkerError("protocol", "header line too long")
            if not self._fill():
                return None, [], []
        line, _, rest = bytes(self.buffer).partition(b"\n")
        self.buffer = bytearray(rest)
        self.received_ns = now_ns()
        header = json.loads(line)
        payloads = []
        for size in header.get("payloads", []):
            payload = bytearray(size)
            have = min(size, len(self.buffer))
            payload[:have] = self.buffer[:have]
            del self.buffer[:have]
            view = memoryview(payload)[have:]
            while len(view):
                got = self.requests.recv_into(view)
                if not got:
                    raise WorkerError("protocol", f"payload truncated: {size - len(view)} of {size} bytes")
                view = view[got:]
            payloads.append(payload)
        count = int(header.get("fds", 0))
        if count > len(self.fds):
            raise WorkerError("protocol", f"{count} descriptors announced, {len(self.fds)} passed")
        fds, rest_fds = self.fds[:count], self.fds[count:]
        self.fds = []
        for fd in rest_fds:  # unannounced: not kept for a later request
            os.close(fd)
        return header, payloads, fds

    def send(self, header, payloads=(), fds=()):
        import array
        import socket

        header = dict(header)
        header["payloads"] = [len(p) for p in payloads]
        if fds:
            header["fds"] = len(fds)
        line = json.dumps(header).encode("utf-8") + b"\n"
        if fds:
            sent = self.responses.sendmsg([line], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
            line = line[sent:]
        if line:
            self.responses.sendall(line)
        for payload in payloads:
            self.responses.sendall(payload)
