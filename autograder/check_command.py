"""``python -m autograder check NOTEBOOK``: a learner's notebook run as grading runs it (the
hidden tests too, in the course's checker, where this copy of the course has them), one row
per test and what it means, on this machine (contract.md, "check")."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from autograder import check_kernel, check_warm
from autograder.config import EXERCISES, SOLUTIONS
from autograder.exercises import assignment_of_path, trusted
from autograder.in_notebook import GUARD as IN_NOTEBOOK_GUARD
from autograder.rust_source import INSTALL_HINT, find_rustc
from autograder.check_report import report
from autograder.warm_sandbox import preload_for


def _one_notebook_in(path: Path) -> Path:
    """``path``, or the one notebook in it when ``path`` is a folder holding exactly one
    (``check exercises/ex01_python_attention/``); said on stderr so the row header is true."""
    if not path.is_dir():
        return path
    found = sorted(path.glob("*.ipynb"))
    if len(found) == 1:
        print(f"checking {found[0]}, the notebook in {path}", file=sys.stderr)
        return found[0]
    return path


def _notebooks_in(folder: Path) -> list[Path]:
    """The notebooks in ``folder`` and its subfolders, leaving out hidden folders such as
    JupyterLab's ``.ipynb_checkpoints`` (copies a learner never means)."""
    found = sorted(folder.glob("*.ipynb")) + sorted(folder.glob("*/*.ipynb"))
    return [c for c in found if not any(part.startswith(".")
                                        for part in c.relative_to(folder).parts)]


def _suggest(path: Path) -> list[str]:
    """Notebooks near a mistyped path: those of its folder when it has any (the closest
    names first), else the closest names in the current folder and the course's exercises."""
    import difflib

    for folders in ((path.parent,), (Path.cwd(), EXERCISES)):
        names = {}
        for folder in folders:
            if not folder.is_dir():
                continue
            for c in _notebooks_in(folder):
                try:
                    shown = str(c.resolve().relative_to(Path.cwd().resolve()))
                except ValueError:
                    shown = str(c)
                names.setdefault(c.name, shown)
        stem = path.stem.lower()
        close = [n for n in names if stem and (n.lower().startswith(stem) or stem in n.lower())]
        close += difflib.get_close_matches(path.name, list(names), n=3, cutoff=0.5)
        if folders == (path.parent,) and names and path.parent.resolve() != Path.cwd().resolve():
            close += list(names)  # a folder the learner named: its notebooks, not others'
        if close:
            return [names[n] for n in dict.fromkeys(close)][:3]
    return []


def cmd_check(args: argparse.Namespace) -> int:
    """Run a learner notebook's visible tests and say truthfully what they mean.

    Exit status: 0 when every visible test passed, no code cell failed and every written
    answer is filled in (points that depend on hidden tests or on the instructor are still
    pending then); 1 when a test failed or timed out, a code cell has an error or a written
    answer is empty; 2 when the notebook cannot be checked (no such file, not a notebook,
    no test cells, the notebook of another assignment, no Python kernel would start).
    """
    path = _one_notebook_in(Path(args.notebook))
    early = getattr(args, "early_kernel", None)  # autograder.check_early's, for this check
    if not path.is_file():
        if early is not None:
            early.discard()
        hint = _suggest(path)
        print(f"error: no notebook at {path}"
              + (f"; did you mean {' or '.join(hint)}?" if hint else ""), file=sys.stderr)
        return 2
    # The kernel starts first (before anything else was imported, by autograder.check_early,
    # when the command line names the notebook's file), before nbformat, nbclient and the
    # checker are imported: its boot (about 0.6 s; 1.6 s more importing torch for the
    # exercises whose checks use it) runs while they import and the notebook is read.
    named = assignment_of_path(path)
    kernel = check_kernel.launch(path.resolve().parent,
                                 preload=preload_for(named) if named else (), early=early)
    try:
        return _check(args, path, kernel)
    finally:
        check_kernel.stop(kernel)  # when the check ended before the notebook ran
        if getattr(args, "warm", False):
            _keep_warm(args)


def _keep_warm(args: argparse.Namespace) -> None:
    """``--warm``: start the process that serves the next ``check --warm`` of the same
    notebook (its kernel started for it), and say so."""
    argv = ["check", args.notebook, f"--timeout={args.timeout}"] + (
        ["--visible-only"] if args.visible_only else [])
    try:
        if check_warm.start_host(argv):
            idle = check_warm.idle_seconds()
            wait = f"{idle / 60:g} min" if idle >= 60 else f"{idle:g} s"
            print(f"(--warm: the next check starts sooner: a process keeps the checker ready "
                  f"for it, for {wait})", file=sys.stderr)
    except (ValueError, OSError) as exc:
        print(f"warning: --warm: no process is kept ready ({exc})", file=sys.stderr)


def _check(args: argparse.Namespace, path: Path, kernel) -> int:
    import nbformat

    from autograder import notebook as nbk  # nbformat (0.15 s): after the kernel started
    from autograder import notebook_run  # the trusted checker: after the kernel started

    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as exc:  # noqa: BLE001 - any unreadable file gets the same answer
        print(f"error: {path} is not a Jupyter notebook ({type(exc).__name__}: "
              f"{str(exc).splitlines()[0] if str(exc) else ''})", file=sys.stderr)
        return 2
    expected = assignment_of_path(path)
    actual = nbk.identify_assignment(nb)
    if expected and actual and actual != expected:
        print(f"error: wrong-assignment: {path} is the notebook of {actual}, not of {expected} "
              f"(its read-only cells are those of {actual}); grading it as {expected} gives "
              f"status wrong-assignment. Check and submit the {expected} notebook, or check "
              f"this one under its own name.", file=sys.stderr)
        return 2
    assignment = actual or expected
    # The instructor's source: its test cells carry their hidden parts (a learner's
    # notebook may hold solution markers, copied from solutions/, and is still a learner's).
    source = any(nbk.is_test_cell(c) and nbk.HIDDEN_BEGIN in c.source for c in nb.cells)
    warnings = _restored(nb, nbk, assignment, actual, source)
    if any(c.cell_type == "code" and c.source.lstrip().startswith("%%rust") for c in nb.cells):
        if find_rustc() is None:  # every Rust test would fail with the same message
            print(f"error: this notebook has Rust cells (%%rust), and {INSTALL_HINT}",
                  file=sys.stderr)
            return 2
    hidden = nbk.tests_with_hidden_parts(assignment) if assignment else None
    whole = not args.visible_only and _hidden_tests_here(assignment)
    if whole and not source:  # the open repository: every test whole, as grading runs it
        nbk.put_hidden_tests_back(nb, assignment)
    try:
        execution = notebook_run.execute(nb, path.resolve().parent, timeout=args.timeout,
                                         kernel=kernel, assignment=assignment if whole else "")
    except check_kernel.KernelStartError as exc:  # no learner's code ran: nothing to judge
        print(f"error: {path} could not be checked: {exc}. Check it again.", file=sys.stderr)
        return 2
    rows = nbk.results(nb, hidden, execution,
                       explanations=_explanations(assignment) if whole or source else None)
    if not any(nbk.is_test_cell(c) for c in nb.cells):
        print(f"error: {path} has no nbgrader test cells", file=sys.stderr)
        return 2
    if assignment:
        print(f"{path}: {assignment}" + (
            " (instructor's source: hidden tests run too)" if source else
            " (hidden tests run too, by the course's checker, as grading runs them)" if whole
            else ""))
    if not os.environ.get(IN_NOTEBOOK_GUARD):  # %check says itself what it reads
        print("(the notebook as last saved: save it first, or run %check in its last cell to "
              "check your code as you ran it)")
    for w in warnings:
        print(f"warning: {w}")
    lines, bad = report(rows, nbk.cell_errors(nb), whole=whole)
    print("\n".join(lines))
    return 1 if bad else 0


def _restored(nb, nbk, assignment: str | None, actual: str | None, source: bool) -> list[str]:
    """Put the released version of each changed read-only cell back into ``nb`` (as grading
    does); return the warnings to print: each cell put back, or why none could be."""
    warnings = []
    if assignment is None:
        warnings.append("cannot tell which assignment this notebook is: every passed test is "
                        "shown as pending, since its hidden part is unknown")
    elif actual is None:
        warnings.append(f"most read-only cells of {assignment} are changed or missing")
    released = nbk.released_notebook(assignment) if assignment and not source else None
    if released is not None:
        for change in nbk.restore_fixed_cells(nb, released):
            what = "test" if change.is_test else "read-only cell"
            warnings.append(f"{what} {change.grade_id} was {change.kind}: grading puts the "
                            f"released version back, so check runs that one")
    return warnings


def _explanations(assignment: str | None) -> dict[str, str] | None:
    """Why each knowledge check's answer is right, from the trusted side's
    :mod:`autograder.checks.knowledge`, for the rows of the right answers; None where the
    checks are not in this copy of the course."""
    try:
        from autograder.checks.knowledge import explanations
    except ImportError:
        return None
    return explanations(assignment) if assignment else None


def _hidden_tests_here(assignment: str | None) -> bool:
    """Whether ``assignment``'s hidden tests can run here: its source notebook and the
    checks are in this copy of the course (the open repository; a class's private
    release has neither)."""
    if not assignment or not trusted(assignment):
        return False
    try:
        found = importlib.util.find_spec("autograder.checks") is not None
    except (ImportError, ValueError):
        found = False
    return found and (SOLUTIONS / assignment / f"{assignment}.ipynb").is_file()
