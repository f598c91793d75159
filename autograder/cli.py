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
import atexit
import os
import sys
import threading
from pathlib import Path

from autograder import ASSIGNMENTS
from autograder.check_command import cmd_check
from autograder.config import DEFAULT_WORKSPACE, EXERCISES


def cmd_grade(args: argparse.Namespace) -> int:
    from autograder.grading.grade import grade_class

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
                             args.points, args.comment, rewrite_records=record.rewrite_records)


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


def _add_check(sub) -> None:
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
    p.add_argument("--warm", action="store_true",
                   help="then keep a process ready for the next check --warm, which answers "
                        "in about a second (two with torch): it has the checker loaded and "
                        "the next kernel started, and exits after $AUTOGRADER_CHECK_IDLE "
                        "seconds without a check (default 900; 0: none is kept)")
    p.set_defaults(func=cmd_check)


def _add_grade(sub) -> None:
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


def _add_export(sub) -> None:
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


def _add_manual(sub) -> None:
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


def _add_release(sub) -> None:
    p = sub.add_parser("release", help="generate learner notebooks from solutions/ with nbgrader")
    p.add_argument("assignments", nargs="*", help=f"default: all of {', '.join(ASSIGNMENTS)}")
    p.add_argument("--to", default=str(EXERCISES), help="release folder (default exercises/)")
    p.set_defaults(func=cmd_release)


def _add_similarity(sub) -> None:
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


def parser() -> argparse.ArgumentParser:
    """The command line of ``python -m autograder``: one subcommand per ``cmd_*`` above, each
    with its ``func`` set to that function."""
    top = argparse.ArgumentParser(prog="python -m autograder", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", required=True)
    for add in (_add_check, _add_grade, _add_export, _add_manual, _add_release,
                _add_similarity):
        add(sub)
    return top


def main(argv: list[str] | None = None, early_kernel=None) -> int:
    """Run the command ``argv`` (``sys.argv[1:]`` when None); ``early_kernel``: the kernel
    :func:`autograder.check_early.start` started for it (``check``'s), or None."""
    # nbgrader runs helper programs (alembic) by name: keep this Python's bin/ on PATH.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    try:
        args = parser().parse_args(argv)
    except SystemExit:  # --help, a usage error: no check runs
        if early_kernel is not None:
            early_kernel.discard()
        raise
    args.early_kernel = early_kernel
    return args.func(args)


def exit_without_teardown(code: int) -> None:
    """End a command that returned ``code`` now, without the interpreter's teardown: its
    modules' clean-up and garbage collection took 0.08 s after ex01's check, 0.5 s after
    ex05's (torch loaded), while the learner waited for the prompt, and 0.9 s after a class
    was graded (nbgrader, SQLAlchemy, matplotlib and the gradebook's rows loaded). The
    command's own clean-up is done by then, in ``finally`` blocks (a check's kernel stopped
    and its folders removed; a grading run's workers stopped, its gradebook committed and
    its workspace's lock released); the ``atexit`` handlers (the probes' processes and
    course copies, temporary folders, logging) run here, and the output is flushed.
    Returns, for the ordinary exit, when a thread other than this one is still running
    (its work might not be done)."""
    if any(t is not threading.current_thread() and t.is_alive() and not t.daemon
           for t in threading.enumerate()):
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (check ... | head): nothing to keep
            pass
    os._exit(code)
