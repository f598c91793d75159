"""The grader's program of one notebook's Rust cells, run in its own sandboxed process
(:class:`RustProgram`): started at the first call, serving every call of the notebook,
killed when the notebook's checker session closes or a call fails."""

from __future__ import annotations

import os
import queue
import secrets
import select
import signal
import subprocess
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

from autograder import bwrap_box, limits
from autograder.rust_source import SIGNATURES, RustCompileError, RustSource
from autograder.rust_compile import Build, build
from autograder.rust_protocol import (MAX_LINE, MAX_NOISE, RustCallFailed, RustCrashed,
                                      RustNotDefined, RustRefused, RustTimeout,
                                      encode_arguments, reply_value)
from autograder.rust_toolchain import run_command

STDERR_TAIL = 2000  # characters of the program's stderr kept for a crash's message


class _Launcher:
    """Starts the programs' processes from one long-lived thread.

    bwrap's ``--die-with-parent`` is ``PR_SET_PDEATHSIG``, which fires when the *thread*
    that started the process ends; the checker calls from a thread per test, which would
    take the process with it at the end of each test."""

    def __init__(self):
        self._jobs: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _serve(self) -> None:
        while True:
            fn, box, ready = self._jobs.get()
            try:
                box["value"] = fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                box["raised"] = exc
            ready.set()

    def run(self, fn: Callable[[], Any]) -> Any:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="rust-launcher",
                                                daemon=True)
                self._thread.start()
        box: dict = {}
        ready = threading.Event()
        self._jobs.put((fn, box, ready))
        ready.wait()
        if "raised" in box:
            raise box["raised"]
        return box["value"]


_LAUNCHER = _Launcher()


def _kill(proc: subprocess.Popen | None) -> None:
    if proc is None:
        return
    try:
        bwrap_box.kill(proc)
        proc.wait(timeout=30)
    except (OSError, subprocess.SubprocessError):
        pass


@dataclass
class _Process:
    proc: subprocess.Popen
    nonce: str
    buffer: bytearray = field(default_factory=bytearray)
    stderr: list = field(default_factory=list)  # the tail of its stderr, as bytes
    drainer: threading.Thread | None = None


class RustProgram:
    """The grader's program of one notebook's Rust cells, and its sandboxed process.

    ``call(name, args)`` sends one request and returns the reply's value, or raises:
    ValueError (the function's ``Err``), :class:`~autograder.rust_source.RustPanic` (a panic),
    :class:`~autograder.rust_source.RustNotImplemented` (``todo!()``/``unimplemented!()``, a
    NotImplementedError), :class:`~autograder.rust_source.RustCompileError` (the cells do not
    compile), :class:`RustNotDefined` (no such function in the cells),
    :class:`RustTimeout` (no reply within ``timeout`` seconds), :class:`RustCrashed` (the
    process ended), :class:`RustRefused` (a reply over the limits). ``close()`` kills the
    process. ``timeout`` is the time limit of one call in seconds (the cell time limit), and
    also the process's CPU seconds."""

    def __init__(self, built: Build, timeout: float = 60.0):
        self.build = built
        self.timeout = float(timeout)
        self._proc: _Process | None = None
        self._seq = 0
        self._lock = threading.Lock()
        self._closed = False
        self._finalizer = weakref.finalize(self, RustProgram._stop, [None])

    @classmethod
    def from_cells(cls, files: list[RustSource], timeout: float = 60.0) -> RustProgram:
        """Build ``files`` (:func:`build`) and return the program (not started yet)."""
        return cls(build(files, timeout), timeout)

    @property
    def pid(self) -> int | None:
        """The process id of the running process (bwrap's, when sandboxed), or None."""
        p = self._proc
        return p.proc.pid if p is not None and p.proc.poll() is None else None

    @staticmethod
    def _stop(holder: list) -> None:
        if holder and holder[0] is not None:
            _kill(holder[0])

    def close(self) -> None:
        """Kill the process (if one runs); later calls start none."""
        with self._lock:
            self._closed = True
            self._end()

    def _end(self) -> None:
        p, self._proc = self._proc, None
        if p is not None:
            _kill(p.proc)
            for f in (p.proc.stdin, p.proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass

    def _start(self) -> _Process:
        tc = self.build.toolchain
        cmd = run_command(self.build.binary, tc.libs if tc and not tc.static else (),
                           self.timeout)

        def launch():
            return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, cwd="/", env={},
                                    start_new_session=True)  # bwrap_box.kill

        proc = _LAUNCHER.run(launch)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, RustProgram._stop, [proc])
        p = _Process(proc, secrets.token_hex(16))
        p.drainer = threading.Thread(target=_drain, args=(proc.stderr, p.stderr), daemon=True,
                                     name="rust-stderr")
        p.drainer.start()
        os.set_blocking(proc.stdin.fileno(), False)
        return p

    def call(self, name: str, args: tuple) -> list:
        """The learner's Rust function ``name`` called with ``args`` (see the class)."""
        b = self.build
        if b.error is not None:
            raise RustCompileError(b.error)
        if name not in b.functions:
            raise RustNotDefined(
                f"your %%rust cells define no `fn {name}` (the course calls "
                f"`{SIGNATURES[name]}`; a function defined inside another item, or under "
                "another name, is not found)")
        payload = encode_arguments(name, args)
        with self._lock:
            if self._closed:
                raise RustCallFailed("the Rust program was closed (the notebook's grading "
                                     "ended)")
            if self._proc is None or self._proc.proc.poll() is not None:
                self._end()
                self._proc = self._start()
                first = self._proc.nonce + "\n"
            else:
                first = ""
            self._seq += 1
            seq = self._seq
            deadline = time.monotonic() + limits.backstop(self.timeout)  # CPU: rlimit
            try:
                self._send((first + f"{seq} {name} {payload}\n").encode("ascii"), deadline,
                           name)
                kind, rest = self._receive(seq, deadline, name)
            except RustCallFailed:
                self._end()
                raise
        return reply_value(name, kind, rest)

    def _send(self, data: bytes, deadline: float, name: str) -> None:
        p = self._proc
        fd, view = p.proc.stdin.fileno(), memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RustTimeout(self._late(name))
            _, ready, _ = select.select([], [fd], [], left)
            if not ready:
                continue
            try:
                n = os.write(fd, view)
            except BlockingIOError:
                continue
            except OSError:  # the process is gone: its reply says how
                return
            view = view[n:]

    def _late(self, name: str) -> str:
        return (f"{name} waited longer than {limits.backstop(self.timeout):g} s without "
                "answering (a blocked read?): its process was stopped")

    def _receive(self, seq: int, deadline: float, name: str) -> tuple[str, bytes]:
        p = self._proc
        fd = p.proc.stdout.fileno()
        prefix = f"{p.nonce} ".encode("ascii")
        noise = 0
        while True:
            while b"\n" in p.buffer:
                at = p.buffer.index(b"\n")
                line = bytes(p.buffer[:at])
                del p.buffer[:at + 1]
                if not line.startswith(prefix):
                    noise += len(line) + 1
                    if noise > MAX_NOISE:
                        raise RustRefused(f"{name} printed more than {MAX_NOISE} bytes: its "
                                          "process was stopped")
                    continue
                got, _, body = line[len(prefix):].partition(b" ")
                if got != str(seq).encode("ascii"):
                    raise RustRefused(f"the reply to {name} is another request's (the "
                                      "program's output is out of step)")
                kind, _, rest = body.partition(b" ")
                return kind.decode("ascii", "replace"), rest
            if len(p.buffer) > MAX_LINE:
                raise RustRefused(f"{name} wrote a line longer than {MAX_LINE} bytes (a "
                                  "reply over the limit is refused): its process was stopped")
            left = deadline - time.monotonic()
            if left <= 0:
                raise RustTimeout(self._late(name))
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise self._ended(name)
            p.buffer += chunk

    def _ended(self, name: str) -> RustCallFailed:
        """What ended the program during ``name``: RustTimeout at its CPU limit (the cell
        time limit, counted in CPU seconds: :mod:`autograder.limits`), else RustCrashed."""
        p = self._proc
        try:
            rc = p.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            rc = None
        if limits.out_of_cpu(rc):
            return RustTimeout(f"{name} ran longer than {self.timeout:g} s of CPU time (the "
                               "time limit; an endless loop?): its process was stopped")
        if rc is None:
            how = "closed its output"
        else:
            sig = -rc if rc < 0 else rc - 128 if 128 < rc < 128 + 65 else 0  # bwrap: 128 + n
            try:
                how = f"was killed by signal {signal.Signals(sig).name}" if sig else \
                    f"exited with status {rc}"
            except ValueError:
                how = f"exited with status {rc}"
            if sig == signal.SIGKILL:
                how += " (a limit: its memory, or its CPU time)"
        if p.drainer is not None:
            p.drainer.join(timeout=5)  # what it wrote before it ended
        tail = b"".join(p.stderr).decode("utf-8", "replace").strip()[-STDERR_TAIL:]
        return RustCrashed(f"the Rust program ended during {name}: it {how}"
                           + (f"; it wrote: {tail}" if tail else ""))


def _drain(stream, tail: list) -> None:
    """Read a process's stderr to its end, keeping the last :data:`STDERR_TAIL` bytes (so
    a program that writes much to it never blocks on a full pipe)."""
    size = 0
    try:
        while True:
            chunk = stream.read1(1 << 16) if hasattr(stream, "read1") else stream.read(1 << 16)
            if not chunk:
                return
            tail.append(chunk)
            size += len(chunk)
            while size > STDERR_TAIL and len(tail) > 1:
                size -= len(tail.pop(0))
    except (OSError, ValueError):
        return
