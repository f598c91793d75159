"""nbgrader preprocessors the course adds (see :mod:`autograder.config`)."""

from __future__ import annotations

import ast

from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_grade, is_solution


def test_summary(source: str) -> str:
    """The first line of a test cell's docstring, or '' when it has none."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ""
    doc = ast.get_docstring(tree) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def first_error_line(output) -> str:
    """``ename: evalue`` of an error output, first line only."""
    evalue = str(output.get("evalue", "")).strip().splitlines()
    return f"{output.get('ename', 'Error')}: {evalue[0] if evalue else ''}".rstrip(": ")


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
