"""The peak memory of one call of a learner's function, measured by the grader from outside.

ex06's rule, "the peak memory the call allocates, by any library, stays under 16 MiB", is
judged in a fresh process the learner's kernel never sees, in memory cgroups the grader
makes for it, read by the grader itself:

1. A new sandboxed Python (bubblewrap: no network, its own processes and ``/tmp``, a
   read-only root, no GPU, ``/sys`` not mounted, so no cgroup file can be reached from
   inside) starts in cgroup ``setup``. It runs the instructor's setup cells, imports every
   module the solution cells name (library code only: a library imported by a solution
   cell is not the call's memory), makes the call's inputs, warms NumPy's code and BLAS
   buffers up with the grader's own products, collects garbage and hands free heap memory
   back to the system (``malloc_trim``). Then it says ``ready`` and waits.
2. The grader moves the probe's processes into a new, empty cgroup ``call`` (charges are
   not moved with them: what the setup made resident stays charged to ``setup``).
3. The probe runs the learner's solution cells and then the measured call. Its processes
   and every child they start are in ``call``: each page they make resident from now on,
   anonymous, shared (``mmap``, tmpfs files in ``/tmp`` or ``/dev/shm``), file-backed or
   the kernel's own (page tables), is charged there, whichever library or process touched
   it, and stays counted in the cgroup's high-water mark (``memory.max_usage_in_bytes``,
   cgroup v2 ``memory.peak``) after it is freed or its process has exited.
4. When every process of the probe has exited, the grader reads that high-water mark: the
   peak. Nothing is sampled, so no result depends on timing, and nothing inside the
   sandbox can lower the counter (``/proc/self/clear_refs``, ``malloc_trim`` and
   ``tracemalloc`` act on other counters).

So memory made resident before the call by the learner's own code counts: a buffer a
solution cell allocates and touches (the solution cells run after the baseline), a child
process, a shared or file mapping. The learner's other cells (their experiments) do not
run here at all, so a big array an honest learner kept from their own work costs nothing;
a function that needs a name only such a cell defines fails here (the contract: each
graded function and its helpers in its own solution cell).

The allocator is set up so that resident memory follows live memory: glibc hands every
block of 128 KiB or more back when it is freed (``GLIBC_TUNABLES``), transparent huge
pages are off (``PR_SET_THP_DISABLE``, ``NUMPY_MADVISE_HUGEPAGE=0``), BLAS runs one
thread (``OPENBLAS_NUM_THREADS=1``), and the probe is pinned to one CPU (the kernel's
per-CPU charge caches make the counter exceed the pages by at most 64 pages per CPU).
A learner can undo any of these, which only makes their own peak larger.

Where no memory cgroup can be made (not root and no delegated cgroup v2 subtree; see
:func:`autograder.cgroups.cgroup_error`), the probe measures inside itself instead
(:func:`autograder.memory.peak_call_memory`): an *estimate* for the learner, which a child
process or a reset of the high-water mark can escape; :attr:`Measured.how` says which.
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import time
from pathlib import Path

from autograder import limits, memory
from autograder.cgroups import LIMIT_BYTES, Cgroups, writable_hierarchy
from autograder.peak_probe_answer import (MAX_HEADER, MAX_ROWS_BYTES, MIB, BrokenAnswer,
                                          Measured, read_answer)
from autograder.peak_probe_program import ENV, command, imported_modules


def mode() -> str:
    """``cgroup v1``, ``cgroup v2`` or ``in-process estimate``: how peaks are measured here."""
    found, _why = writable_hierarchy()
    return f"cgroup v{found.version}" if found is not None else "in-process estimate"


def _cpu() -> int | None:
    """The one CPU the probe runs on (one of this process's, spread over the workers)."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    return cpus[os.getpid() % len(cpus)] if cpus else None


class _Pipes:
    """Reads the probe's stdout (kept) and stderr (its last 4 KiB) until a deadline."""

    def __init__(self, proc: subprocess.Popen, deadline: float):
        self.proc, self.deadline = proc, deadline
        self.out, self.err = bytearray(), bytearray()
        self.open = {proc.stdout.fileno(): self.out, proc.stderr.fileno(): self.err}
        for fd in self.open:
            os.set_blocking(fd, False)

    def read_until(self, done) -> bool:
        """Read until ``done(out)`` holds or stdout ends (True), or time is up (False)."""
        while not done(self.out) and self.proc.stdout.fileno() in self.open:
            left = self.deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select(list(self.open), [], [], min(left, 1.0))
            for fd in ready:
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    del self.open[fd]
                    continue
                buf = self.open[fd]
                buf += chunk
                if buf is self.err and len(buf) > 4096:
                    del buf[:-4096]
                if buf is self.out and len(buf) > MAX_HEADER + MAX_ROWS_BYTES + 16:
                    raise BrokenAnswer("the probe wrote more than its answer can hold")
        return True

    def stderr_tail(self) -> str:
        return bytes(self.err[-300:]).decode("utf-8", "replace").strip()



_WARNED: list[str] = []


def measure_call(setup: list[str], cells: list[str], name: str, shapes: list[tuple[int, ...]],
                 kwargs: dict, *, seed: int, rows: list[int] | None = None, warmup: str = "",
                 timeout: float = 60.0) -> Measured:
    """Run ``cells`` after ``setup`` in a fresh probe and measure ``name(*args, **kwargs)``
    there, ``args`` being float64 standard normal arrays of ``shapes`` drawn with ``seed``
    (``numpy.random.default_rng(seed).normal``, one array after another); ``warmup`` is
    the grader's own code run before the baseline (names ``np``, ``args``, ``kwargs``).
    The result comes back whole when it is a 2-D float64 array of at most
    :data:`MAX_ROWS_BYTES` (``rows`` None, the default; sent from the array itself, so the
    probe makes no copy of it), or only its ``rows``. At most ``timeout``
    seconds for all of it."""
    cmd, boxed = command()
    groups, how = _cgroups(boxed)
    measured = Measured(how=how)
    request = {"setup": setup, "cells": cells, "name": name, "imports": imported_modules(cells),
               "shapes": [list(s) for s in shapes], "kwargs": kwargs, "seed": seed,
               "rows": None if rows is None else list(rows), "warmup": warmup,
               "max_bytes": MAX_ROWS_BYTES,
               "estimate": "" if groups is not None else Path(memory.__file__).read_text()}
    start = time.monotonic()
    deadline = start + limits.backstop(timeout)  # the CPU time: its rlimit
    proc = None
    try:
        proc = _start(cmd, boxed, timeout, groups)
        pipes = _Pipes(proc, deadline)
        try:
            proc.stdin.write(b"go\n" + json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
        except OSError:
            pass
        if not pipes.read_until(lambda out: b"\n" in out) or b"\n" not in pipes.out:
            measured.error = _stopped(proc, pipes, timeout, "before the learner's cells ran")
            return measured
        if bytes(pipes.out) != b"ready\n":
            raise BrokenAnswer("it did not say it was ready")
        del pipes.out[:]
        if groups is not None:
            measured.baseline = groups.usage(groups.setup)
            groups.move_to_call()
        try:
            proc.stdin.write(b"go\n")
            proc.stdin.close()
        except OSError:
            pass
        _finish(proc, pipes, groups, measured, deadline, timeout)
        if not measured.error:
            read_answer(pipes.out, None if rows is None else list(rows), measured)
            if groups is None and measured.peak is None and measured.value:
                raise BrokenAnswer("no estimate came with the result")
        return measured
    except BrokenAnswer as exc:
        measured.error = f"the probe's answer could not be read: {exc}"
        return measured
    except OSError as exc:  # the cgroup files or the pipes failed the grader
        measured.error = f"the grader could not measure the probe: {exc}"
        return measured
    finally:
        if proc is not None:
            _end(proc)
        if groups is not None:
            groups.close()
        measured.seconds = time.monotonic() - start


def _cgroups(boxed: bool) -> tuple[Cgroups | None, str]:
    """The probe's cgroups (None where none can be made: the peak is then estimated in the
    probe, with a warning once per process) and how the peak is measured, in words."""
    found, why = writable_hierarchy()
    if found is not None:
        try:
            return Cgroups(found), f"cgroup v{found.version}" + ("" if boxed else ", not sandboxed")
        except OSError as exc:
            why = f"the probe's cgroup could not be made: {exc}"
    if not _WARNED:
        _WARNED.append(why)
        logging.getLogger(__name__).warning(
            "peak memory is estimated inside the learner's process, which a child "
            "process or a reset high-water mark escapes: no memory cgroup (%s)", why)
    return None, f"an in-process estimate (no memory cgroup: {why})"


def _start(cmd: list[str], boxed: bool, timeout: float,
           groups: Cgroups | None) -> subprocess.Popen:
    """The probe's process, in its cgroup and pinned to one CPU before it runs.

    The shell waits for its first line until it is in its cgroup and pinned, then becomes
    the probe: everything the probe starts is in the cgroup from its first page (a shell
    that cannot read its line exits, it never runs the probe outside)."""
    env = None if boxed else {**ENV, "PATH": os.environ.get("PATH", ENV["PATH"])}
    proc = subprocess.Popen(
        limits.limited(["/bin/sh", "-c", 'read _ || exit 97; exec "$@"', "sh", *cmd], timeout),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        cwd="/tmp" if not boxed else "/", env=env, start_new_session=True)
    if groups is not None:
        groups.add(proc.pid)
    cpu = _cpu()
    if cpu is not None:
        try:
            os.sched_setaffinity(proc.pid, {cpu})
        except OSError:
            pass
    return proc


def _finish(proc: subprocess.Popen, pipes: _Pipes, groups: Cgroups | None,
            measured: Measured, deadline: float, timeout: float) -> None:
    """Read the probe's output until it ends; note its peak, and in ``measured.error`` why
    it has no answer (stopped, out of memory or CPU time, or ended without one)."""
    finished = pipes.read_until(lambda out: False)  # until stdout ends
    try:
        proc.wait(max(0.0, deadline - time.monotonic()) + 1)
    except subprocess.TimeoutExpired:
        finished = False
    if not finished:
        measured.error = _stopped(proc, pipes, timeout, "")
    if groups is not None:
        groups.kill_all()  # nothing is left once the sandbox's first process ended
        measured.peak = groups.peak()
        if groups.oom_kills():
            measured.error = f"the probe ran out of memory (its limit is {LIMIT_BYTES // MIB} MiB)"
            return
    if measured.error:
        return
    if limits.out_of_cpu(proc.returncode):
        measured.error = f"the probe ran longer than {timeout:g} s of CPU time"
    elif b"\n" not in pipes.out:
        measured.error = (f"the probe ended (status {proc.returncode}) without an answer"
                          + (f": {pipes.stderr_tail()}" if pipes.stderr_tail() else ""))


def _stopped(proc: subprocess.Popen, pipes: _Pipes, timeout: float, when: str) -> str:
    if proc.poll() is None:
        _end(proc)
        return (f"the probe waited longer than {limits.backstop(timeout):g} s"
                f"{' ' + when if when else ''}")
    if limits.out_of_cpu(proc.returncode):
        return f"the probe ran longer than {timeout:g} s of CPU time{' ' + when if when else ''}"
    tail = pipes.stderr_tail()
    return (f"the probe ended (status {proc.returncode}) {when or 'before it answered'}"
            + (f": {tail}" if tail else ""))


def _end(proc: subprocess.Popen) -> None:
    """Kill the probe (bubblewrap: its sandbox and every process in it go with it)."""
    if proc.poll() is None:
        try:
            proc.kill()
        except OSError:
            pass
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        pass
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
