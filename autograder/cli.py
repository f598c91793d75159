"""``python -m autograder``: check a notebook, grade a class, release the exercises.

Commands (SPEC section 5):

    python -m autograder check NOTEBOOK
    python -m autograder grade SUBMISSIONS [--workspace DIR] [--jobs N] [--timeout S]
    python -m autograder release [ASSIGNMENT ...] [--to DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from autograder import ASSIGNMENTS
from autograder.config import DEFAULT_WORKSPACE, EXERCISES


def cmd_check(args: argparse.Namespace) -> int:
    from autograder.notebook import execute, results

    path = Path(args.notebook)
    if not path.is_file():
        print(f"error: no notebook at {path}", file=sys.stderr)
        return 2
    nb = execute(path, timeout=args.timeout)
    rows = results(nb)
    if not rows:
        print(f"error: {path} has no nbgrader test cells", file=sys.stderr)
        return 2
    width = max(len(r.name) for r in rows)
    for r in rows:
        mark = {"pass": "PASS", "fail": "FAIL", "hidden": "HIDDEN"}[r.status]
        print(f"{r.name:<{width}}  {r.points:>4g} pt  {mark:<6}  {r.message}")
    failed = sum(r.status == "fail" for r in rows)
    passed = sum(r.status == "pass" for r in rows)
    hidden = sum(r.status == "hidden" for r in rows)
    earned = sum(r.points for r in rows if r.status == "pass")
    total = sum(r.points for r in rows if r.status != "hidden")
    print(f"visible tests: {earned:g} / {total:g} points"
          + (f"; {hidden} test(s) run only when graded" if hidden else ""))
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def cmd_grade(args: argparse.Namespace) -> int:
    from autograder.grade import grade_class

    return grade_class(
        Path(args.submissions),
        Path(args.workspace),
        jobs=args.jobs,
        cell_timeout=args.timeout,
        memory_mb=args.memory_mb,
        progress=not args.no_progress,
        late_penalty=args.late_penalty,
    )


def cmd_release(args: argparse.Namespace) -> int:
    from autograder.grade import release

    from autograder.config import SOLUTIONS

    for assignment in args.assignments or [a for a in ASSIGNMENTS if (SOLUTIONS / a).is_dir()]:
        print(release(assignment, Path(args.to)))
    return 0


def main(argv: list[str] | None = None) -> int:
    # nbgrader runs helper programs (alembic) by name: keep this Python's bin/ on PATH.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="run a notebook's visible tests, one row per test")
    p.add_argument("notebook")
    p.add_argument("--timeout", type=int, default=120, help="seconds per cell (default 120)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("grade", help="autograde a class of submissions with nbgrader")
    p.add_argument("submissions", help="folder laid out <student_id>/<assignment_id>/<assignment_id>.ipynb")
    p.add_argument("--workspace", default=str(DEFAULT_WORKSPACE),
                   help="grading state, grades.csv and feedback (default .grading)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="submissions graded in parallel (default: number of cores)")
    p.add_argument("--timeout", type=int, default=60, help="seconds one cell may run (default 60)")
    p.add_argument("--memory-mb", type=int, default=4096,
                   help="memory cap of each grading kernel in MiB, 0 for none (default 4096)")
    p.add_argument("--late-penalty", choices=["none", "zero"], default="none",
                   help="nbgrader's late-submission plugin: 'zero' scores a submission whose "
                        "timestamp.txt is after the due date (nbgrader db assignment add "
                        "--duedate) as 0 (default none)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_grade)

    p = sub.add_parser("release", help="generate learner notebooks from solutions/ with nbgrader")
    p.add_argument("assignments", nargs="*", help=f"default: all of {', '.join(ASSIGNMENTS)}")
    p.add_argument("--to", default=str(EXERCISES), help="release folder (default exercises/)")
    p.set_defaults(func=cmd_release)

    args = parser.parse_args(argv)
    return args.func(args)
