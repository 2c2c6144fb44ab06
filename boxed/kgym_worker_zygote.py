"""The warm worker parent ("zygote"): Python with torch imported once, forking
one `serve` worker per request (docs/worker-protocol.md "Warm workers").

The zygote inherits a listening Unix socket on fd 3 from kgym. A client
connects and sends one JSON line with three file descriptors attached
(SCM_RIGHTS): the worker's request channel, its response channel and its log
file. The zygote forks; the child becomes an ordinary `serve` worker on fds
3/4 with stdout/stderr on the log, so the parent speaks the unchanged worker
protocol to it. The connection then stays open as the child's lifeline:

  zygote -> client  {"ok": true, "pid": N}            the child started
  client -> zygote  "kill\\n" or end of file          kill the child's group
  zygote -> client  {"exit": {"signaled", "code", "core_dumped"}}   it ended

No torch op runs in the zygote, so torch's thread pools start in each child,
after the child has pinned itself to its device's cores.

A candidate zygote runs inside the candidate sandbox (the same prlimit,
bwrap and uid as a cold candidate worker), so every child inherits it. Each
child additionally starts its own session, sets no-new-privs and dies with
the zygote. After a candidate child ends, every other process left in the
sandbox's PID namespace is killed (only one candidate runs per device at a
time), so nothing a candidate started outlives it.
"""

import array
import ctypes
import json
import os
import select
import signal
import socket
import sys

from kgym_worker_common import mark_started

LISTEN_FD = 3
FDS_PER_FORK = 3  # request channel, response channel, log
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38


def prctl(option, value):
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def preload(role):
    """Imports what every worker needs, without running a torch op."""
    import torch  # noqa: F401

    if role == "candidate":
        import torch.utils.cpp_extension  # noqa: F401


def receive_request(conn):
    """One JSON line and its fds; (None, []) when the client went away."""
    data, fds = b"", []
    while not data.endswith(b"\n"):
        chunk, ancdata, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(FDS_PER_FORK * 4))
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                got = array.array("i")
                got.frombytes(payload[: len(payload) - len(payload) % got.itemsize])
                fds.extend(got)
        if not chunk:
            for fd in fds:
                os.close(fd)
            return None, []
        data += chunk
    return json.loads(data), fds


def become_worker(request, fds, keep_closed, serve_main, sandboxed, zygote_pid):
    """In the forked child: never returns."""
    mark_started()
    status = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in keep_closed:
            os.close(fd)
        os.setsid()
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        # The zygote died before the parent-death signal was set. (The
        # zygote may itself be pid 1 of its namespace: under unshare.)
        if os.getppid() != zygote_pid:
            os._exit(1)
        if sandboxed:
            prctl(PR_SET_NO_NEW_PRIVS, 1)
        request_fd, response_fd, log_fd = fds
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.dup2(request_fd, 3)
        os.dup2(response_fd, 4)
        for fd in fds:
            if fd > 4:
                os.close(fd)
        os.environ.update(request.get("env", {}))
        os.chdir(request["cwd"])
        status = serve_main(request["argv"])
    except BaseException as exc:  # noqa: BLE001 - the child must end here, whatever happened
        print(f"[kgym-zygote] warm worker failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status if isinstance(status, int) else 1)


def exit_record(status):
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return {"signaled": True, "code": sig, "core_dumped": os.WCOREDUMP(status)}
    return {"signaled": False, "code": os.WEXITSTATUS(status), "core_dumped": False}


def sweep_namespace():
    """Kills every process of this PID namespace but the zygote and init."""
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in (1, me):
            try:
                os.kill(int(entry), signal.SIGKILL)
            except OSError:
                pass


class Zygote:
    def __init__(self, role, serve_main, sandbox):
        self.role = role
        self.serve_main = serve_main
        self.sandboxed = sandbox != "none"
        # Only bwrap gives the zygote a PID namespace with its own /proc.
        self.sweep = sandbox == "bwrap"
        self.listener = socket.socket(fileno=LISTEN_FD)
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.children = {}  # pid -> connection (the child's lifeline)
        self.doomed = set()  # pids whose lifeline fired; killed, not yet reaped
        self.pending = {}   # connection fd -> connection, before its request arrived

    def log(self, *parts):
        print(f"[kgym-zygote {self.role}]", *parts, file=sys.stderr, flush=True)

    def fork(self, conn, request, fds):
        sys.stdout.flush()
        sys.stderr.flush()
        zygote_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            others = [self.listener.fileno(), self.wake_r, self.wake_w, conn.fileno()]
            others += [c.fileno() for c in self.children.values()] + list(self.pending)
            become_worker(request, fds, others, self.serve_main, self.sandboxed, zygote_pid)
        for fd in fds:
            os.close(fd)
        self.log(f"forked {pid}: {(request.get('argv') or ['?'])[0]}")
        self.children[pid] = conn
        conn.sendall(json.dumps({"ok": True, "pid": pid}).encode() + b"\n")

    def reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            self.doomed.discard(pid)
            if conn is None:
                continue  # an orphan of a candidate, adopted as subreaper
            if self.sweep and not self.children:
                sweep_namespace()
            try:
                conn.sendall(json.dumps({"exit": exit_record(status)}).encode() + b"\n")
            except OSError:
                pass
            conn.close()

    def on_lifeline(self, pid, conn):
        """The client asked to kill the child, or went away."""
        try:
            conn.recv(64)
        except OSError:
            pass
        self.doomed.add(pid)
        for kill in (os.killpg, os.kill):  # the group may not exist yet
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def serve_forever(self):
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w)
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        # A candidate runs as the zygote's uid: not dumpable, so it cannot
        # ptrace the zygote or read its memory to reach later candidates.
        prctl(PR_SET_DUMPABLE, 0)
        while True:
            watched = [self.listener, self.wake_r] + list(self.pending.values()) + [
                conn for pid, conn in self.children.items() if pid not in self.doomed]
            ready, _, _ = select.select(watched, [], [])
            for item in ready:
                if item is self.listener:
                    conn, _ = self.listener.accept()
                    conn.set_inheritable(False)
                    self.pending[conn.fileno()] = conn
                elif item is self.wake_r:
                    try:
                        os.read(self.wake_r, 4096)
                    except BlockingIOError:
                        pass
                    self.reap()
                elif item.fileno() in self.pending:
                    conn = self.pending.pop(item.fileno())
                    self.accept_request(conn)
                else:
                    for pid, conn in list(self.children.items()):
                        if conn is item:
                            self.on_lifeline(pid, conn)

    def accept_request(self, conn):
        try:
            request, fds = receive_request(conn)
        except (OSError, ValueError) as exc:
            self.log("bad request:", exc)
            conn.close()
            return
        if request is None:
            conn.close()
            return
        if len(fds) != FDS_PER_FORK or request.get("op") != "fork":
            for fd in fds:
                os.close(fd)
            conn.sendall(json.dumps({"ok": False, "error": "expected a fork request with 3 fds"}).encode() + b"\n")
            conn.close()
            return
        try:
            self.fork(conn, request, fds)
        except OSError as exc:
            self.log("fork failed:", exc)
            conn.sendall(json.dumps({"ok": False, "error": f"fork failed: {exc}"}).encode() + b"\n")
            conn.close()


def run(args, serve_main):
    preload(args.role)
    Zygote(args.role, serve_main, args.sandbox).serve_forever()
    return 0
