"""nbgrader's Execute preprocessor as the course runs a submission: a dying kernel does not
void the notebook, a cell's output is capped, the trusted checker grades the test cells
(:mod:`autograder.trusted_tests`), and, when sandboxed, the kernel runs in bubblewrap with
each phase's time profiled. :func:`autograder.nbgrader_settings.apply` names these classes
in nbgrader's settings."""

from __future__ import annotations

import time

import nbformat
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbgrader.preprocessors import Execute
from nbgrader.utils import is_grade, is_solution

from autograder import kernel_memory, phase_times, sandboxed_kernel
from autograder.kernel_messages import DROPPED, UnreadableMessage, read_safely, repair_outputs
from autograder.exercises import trusted
from autograder.trusted_tests import (GRADER_KEY, IOPUB_LATE, TAMPERING_ERROR, TrustedTests,
                                      _error, _where, died_output, record_stopped)


# What one cell's outputs may hold (stream text, each display's data): far above any honest
# cell (the course's notebooks print a few KiB); the rest is dropped as it arrives.
MAX_CELL_OUTPUT = 2**20
OUTPUT_CUT = ("\n[output cut: this cell's output passed {mib} MiB; the rest is not kept "
              "(grading limit)]\n")



def _size(out) -> int:
    """Characters an output holds (its text, or its data's values)."""
    if out.get("output_type") == "stream":
        text = out.get("text", "")
        return len(text) if isinstance(text, str) else sum(len(t) for t in text)
    data = out.get("data") or {}
    return sum(len(v) if isinstance(v, str) else len(str(v)) for v in data.values()) + \
        len(str(out.get("traceback", ""))) + len(str(out.get("evalue", "")))


class ResilientExecute(Execute):
    """nbgrader's Execute, except that a dying kernel does not void the whole notebook.

    When the kernel dies (``os._exit``, a segfault, the memory cap), the cell that was
    running gets a ``DeadKernelError`` output and every later code cell one saying the
    kernel died earlier, so tests that ran before keep their points and nbgrader still
    records a grade for every test.
    """

    def preprocess(self, nb, resources, km=None):
        self._dead = False
        self._after_death = ("DeadKernelError", "the kernel died while running an earlier cell")
        self.protocol_error = None  # the error output of a broken protocol (unreadable)
        self.made_km = None  # the kernel manager made for this notebook (the sandbox's)
        self.stopped: list[tuple[str, str]] = []  # what stopped its cells (grader's record)
        nb.metadata.pop(GRADER_KEY, None)  # only the grader writes it
        assignment = resources.get("nbgrader", {}).get("assignment", "") or ""
        self._trusted = TrustedTests(self, nb, assignment) if trusted(assignment) else None
        try:
            return super().preprocess(nb, resources, km=km)
        except DeadKernelError:  # raised while shutting the dead kernel down
            return nb, self.resources
        finally:
            if self._trusted is not None:
                self._trusted.close()

            # A process the kernel started, killed by the cap while the kernel lived on.
            # (nbclient has dropped its kernel manager by now: the one it made is kept.)
            if not any(e == "KernelOutOfMemory" for e, _ in self.stopped) and \
                    kernel_memory.oom_killed(getattr(self, "made_km", None)):
                self.stopped.append(("KernelOutOfMemory", "a process the kernel started"))
            repair_outputs(nb)  # what the kernel sent, valid in a notebook nbgrader can write
            record_stopped(nb, self.stopped)

    def output(self, outs, msg, display_id, cell_index):
        """nbclient's output handling, with each cell's outputs capped at
        :data:`MAX_CELL_OUTPUT` characters: past it, a note, then nothing more is kept (so
        a cell printing hundreds of megabytes costs the grader no memory nor time)."""
        if not hasattr(self, "_output_sizes"):
            self._output_sizes = {}
        key = msg.get("parent_header", {}).get("msg_id")
        used = self._output_sizes.get(key, 0)
        if used > MAX_CELL_OUTPUT:
            return None  # the note was added
        from nbformat.v4 import output_from_msg

        try:
            size = _size(output_from_msg(msg))
        except nbformat.ValidationError:  # sent by the kernel: no notebook may hold it
            outs.append(nbformat.v4.new_output("stream", name="stdout", text=DROPPED))
            return None
        except ValueError:
            size = 0
        if used + size <= MAX_CELL_OUTPUT:
            self._output_sizes[key] = used + size
            return super().output(outs, msg, display_id, cell_index)
        self._output_sizes[key] = MAX_CELL_OUTPUT + 1
        note = OUTPUT_CUT.format(mib=MAX_CELL_OUTPUT // 2**20)
        if msg["msg_type"] == "stream":
            cut = dict(msg, content=dict(msg["content"], text=msg["content"]["text"][
                :max(0, MAX_CELL_OUTPUT - used)] + note))
            return super().output(outs, cut, None, cell_index)
        outs.append(nbformat.v4.new_output("stream", name="stdout", text=note))
        return None

    def _get_timeout(self, cell):
        if cell is not None and cell is getattr(self, "_checker_bounded", None):
            return None  # a cell serving the checker: the checker counts the kernel's time
        return super()._get_timeout(cell)

    def _update_display_id(self, display_id, msg):
        tests = getattr(self, "_trusted", None)
        if getattr(self, "_checker_bounded", None) is not None or (
                tests is not None and tests.hidden_sent):
            return  # no earlier output is rewritten once hidden inputs were sent
        try:
            return super()._update_display_id(display_id, msg)
        except nbformat.ValidationError:
            return None  # an update no notebook may hold: the output stays as it was

    async def _async_handle_timeout(self, timeout, cell=None):
        self._timed_out = cell  # this cell ran past the limit: its kernel was interrupted
        self.stopped.append(("CellTimeoutError", _where(cell)))
        return await super()._async_handle_timeout(timeout, cell)

    def preprocess_cell(self, cell, resources, index):
        tests = getattr(self, "_trusted", None)
        if self._dead and not (tests is not None and tests.holds(index)):
            if cell.cell_type == "code":
                test = is_grade(cell) and not is_solution(cell)
                ename, said = self._after_death  # a test scores 0 for the cause, as it says
                cell.outputs = [_error(ename if test or ename == "DeadKernelError" else
                                       "KernelStopped", said)]
            return cell, self.resources
        if tests is not None and cell.cell_type == "code":
            return tests.preprocess_cell(cell, resources, index)
        return self._execute_in_kernel(cell, resources, index)

    def _execute_in_kernel(self, cell, resources, index):
        """Run ``cell`` in the learner's kernel (a death recorded, never raised)."""
        try:
            return super().preprocess_cell(cell, resources, index)
        except CellTimeoutError as exc:
            if "IOPub" not in str(exc):
                raise
            # The cell ended (its reply came) but its output was still arriving: not a
            # time limit (nbclient's iopub_timeout), the output is cut.
            cell.outputs.append(nbformat.v4.new_output(
                "stream", name="stdout", text=IOPUB_LATE.format(s=self.iopub_timeout)))
            return cell, self.resources
        except DeadKernelError:
            self._dead = True
            self.stopped.append(("DeadKernelError", _where(cell)))
            cell.outputs.append(self._death_output(cell, "this cell"))
            return cell, self.resources
        except UnreadableMessage as exc:
            cell.outputs.append(self.unreadable(exc, cell))
            return cell, self.resources

    def unreadable(self, exc: UnreadableMessage, cell):
        """The error output of the cell during which the kernel sent a message the grader
        cannot read (:mod:`autograder.kernel_messages`): a broken protocol; no later cell
        runs (the kernel is stopped with the notebook)."""
        self._dead = True
        self._after_death = (TAMPERING_ERROR, "not run: the kernel broke the protocol earlier")
        self.protocol_error = _error(TAMPERING_ERROR,
                                     f"the kernel sent {exc} while running {_where(cell)}")
        return self.protocol_error

    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        read_safely(km)  # before it starts: its clients share the session
        return km

    def _death_output(self, cell, what: str):
        """The error output of the cell the kernel died in; a death by the memory cap is
        recorded as such (:mod:`autograder.kernel_memory`)."""
        if kernel_memory.oom_killed(getattr(self, "km", None)):
            self.stopped.append(("KernelOutOfMemory", _where(cell)))
            mib = kernel_memory.cap() // kernel_memory.MIB
            return _error("MemoryError", f"the kernel was stopped while running {what}: it "
                          f"used more than the memory cap ({mib} MiB; shared memory, files in "
                          "/tmp and /dev/shm and the processes it started count)")
        return died_output(what)


class SandboxedExecute(ResilientExecute):
    """nbgrader's Execute (via ResilientExecute: the trusted checker grades the test
    cells) with the kernel in the sandbox, and the time of each phase profiled."""

    def create_kernel_manager(self):
        self.kernel_manager_class = sandboxed_kernel.SandboxedKernelManager
        km = super().create_kernel_manager()
        km.assignment = self.resources.get("nbgrader", {}).get("assignment", "") or ""
        self.km = self.made_km = km
        return km

    def preprocess(self, nb, resources, km=None):
        start = time.perf_counter()
        try:
            return super().preprocess(nb, resources, km=km)
        finally:
            spent = time.perf_counter() - start
            phase_times.add("execute", spent)

    def start_new_kernel(self, **kwargs):
        with phase_times.timed("kernel start"):
            return super().start_new_kernel(**kwargs)

    def start_new_kernel_client(self):
        # Every cell has run when the kernel stops, and nothing in the sandbox is kept:
        # kill it rather than wait for ipykernel to shut itself down.
        self.shutdown_kernel = "immediate"
        with phase_times.timed("kernel start"):
            return super().start_new_kernel_client()

    def preprocess_cell(self, cell, resources, index):
        role = ("test cells" if is_grade(cell) and not is_solution(cell) else
                "learner cells" if is_solution(cell) or cell.cell_type != "code" or
                not cell.get("metadata", {}).get("nbgrader", {}).get("locked")
                else "setup cells")
        with phase_times.timed(role):
            return super().preprocess_cell(cell, resources, index)
