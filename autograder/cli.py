"""``python -m autograder``: check a notebook, grade a class, release the exercises.

Commands (the book's page "The grading contract", `contract.md`, says what each does):

    python -m autograder check NOTEBOOK
    python -m autograder grade SUBMISSIONS [--workspace DIR] [--jobs N] [--timeout S]
                               [--force | --regrade STUDENT ...]
                               [--scheduler tcp://HOST:8786] [--db-url postgresql://...]
    python -m autograder manual list [ASSIGNMENT] [--workspace DIR]
    python -m autograder manual score STUDENT ASSIGNMENT CELL POINTS [--comment TEXT]
    python -m autograder export [--workspace DIR] [--roster FILE] [--out FILE]
    python -m autograder export --canvas GRADEBOOK.csv [--column ASSIGNMENT=NAME ...] [--out FILE]
    python -m autograder export --moodle FIELD [--roster FILE] [--out FILE]
    python -m autograder release [ASSIGNMENT ...] [--to DIR]
    python -m autograder similarity ASSIGNMENT [--workspace DIR] [--submissions DIR]
                                    [--common F] [--top N]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from autograder import ASSIGNMENTS
from autograder.config import DEFAULT_WORKSPACE, EXERCISES
from autograder.exercises import assignment_of_path
from autograder.in_notebook import GUARD as IN_NOTEBOOK_GUARD
from autograder.rust_source import INSTALL_HINT, find_rustc
from autograder.verdicts import report
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
    no test cells, the notebook of another assignment).
    """
    path = _one_notebook_in(Path(args.notebook))
    if not path.is_file():
        hint = _suggest(path)
        print(f"error: no notebook at {path}"
              + (f"; did you mean {' or '.join(hint)}?" if hint else ""), file=sys.stderr)
        return 2
    from autograder import notebook as nbk

    # The kernel starts now and boots (importing torch for the exercises whose checks use
    # it: 1.6 s) while the notebook is read and compared below.
    named = assignment_of_path(path)
    started = nbk.start_kernel(path.resolve().parent, timeout=args.timeout,
                               preload=preload_for(named) if named else ())
    try:
        return _check(args, path, nbk, started)
    finally:
        if started.km is not None:  # not run: stopped early, or the kernel never came up
            started._cleanup_kernel()


def _check(args: argparse.Namespace, path: Path, nbk, started) -> int:
    import nbformat

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
    if any(c.cell_type == "code" and c.source.lstrip().startswith("%%rust") for c in nb.cells):
        if find_rustc() is None:  # every Rust test would fail with the same message
            print(f"error: this notebook has Rust cells (%%rust), and {INSTALL_HINT}",
                  file=sys.stderr)
            return 2
    hidden = nbk.tests_with_hidden_parts(assignment) if assignment else None
    whole = not args.visible_only and _hidden_tests_here(assignment)
    if whole and not source:  # the open repository: every test whole, as grading runs it
        nbk.put_hidden_tests_back(nb, assignment)
    execution = notebook_run.execute(nb, path.resolve().parent, timeout=args.timeout,
                                     started=started, assignment=assignment if whole else "")
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
    import importlib.util

    from autograder.config import SOLUTIONS
    from autograder.exercises import trusted

    if not assignment or not trusted(assignment):
        return False
    try:
        found = importlib.util.find_spec("autograder.checks") is not None
    except (ImportError, ValueError):
        found = False
    return found and (SOLUTIONS / assignment / f"{assignment}.ipynb").is_file()


def cmd_grade(args: argparse.Namespace) -> int:
    from autograder.grading.run import grade_class

    return grade_class(
        Path(args.submissions),
        Path(args.workspace),
        jobs=args.jobs,
        cell_timeout=args.timeout,
        memory_mb=args.memory_mb,
        progress=not args.no_progress,
        late_penalty=args.late_penalty,
        sandbox=not args.no_sandbox,
        force=args.force,
        regrade=tuple(args.regrade or ()),
        scheduler=args.scheduler,
        db_url=args.db_url,
    )


def cmd_export(args: argparse.Namespace) -> int:
    out, roster = (Path(args.out) if args.out else None), (Path(args.roster) if args.roster else None)
    if args.column and not args.canvas:
        print("error: --column names Canvas columns: give it with --canvas", file=sys.stderr)
        return 2
    if args.canvas:
        from autograder.grading import canvas

        if roster is not None:
            print("error: --roster is not used with --canvas: the Canvas file is the roster",
                  file=sys.stderr)
            return 2
        names = {}
        for item in args.column or ():
            assignment, sep, name = item.partition("=")
            if not sep or not assignment.strip() or not name.strip():
                print(f"error: --column {item!r} is not ASSIGNMENT=NAME", file=sys.stderr)
                return 2
            names[assignment.strip()] = name.strip()
        return canvas.main(Path(args.workspace), Path(args.canvas), out, names)
    if args.moodle:
        from autograder.grading import moodle

        return moodle.main(Path(args.workspace), args.moodle, roster, out)
    from autograder.grading.export import main as export_main

    return export_main(Path(args.workspace), out, roster)


def cmd_manual(args: argparse.Namespace) -> int:
    from autograder.grading import manual, record

    if args.action == "list":
        return manual.main_list(Path(args.workspace), args.assignment)
    return manual.main_score(Path(args.workspace), args.student, args.assignment, args.cell,
                             args.points, args.comment, derive=record.derive)


def cmd_release(args: argparse.Namespace) -> int:
    from autograder.grading.release import release

    for assignment in args.assignments or ASSIGNMENTS:
        print(release(assignment, Path(args.to)))
    return 0


def cmd_similarity(args: argparse.Namespace) -> int:
    from autograder.grading.similarity import main as similarity_main

    return similarity_main(args.assignment, Path(args.workspace),
                           Path(args.submissions) if args.submissions else None,
                           common=args.common, top=args.top)


def main(argv: list[str] | None = None) -> int:
    # nbgrader runs helper programs (alembic) by name: keep this Python's bin/ on PATH.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="run a notebook's tests, one row per test",
                       description=cmd_check.__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("notebook")
    p.add_argument("--timeout", type=int, default=60,
                   help="seconds one cell may run before it is stopped (default 60)")
    p.add_argument("--visible-only", action="store_true",
                   help="run the visible tests only, as in a class's private release (by "
                        "default the hidden tests run too where this copy of the course has "
                        "them)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("grade", help="autograde a class of submissions with nbgrader")
    p.add_argument("submissions", help="folder laid out <student_id>/<assignment_id>/<assignment_id>.ipynb")
    p.add_argument("--workspace", default=str(DEFAULT_WORKSPACE),
                   help="grading state, grades.csv and feedback (default .grading)")
    p.add_argument("--jobs", type=int, default=0,
                   help="submissions graded in parallel (default: two per core, fewer when "
                        "the available memory holds fewer kernels, as for torch exercises)")
    p.add_argument("--timeout", type=int, default=60, help="seconds one cell may run (default 60)")
    p.add_argument("--memory-mb", type=int, default=4096,
                   help="memory cap of each grading kernel in MiB, 0 for none (default 4096)")
    p.add_argument("--late-penalty", choices=["none", "zero"], default="none",
                   help="nbgrader's late-submission plugin: 'zero' scores a submission whose "
                        "timestamp.txt is after the due date (nbgrader db assignment add "
                        "--duedate) as 0 (default none)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    again = p.add_mutually_exclusive_group()
    again.add_argument("--force", action="store_true",
                       help="regrade every submission (by default only those with no row yet "
                            "or whose notebook, timestamp, due date, extension, late penalty, "
                            "source notebook or check code changed)")
    again.add_argument("--regrade", nargs="+", metavar="STUDENT",
                       help="regrade these students' submissions")
    p.add_argument("--no-sandbox", action="store_true",
                   help="run learner code without the bubblewrap sandbox (only "
                        "where no sandbox can start; said in the summary and grades.csv)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="grade on a Dask cluster: the scheduler's address (tcp://HOST:8786); "
                        "its workers grade, --jobs is not used (see the instructors page)")
    p.add_argument("--db-url", metavar="URL",
                   help="the gradebook in PostgreSQL (postgresql://USER@HOST:PORT/DATABASE) "
                        "instead of WORKSPACE/gradebook.db; kept for later commands on the "
                        "workspace")
    p.set_defaults(func=cmd_grade)

    p = sub.add_parser("export", help="the grades to upload to a learning platform: one row "
                       "per learner of the roster and assignment")
    p.add_argument("--workspace", default=str(DEFAULT_WORKSPACE),
                   help="the grading workspace (default .grading)")
    p.add_argument("--roster", help="CSV with a student_id (or id) column, or one id a line "
                                    "(default: every student of the gradebook)")
    p.add_argument("--out", help="output CSV (default WORKSPACE/export.csv, canvas-import.csv "
                                 "or moodle-import.csv); never one of the input files")
    platform = p.add_mutually_exclusive_group()
    platform.add_argument("--canvas", metavar="GRADEBOOK.csv",
                          help="fill the assignment columns of this Canvas gradebook export "
                               "(learners matched by SIS login or SIS user id) into --out")
    platform.add_argument("--moodle", metavar="FIELD",
                          help="write Moodle's grade-import CSV keyed on this user field (id, "
                               "idnumber, email or username: the roster's column of that name, "
                               "else the student id)")
    p.add_argument("--column", action="append", metavar="ASSIGNMENT=NAME",
                   help="with --canvas: the Canvas name of an assignment's column (default: "
                        "its id, as in 'ex01_python_attention (1234)')")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("manual", help="grade written answers without a browser")
    actions = p.add_subparsers(dest="action", required=True)
    q = actions.add_parser("list", help="print every written answer with its points")
    q.add_argument("assignment", nargs="?", help="only this assignment")
    q.add_argument("--workspace", default=str(DEFAULT_WORKSPACE))
    q = actions.add_parser("score", help="record the points (and a comment) of one answer; "
                           "regenerates the feedback and grades.csv")
    q.add_argument("student")
    q.add_argument("assignment")
    q.add_argument("cell", help="the answer cell's grade_id, as manual list shows it")
    q.add_argument("points", type=float)
    q.add_argument("--comment", help="a comment shown in the learner's feedback")
    q.add_argument("--workspace", default=str(DEFAULT_WORKSPACE))
    p.set_defaults(func=cmd_manual)

    p = sub.add_parser("release", help="generate learner notebooks from solutions/ with nbgrader")
    p.add_argument("assignments", nargs="*", help=f"default: all of {', '.join(ASSIGNMENTS)}")
    p.add_argument("--to", default=str(EXERCISES), help="release folder (default exercises/)")
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("similarity", help="similar submissions: every pair of a class's "
                       "solution code compared, a ranked HTML report and a CSV (no grade "
                       "changes)")
    p.add_argument("assignment")
    p.add_argument("--workspace", default=str(DEFAULT_WORKSPACE),
                   help="the grading workspace: the notebooks grade graded are read there, "
                        "similarity-ASSIGNMENT.html and .csv written there (default .grading)")
    p.add_argument("--submissions", help="read the submissions from this folder "
                   "(<student_id>/<assignment_id>/<assignment_id>.ipynb) instead, graded or not")
    p.add_argument("--common", type=float, default=0.5,
                   help="code found alike in more than this share of the submissions is an "
                        "idiom, not compared (default 0.5)")
    p.add_argument("--top", type=int, default=50,
                   help="pairs shown side by side in the report (default 50)")
    p.set_defaults(func=cmd_similarity)

    args = parser.parse_args(argv)
    return args.func(args)
