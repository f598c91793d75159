"""The worker pool, both ends of its protocol: :class:`Worker` (in the grader) starts
``python -m autograder.grading.pool WORKSPACE``, a process that imports nbgrader once, reads
one JSON task per line on stdin, grades it and writes one JSON :class:`Row` per line on
stdout (nbgrader's log goes to stderr). A worker that hangs is killed with its kernels."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

from autograder.grading.results import Row, Status


def child_env() -> dict:
    """Environment of the processes grading starts (workers, kernels, nbgrader)."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONUTF8"] = "1"  # locked cells hold dₖ, √, ωᵢ: never depend on the locale
    env["PYTHONIOENCODING"] = "utf-8"
    env.setdefault("MPLBACKEND", "Agg")
    # One thread per grading kernel: --jobs gives the parallelism, and BLAS thread pools
    # would otherwise oversubscribe the cores and allocate outside the memory cap.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    return env


# Memory one grading worker and its kernel use while grading (MiB, measured on the course's
# notebooks: a NumPy kernel ~180, nbgrader's worker ~150; a torch kernel ~600 more).
WORKER_MB, TORCH_MB = 400, 1000


def default_jobs(assignments, uses_torch=None) -> int:
    """Workers the machine can run at once: two per core this process may use (a worker
    and its kernel take turns: while the kernel runs a cell, the worker waits, so one
    worker per core leaves about half the CPU idle; measured in benchmarks/bench_grading.py),
    fewer when the available memory does not hold that many (torch exercises need more)."""
    if uses_torch is None:
        from autograder.sandbox import preload_for

        uses_torch = any(preload_for(a) for a in assignments)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            info = {ln.split(":")[0]: int(ln.split()[1]) for ln in f}
        available = info["MemAvailable"] // 1024
    except (OSError, KeyError, ValueError):
        return max(1, 2 * cores)
    need = WORKER_MB + (TORCH_MB if uses_torch else 0)
    return max(1, min(2 * cores, available // need))


class Worker:
    """A grading process that grades one submission at a time.

    It imports nbgrader once and grades many submissions. Its process group (it and the
    kernels it starts) is killed when a submission takes longer than allowed or when the
    worker dies, and a fresh worker takes its place.
    """

    def __init__(self, workspace: Path, index: int | str, cell_timeout: int, memory_mb: int,
                 late_penalty: str = "none", warm: tuple[str, ...] = ()):
        self.workspace = workspace
        self.args = [sys.executable, "-m", "autograder.grading.pool", str(workspace),
                     "--cell-timeout", str(cell_timeout), "--memory-mb", str(memory_mb),
                     "--late-penalty", late_penalty]
        if warm:  # the assignments it will grade: its warm sandbox starts with it
            self.args += ["--warm", ",".join(warm)]
        self.log = workspace / "logs" / f"worker-{index}.log"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.proc = None
        self.lines: queue.Queue = queue.Queue()

    def start(self) -> None:
        """Start the worker process (it imports nbgrader, then waits for tasks)."""
        err = self.log.open("a", encoding="utf-8")
        self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=err, text=True, encoding="utf-8", env=child_env(),
                                     cwd=self.workspace, start_new_session=True)
        err.close()
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True).start()

    @staticmethod
    def _read(proc, lines) -> None:
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)  # EOF: the worker exited

    def stop(self, wait: float = 5.0) -> None:
        """Let an idle worker finish (end of its input: it removes its warm sandbox's
        files), killing it after ``wait`` seconds."""
        if self.proc and self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=wait)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def kill(self) -> None:
        """Kill the worker's process group (it and its kernels)."""
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.proc = None

    def grade(self, sub, limit: float) -> Row:
        """Grade ``sub`` (a :class:`~autograder.grading.submission.Submission`) within
        ``limit`` seconds; a hung or dead worker gives a ``timeout`` or ``error`` row."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        task = {"student_id": sub.student_id, "assignment": sub.assignment,
                "path": str(sub.path) if sub.path else None, "sha256": sub.sha256}
        base = Row(sub.student_id, sub.assignment, submission_sha256=sub.sha256)
        try:
            self.proc.stdin.write(json.dumps(task) + "\n")
            self.proc.stdin.flush()
            line = self.lines.get(timeout=limit)
        except queue.Empty:
            self.kill()
            base.status = Status.TIMEOUT
            base.detail = f"grading took longer than {limit:.0f} s and was stopped"
            return base
        except (BrokenPipeError, OSError):
            line = None
        if line is None:
            self.kill()
            base.detail = f"the grading worker died; see {self.log.name}"
            return base
        return Row.from_dict(json.loads(line))


def _die_with_parent() -> None:
    """Ask Linux to kill this worker when the grader that started it dies (even SIGKILL)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the worker exits when stdin closes
        pass


def main(argv: list[str] | None = None) -> int:
    """The worker process. The memory cap is set before anything else is imported, so the
    kernels this process starts inherit it."""
    import argparse
    import resource
    import traceback

    parser = argparse.ArgumentParser(prog="python -m autograder.grading.pool")
    parser.add_argument("workspace")
    parser.add_argument("--cell-timeout", type=int, default=60)
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--late-penalty", default="none")
    parser.add_argument("--warm", default="", help="assignments (comma-separated) whose "
                        "kernels' warm sandbox to start now, while nbgrader is imported")
    args = parser.parse_args(argv)
    _die_with_parent()
    if args.memory_mb:
        cap = args.memory_mb * 1024 * 1024
        # RLIMIT_DATA counts heap and private writable mappings (Linux >= 4.7), not the
        # address space CUDA or thread stacks reserve, so a GPU kernel still starts.
        resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))
        # No file a kernel writes (its working folder, its /tmp and /dev/shm, which are
        # memory) grows past the cap either: a write beyond it kills the kernel (SIGXFSZ).
        # Not a quota: many files can still add up (bubblewrap 0.8 has no tmpfs --size).
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))

    if args.warm and os.environ.get("AUTOGRADER_SANDBOX") == "1":
        from autograder import sandbox

        if sandbox.warm_kernels():
            sandbox.prewarm([a for a in args.warm.split(",") if a])
    sys.modules.setdefault("rfc3987_syntax", None)  # see autograder/__main__.py
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from autograder.grading import speedups

    speedups.apply()

    from autograder.config import apply
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
