"""Running a notebook cell by cell for ``python -m autograder check``: a kernel started
early (:func:`start_kernel`), then every cell with a timeout that interrupts, the test
cells run by the trusted checker as grading runs them (:func:`execute`)."""

from __future__ import annotations

from pathlib import Path

import nbformat

from autograder.nbgrader_plugins import STOPPED, TrustedTests
from autograder.verdicts import Execution, grade_id


def start_kernel(cwd: Path, timeout: int = 60, preload: tuple[str, ...] = ()):
    """Start the kernel that :func:`execute` runs a notebook in (pass it as ``started``),
    without waiting for it: its start-up (Python, ipykernel, and importing the modules
    ``preload`` names, bound to no name) runs while the caller reads and compares the
    notebook."""
    from nbclient import NotebookClient

    import logging

    quiet = logging.getLogger("autograder.check.kernel")
    quiet.setLevel(logging.CRITICAL)
    quiet.propagate = False
    # A kernel stopped after a timeout can leave a ZMQ stream callback failing on shutdown:
    # tornado logs its traceback, which says nothing to a learner.
    logging.getLogger("tornado").setLevel(logging.CRITICAL)

    class Client(NotebookClient):
        record: Execution
        # What the trusted checker (autograder.nbgrader_plugins.TrustedTests) uses of the
        # notebook client that runs the kernel, as in grading: a serving cell it bounds
        # itself, the kernel's death, a cell run in the kernel.
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

    client = Client(
        nbformat.v4.new_notebook(),
        timeout=timeout,
        allow_errors=True,
        interrupt_on_timeout=True,
        kernel_name="python3",
        extra_arguments=["--log-level=ERROR"] + [
            f"--IPKernelApp.exec_lines=__import__({name!r}) and None" for name in preload],
        resources={"metadata": {"path": str(Path(cwd).resolve())}},
        log=quiet,
        # The results are read from the outputs; nothing is lost by killing the kernel.
        shutdown_kernel="immediate",
    )
    client.km = client.create_kernel_manager()
    client.start_new_kernel()
    return client


def execute(nb: nbformat.NotebookNode, cwd: Path, timeout: int = 60,
            started=None, assignment: str = "") -> Execution:
    """Run ``nb`` in place, cell by cell, in a fresh kernel started in ``cwd`` (or in
    ``started``, from :func:`start_kernel` with the same ``cwd`` and ``timeout``). With
    ``assignment``, its test cells (whole: visible and hidden parts) are run by the trusted
    checker as grading runs them (:class:`autograder.nbgrader_plugins.TrustedTests`).

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
    STOPPED.clear()
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
            client._current_index = index
            try:
                if tests is not None:
                    tests.preprocess_cell(cell, {}, index)
                    if ("CellTimeoutError", grade_id(cell)) in STOPPED:
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
