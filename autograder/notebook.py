"""Reading nbgrader notebooks: test cells, their points and their results."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.nbgrader_plugins import first_error_line, test_summary


@dataclass
class TestResult:
    """One autograder-test cell after execution."""

    name: str  # the cell's nbgrader grade_id
    points: float
    status: str  # "pass", "fail" or "hidden" (its code is added at grading time)
    message: str  # first line of the error, or the test's docstring


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def is_test_cell(cell) -> bool:
    """An nbgrader "autograder tests" cell: graded, not a solution, code."""
    meta = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def only_docstring(source: str) -> bool:
    """True when a test cell holds nothing but its docstring (all of it is hidden)."""
    import ast

    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    return len(body) <= 1 and bool(test_summary(source))


def results(nb: nbformat.NotebookNode) -> list[TestResult]:
    """Results of the test cells of an executed notebook, in notebook order."""
    out = []
    for cell in nb.cells:
        if not is_test_cell(cell):
            continue
        meta = nbgrader_meta(cell)
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errors:
            status, message = "fail", first_error_line(errors[0])
        elif only_docstring(cell.source):
            status, message = "hidden", "graded by hidden tests when the instructor grades"
        else:
            status, message = "pass", test_summary(cell.source)
        out.append(TestResult(meta.get("grade_id", "?"), float(meta.get("points", 0)), status,
                              message))
    return out


def execute(path: Path, timeout: int = 120) -> nbformat.NotebookNode:
    """Execute a notebook in its own folder with a fresh kernel; errors are kept as outputs."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        allow_errors=True,
        kernel_name="python3",
        resources={"metadata": {"path": str(Path(path).resolve().parent)}},
    )
    client.execute()
    return nb
