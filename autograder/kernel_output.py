"""What a kernel started ahead writes to its own standard output and error, relayed to the
check that takes it (``check --warm``'s host, :mod:`autograder.check_host`).

A check's kernel inherits the command's terminal: a learner's ``os.system("echo ...")``, a
C library's message or Python's own warnings reach it directly, not through the notebook's
outputs. A kernel the host starts before the next check exists cannot inherit that
terminal, so it writes into two pipes; :class:`Relay` reads them from the start (nothing
is held up), keeps what comes before a check takes the kernel (up to :data:`KEPT` bytes),
and writes everything to the check's standard output and error once it does.
"""

from __future__ import annotations

import os
import threading

KEPT = 1 << 20  # bytes kept of what a kernel writes before a check takes it


class _Pipe:
    """One pipe's relay: a thread that reads it to its end, into ``kept`` until a target
    descriptor is given, then into the target (its own copy, closed at the end)."""

    def __init__(self, fd: int):
        self.fd, self.kept, self.target = fd, bytearray(), None
        self.lock, self.ended = threading.Lock(), threading.Event()
        threading.Thread(target=self._read, daemon=True, name="kernel-output").start()

    def _read(self) -> None:
        try:
            while chunk := os.read(self.fd, 65536):
                with self.lock:
                    if self.target is None:
                        self.kept += chunk[:max(0, KEPT - len(self.kept))]
                    else:
                        _write(self.target, chunk)
        except OSError:
            pass
        finally:
            with self.lock:
                os.close(self.fd)
                if self.target is not None:
                    os.close(self.target)
                    self.target = None
            self.ended.set()

    def attach(self, target: int) -> None:
        """From now on write to a copy of ``target``, what was kept first."""
        with self.lock:
            if self.ended.is_set():
                return
            self.target = os.dup(target)
            _write(self.target, bytes(self.kept))
            self.kept = bytearray()


def _write(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:  # the command's terminal or pipe has gone: the rest is dropped
        pass


class Relay:
    """The relay of a kernel's standard output and error (the read ends of its pipes)."""

    def __init__(self, stdout: int, stderr: int):
        self.pipes = (_Pipe(stdout), _Pipe(stderr))

    def attach(self, stdout: int, stderr: int) -> None:
        """Write the kernel's output to ``stdout`` and ``stderr`` (a check's descriptors)."""
        for pipe, target in zip(self.pipes, (stdout, stderr)):
            pipe.attach(target)

    def finish(self, wait: float = 2.0) -> None:
        """Wait up to ``wait`` seconds for the kernel's pipes to end (it has stopped; a
        process it started may keep them open, and its output then goes on to the same
        descriptors until it ends)."""
        for pipe in self.pipes:
            pipe.ended.wait(wait)
