"""Seconds per phase of grading in this process (a grading worker), for
``benchmarks/bench_grading.py --profile``: the executor adds its kernel starts and its
execution, :mod:`autograder.grading.autograde` its own phases, and takes the lot once per
submission. The only state is this module's private table, reached through these three
functions."""

from __future__ import annotations

import contextlib
import time

_SECONDS: dict[str, float] = {}


def add(what: str, seconds: float) -> None:
    """Add ``seconds`` to the phase ``what``."""
    _SECONDS[what] = _SECONDS.get(what, 0.0) + seconds


@contextlib.contextmanager
def timed(what: str):
    """Add the seconds the ``with`` block takes to the phase ``what``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        add(what, time.perf_counter() - start)


def take() -> dict[str, float]:
    """The seconds per phase since the last call (the table starts again empty)."""
    taken = dict(_SECONDS)
    _SECONDS.clear()
    return taken
