"""The warm host of ``check --warm`` (:mod:`autograder.check_warm` is the command's side).

``python -m autograder.check_host SOCKET check ... NOTEBOOK`` (started by the command, in a
session of its own) binds ``SOCKET``, imports the checker, starts the kernel (and ex05's
probe) the next check of ``NOTEBOOK`` will take, and waits. Each command it accepts is run
here, one at a time, exactly as ``python -m autograder`` runs it
(:func:`autograder.cli.main`), with the command's folder and its standard output and error
(the descriptors it sent); the reply is the exit status. Then the next kernel is started.

A check here runs in a new kernel (and probe) as every check does: only the checker, the
trusted side, lives on between checks, as a grading worker lives on between notebooks. The
host exits on a command of another fingerprint, after a command it could not finish (an
interrupt, an error of its own), and after ``AUTOGRADER_CHECK_IDLE`` seconds without one.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import io
import json
import os
import signal
import socket
import sys
import time
import traceback
import warnings
from pathlib import Path

import nbformat

from autograder import check_warm, notebook_run
from autograder.check_early import EarlyKernel, notebook_of, start
from autograder.cli import main as command
from autograder.cli import parser
from autograder.exercises import assignment_of_path
from autograder.kernel_output import Relay
from autograder.warm_sandbox import ahead_of_use, preload_for

MAX_REQUEST = 1 << 16  # bytes of a command's request (its command line and folder)


class _Terminated(BaseException):
    """SIGTERM: the host stops where it is (not caught as a command's own exit)."""


def _terminate(signum, frame) -> None:
    raise _Terminated


class Host:
    """The host's state: its socket, its fingerprint, what waits for the next check."""

    def __init__(self, listener: socket.socket):
        self.listener = listener
        self.fingerprint = check_warm.fingerprint()  # before any command changes anything
        self.environ = dict(os.environ)
        self.kernel: EarlyKernel | None = None
        self.relay: Relay | None = None  # the waiting kernel's own output

    def prepare(self, argv: list[str]) -> None:
        """Start what the next check of ``argv``'s notebook takes: its kernel, ex05's probe;
        import its checks (torch, for the exercises that use it)."""
        self.kernel = start(argv, ahead=True)
        if self.kernel is not None and self.kernel.output is not None:
            self.relay = Relay(*self.kernel.output)
        path = notebook_of(argv)
        named = assignment_of_path(path) if path else None
        if named is None:
            return
        with contextlib.suppress(Exception, SystemExit):  # a head start only (and a command
            # line argparse refuses, such as --timeout=abc, starts nothing more)
            notebook_run.before_checks(named, parser().parse_args(argv).timeout)
            importlib.import_module(f"autograder.checks.{named.split('_')[0]}")
            nbformat.validate(nbformat.read(path, as_version=4))  # its schema compiled
        for name in ahead_of_use(preload_for(named)):  # torch's lazy imports, here too
            with contextlib.suppress(ImportError):
                importlib.import_module(name)

    def discard(self) -> None:
        """Stop the waiting kernel (the probe is stopped at exit)."""
        if self.kernel is not None:
            self.kernel.discard()
            self.kernel = None

    def serve(self, conn: socket.socket) -> bool:
        """Run the command ``conn`` sends; whether to go on serving."""
        data, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, 2)
        try:
            request = json.loads(data.decode("utf-8"))
            argv = [str(a) for a in request["argv"] if a != check_warm.WARM_FLAG]
            if request["fingerprint"] != self.fingerprint or len(fds) != 2:
                with contextlib.suppress(OSError):
                    conn.sendall(b'{"stale": true}\n')
                return False
            try:
                conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
            except OSError:  # the command has gone (interrupted while it waited)
                return True
            code, go_on = self.run(argv, request, fds)
        finally:
            for fd in fds:
                os.close(fd)
        with contextlib.suppress(OSError):
            conn.sendall(json.dumps({"code": code}).encode() + b"\n")
        if go_on:
            self.prepare(argv)
        return go_on

    def run(self, argv: list[str], request: dict, fds: list[int]) -> tuple[int, bool]:
        """The exit status of ``argv`` run here, writing to ``fds`` (standard output and
        error); and whether the host may serve again (not after an interrupt or a failure
        of its own)."""
        kernel, self.kernel = self.kernel, None
        relay, self.relay = self.relay, None
        os.environ.clear()
        os.environ.update(self.environ, PWD=str(request.get("pwd", "")))
        # Python shows a warning once per place and process: each check as a process of its own
        with _streams(fds, request), _environment_kept(), warnings.catch_warnings():
            warnings.onceregistry.clear()
            if relay is not None:  # before the check's own output, as from a kernel of its own
                relay.attach(1, 2)
            try:
                os.chdir(request["cwd"])
                return command(argv, early_kernel=kernel), True
            except SystemExit as stop:  # argparse's --help and usage errors
                code = stop.code
                return (code if isinstance(code, int) else 0 if code is None else 2), True
            except KeyboardInterrupt:
                print("interrupted", file=sys.stderr)
                return 130, False
            except Exception:  # noqa: BLE001 - the command's own failure, as Python shows it
                traceback.print_exc()
                return 1, False
            finally:
                if relay is not None:
                    relay.finish()


@contextlib.contextmanager
def _environment_kept():
    """The environment as it was, after a command that changes it (``cli.main`` puts its
    Python's bin/ first on PATH): the next kernel starts with the command's environment."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _streams(fds: list[int], request: dict):
    """Standard output and error on the command's ``fds`` (descriptors 1 and 2 too: what
    the kernel and probes started now write goes there, as from the command), with its
    encoding; the host's own (nothing) back after."""
    saved = [os.dup(1), os.dup(2)]
    old = sys.stdout, sys.stderr
    os.dup2(fds[0], 1)
    os.dup2(fds[1], 2)
    enc, errors = request.get("encoding") or "utf-8", request.get("errors") or "strict"
    (out_line, out_through), (err_line, err_through) = request.get(
        "buffering", [[False, False], [True, False]])
    sys.stdout = io.TextIOWrapper(open(1, "wb", closefd=False), encoding=enc, errors=errors,
                                  line_buffering=bool(out_line), write_through=bool(out_through))
    sys.stderr = io.TextIOWrapper(open(2, "wb", closefd=False), encoding=enc,
                                  errors="backslashreplace", line_buffering=bool(err_line),
                                  write_through=bool(err_through))
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        sys.stdout, sys.stderr = old
        for fd, saved_fd in zip((1, 2), saved):
            os.dup2(saved_fd, fd)
            os.close(saved_fd)


def main(argv: list[str]) -> int:
    """``SOCKET check ... NOTEBOOK``: serve checks on ``SOCKET`` until idle (see the module
    docstring). Exits at once when another host holds the socket."""
    path, first = Path(argv[0]), [a for a in argv[1:] if a != check_warm.WARM_FLAG]
    lock = open(path.with_suffix(".lock"), "a")  # noqa: SIM115 - held for the host's life
    if not _locked(lock):
        return 0  # another host serves this socket
    lock.truncate(0)
    lock.write(f"{os.getpid()}\n")  # check_warm.host_pid reads it
    lock.flush()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminate)
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    os.chmod(path, 0o600)
    listener.listen(8)  # commands that come while it prepares wait for it
    host = None
    try:
        host = Host(listener)
        host.prepare(first)
        listener.settimeout(check_warm.idle_seconds() or None)
        while True:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                return 0
            with conn:
                conn.settimeout(None)
                if not host.serve(conn):
                    return 0
    except _Terminated:
        return 0
    finally:  # the lock is still held: the socket is this host's
        path.unlink(missing_ok=True)
        listener.close()
        if host is not None:
            host.discard()


def _locked(lock, wait: float = 5.0) -> bool:
    """Whether this process holds ``lock``, taken within ``wait`` seconds (a host that
    answered "stale" may still be ending)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
