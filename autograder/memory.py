"""The peak memory one call allocates, by any library, measured where it is allocated.

:func:`autograder.measure.peak_traced_memory` uses :mod:`tracemalloc`, which sees only the
allocations made through Python's allocator (Python objects, NumPy arrays): a function
that converts to torch, calls C through ctypes or allocates in any other extension can
hold gigabytes unseen. :func:`peak_call_memory` measures the *process* instead: on Linux
it resets the kernel's high-water mark of the resident set (``/proc/self/clear_refs``,
value 5, Linux >= 4.0) and reads ``VmHWM`` from ``/proc/self/status`` after the call, so
every page the process touched during the call counts, whoever allocated it. Freed but
still mapped memory is handed back first (``gc.collect``, glibc's ``malloc_trim``), so
that memory the call reuses from earlier work is not hidden. Where the high-water mark
cannot be reset, a thread samples the resident set every millisecond during the call (a
lower bound). The traced peak is measured too, and the larger of the two is reported.

Every kind of resident page counts: anonymous (``RssAnon``: heaps, arrays, buffers), shared
memory (``RssShmem``: ``mmap.mmap(-1, n)``, files in a tmpfs) and file-backed pages
(``RssFile``: ``np.memmap``, ``torch.from_file``), kept mapped after the call or not: a
T x T matrix can live in any of them. (The checks first call the function once unmeasured,
so the library code pages it runs are resident before the measured call: at T = 4096 the
course's tiled reference grows the file-backed pages by 0.06 MiB.) Processes the call
starts or uses (a ``multiprocessing`` child, a worker started earlier) count too: the
sampler adds the resident memory of every other process of the kernel's sandbox (its own
PID namespace) and of the kernel's descendants.
"""

from __future__ import annotations

import ctypes
import gc
import os
import threading
import tracemalloc
from typing import Any, Callable

_STATUS = "/proc/self/status"
_CLEAR_REFS = "/proc/self/clear_refs"


def _status_kib(field: str) -> int | None:
    """A ``kB`` field of /proc/self/status (``VmRSS``, ``VmHWM``), None where unavailable."""
    try:
        with open(_STATUS, encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _trim() -> None:
    """Collect garbage and return free heap memory to the system (glibc only)."""
    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def _reset_high_water_mark() -> bool:
    """Reset VmHWM to the current resident set; False where Linux does not allow it."""
    try:
        with open(_CLEAR_REFS, "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _rss_kib(status: str = _STATUS) -> int | None:
    """Resident memory of a process (``VmRSS``: anonymous, shared and file-backed)."""
    try:
        with open(status, encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _other_pids() -> set[int]:
    """The kernel's descendants and, inside the sandbox (its own PID namespace, where PID 1
    is bubblewrap's init or the warm kernels' zygote, our parent, and /proc shows only the
    sandbox's processes), every process but PID 1 and this one: a child that another
    process adopted is still counted."""
    me, found = os.getpid(), set()
    try:
        with open("/proc/1/comm", encoding="ascii") as f:
            sandboxed = f.read().strip() == "bwrap" or os.getppid() == 1
    except OSError:
        sandboxed = False
    if sandboxed:
        found = {int(p) for p in os.listdir("/proc") if p.isdigit()} - {1, me}
    todo = [me]
    while todo:
        kids = set(child_pids(todo.pop())) - found
        found |= kids
        todo += kids
    return found


def child_pids(pid: int) -> list[int]:
    """The processes ``pid``'s threads started (``/proc/PID/task/*/children``); [] for a
    process that is gone."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    kids = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
                kids += [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            continue
    return kids


def _others_kib() -> int:
    """Resident memory of the processes of :func:`_other_pids` (0 when there are none)."""
    return sum(_rss_kib(f"/proc/{pid}/status") or 0 for pid in _other_pids())


class _Sampler(threading.Thread):
    """Samples the resident memory of this process and of the others (:func:`_others_kib`)
    every ``interval`` seconds until stopped; keeps the largest of each."""

    def __init__(self, interval: float = 0.001):
        super().__init__(daemon=True)
        self.interval, self.peak_kib = interval, _rss_kib() or 0
        self.others_kib = _others_kib()
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            self.peak_kib = max(self.peak_kib, _rss_kib() or 0)
            self.others_kib = max(self.others_kib, _others_kib())

    def stop(self) -> tuple[int, int]:
        self._stop_event.set()
        self.join()
        return max(self.peak_kib, _rss_kib() or 0), max(self.others_kib, _others_kib())


def peak_call_memory(fn: Callable, *args, **kwargs) -> tuple[Any, int, str]:
    """``(fn(*args, **kwargs), peak bytes the call added, how it was measured)``.

    The peak is the largest of: the growth of the process's resident set during the call
    (``"process"`` via the reset high-water mark, or ``"sampled"`` every millisecond where
    it cannot be reset) and the peak of :mod:`tracemalloc` during the call. Memory that
    existed before the call (its inputs) is not counted. Where /proc is unavailable only
    the traced peak is measured (``"traced"``). Exceptions of ``fn`` propagate.

    Raises:
        RuntimeError: if tracemalloc is already tracing (measure one call at a time), or
            if the measured call stopped it.
    """
    if tracemalloc.is_tracing():
        raise RuntimeError("tracemalloc is already tracing; measure one call at a time")
    _trim()
    base = _rss_kib()
    others_base = _others_kib()
    sampler = None
    method = "traced"
    if base is not None:
        # Also sampled while the high-water mark is used: code that resets the mark (or
        # tracemalloc's peak) during the call still shows its peak in the samples.
        method = "process" if _reset_high_water_mark() and _status_kib("VmHWM") is not None \
            else "sampled"
        sampler = _Sampler()
        sampler.start()
    tracemalloc.start()
    try:
        result = fn(*args, **kwargs)
        if not tracemalloc.is_tracing():
            raise RuntimeError("the measured call stopped tracemalloc: its peak is unknown")
        _current, traced = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        peak_kib, others_kib = sampler.stop() if sampler is not None else (None, 0)
    if method == "process":
        peak_kib = max(peak_kib or 0, _status_kib("VmHWM") or 0)
    grown = max(0, (peak_kib or 0) - base) * 1024 if base is not None else 0
    grown += max(0, others_kib - others_base) * 1024
    return result, max(grown, traced), method
