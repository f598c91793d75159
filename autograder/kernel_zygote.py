"""A warm source of grading kernels: ``python -m autograder.kernel_zygote SOCKET [MODULE...]``.

Started by :class:`autograder.warm_sandbox.Zygote` inside its own bubblewrap sandbox (as the
sandbox's PID 1, ``--as-pid-1``), before any learner code runs, this process:

1. makes itself non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``): no kernel can ptrace it,
   read its memory or reach its file descriptors through ``/proc``;
2. connects to the grader's Unix socket ``SOCKET`` (the grader accepts this one connection,
   then closes and unlinks the socket: no kernel can connect to it);
3. imports what every kernel imports (:data:`KERNEL_IMPORTS`) and the ``MODULE`` s named
   (``torch`` for the exercises that use it), without creating a ZMQ context or a thread;
4. answers the grader's requests, one JSON line each, on that connection:

   - ``{"fork": {"argv": [...], "env": {...}, "cwd": DIR}}``: fork a kernel, which closes
     the connection, takes ``env`` as its whole environment, changes to ``cwd`` and runs
     :mod:`autograder.kernel_launch` as ``python -m autograder.kernel_launch ARGV`` would,
     without Python's start-up and the imports. Answer: ``{"pid": PID}`` (in the sandbox).
     With ``"probe": {"source", "request", "answer", "cpu"}``, the child runs ex05's probe
     script instead (:func:`_probe`; the probes' warm sandbox, which holds no kernel);
   - ``{"clean": true}``: kill every other process of the sandbox, wait for them, empty
     ``/tmp`` and ``/dev/shm`` (:func:`autograder.wipe.empty`) and the System V IPC objects.
     Answer: ``{"clean": N, "wiped": BOOL}`` (processes killed; whether both folders are
     empty and the grader's mount points where and as they were: if not, the grader ends
     this sandbox).

   When a kernel exits, ``{"exit": PID, "status": CODE}`` is sent (a signal is ``-SIGNUM``).

The grader copies a fresh working folder and course package into the sandbox for each
kernel, after the previous kernel and its processes are gone (see ``Zygote`` there).
"""

from __future__ import annotations

import atexit
import builtins
import ctypes
import importlib
import io
import json
import os
import random
import resource
import runpy
import select
import signal
import socket
import sys
import threading
import time
import traceback

from autograder import wipe

PR_SET_DUMPABLE = 4

# Imported here once, not in each kernel: ipykernel and all it imports up to a first cell,
# NumPy, and the course's kernel files of the set-up cell (``%check``) and of every test cell
# (the client serving the checker), which a kernel would compile from source (its course copy
# is fresh, without bytecode). tests/test_grading_isolation.py: a kernel imports nothing more.
KERNEL_IMPORTS = (
    "numpy", "numpy.random", "ipykernel.kernelapp", "ipykernel.ipkernel",
    "ipykernel.zmqshell", "ipykernel.debugger", "IPython.core.interactiveshell",
    "IPython.core.completer", "IPython.core.completerlib", "IPython.core.debugger",
    "IPython.core.logger", "IPython.core.magics.extension", "IPython.core.oinspect",
    "IPython.extensions.storemagic", "IPython.utils.wildcard", "faulthandler", "pdb",
    "psutil", "runpy", "sqlite3", "tornado.platform.asyncio", "autograder.in_notebook",
    "autograder.kernel_client")


def _prctl_dumpable(value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")


def _preload(modules: list[str]) -> None:
    """Import what a kernel imports; no ZMQ context, no thread (fork copies neither)."""
    for name in (*KERNEL_IMPORTS, *modules):
        importlib.import_module(name)
    _warm_tracebacks()
    import zmq

    if zmq.Context._instance is not None:  # a forked context would be shared: never
        raise RuntimeError("a ZMQ context exists before the fork")
    if threading.active_count() != 1:  # a fork copies only the thread that forks
        raise RuntimeError(f"threads started before the fork: {threading.enumerate()}")


def _warm_tracebacks() -> None:
    """Format one traceback as a kernel's shell does (IPython's Context mode, colours): its
    imports, highlighting rules and ``inspect.getmodule``'s file map are made once here, not
    in every kernel whose tests fail (IPython formats a failing test's traceback twice)."""
    from IPython.core.ultratb import AutoFormattedTB

    try:
        json.loads("{")  # a traceback through the standard library's files
    except ValueError as exc:
        AutoFormattedTB(mode="Context", theme_name="linux").structured_traceback(
            type(exc), exc, exc.__traceback__)


def _others() -> list[int]:
    me = os.getpid()
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != me]


def _mounts() -> list[str]:
    """This sandbox's mount points now (none when they cannot be read)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            return wipe.mount_points(f.read())
    except OSError:
        return []


def _clean(reap, run_dir: str, mounts: list[str], modes: dict[str, int]) -> dict:
    """Kill every process but this one (it is PID 1: they are all the kernels'), wait for
    them, give the kept folders their ``modes`` back and empty /tmp (but ``run_dir`` and
    ``mounts``, the mount points at the start), /dev/shm and System V IPC. Returns how many
    were killed (``clean``) and whether both folders are empty now and every mount point is
    where and as it was (``wiped``)."""
    killed = 0
    for _ in range(1000):  # a process forking as fast as it can: kill until none is left
        pids = _others()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        reap()
        time.sleep(0.001)
    # The grader's binds stay where they were: one moved would hide the next kernel's files.
    keep, moved = [run_dir, *mounts], _mounts() != mounts
    wiped = [wipe.restore_modes(modes)]  # first: a folder the kernel made 000 is emptied too
    wiped += [wipe.empty(folder, keep=keep) for folder in ("/tmp", "/dev/shm")]
    if os.path.exists("/usr/bin/ipcrm"):  # shared memory, semaphores, message queues
        pid = os.fork()
        if pid == 0:
            try:
                fd = os.open(os.devnull, os.O_RDWR)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                os.execv("/usr/bin/ipcrm", ["ipcrm", "--all"])
            finally:
                os._exit(127)
        os.waitpid(pid, 0)
    return {"clean": killed, "wiped": all(wiped) and not moved}


def _child(conn: socket.socket, wake: tuple[int, int], request: dict) -> None:
    """In the forked kernel: drop everything of the zygote's, become a grading kernel."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in wake:
            os.close(fd)
        conn.close()
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        _prctl_dumpable(1)  # the kernel's own memory, as any process started by exec
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        random.seed()  # each kernel its own random state, as a fresh interpreter has
        if "numpy" in sys.modules:
            sys.modules["numpy"].random.seed()
        if "torch" in sys.modules:
            sys.modules["torch"].seed()
        importlib.invalidate_caches()  # the course package is a fresh copy
        if "probe" in request:
            _probe(request["probe"])  # ends the process
        sys.argv = ["autograder.kernel_launch", *request["argv"]]
        runpy.run_module("autograder.kernel_launch", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - the kernel's error goes to the grader's log
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()  # what the interpreter does at exit (os._exit does not)
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _probe(probe: dict) -> None:
    """In a forked probe (ex05's): run ``probe["source"]`` (:data:`autograder.torch_probe.
    RUNNER`) as ``python -I -c`` runs it in a fresh probe, under a CPU limit of ``probe["cpu"]``
    s, the request file on stdin, the answer file (made here) on stdout, stderr discarded."""
    resource.setrlimit(resource.RLIMIT_CPU, (probe["cpu"], probe["cpu"] + 1))  # as limits._LIMITS
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for fd, path, flags in ((0, probe["request"], os.O_RDONLY),
                            (1, probe["answer"], os.O_WRONLY | os.O_CREAT | os.O_EXCL),
                            (2, os.devnull, os.O_WRONLY)):
        opened = os.open(path, flags | os.O_NOFOLLOW, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8")
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)  # OMP_NUM_THREADS=1, as the probe's own
    exec(compile(probe["source"], "<probe>", "exec"),  # noqa: S102 - the grader's script
         {"__name__": "__main__", "__builtins__": builtins})
    os._exit(1)  # the script ends with os._exit(0) once its answer is out


class _Server:
    """The zygote's end of the grader's connection: requests read, kernels forked, each
    kernel's exit reported (SIGCHLD wakes the loop through a pipe)."""

    def __init__(self, conn: socket.socket, run_dir: str):
        self.conn, self.run_dir, self.kernels, self.buffer = conn, run_dir, set(), b""
        self.mounts = _mounts()  # before any kernel: the grader's binds, where it put them
        inside = [p for p in (run_dir, *self.mounts) if p.startswith(("/tmp/", "/dev/shm/"))]
        self.modes = wipe.modes(["/tmp", *inside], "/tmp") | wipe.modes(["/dev/shm", *inside],
                                                                         "/dev/shm")
        self.wake = os.pipe()
        os.set_blocking(self.wake[0], False)
        os.set_blocking(self.wake[1], False)
        signal.set_wakeup_fd(self.wake[1])
        signal.signal(signal.SIGCHLD, lambda *_: None)

    def send(self, msg: dict) -> None:
        """One JSON line to the grader."""
        self.conn.sendall((json.dumps(msg) + "\n").encode())

    def reap(self) -> None:
        """Wait for every child that has exited; report the kernels among them."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.kernels:
                self.kernels.discard(pid)
                self.send({"exit": pid, "status": os.waitstatus_to_exitcode(status)})

    def handle(self, request: dict) -> None:
        """Answer one request: fork a kernel, or clean the sandbox."""
        if "fork" in request:
            pid = os.fork()
            if pid == 0:
                _child(self.conn, self.wake, request["fork"])
            self.kernels.add(pid)
            self.send({"pid": pid})
        elif request.get("clean"):
            self.send(_clean(self.reap, self.run_dir, self.mounts, self.modes))
            self.reap()

    def serve(self) -> int:
        """Answer requests until the grader closes the connection; returns 0 then."""
        while True:
            try:
                ready, _, _ = select.select([self.conn, self.wake[0]], [], [])
            except InterruptedError:
                continue
            if self.wake[0] in ready:
                try:
                    os.read(self.wake[0], 4096)
                except BlockingIOError:
                    pass
                self.reap()
            if self.conn not in ready:
                continue
            data = self.conn.recv(65536)
            if not data:
                return 0  # the grader is gone
            self.buffer += data
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                self.handle(json.loads(line))


def main(argv: list[str] | None = None) -> int:
    """``python -m autograder.kernel_zygote SOCKET [MODULE...]`` (the module's docstring)."""
    args = sys.argv[1:] if argv is None else argv
    os.dup2(2, 1)  # nothing on stdout; the grader's log is stderr
    _prctl_dumpable(0)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(args[0])
    _preload(args[1:])
    server = _Server(conn, os.path.dirname(args[0]))  # the socket is in the run folder
    server.send({"ready": os.getpid()})
    return server.serve()


if __name__ == "__main__":
    raise SystemExit(main())
