"""Running a notebook cell by cell for ``python -m autograder check``, in a kernel started
first (:func:`autograder.check_kernel.launch`): every cell with a timeout that interrupts,
the test cells run by the trusted checker as grading runs them (:func:`execute`)."""

from __future__ import annotations

import importlib
import logging
import threading
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from autograder import check_kernel, probe, torch_probe_process
from autograder.checker import setup_and_solution_cells
from autograder.python_only import BANNED_MODULES
from autograder.trusted_tests import TrustedTests, died_output
from autograder.verdicts import Execution, grade_id


class Client(NotebookClient):
    """nbclient's runner, with what the trusted checker
    (:class:`autograder.trusted_tests.TrustedTests`) uses of the client that runs the
    kernel, as in grading: a serving cell it bounds itself, the kernel's death, a cell run
    in the kernel; a cell that times out is noted in ``record``."""

    record: Execution
    _checker_bounded = None
    _dead = False

    def _get_timeout(self, cell):
        if cell is not None and cell is self._checker_bounded:
            return None
        return super()._get_timeout(cell)

    def _execute_in_kernel(self, cell, resources, index):
        self.execute_cell(cell, index)
        return cell, resources

    async def _async_handle_timeout(self, timeout, cell=None):
        self.record.timed_out.add(self._current_index)
        return await super()._async_handle_timeout(timeout, cell)

    def _death_output(self, cell, what: str):
        """The error output of the test cell the kernel died in (grading's words)."""
        return died_output(what)


def _client(nb: nbformat.NotebookNode, kernel, timeout: int) -> Client:
    """The runner of ``nb`` in the started ``kernel``, which it stops when the run ends
    (killed: the results are read from the outputs, nothing is lost). The kernel's own
    log (such as its warning about unencrypted TCP) is silenced."""
    quiet = logging.getLogger("autograder.check.kernel")
    quiet.setLevel(logging.CRITICAL)
    quiet.propagate = False
    # A kernel stopped after a timeout can leave a ZMQ stream callback failing on shutdown:
    # tornado logs its traceback, which says nothing to a learner.
    logging.getLogger("tornado").setLevel(logging.CRITICAL)
    client = Client(nb, timeout=timeout, allow_errors=True, interrupt_on_timeout=True,
                    log=quiet, shutdown_kernel="immediate")
    client.km = kernel  # set after construction: the client owns it and stops it at the end
    return client


def execute(nb: nbformat.NotebookNode, cwd: Path, timeout: int = 60,
            kernel: check_kernel.CheckKernelManager | None = None,
            assignment: str = "") -> Execution:
    """Run ``nb`` in place, cell by cell, in ``kernel`` (from
    :func:`autograder.check_kernel.launch` in ``cwd``; a new one when None), and stop the
    kernel. With ``assignment``, its test cells (whole: visible and hidden parts) are run
    by the trusted checker as grading runs them
    (:class:`autograder.trusted_tests.TrustedTests`).

    Errors are kept as outputs. A cell still running after ``timeout`` seconds is
    interrupted and recorded in ``Execution.timed_out``; when the kernel does not answer
    the interrupt, or dies, the remaining cells are recorded as not run.

    Raises :class:`autograder.check_kernel.KernelStartError` when no kernel started.
    """
    record = Execution(timeout=timeout)
    if assignment:  # while the kernel boots (torch, for ex05 and ex07): the checks' head start
        threading.Thread(target=_head_start, args=(assignment, nb, timeout), daemon=True,
                         name="checks-head-start").start()
    client = check_kernel.ready_client(lambda km: _client(nb, km, timeout),
                                       kernel or check_kernel.launch(cwd))
    client.record = record
    client.stopped = []  # what stopped its cells: TrustedTests notes a test's time limit
    tests = TrustedTests(client, nb, assignment) if assignment else None
    if tests is not None:
        tests.hide_after_hidden = False  # the learner's own machine: nothing to hide
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if record.stopped_because:
                record.not_run.add(index)
                continue
            _run_cell(client, tests, record, cell, index)
    if tests is not None:
        tests.close()
    return record


def _run_cell(client: Client, tests: TrustedTests | None, record: Execution, cell,
              index: int) -> None:
    """Run one code cell (a test cell through the trusted checker) and note in ``record``
    a time-out, or the kernel's death, which stops the cells after it."""
    client._current_index = index
    try:
        if tests is not None:
            tests.preprocess_cell(cell, {}, index)
            if ("CellTimeoutError", grade_id(cell)) in client.stopped:
                record.timed_out.add(index)  # the checker stopped the test
            if client._dead and tests.died_in == index:  # its output says so (FAIL)
                record.stopped_because = f"the kernel died while cell {index + 1} ran"
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


# What a checks module's prefetch would start only after its own imports (torch: a second
# or more): started first, by what imports no torch. ex05's probe process imports torch
# itself, alongside the checker's import.
_BEFORE_CHECKS = {"ex05_torch_attention": torch_probe_process.spawn_ahead}


def before_checks(assignment: str, timeout: int) -> None:
    """Start the process ``assignment``'s checks will need, if any (:data:`_BEFORE_CHECKS`:
    ex05's probe, importing torch), to be taken by the next check with ``timeout``."""
    if assignment in _BEFORE_CHECKS:
        _BEFORE_CHECKS[assignment](assignment, timeout)


def _head_start(assignment: str, nb: nbformat.NotebookNode, timeout: int) -> None:
    """While the kernel runs the learner's first cells: start the process a check needs
    (:data:`_BEFORE_CHECKS`), import the exercise's checks (and what they import: torch for
    ex05 and ex07, about a second) and start what they can do from the notebook's source
    alone (ex01's standard-library probe, its ``PROBE_CALLS``; a checks module's
    ``prefetch``: ex05's probe). Only a head start:
    when it fails, the tests import and compute as they would have."""
    try:
        before_checks(assignment, timeout)
        checks = importlib.import_module(f"autograder.checks.{assignment.split('_')[0]}")
        if hasattr(checks, "PROBE_CALLS"):  # its test's standard-library run (ex01)
            probe.prefetch(setup_and_solution_cells(nb), checks.PROBE_CALLS, BANNED_MODULES,
                           timeout)
        if hasattr(checks, "prefetch"):
            checks.prefetch(nb, timeout)
    except Exception:  # noqa: BLE001, S110 - nothing is lost: the tests do the work themselves
        pass
