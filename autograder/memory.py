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

Only *anonymous* memory counts (``RssAnon``: heaps, arrays, buffers), not file-backed pages
(``RssFile``, ``RssShmem``): the code pages of a shared library that a call runs for the
first time are not memory it allocated, and counting them made the measure depend on what
the process had run before. The high-water mark covers both kinds, so the anonymous peak is
taken as ``VmHWM`` less the file-backed pages resident after the call (file pages only grow
during a call), and the sampler reads ``RssAnon`` directly.
"""

from __future__ import annotations

import ctypes
import gc
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


def _anon_kib() -> int | None:
    """Resident anonymous memory (``RssAnon``; ``VmRSS`` on kernels older than 4.5)."""
    anon = _status_kib("RssAnon")
    return anon if anon is not None else _status_kib("VmRSS")


def _file_kib() -> int:
    """Resident file-backed and shared memory (``RssFile`` + ``RssShmem``), 0 if unknown."""
    return (_status_kib("RssFile") or 0) + (_status_kib("RssShmem") or 0)


class _Sampler(threading.Thread):
    """Samples RssAnon every ``interval`` seconds until stopped; keeps the largest value."""

    def __init__(self, interval: float = 0.001):
        super().__init__(daemon=True)
        self.interval, self.peak_kib = interval, _anon_kib() or 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            self.peak_kib = max(self.peak_kib, _anon_kib() or 0)

    def stop(self) -> int:
        self._stop_event.set()
        self.join()
        return max(self.peak_kib, _anon_kib() or 0)


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
    base = _anon_kib()
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
        peak_kib = sampler.stop() if sampler is not None else None
    if method == "process":
        peak_kib = max(peak_kib or 0, (_status_kib("VmHWM") or 0) - _file_kib())
    grown = max(0, (peak_kib or 0) - base) * 1024 if base is not None else 0
    return result, max(grown, traced), method
