"""Build submission notebooks for grading tests: the released notebook, filled in.

A variant file under ``tests/implementations/<assignment>/`` holds replacement source for
solution cells, each introduced by a line ``# %% <grade_id>``; cells it does not name are
filled with the reference solution. Its docstring says which tests it must fail::

    fails: test_softmax_stable, test_attention_stable
    hint: without the 1/sqrt(d_k) scale

(``fails: none`` for a correct alternative). Optional ``hint:`` lines are texts its
feedback must contain: the diagnosis of the mistake.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat

from autograder.config import EXERCISES, SOLUTIONS
from autograder.notebook import nbgrader_meta

IMPLEMENTATIONS = Path(__file__).parent / "implementations"


def reference_solutions(assignment: str) -> dict[str, str]:
    """grade_id -> the solution cell's source with nbgrader's solution markers removed."""
    nb = nbformat.read(SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    out = {}
    for c in nb.cells:
        meta = nbgrader_meta(c)
        if meta.get("solution"):
            lines = [ln for ln in c.source.splitlines()
                     if ln.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")]
            out[meta["grade_id"]] = "\n".join(lines)
    return out


def _head(text: str) -> str:
    """The part of a variant file before its first cell: Python (the cells may be Rust)."""
    return re.split(r"^# %% ", text, maxsplit=1, flags=re.M)[0]


def parse_variant(path: Path) -> tuple[dict[str, str], set[str]]:
    """(replacement cells, tests it must fail) from a variant file."""
    text = path.read_text(encoding="utf-8")
    doc = ast.get_docstring(ast.parse(_head(text))) or ""
    m = re.search(r"^fails:\s*(.*)$", doc, flags=re.M)
    if not m:
        raise ValueError(f"{path} has no 'fails:' line in its docstring")
    fails = {t.strip() for t in m.group(1).split(",") if t.strip() and t.strip() != "none"}
    cells = {}
    parts = re.split(r"^# %% (\S+)\s*$", text, flags=re.M)
    for gid, body in zip(parts[1::2], parts[2::2]):
        cells[gid] = body.strip("\n")
    return cells, fails


def variant_hints(path: Path) -> list[str]:
    """Texts the variant's feedback must contain (``hint:`` lines of its docstring)."""
    doc = ast.get_docstring(ast.parse(_head(path.read_text(encoding="utf-8")))) or ""
    return [m.strip() for m in re.findall(r"^hint:\s*(.*)$", doc, flags=re.M)]


def filled_notebook(assignment: str, cells: dict[str, str] | None = None,
                    fill_reference: bool = True) -> nbformat.NotebookNode:
    """The released notebook with solution cells replaced (reference where not given)."""
    nb = nbformat.read(EXERCISES / assignment / f"{assignment}.ipynb", as_version=4)
    source = dict(reference_solutions(assignment)) if fill_reference else {}
    source.update(cells or {})
    unknown = set(cells or {}) - {nbgrader_meta(c).get("grade_id") for c in nb.cells}
    if unknown:
        raise ValueError(f"no solution cells named {sorted(unknown)} in {assignment}")
    for c in nb.cells:
        gid = nbgrader_meta(c).get("grade_id")
        if nbgrader_meta(c).get("solution") and gid in source:
            c.source = source[gid]
    return nb


def write_submission(root: Path, student: str, assignment: str, nb) -> Path:
    path = root / student / assignment / f"{assignment}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    if callable(nb):  # lays something other than a file there (a link, a FIFO)
        nb(path)
    elif isinstance(nb, (bytes, str)):
        path.write_bytes(nb if isinstance(nb, bytes) else nb.encode("utf-8"))
    else:
        nbformat.write(nb, path)
    return path


def variants(assignment: str) -> dict[str, Path]:
    folder = IMPLEMENTATIONS / assignment
    return {p.stem: p for p in sorted(folder.glob("*.py"))}
