"""A grading worker process (:class:`~autograder.grading.pool.Worker` starts it): its memory
cap set before anything else is imported, its warm sandbox started while nbgrader imports,
then one JSON task per line on stdin graded (:func:`~autograder.grading.autograde.grade_one`)
and one JSON row per line written on stdout (nbgrader's log goes to stderr)."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

from autograder import env_vars
from autograder.grading.results import Row


def _die_with_parent() -> None:
    """Ask Linux to kill this worker when the grader that started it dies (even SIGKILL)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the worker exits when stdin closes
        pass


def _cap_memory(cap: int) -> None:
    """This process's memory cap of ``cap`` bytes, which the kernels it starts inherit."""
    import resource

    # RLIMIT_DATA counts heap and private writable mappings (Linux >= 4.7), not the
    # address space CUDA or thread stacks reserve, so a GPU kernel still starts.
    resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))
    # No file a kernel writes (its working folder, its /tmp and /dev/shm, which are
    # memory) grows past the cap either: a write beyond it kills the kernel (SIGXFSZ).
    resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))
    # Neither counts shared memory, tmpfs files or a kernel's other processes: each
    # kernel gets a memory cgroup of the cap (or a watchdog) and tmpfs mounts of at
    # most the cap (autograder.kernel_memory).
    from autograder import kernel_memory

    kernel_memory.set_cap(cap)


def main(argv: list[str] | None = None) -> int:
    """The worker process. The memory cap is set before anything else is imported, so the
    kernels this process starts inherit it."""
    import argparse
    import traceback

    parser = argparse.ArgumentParser(prog="python -m autograder.grading.worker")
    parser.add_argument("workspace")
    parser.add_argument("--cell-timeout", type=int, default=60)
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--late-penalty", default="none")
    parser.add_argument("--warm", default="", help="assignments (comma-separated) whose "
                        "kernels' warm sandbox to start now, while nbgrader is imported")
    args = parser.parse_args(argv)
    _die_with_parent()
    if args.memory_mb:
        _cap_memory(args.memory_mb * 1024 * 1024)
    if args.warm and env_vars.SANDBOX.get() == "1":
        from autograder import warm_zygotes

        if warm_zygotes.warm_kernels():
            warm_zygotes.prewarm([a for a in args.warm.split(",") if a])
    sys.modules.setdefault("rfc3987_syntax", None)  # see autograder/__main__.py
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from autograder.grading import speedups

    speedups.apply()

    from autograder.nbgrader_settings import apply
    from autograder.grading.autograde import STAGED, grade_one
    from autograder.grading.submission import Submission

    workspace = Path(args.workspace).resolve()
    config = Config()
    apply(config, workspace, release_directory=workspace / "release",
          cell_timeout=args.cell_timeout, late_penalty=args.late_penalty,
          submitted_directory=STAGED)
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
            row = Row(sub.student_id, sub.assignment, submission_sha256=sub.sha256,
                      detail=f"grader error: {type(exc).__name__}: {exc}")
        out.write(json.dumps(row.to_dict()) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
