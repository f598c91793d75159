"""What a notebook's test cells say once they have run: one row per graded cell, and the
report ``python -m autograder check`` prints.

Pure logic on notebooks as plain dicts (nbformat's notebooks are dicts too), with the
standard library only: the website's in-page check of exercise 1 (``_ext/course_runner.py``)
runs this module in the browser's Python, so a learner there reads the rows ``check`` prints.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
TEXT_STUB = "YOUR ANSWER HERE"  # nbgrader's text stub of a written answer (config.TEXT_STUB)


def python_source(source: str) -> str:
    """Cell source with IPython magics turned into Python (``%timeit`` -> get_ipython...);
    the raw text where IPython is absent (the browser's Python) or cannot read it.

    IPython is imported on the first call, not with this module: ``check`` imports this
    module before it starts the learner's kernel, and IPython's import (0.1 s) would delay
    it."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # pragma: no cover - the in-page tier
        return source
    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - fall back to the raw text
        return source


@dataclass
class TestResult:
    """One graded cell after execution.

    ``status`` is one of: ``pass`` (every part of the test ran here and passed: points
    earned), ``partial`` (the visible part passed; a hidden part runs when the instructor
    grades: points pending), ``hidden`` (all of the test is hidden: points pending),
    ``fail`` (points lost), ``timeout`` (the cell ran past the timeout: points lost),
    ``notrun`` (not run because an earlier cell timed out or the kernel died),
    ``manual`` (a written answer graded by the instructor: points pending) and ``blank``
    (a written answer still empty).
    """

    name: str  # the cell's nbgrader grade_id
    points: float
    status: str
    message: str  # the test's docstring sentence; FAIL, TIMEOUT: then why (with_sentence)

    @property
    def earned(self) -> bool:
        return self.status == "pass"

    @property
    def pending(self) -> bool:
        return self.status in ("partial", "hidden", "manual", "blank")

    @property
    def lost(self) -> bool:
        return self.status in ("fail", "timeout")


@dataclass
class Execution:
    """What happened while a notebook ran: cells that timed out or never ran."""

    timeout: int
    timed_out: set[int] = field(default_factory=set)  # cell indices
    not_run: set[int] = field(default_factory=set)  # after a dead or stuck kernel
    stopped_because: str = ""


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def is_test_cell(cell) -> bool:
    """An nbgrader "autograder tests" cell: graded, not a solution, code."""
    meta = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def test_summary(source: str) -> str:
    """The first line of a test cell's docstring, or '' when it has none."""
    try:
        doc = ast.get_docstring(ast.parse(source)) or ""
    except SyntaxError:
        return ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def first_error_line(output) -> str:
    """``ename: evalue`` of an error output, first line only."""
    evalue = str(output.get("evalue", "")).strip().splitlines()
    return f"{output.get('ename', 'Error')}: {evalue[0] if evalue else ''}".rstrip(": ")


SEPARATOR = " — "  # between a FAIL or TIMEOUT row's sentence and its error


def with_sentence(source: str, why: str) -> str:
    """A FAIL or TIMEOUT row's text: what the test checks (its docstring's first line),
    then why it failed, on one line: ``softmax([1000, 1001]) does not overflow: the max
    is subtracted first. — CheckFailed: ...``; ``why`` alone for a test without one."""
    summary = test_summary(source)
    return f"{summary}{SEPARATOR}{why}" if summary else why


_KNOWLEDGE_CHECK = re.compile(r"\bknowledge_check\(\s*[\"'](kc\d+)[\"']")


def knowledge_check_of(source: str) -> str | None:
    """The knowledge check ("kc1", ...) a test cell's source calls
    (``exNN.knowledge_check("kcN", ...)``, in its hidden part), or None."""
    m = _KNOWLEDGE_CHECK.search(source)
    return m.group(1) if m else None


def only_docstring(source: str) -> bool:
    """True when a test cell holds nothing but its docstring (all of it is hidden)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    return len(body) <= 1 and bool(test_summary(source))


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def error_location(cell, output) -> str:
    """Where a cell's error happened, in the learner's own words: ``line N: <code>``."""
    try:
        ast.parse(python_source(cell["source"]))
    except SyntaxError as exc:
        line = (exc.text or "").strip() or cell["source"].splitlines()[(exc.lineno or 1) - 1].strip()
        return f"SyntaxError: {exc.msg} (line {exc.lineno}: {line})"
    text = _ANSI.sub("", "\n".join(output.get("traceback", [])))
    m = re.search(r"Cell In\[\d+\], line (\d+)", text)
    if not m:
        return ""
    n = int(m.group(1))
    lines = cell["source"].splitlines()
    return f"line {n}: {lines[n - 1].strip()}" if 0 < n <= len(lines) else f"line {n}"


def defines(source: str, name: str) -> bool:
    """Whether a cell's source (even one that does not parse) defines ``name``."""
    return re.search(rf"^\s*(?:def|class)\s+{name}\b|^\s*{name}\s*(?::[^=]*)?=(?!=)",
                     source, flags=re.M) is not None


def cell_errors(nb) -> list[tuple[int, str, str]]:
    """(index, name, message) of every code cell that is not a test and raised an error:
    the learner's code cells, whose failure makes later tests fail with a NameError."""
    out = []
    for i, c in enumerate(nb["cells"]):
        if c.get("cell_type") != "code" or is_test_cell(c):
            continue
        errors = [o for o in c.get("outputs", []) if o.get("output_type") == "error"]
        if errors:
            where = error_location(c, errors[0])
            name = grade_id(c) or f"cell {i + 1}"
            if where.startswith("SyntaxError"):
                out.append((i, name, where))
            elif errors[0].get("ename") == "NotImplementedError":
                out.append((i, name, "not done yet: it still raises NotImplementedError"))
            else:
                out.append((i, name, first_error_line(errors[0]) + (f" ({where})" if where else "")))
    return out


def results(nb, hidden: set[str] | None = None,
            execution: Execution | None = None,
            explanations: dict[str, str] | None = None) -> list[TestResult]:
    """Results of the graded cells of an executed notebook, in notebook order.

    Args:
        nb: the executed notebook.
        hidden: grade_ids of tests that have a hidden part (:func:`tests_with_hidden_parts`);
            None when unknown, and then a passing test is only ``partial``, never ``pass``.
        execution: what :func:`execute` recorded (timeouts, cells never run).
        explanations: kc name ("kc1", ...) -> why its answer is right
            (:func:`autograder.checks.knowledge.explanations`), from the trusted side. A
            knowledge check's PASS row (a test that ran its hidden ``knowledge_check``
            call without error) then reads ``Knowledge check N: right — <why>``. The
            verdict is the error's, never this text's.

    A FAIL or TIMEOUT row reads the test's sentence, then why (:func:`with_sentence`).
    """
    out = []
    broken = cell_errors(nb)
    for i, cell in enumerate(nb["cells"]):
        meta = nbgrader_meta(cell)
        gid, points = meta.get("grade_id", "?"), float(meta.get("points", 0) or 0)
        if is_manual_cell(cell):
            text = normalise(cell["source"])
            if not text or text == TEXT_STUB or (cell.get("cell_type") == "code" and
                                                 "raise NotImplementedError()" in text):
                out.append(TestResult(gid, points, "blank",
                                      "graded by your instructor; your answer is still empty"))
            else:
                out.append(TestResult(gid, points, "manual", "graded by your instructor"))
            continue
        if not is_test_cell(cell):
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if execution and i in execution.timed_out:
            status, message = "timeout", with_sentence(cell["source"], (
                f"timed out: still running after {execution.timeout} s and stopped "
                "(an endless loop?)"))
        elif execution and i in execution.not_run:
            status, message = "notrun", f"not run: {execution.stopped_because}"
        elif errors:
            status, message = "fail", with_sentence(cell["source"], first_error_line(errors[0]))
            message += _culprit(nb, broken, i, errors[0])
        elif only_docstring(cell["source"]):
            status, message = "hidden", "graded later: all of this test is hidden"
        elif HIDDEN_BEGIN in cell["source"]:  # the instructor's source: hidden part ran too
            status, message = "pass", _passed(cell["source"], explanations)
        elif hidden is None or gid in hidden:
            status = "partial"
            message = "visible part passed; the rest is graded later: " + test_summary(cell["source"])
        else:
            status, message = "pass", _passed(cell["source"], explanations)
        out.append(TestResult(gid, points, status, message))
    return out


def _culprit(nb, broken: list[tuple[int, str, str]], i: int, error) -> str:
    """Why test cell ``i`` may have failed because of a learner's cell above it that raised
    (:func:`cell_errors`): a NameError for a name that cell defines, or any error in a test
    that uses a name defined by a cell still raising NotImplementedError. "" when none."""
    if error.get("ename") == "NameError":
        missing = re.search(r"name '(\w+)' is not defined", str(error.get("evalue")))
        culprit = [name for j, name, _ in broken if j < i and missing
                   and defines(nb["cells"][j]["source"], missing.group(1))]
        return f" (fix the error in cell '{culprit[-1]}' above first)" if culprit else ""
    used = set(re.findall(r"\b[A-Za-z_]\w*\b", nb["cells"][i]["source"]))
    stubs = [name for j, name, message in broken if j < i and message.startswith("not done yet")
             and any(defines(nb["cells"][j]["source"], n) for n in used)]
    return (f" (your cell '{stubs[-1]}' above still raises NotImplementedError: finish it first)"
            if stubs else "")


def _passed(source: str, explanations: dict[str, str] | None) -> str:
    """A PASS row's text: the test's sentence; for a knowledge check whose explanation is
    known, that its answer is right and why."""
    kc = knowledge_check_of(source) if HIDDEN_BEGIN in source else None
    if kc and explanations and kc in explanations:
        return f"Knowledge check {kc.removeprefix('kc')}: right{SEPARATOR}{explanations[kc]}"
    return test_summary(source)


def grade_id(cell) -> str | None:
    """The cell's nbgrader grade_id, or None for a cell without nbgrader metadata."""
    return nbgrader_meta(cell).get("grade_id")


def is_fixed_cell(cell) -> bool:
    """A read-only cell of the released notebook: locked, not a solution. Grading restores
    these from the release (nbgrader's OverwriteCells), whatever the learner did to them."""
    meta = nbgrader_meta(cell)
    return bool(meta.get("grade_id")) and bool(meta.get("locked")) and not meta.get("solution")


def is_manual_cell(cell) -> bool:
    """An nbgrader "manually graded answer" cell: graded and a solution (a written answer)."""
    meta = nbgrader_meta(cell)
    return bool(meta.get("grade")) and bool(meta.get("solution"))


def normalise(source: str) -> str:
    """Source compared line by line, ignoring trailing spaces and blank lines at the ends."""
    return "\n".join(line.rstrip() for line in source.strip().splitlines())
