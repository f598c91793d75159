"""Running a notebook cell by cell for ``python -m autograder check``, in a kernel started
early (:func:`autograder.notebook.start_kernel`): every cell with a timeout that
interrupts, the test cells run by the trusted checker as grading runs them
(:func:`execute`)."""

from __future__ import annotations

import importlib
import threading
from pathlib import Path

import nbformat

from autograder.trusted_tests import TrustedTests
from autograder.notebook import start_kernel
from autograder.verdicts import Execution, grade_id


def execute(nb: nbformat.NotebookNode, cwd: Path, timeout: int = 60,
            started=None, assignment: str = "") -> Execution:
    """Run ``nb`` in place, cell by cell, in a fresh kernel started in ``cwd`` (or in
    ``started``, from :func:`autograder.notebook.start_kernel` with the same ``cwd`` and ``timeout``). With
    ``assignment``, its test cells (whole: visible and hidden parts) are run by the trusted
    checker as grading runs them (:class:`autograder.trusted_tests.TrustedTests`).

    Errors are kept as outputs. A cell still running after ``timeout`` seconds is
    interrupted and recorded in ``Execution.timed_out``; when the kernel does not answer
    the interrupt, or dies, the remaining cells are recorded as not run. The kernel's own
    log (such as its warning about unencrypted TCP) is silenced.
    """
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    record = Execution(timeout=timeout)
    client = started or start_kernel(cwd, timeout)
    client.nb = nb
    client.record = record
    client.stopped = []  # what stopped its cells: TrustedTests notes a test's time limit
    tests = TrustedTests(client, nb, assignment) if assignment else None
    if tests is not None:
        tests.hide_after_hidden = False  # the learner's own machine: nothing to hide
        threading.Thread(target=_head_start, args=(assignment, nb, timeout), daemon=True,
                         name="checks-head-start").start()
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if record.stopped_because:
                record.not_run.add(index)
                continue
            client._current_index = index
            try:
                if tests is not None:
                    tests.preprocess_cell(cell, {}, index)
                    if ("CellTimeoutError", grade_id(cell)) in client.stopped:
                        record.timed_out.add(index)  # the checker stopped the test
                    if client._dead:
                        raise DeadKernelError("the kernel died")
                else:
                    client.execute_cell(cell, index)
            except DeadKernelError:
                record.not_run.add(index)
                record.stopped_because = f"the kernel died while cell {index + 1} ran"
            except CellTimeoutError:
                record.timed_out.add(index)
            if index in record.timed_out:
                # Every later cell would likely wait as long again: stop here, so that the
                # learner hears about the loop within the timeout plus a few seconds.
                record.stopped_because = (f"{grade_id(cell) or f'cell {index + 1}'} timed out "
                                          "above; fix that and check again")
                client.shutdown_kernel = "immediate"
    if tests is not None:
        tests.close()
    return record


def _head_start(assignment: str, nb: nbformat.NotebookNode, timeout: int) -> None:
    """While the kernel runs the learner's first cells: import the exercise's checks (and
    what they import: torch for ex05 and ex07, about a second) and start what they can do
    from the notebook's source alone (a checks module's ``prefetch``: ex05's probe). Only a
    head start: when it fails, the tests import and compute as they would have."""
    try:
        checks = importlib.import_module(f"autograder.checks.{assignment.split('_')[0]}")
        if hasattr(checks, "prefetch"):
            checks.prefetch(nb, timeout)
    except Exception:  # noqa: BLE001, S110 - nothing is lost: the tests do the work themselves
        pass
