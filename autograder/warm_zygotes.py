"""This process's warm sandboxes (:class:`autograder.warm_sandbox.Zygote`), one per use: the
grading kernels' ("kernels") and, for the exercises whose checks run ex05's probe, the
probes' ("probes": :mod:`autograder.torch_probe_process` forks each probe there, torch
imported once per grading worker, not once per submission). A grading worker starts them
(:func:`prewarm`) in its main thread, which lives as long as the worker (bubblewrap's
``--die-with-parent`` follows the thread that starts a sandbox), and stops them at exit.
"""

from __future__ import annotations

import atexit
import threading

from autograder import env_vars
from autograder.warm_sandbox import Zygote, ahead_of_use, preload_for


def warm_kernels() -> bool:
    """Whether grading kernels are forked from a warm sandbox (:class:`Zygote`); set
    ``AUTOGRADER_WARM_KERNELS=0`` for one new sandbox and interpreter per kernel."""
    return env_vars.WARM_KERNELS.get("1") != "0"


_ZYGOTES: dict[str, Zygote] = {}  # this process's warm sandboxes by use (a grading worker's)
_ZYGOTE_LOCK = threading.Lock()  # prewarm's thread and the first kernel may ask at once
# The exercises whose checks run ex05's probe (autograder.torch_probe_process): a grading
# worker forks those from a warm sandbox of their own ("probes": torch imported once).
PROBED = ("ex05_torch_attention",)


def zygote_for(assignment: str, preload: tuple[str, ...] | None = None,
               wait: bool = True, use: str = "kernels") -> Zygote:
    """This process's warm sandbox for ``use`` ("kernels", "probes"), (re)started when it
    died or lacks a module that ``assignment``'s checks import (or a module of
    ``preload``, when given); ``wait=False``: without waiting for its imports."""
    need = preload_for(assignment) if preload is None else preload
    with _ZYGOTE_LOCK:
        old = _ZYGOTES.get(use)
        if old is not None and old.alive() and set(need) <= set(old.preload):
            return old
        if old is not None:
            need = tuple(sorted(set(need) | set(old.preload)))
            old.close()
        if not _ZYGOTES:
            atexit.register(close_warm)
        _ZYGOTES[use] = zygote = Zygote(need, wait=wait)
        return zygote


def warm_probes() -> Zygote | None:
    """The live warm sandbox :func:`prewarm` started for ex05's probes, or None (``check``;
    a sandbox that died: not restarted here, by a thread that may end before it)."""
    zygote = _ZYGOTES.get("probes")
    return zygote if zygote is not None and zygote.alive() else None


def close_warm() -> None:
    """Stop this process's warm sandboxes and remove their files (at exit)."""
    while _ZYGOTES:
        _ZYGOTES.popitem()[1].close()


def prewarm(assignments) -> None:
    """Start this process's warm sandbox now, with what the checks of every one of
    ``assignments`` import, and the probes' one when they need it, without waiting: their
    start-up overlaps the grader's own (a grading worker calls this when it starts). A
    sandbox that fails to start is started again, and its error reported, by the first
    kernel (the probes run as fresh processes then)."""
    try:
        zygote_for("", ahead_of_use(tuple(sorted({m for a in assignments
                                                  for m in preload_for(a)}))), wait=False)
        if set(assignments) & set(PROBED):
            start_probes(wait=False)
    except Exception:  # noqa: BLE001 - see the docstring
        pass


def start_probes(wait: bool = True) -> Zygote:
    """The probes' warm sandbox (torch imported once), started now unless it runs."""
    return zygote_for("", ahead_of_use(("torch",)), wait=wait, use="probes")
