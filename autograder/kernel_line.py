"""The trusted checker's line to the kernel cell that serves a test (one line per test of
a run of test cells): a socket over which only request ids cross (requests and replies are
files, :mod:`autograder.wire`), the kernel's time on it, counted against the test's time
limit, and what the test came to (:class:`Served`). Stdlib only: the website's in-page
checker imports it too."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from autograder import wire
from autograder.session_errors import CheckStopped, ProtocolError
from autograder.wire_folder import socket_path

# Seconds a kernel interrupted at the time limit has to end its cell before it is killed.
GRACE = 10.0
now = time.monotonic  # the clock the kernel's time is read from (tests give their own)


@dataclass
class Served:
    """One test served by the kernel (:meth:`autograder.session.Session.serving_run`): what
    it returned or raised, and the markers it put in the kernel cell's outputs
    (:meth:`autograder.session.Session.phase`)."""

    value: Any = None
    raised: BaseException | None = None
    marks: list[tuple[str, str]] = field(default_factory=list)


class KernelLine:
    """The socket one kernel cell serves a test over: the checker sends a request's id,
    the kernel sends it back when its reply is written. Only ids cross here; requests and
    replies are files (:mod:`autograder.wire`). The checker waits until the kernel answers,
    connects or ends its cell, and counts the time it waits: the kernel's time, of which
    a test may take ``limit`` seconds (:attr:`overran` past that)."""

    def __init__(self, folder: wire.Folder, limit: float | None = None):
        import socket
        import threading

        self.name = f"line-{secrets.token_hex(8)}"
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(socket_path(folder.fd, str(folder.path), self.name))
        self.listener.listen(1)
        self.conn = None
        self.ended = False  # the kernel's cell has ended
        self.cell_ended = threading.Event()
        self.reader = None
        self.left = float(limit) if limit and limit > 0 else None  # kernel seconds left
        self.overran = False

    def _spend(self, start: float) -> None:
        if self.left is not None:
            self.left -= now() - start
            if self.left <= 0:
                self.overran = True
                raise CheckStopped("the test ran longer than the time limit")

    def accept(self) -> None:
        import select

        start = now()
        try:
            while self.conn is None:
                ready, _, _ = select.select([self.listener], [], [], 0.05)
                if ready:
                    self.conn, _ = self.listener.accept()
                    self.reader = self.conn.makefile("rb")
                elif self.ended:
                    break
                else:
                    self._spend(start)
                    start = now()
        except (OSError, ValueError):
            pass
        if self.conn is None:
            raise ProtocolError("the kernel did not serve the checker's test (its cell "
                                "ran something else)")

    def ask(self, rid: str) -> None:
        """Send ``rid`` and wait until the kernel says its reply is written (CheckStopped
        when the test's time is used up first)."""
        start = now()
        try:
            self.conn.settimeout(None if self.left is None else max(self.left, 0.001))
            self.conn.sendall(rid.encode("ascii") + b"\n")
            answer = self.reader.readline(200)
        except TimeoutError:  # socket.timeout: the kernel's time is used up
            self.overran = True
            raise CheckStopped("the test ran longer than the time limit") from None
        except (OSError, ValueError, AttributeError):
            answer = b""
        self._spend(start)
        if not answer:
            raise CheckStopped("the kernel stopped answering the checker (a call ran past "
                               "the time limit, or the kernel died)")
        if answer != rid.encode("ascii") + b"\n":
            raise ProtocolError("the kernel answered another request than the checker's")

    def finish(self, go_on: bool = True) -> None:
        """The test is over: tell the kernel's cell to serve the next test of its run, if
        any (``done``), or to end now (``end``: ``go_on`` false), in the checker's thread."""
        try:
            if self.conn is not None:
                self.conn.sendall(b"done\n" if go_on else b"end\n")
        except OSError:
            pass
        self.listener.close()

    def kernel_done(self) -> None:
        """The kernel's cell ended: nothing more will be answered (the grading thread;
        a wait for a reply ends at once, a wait for the kernel to connect at its next
        look)."""
        import socket

        self.ended = True
        self.cell_ended.set()
        conn = self.conn
        if conn is not None:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
