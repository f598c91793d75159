"""Code run in the website's own Python: Pyodide, in the reader's browser, offline.

The website (``_ext/course_runner.py``) gives the chapters' pure-Python cells a Run button
and exercise 1's page a Check button; both send plain text (cell sources) to a Web Worker
that runs this module and send plain text back. Standard library only, and nothing here
judges a grade: the page is the learner's own self-check, as ``python -m autograder check``
is on their machine. Grading runs elsewhere (the trusted checker, ``contract.md``).

- :func:`run_cells`: a chapter cell after the cells it needs, in a fresh namespace; what
  the last one printed, as the build printed it.
- :func:`check_exercise`: exercise 1's notebook with the learner's code in its solution
  cells; the rows ``check`` prints (:func:`autograder.check_report.report`): for every test
  and knowledge check where the site carries the open course's hidden tests, else for the
  visible parts.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import traceback
from typing import Any

from autograder.check_failure import mark_hidden_case
from autograder.check_report import report
from autograder.verdicts import Execution, cell_errors, grade_id, is_test_cell, nbgrader_meta, results

MAX_OUTPUT = 100_000  # characters of output a cell may send back to the page


def run_source(source: str, namespace: dict, index: int) -> tuple[str, dict | None]:
    """Run one cell's ``source`` in ``namespace``; return (what it printed, an nbformat
    error output or None). ``index`` numbers the cell in its traceback ("Cell In[3], line
    2", as IPython writes it, so :func:`autograder.verdicts.error_location` reads it)."""
    name = f"<cell {index}>"
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            exec(compile(source, name, "exec"), namespace)  # noqa: S102 - the reader's own code
        except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt too
            return _clip(out.getvalue()), _error_output(exc, name, index, source)
    return _clip(out.getvalue()), None


def _error_output(exc: BaseException, name: str, index: int, source: str) -> dict:
    """An nbformat error output for ``exc``: where in the cell, its line, the error."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == name]
    if isinstance(exc, SyntaxError) and exc.filename == name:  # where, as other errors say it
        lines = [f"Cell In[{index}], line {exc.lineno}: {(exc.text or '').strip()}",
                 f"SyntaxError: {exc.msg}\n"]
    elif isinstance(exc, SyntaxError) or not frames:  # Python's own text says where
        lines = traceback.format_exception_only(type(exc), exc)
    else:
        lineno = frames[-1].lineno
        code = source.splitlines()[lineno - 1].strip() if 0 < lineno <= source.count("\n") + 1 \
            else ""
        lines = [f"Cell In[{index}], line {lineno}: {code}",
                 *traceback.format_exception_only(type(exc), exc)]
    if isinstance(exc, ModuleNotFoundError) and exc.name and exc.name not in sys.modules:
        lines.append("(the page's Python has the standard library and the course's pure-"
                     "Python files only: run this cell in JupyterLab)")
    return {"output_type": "error", "ename": type(exc).__name__, "evalue": str(exc),
            "traceback": [line.rstrip("\n") for line in lines]}


def _clip(text: str) -> str:
    if len(text) <= MAX_OUTPUT:
        return text
    return text[:MAX_OUTPUT] + f"\n[... {len(text) - MAX_OUTPUT} more characters not shown]"


def run_cells(sources: list[str]) -> dict[str, Any]:
    """Run ``sources`` in order in one fresh namespace (the cells a chapter cell needs, then
    that cell); return ``{"stdout": what the last printed, "error": its traceback text or
    ""}``. When an earlier cell fails, the error says which one and the last is not run."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for i, source in enumerate(sources, start=1):
        printed, error = run_source(source, namespace, i)
        if error is not None:
            text = "\n".join(error["traceback"])
            if i < len(sources):  # the page numbers its runnable cells, not Jupyter's In[]
                text = text.replace(f"Cell In[{i}], ", f"runnable cell {i} of this page, ", 1)
                return {"stdout": "", "error": f"a cell above this one failed:\n{text}"}
            return {"stdout": printed, "error": text.replace(f"Cell In[{i}], ", "", 1)}
    return {"stdout": printed if sources else "", "error": ""}


def check_exercise(notebook: dict, code: dict[str, str], spec: dict) -> dict[str, Any]:
    """Exercise ``spec["assignment"]``'s released ``notebook`` (nbformat 4, as JSON) with
    ``code`` (grade_id -> the learner's source) in its solution cells, run top to bottom.

    ``spec``: ``tests``, grade_id -> the whole source of a test cell with a hidden part
    (the open course's ``solutions/``), which runs instead of the released one; ``hidden``,
    the grade_ids of tests with a hidden part that does not run here ([] when ``tests``
    has them all, None when unknown: then no passing test counts as whole); and
    ``explanations``, kc name -> why its answer is right (with ``tests``; the rows of right
    answers show it, as ``check``'s do).

    Returns ``{"lines": the rows and counts ``check`` prints, "failed": whether anything
    is wrong}``.
    """
    whole = spec.get("tests") or {}
    cells = [dict(c, source=_text(c.get("source", ""))) for c in notebook["cells"]]
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for i, cell in enumerate(cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        gid = grade_id(cell)
        if nbgrader_meta(cell).get("solution") and gid in code:
            cell["source"] = code[gid]
        elif is_test_cell(cell) and gid in whole:
            cell["source"] = whole[gid]
        if "skip-execution" in cell.get("metadata", {}).get("tags", []):
            cell["outputs"] = []  # the in-notebook check (%check): not run, as nbclient
            continue             # skips it
        printed, error = run_source(_python(cell["source"]), namespace, i)
        if error and is_test_cell(cell):
            error = _mark_hidden_case(error, cell["source"])
        cell["outputs"] = ([{"output_type": "stream", "name": "stdout", "text": printed}]
                           if printed else []) + ([error] if error else [])
    nb = {"cells": cells}
    hidden = spec.get("hidden")
    rows = results(nb, None if hidden is None else set(hidden), Execution(timeout=0),
                   explanations=spec.get("explanations") or None)
    lines, failed = report(rows, cell_errors(nb), whole=bool(whole))
    return {"lines": lines, "failed": failed}


def _mark_hidden_case(error: dict, source: str) -> dict:
    """``error`` with its message marked as a hidden case's, as the checker marks it for
    ``check`` (:func:`autograder.check_failure.mark_hidden_case`), when the failing line is in
    the test's hidden part."""
    m = re.search(r"Cell In\[\d+\], line (\d+)", "\n".join(error.get("traceback", [])))
    lines = source.split("\n")
    begins = [k for k, ln in enumerate(lines, 1) if ln.strip() == "### BEGIN HIDDEN TESTS"]
    ends = [k for k, ln in enumerate(lines, 1) if ln.strip() == "### END HIDDEN TESTS"]
    if not m or not any(b < int(m.group(1)) < e for b, e in zip(begins, ends)):
        return error
    marked = mark_hidden_case(str(error["evalue"]))
    old, new = f"{error['ename']}: {error['evalue']}", f"{error['ename']}: {marked}"
    return dict(error, evalue=marked, traceback=[new if t == old else t
                                                 for t in error["traceback"]])


def _python(source: str) -> str:
    """``source`` without IPython's magic and shell lines (blank in their place, so line
    numbers stay), as the course's other Python-only runners read a cell."""
    return "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln
                     for ln in source.split("\n"))


def _text(source: str | list[str]) -> str:
    return "".join(source) if isinstance(source, list) else source
