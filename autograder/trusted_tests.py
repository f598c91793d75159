"""The test cells of a notebook graded by the trusted checker, on the notebook's side.

:class:`TrustedTests` is what nbgrader's executor (``nbgrader_execute.ResilientExecute``,
in grading) and ``check``'s cell loop (:mod:`autograder.notebook_run`) hand each test cell
to: one kernel cell serves the checker (:mod:`autograder.checker`) for that test and the
test cells right after it (a run: one kernel cell's round trip for them all), and the
checker runs each whole test against the learner's names through plain data; its verdict
alone sets the cell's error output. It needs no part of nbgrader (a notebook's cells are
read by their nbgrader metadata), so ``check`` runs without importing nbgrader.

What the grader saw stop a notebook's cells (a cell it interrupted after the time limit,
the cell the kernel died in) is its executor's ``stopped`` list, one per notebook; grading
keeps it in the autograded notebook's metadata (:func:`record_stopped`, :func:`stopped_in`).
"""

from __future__ import annotations

import builtins
import signal

import nbformat
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from autograder import checker, probe
from autograder.kernel_messages import UnreadableMessage
from autograder.session import Session
from autograder.serving_outputs import shown, split_by_test
from autograder.session_errors import CheckStopped, ProtocolError, TimeLimit

IOPUB_LATE = ("\n[output cut: the rest of this cell's output had not arrived {s} s after "
              "the cell ended; it is not kept]\n")


class TrustedTests:
    """The test cells of one notebook graded by the trusted checker (:mod:`autograder.checker`).

    The checker runs each test cell whole, hidden part included, against the learner's
    names through plain data, while one kernel cell serves it and the test cells after it
    (the visible parts' prints and the learner's output during them are each one's
    display); its verdict alone sets the cell's points: an error output when it failed,
    none when it passed. The setup cells (locked instructor code) run in the
    checker too. A broken protocol is ``TamperingDetected`` for this and every later test.
    """

    def __init__(self, executor, nb, assignment: str = ""):
        self.executor, self.nb = executor, nb
        self.assignment = assignment
        self.setup_sources: list[str] = []
        self.setup: dict | None = None
        self.session = None
        self.folder = None
        self.broken = ""  # what broke the protocol, once it has
        self._served: dict[int, list] = {}  # later tests of a run, served: their outputs
        self._run: list = []  # (index, cell) of the tests of the run being served
        self._outputs: list = []  # the serving cell's outputs
        self._stop = None  # ("dead" | "unreadable", exc): what stopped the run's kernel
        self.died_in: int | None = None  # the index of the test cell the kernel stopped in
        # Whether a hidden part has run (its inputs were sent to the kernel): from then on
        # no output of the kernel's is kept outside a test cell's visible display.
        self.hidden_sent = False
        # Grading hides those outputs from the feedback; a learner's own check keeps them
        # (nothing is hidden from a learner who has the hidden tests on their machine).
        self.hide_after_hidden = True

    def _session(self):
        if self.session is None:
            km = self.executor.km
            self.folder, self._made = checker.exchange_folder(km)
            self.session = Session(self._rpc, self.folder, self.nb,
                                                timeout=self.executor.timeout or 60,
                                                run_without_libraries=probe.run)
            self.session.km = km
            self.session.interrupt = lambda: _signal(km, signal.SIGINT)
            self.session.kill = lambda: _signal(km, signal.SIGKILL)
        return self.session

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
        if self.folder is not None and self._made:
            checker.remove_folder(self.folder)

    def preprocess_cell(self, cell, resources, index):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        ex = self.executor
        if index in self._served:  # a test served by an earlier cell's run
            cell.outputs = self._served.pop(index)
            return cell, resources
        if meta.get("grade") and not meta.get("solution"):
            return self._test_cell(cell, resources, index)
        if meta.get("locked") and not meta.get("solution"):
            self.setup_sources.append(cell.source)
        cell, resources = ex._execute_in_kernel(cell, resources, index)
        if self.hidden_sent and self.hide_after_hidden and cell.cell_type == "code" and \
                cell.get("outputs"):
            cell.outputs = [nbformat.v4.new_output(
                "stream", name="stdout", text="(this cell's output is not shown: it ran after "
                "hidden tests sent their inputs to your code)\n")] + [
                o if o is ex.protocol_error else  # the grader's, not the learner's
                _error(_builtin_name(o.get("ename")), "(its message is not shown either)")
                for o in cell.outputs if o.get("output_type") == "error"]
        return cell, resources

    def holds(self, index: int) -> bool:
        """Whether test cell ``index`` was served by an earlier cell's run: its outputs are
        kept here (:meth:`preprocess_cell` sets them), whatever the kernel did after it."""
        return index in self._served

    def _test_cell(self, cell, resources, index):
        """One kernel cell serves the checker, which runs this test and the test cells that
        follow it, up to the next cell of another kind (:func:`_run_from`), each whole;
        each verdict alone sets its cell's error output, the visible parts' prints its
        display. The later cells' outputs wait in :meth:`holds` for their turn."""
        ex = self.executor
        if self.broken:  # the protocol is broken: nothing more is asked of the kernel
            cell.outputs = [_error(TAMPERING_ERROR, self.broken)]
            return cell, resources
        self._run, self._outputs, self._stop = _run_from(self.nb, index, cell), [], None
        results = self._verdicts()
        parts = split_by_test(self._outputs, [marks for _, marks in results])
        for n, ((at, test), (verdict, marks), outputs) in enumerate(zip(self._run, results,
                                                                        parts)):
            self.hidden_sent = self.hidden_sent or any(m[0] == "hidden" for m in marks)
            test.outputs = shown(outputs, marks) + (
                [self._stopped(at, test)] if self._stop and n == len(results) - 1 else
                [_error(*verdict)] if verdict else [])
            if at != index:
                self._served[at] = test.outputs
        ex.nb["cells"][index] = cell  # nbclient put the serving cell in its place
        return cell, resources

    def _stopped(self, at: int, cell):
        """The error output of ``cell`` (index ``at``), the test the kernel died in or broke
        the protocol in (``self._stop``, noted by :meth:`_rpc`)."""
        ex, (kind, exc) = self.executor, self._stop
        self.died_in = at
        if kind == "unreadable":
            return ex.unreadable(exc, cell)
        ex.stopped.append(("DeadKernelError", _where(cell)))
        return ex._death_output(cell, "this test")

    def _rpc(self, code: str) -> None:
        ex, (index, cell) = self.executor, self._run[0]
        call = checker.new_cell_like(cell, code)
        ex._checker_bounded = call  # no limit from nbclient: the checker's (Session.serving_run)
        try:
            ex.execute_cell(call, index, store_history=False)
        except CellTimeoutError as exc:  # output still arriving after the cell ended
            if "IOPub" not in str(exc):
                raise
            call.outputs.append(nbformat.v4.new_output(
                "stream", name="stdout", text=IOPUB_LATE.format(s=ex.iopub_timeout)))
        except DeadKernelError:
            ex._dead = True
            self._stop = ("dead", None)
            raise CheckStopped("the kernel died while the checker ran this test") from None
        except UnreadableMessage as exc:  # the executor stops the kernel, as for a death
            self._stop = ("unreadable", exc)
            raise CheckStopped("the kernel broke the protocol") from None
        finally:
            self._outputs = call.outputs
            ex._checker_bounded = None

    def _verdicts(self) -> list[tuple[tuple[str, str] | None, list]]:
        """(verdict, output markers) of each test of the run begun, in order: the run
        stops at a test the kernel did not finish (its time limit, its death, a broken
        protocol)."""
        try:
            session = self._session()
            if self.setup is None:
                self.setup = checker.setup_namespace(self.setup_sources)
                self.setup.update(checker.built_functions(self.assignment, session))
            served = session.serving_run([
                checker.test_of(session, test.source, self.setup, _where(test))
                for _, test in self._run])
        except (ProtocolError, CheckStopped) as exc:  # before the first test began
            return [(self._verdict_of(exc, self._run[0][1]), [])]
        return [(s.value if s.raised is None else self._verdict_of(s.raised, test), s.marks)
                for (_, test), s in zip(self._run, served)]

    def _verdict_of(self, exc: BaseException, cell) -> tuple[str, str]:
        """The verdict of test ``cell`` stopped by ``exc`` (raised again when it is not a
        stop of the checker's)."""
        if isinstance(exc, ProtocolError):
            self.broken = f"the kernel broke the checker's protocol in {_where(cell)}: {exc}"
            return TAMPERING_ERROR, self.broken
        if isinstance(exc, TimeLimit):
            self.executor.stopped.append(("CellTimeoutError", _where(cell)))
            return "CellTimeoutError", str(exc)
        if isinstance(exc, CheckStopped):
            if self.executor._dead:
                return "DeadKernelError", str(exc)
            return "CellTimeoutError" if "time limit" in str(exc) else "CheckStopped", str(exc)
        raise exc


def _run_from(nb, index: int, cell) -> list[tuple[int, object]]:
    """(index, cell) of the test ``cell`` at ``index`` and of the test cells after it, up
    to the next code cell that is not a test (markdown cells between them run nothing)."""
    run = [(index, cell)]
    for at in range(index + 1, len(nb.cells)):
        later = nb.cells[at]
        if later.cell_type != "code":
            continue
        meta = later.get("metadata", {}).get("nbgrader", {})
        if not (meta.get("grade") and not meta.get("solution")):
            break
        run.append((at, later))
    return run


def _builtin_name(ename) -> str:
    """An exception's name when it is one of Python's own (MemoryError says what stopped
    a cell), else ``Exception``: a learner's own class name can carry anything."""

    kind = getattr(builtins, str(ename), None)
    return str(ename) if isinstance(kind, type) and issubclass(kind, BaseException) else \
        "Exception"


def _signal(km, signum: int) -> None:
    """Send ``signum`` to the learner's kernel (inside its sandbox when it has one)."""
    send = getattr(km, "signal_now", None)  # the sandbox's (jupyter_client's own is async)
    if callable(send):
        send(signum)
        return
    proc = getattr(getattr(km, "provisioner", None), "process", None)
    if proc is not None:
        try:
            proc.send_signal(signum)
        except OSError:
            pass


TAMPERING_ERROR = "TamperingDetected"


# The autograded notebook's metadata key under which the grader keeps what stopped its
# cells. The status comes from there, not from the outputs' error names, which a learner's
# own exception can take; a submitted notebook's own value is dropped before any cell runs.
GRADER_KEY = "autograder_grader"


def record_stopped(nb, stopped: list[tuple[str, str]]) -> None:
    """Keep ``stopped``, (error name, cell) pairs, in ``nb``'s metadata."""
    nb.metadata[GRADER_KEY] = {"stopped": [[ename, where] for ename, where in stopped]}


def stopped_in(nb) -> list[tuple[str, str]]:
    """What the grader kept with :func:`record_stopped` ([] when nothing was kept)."""
    kept = nb.metadata.get(GRADER_KEY, {}).get("stopped", [])
    return [(str(ename), str(where)) for ename, where in kept]


def _where(cell) -> str:
    return (cell or {}).get("metadata", {}).get("nbgrader", {}).get("grade_id") or \
        "a cell of your own"


def died_output(what: str):
    """The error output of a cell the kernel died in, ``what`` naming it ("this test"):
    grading's and ``check``'s words for a death that is not the memory cap's."""
    return _error("DeadKernelError", f"the kernel died while running {what} (os._exit, a "
                  "crash or running out of memory)")


def _error(ename: str, evalue: str):
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue,
                                  traceback=[f"{ename}: {evalue}"])
