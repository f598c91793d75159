"""nbgrader preprocessors the course adds (:func:`autograder.nbgrader_settings.apply` names
them in nbgrader's settings)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
from nbgrader.preprocessors import ClearSolutions, DeduplicateIds, NbGraderPreprocessor
from nbgrader.utils import is_grade, is_solution
from traitlets import Unicode

from autograder.notebook import first_error_line, test_summary
from autograder.verdicts import is_fixed_cell


class ValidateBeforeSaving(NbGraderPreprocessor):
    """The notebook checked against the notebook schema before nbgrader saves its scores
    (``SaveAutoGrades`` comes next): with nbconvert's ``optimistic_validation`` (the course's
    setting) the conversion validates only after its last preprocessor, and a notebook
    refused there must leave no scores in the gradebook. Raises what nbconvert raises."""

    def preprocess(self, nb, resources):
        try:
            nbformat.validate(nb, relax_add_props=True)
        except nbformat.ValidationError:
            self.log.error("Notebook is invalid before its scores are saved")
            raise
        return nb, resources


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


INERT_OUTPUTS = ("text/plain", "image/png", "image/jpeg")  # shown as text or a data image
_LINK = re.compile(r"!?\[([^\]]*)\]\(([^)]*)\)")


class InertLearnerContent(NbGraderPreprocessor):
    """Feedback pages that run nothing a learner wrote, and load nothing it names.

    The instructor opens the feedback (from the class report) and the learner gets it:
    a learner's code-cell outputs keep only plain text and PNG or JPEG images (no HTML,
    JavaScript, SVG or Markdown output), and a Markdown cell the release does not hold (a
    written answer, a cell the learner added) shows its HTML tags as text and its links
    and images as their text and address. The release's own cells are unchanged.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code":
            for out in cell.get("outputs", []):
                if "data" in out:
                    out["data"] = {k: v for k, v in out["data"].items() if k in INERT_OUTPUTS}
        elif cell.cell_type == "markdown" and not is_fixed_cell(cell):
            text = cell.source.replace("<", "&lt;")  # an entity is text, never a tag
            cell.source = _LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})", text)
            cell.pop("attachments", None)
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
