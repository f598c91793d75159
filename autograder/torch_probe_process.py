"""ex05's probe process (:mod:`autograder.torch_probe` is what it runs), started and read.

:func:`run` hands a process its request (the learner's cells, the checker's calls) and reads
its answer. Most of a process's time is its torch import, done before it reads the request,
so ``check`` starts one ahead (:func:`spawn_ahead`), before the checker has imported torch,
and the next :func:`run` for the same assignment takes it. Imports no torch."""

from __future__ import annotations

import atexit
import json
import math
import os
import stat
import subprocess
import threading
import time
from concurrent.futures import Future
from pathlib import Path

from autograder import bwrap_box, limits, warm_zygotes, wipe
from autograder.warm_sandbox import Zygote
from autograder.sandbox import COURSE_DIR, copy_course
from autograder.scratch import scratch_dir
from autograder.torch_probe import MAX_OUTPUT, RUNNER, command


class ProbeFailed(Exception):
    """The probe gave no answer (a timeout, a crash, malformed output)."""


class _Started:
    """A probe process waiting for its request, and its copy of the course.

    The process is started by a thread of its own that lives until :meth:`close`:
    bubblewrap's ``--die-with-parent`` (``PR_SET_PDEATHSIG``) kills the sandbox when the
    *thread* that started it ends, and a process started ahead by ``check``'s head-start
    thread would otherwise die with it, before its request.

    The process leads a session of its own, so :meth:`close` kills the whole sandbox by its
    process group: bubblewrap's inner process, killed with the outer one, would otherwise
    outlive it when the kill comes before it armed ``--die-with-parent`` (bubblewrap issue
    633), blocked for ever in its start-up and holding the probe's pipes open."""

    def __init__(self, assignment: str, timeout: float):
        self.assignment, self.course = assignment, scratch_dir("autograder-probe-course-")
        self.timeout = timeout
        copy_course(self.course, assignment)
        self._closed = threading.Event()
        started: Future = Future()
        threading.Thread(target=self._own, args=(limits.limited(command(self.course), timeout),
                                                 started),
                         daemon=True, name="torch-probe-owner").start()
        self.proc: subprocess.Popen = started.result()  # what Popen raised, raised here

    def _own(self, line: list[str], started: Future) -> None:
        try:
            started.set_result(subprocess.Popen(line, stdin=subprocess.PIPE,
                                                stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE, cwd=Path("/"),
                                                start_new_session=True))
        except BaseException as exc:  # noqa: BLE001 - handed to the constructor
            started.set_exception(exc)
            return
        self._closed.wait()

    def close(self) -> None:
        """Kill the process if it still runs; remove the course copy; let the owner end.
        Safe while :func:`run` waits on the process in another thread (``check`` exiting,
        at exit, during a test whose time ran out): that thread reaps it."""
        running = self.proc.poll() is None
        bwrap_box.kill(self.proc)  # the sandbox's every process
        if running:
            try:
                self.proc.communicate()
            except ValueError:  # another thread's communicate() has closed stdin
                self.proc.wait()
        wipe.remove(self.course)
        self._closed.set()


# At most one process started ahead (``check``: one notebook), taken by the next run().
_AHEAD: list[_Started] = []
_AHEAD_LOCK = threading.Lock()


def spawn_ahead(assignment: str, timeout: float) -> None:
    """Start a probe process for ``assignment`` now, waiting for its request (it imports
    torch meanwhile): ``check`` calls this before the checker imports torch. Killed at exit
    when no :func:`run` took it. One already waiting for the same assignment and
    ``timeout`` (started by ``check --warm``'s host before this check) is kept."""
    with _AHEAD_LOCK:
        if any(s.assignment == assignment and s.timeout == timeout and s.proc.poll() is None
               for s in _AHEAD):
            return
    started = _Started(assignment, timeout)
    with _AHEAD_LOCK:
        for old in _AHEAD:
            old.close()
        _AHEAD[:] = [started]
    atexit.register(started.close)


def _take(assignment: str, timeout: float) -> _Started:
    """The process started ahead for ``assignment``, or a new one."""
    with _AHEAD_LOCK:
        found = [s for s in _AHEAD if s.assignment == assignment]
        _AHEAD[:] = [s for s in _AHEAD if s not in found]
    for started in found:
        if started.proc.poll() is None:
            return started
        started.close()  # ended before its request (killed): its course copy goes
    return _Started(assignment, timeout)


def run(cells: list[str], calls: list[dict], timeout: float,
        assignment: str = "ex05_torch_attention", cuda: bool = False) -> dict:
    """The probe's answer for ``calls`` after ``cells`` ran: ``replies`` (one per call),
    ``off`` (kernels switched off), ``no_exec`` (the filter is in place), ``hits``. The
    cells can import what ``assignment``'s kernel has of the course
    (:data:`autograder.sandbox.KERNEL_FILES`), nothing more."""
    request = {"cells": cells, "calls": calls, "cuda": cuda}
    with _AHEAD_LOCK:
        ahead = any(s.assignment == assignment for s in _AHEAD)
    zygote = None if ahead else warm_zygotes.warm_probes()
    if zygote is not None:  # a grading worker's: forked with torch imported
        with _WARM_LOCK:
            forked = _run_forked(zygote, request, timeout, assignment)
        if forked is not None:  # else the sandbox had ended: a process of its own
            return _answer(*forked, len(calls), timeout)
    started = _take(assignment, timeout)
    try:
        request = json.dumps(dict(request, course=str(started.course)))
        try:
            stdout, _ = started.proc.communicate(request.encode(),
                                                 timeout=limits.backstop(timeout))
        except subprocess.TimeoutExpired:
            raise ProbeFailed(f"the cells and calls waited longer than "
                              f"{limits.backstop(timeout):g} s") from None
    finally:
        started.close()
        atexit.unregister(started.close)  # registered when started ahead
    return _answer(stdout, started.proc.returncode, len(calls), timeout)


_WARM_LOCK = threading.Lock()  # one probe at a time in the probes' warm sandbox


def _run_forked(zygote: Zygote, request: dict, timeout: float,
                assignment: str) -> tuple[bytes, int] | None:
    """The probe's output and exit status, the probe forked by the probes' warm sandbox
    (torch imported; a fresh course copy, an empty working folder, the previous probe and
    all it left killed and wiped): the same script, request and limits as a process of its
    own (CPU ``timeout``, wall clock :func:`autograder.limits.backstop`). None when the
    sandbox has ended (its process died, or a folder could not be wiped)."""
    empty = scratch_dir("autograder-probe-work-")  # nothing of the submission's folder
    try:
        run_dir, name = zygote.prepare(empty, assignment)
    except RuntimeError:
        if zygote.alive():
            raise
        return None
    finally:
        empty.rmdir()
    kernel = zygote.count
    try:
        ask, answer = run_dir / f"{name}.request.json", run_dir / f"{name}.answer.json"
        ask.write_text(json.dumps(dict(request, course=COURSE_DIR)), encoding="utf-8")
        proc = zygote.fork({"argv": [], "cwd": "/tmp", "env": _PROBE_ENV, "probe": {
            "source": RUNNER, "request": str(ask), "answer": str(answer),
            "cpu": max(1, math.ceil(timeout))}})
        deadline = time.monotonic() + limits.backstop(timeout)
        while proc.poll() is None:
            if time.monotonic() > deadline:
                proc.kill()
                raise ProbeFailed(f"the cells and calls waited longer than "
                                  f"{limits.backstop(timeout):g} s")
            proc.pause()
        return _read_regular(answer), proc.returncode
    finally:
        zygote.release(kernel)


# The probe's environment, as torch_probe.command gives its own process; the course is
# importable at COURSE_DIR.
_PROBE_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp", "OMP_NUM_THREADS": "1",
              "PYTHONPATH": COURSE_DIR, "PYTHONDONTWRITEBYTECODE": "1"}


def _read_regular(path: Path) -> bytes:
    """At most MAX_OUTPUT + 1 bytes of ``path`` when it is a regular file (not a link, a
    FIFO or a device the learner's code put in its place), else nothing."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read(MAX_OUTPUT + 1)
    finally:
        os.close(fd)


def _answer(stdout: bytes, returncode: int, n_calls: int, timeout: float) -> dict:
    """The probe's answer read from its output, or :class:`ProbeFailed`."""
    if limits.out_of_cpu(returncode):
        raise ProbeFailed(f"the cells and calls ran longer than {timeout:g} s of CPU time")
    text = stdout[:MAX_OUTPUT + 1]
    try:
        answer = json.loads(text.decode("utf-8")) if len(text) <= MAX_OUTPUT else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        answer = None
    if type(answer) is not dict or type(answer.get("replies")) is not list or len(
            answer["replies"]) != n_calls or type(answer.get("off")) is not int:
        raise ProbeFailed(f"the process ended with status {returncode} and no answer")
    return answer
