"""nbgrader preprocessors the course adds (see :mod:`autograder.config`)."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient.exceptions import DeadKernelError
from nbgrader.preprocessors import ClearSolutions, DeduplicateIds, Execute, NbGraderPreprocessor
from nbgrader.utils import is_grade, is_solution
from traitlets import Unicode

from autograder.notebook import first_error_line, test_summary


class HideTestSource(NbGraderPreprocessor):
    """Feedback without hidden tests: a test cell shows its docstring and one-line result.

    The source of an autograder-test cell is replaced by its docstring, and an error
    output by its ``ename: evalue`` line, so neither hidden test code nor hidden expected
    values (which could appear in a traceback) reach the learner.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and is_grade(cell) and not is_solution(cell):
            summary = test_summary(cell.source) or "(test)"
            cell.source = f'"""{summary}"""'
            outputs = []
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    out["traceback"] = [first_error_line(out)]
                    outputs.append(out)
            cell.outputs = outputs
        return cell, resources


class RestoreOrder(NbGraderPreprocessor):
    """Put nbgrader cells back in the order of the released notebook.

    A learner who moves a test above the solution it tests, or reorders sections, is graded
    on the canonical order. Cells the learner added (no nbgrader metadata) stay right after
    the nbgrader cell they followed. Runs before nbgrader's OverwriteCells, which restores
    the content of locked cells (and, with ``add_missing_cells``, deleted ones).
    """

    release_directory = Unicode("", help="folder holding <assignment>/<notebook>.ipynb").tag(
        config=True)

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        path = Path(self.release_directory) / info.get("assignment", "") / (
            info.get("notebook", "") + ".ipynb")
        if not self.release_directory or not path.is_file():
            return nb, resources
        released = nbformat.read(path, as_version=4)
        order = {}
        for c in released.cells:
            gid = c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if gid is not None:
                order.setdefault(gid, len(order))
        keys, anchor = [], -1
        for pos, c in enumerate(nb.cells):
            gid = c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if gid in order:
                anchor = order[gid]
            keys.append((anchor, pos))
        if keys != sorted(keys):
            self.log.warning("Cells were reordered; restoring the released order")
            nb.cells = [c for _, c in sorted(zip(keys, nb.cells), key=lambda kc: kc[0])]
        return nb, resources


class ResilientExecute(Execute):
    """nbgrader's Execute, except that a dying kernel does not void the whole notebook.

    When the kernel dies (``os._exit``, a segfault, the memory cap), the cell that was
    running gets a ``DeadKernelError`` output and every later code cell one saying the
    kernel died earlier, so tests that ran before keep their points and nbgrader still
    records a grade for every test.
    """

    def preprocess(self, nb, resources, km=None):
        self._dead = False
        STOPPED.clear()
        try:
            return super().preprocess(nb, resources, km=km)
        except DeadKernelError:  # raised while shutting the dead kernel down
            return nb, self.resources

    async def _async_handle_timeout(self, timeout, cell=None):
        self._timed_out = cell  # this cell ran past the limit: its kernel was interrupted
        STOPPED.append(("CellTimeoutError", _where(cell)))
        return await super()._async_handle_timeout(timeout, cell)

    def preprocess_cell(self, cell, resources, index):
        if self._dead:
            if cell.cell_type == "code":
                cell.outputs = [_error("DeadKernelError",
                                       "the kernel died while running an earlier cell")]
            return cell, self.resources
        try:
            return super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._dead = True
            STOPPED.append(("DeadKernelError", _where(cell)))
            cell.outputs.append(_error(
                "DeadKernelError",
                "the kernel died while running this cell (os._exit, a crash or running out "
                "of memory)"))
            return cell, self.resources


# What the grader saw stop the last notebook's cells, (error name, cell): a cell it
# interrupted after the time limit, the cell the kernel died in. The status comes from here,
# not from the outputs' error names, which a learner's own exception can take.
STOPPED: list[tuple[str, str]] = []


def _where(cell) -> str:
    return (cell or {}).get("metadata", {}).get("nbgrader", {}).get("grade_id") or \
        "a cell of your own"


def _error(ename: str, evalue: str):
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue,
                                  traceback=[f"{ename}: {evalue}"])


class DeduplicateGradeIds(DeduplicateIds):
    """nbgrader's DeduplicateIds, removing the metadata key of a duplicate entirely.

    nbgrader 0.9.6 leaves ``"nbgrader": {}`` on the duplicate, which OverwriteCells'
    add_missing_cells then fails on (KeyError 'grade_id'). The last copy of a duplicated
    cell keeps its role (nbgrader's choice); earlier copies become ordinary cells.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if "nbgrader" in cell.metadata and not cell.metadata["nbgrader"]:
            del cell.metadata["nbgrader"]
        return cell, resources


class ClearSolutionsByCellLanguage(ClearSolutions):
    """nbgrader's ClearSolutions, with a stub in the cell's own language.

    nbgrader picks the stub by the kernel's language, so a ``%%rust`` cell of a Python
    notebook would get ``raise NotImplementedError()``, which is not Rust. Here a cell
    whose first line is ``%%rust`` gets ``code_stub["rust"]`` (valid Rust: a comment and
    ``todo!()``) in place of its solution region, and a ``%%rust`` solution cell without a
    region keeps its first line and gets the stub below it.
    """

    def _replace_solution_region(self, cell, language):
        if cell.cell_type == "code" and _is_rust_cell(cell.source) and "rust" in self.code_stub:
            language = "rust"
        return super()._replace_solution_region(cell, language)

    def preprocess_cell(self, cell, resources, cell_index):
        if not (cell.cell_type == "code" and _is_rust_cell(cell.source)
                and "rust" in self.code_stub):
            return super().preprocess_cell(cell, resources, cell_index)
        first = cell.source.split("\n", 1)[0]
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if not cell.source.startswith(first):  # the whole cell was replaced by the stub
            cell.source = first + "\n" + self.code_stub["rust"]
        return cell, resources


def _is_rust_cell(source: str) -> bool:
    return source.lstrip().split("\n", 1)[0].split()[:1] == ["%%rust"]
