"""A grading worker: ``python -m autograder.grade_worker WORKSPACE``.

Started by :class:`autograder.grade.Worker`. Reads one JSON task per line on stdin
(student_id, assignment, path, sha256), grades it with nbgrader in this process and
writes one JSON row per line on stdout. nbgrader's log goes to stderr. The memory cap is
set before anything else, so the kernels this process starts inherit it.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import traceback
from pathlib import Path


def _die_with_parent() -> None:
    """Ask Linux to kill this worker when the grader that started it dies (even SIGKILL)."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the worker exits when stdin closes
        pass


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("workspace")
    parser.add_argument("--cell-timeout", type=int, default=60)
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--late-penalty", default="none")
    args = parser.parse_args()
    _die_with_parent()
    if args.memory_mb:
        cap = args.memory_mb * 1024 * 1024
        # RLIMIT_DATA counts heap and private writable mappings (Linux >= 4.7), not the
        # address space CUDA or thread stacks reserve, so a GPU kernel still starts.
        resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))

    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from autograder.config import apply
    from autograder.grade import Submission, grade_one

    workspace = Path(args.workspace).resolve()
    config = Config()
    apply(config, workspace, release_directory=workspace / "release",
          cell_timeout=args.cell_timeout, late_penalty=args.late_penalty)
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but rows on the real stdout
    for line in sys.stdin:
        task = json.loads(line)
        sub = Submission(task["student_id"], task["assignment"],
                         Path(task["path"]) if task["path"] else None, task["sha256"])
        try:
            row = grade_one(api, sub, workspace)
        except Exception as exc:  # noqa: BLE001 - a row is owed whatever happened
            traceback.print_exc()
            row = {"student_id": sub.student_id, "assignment": sub.assignment, "score": 0.0,
                   "status": "error", "detail": f"grader error: {type(exc).__name__}: {exc}",
                   "submission_sha256": sub.sha256, "feedback": ""}
        out.write(json.dumps(row) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
