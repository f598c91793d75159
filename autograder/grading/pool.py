"""The worker pool, the grader's end: :class:`Worker` starts a grading worker
(:mod:`~autograder.grading.worker`: forked from the grader, which has imported what it
needs, or ``python -m autograder.grading.worker WORKSPACE``), sends it one JSON task per line
and reads one JSON :class:`Row` per line back. A worker that hangs is killed with its
kernels."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

from autograder.grading.environment import child_env
from autograder.scratch import remove_left_by
from autograder.grading.results import Row, Status
from autograder.grading.worker import main


# Memory one grading worker and its kernel use while grading (MiB, measured on the course's
# notebooks: a NumPy kernel ~180, nbgrader's worker ~150; a torch kernel ~600 more).
WORKER_MB, TORCH_MB = 400, 1000


def default_jobs(assignments, uses_torch=None) -> int:
    """Workers the machine can run at once: one per core this process may use, fewer when
    the available memory does not hold that many (torch exercises need more). A worker and
    its kernel take turns, but their waits are milliseconds (benchmarks/bench_grading.py
    --profile); a second worker per core made the class slower (40 ex01 on 2 cores: 2
    workers 18.5 s and 31 CPU s, 3 workers 19.0 s and 34, 4 workers 21.2 s and 39: each
    worker imports nbgrader and keeps a warm sandbox)."""
    if uses_torch is None:
        from autograder.warm_sandbox import preload_for

        uses_torch = any(preload_for(a) for a in assignments)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            info = {ln.split(":")[0]: int(ln.split()[1]) for ln in f}
        available = info["MemAvailable"] // 1024
    except (OSError, KeyError, ValueError):
        return max(1, cores)
    need = WORKER_MB + (TORCH_MB if uses_torch else 0)
    return max(1, min(cores, available // need))


class Worker:
    """A grading process that grades one submission at a time.

    It imports nbgrader once and grades many submissions. Its process group (it and the
    kernels it starts) is killed when a submission takes longer than allowed or when the
    worker dies, and a fresh worker takes its place.
    """

    def __init__(self, workspace: Path, index: int | str, cell_timeout: int, memory_mb: int,
                 late_penalty: str = "none", warm: tuple[str, ...] = ()):
        self.workspace = workspace
        self.args = [sys.executable, "-m", "autograder.grading.worker", str(workspace),
                     "--cell-timeout", str(cell_timeout), "--memory-mb", str(memory_mb),
                     "--late-penalty", late_penalty]
        if warm:  # the assignments it will grade: its warm sandbox starts with it
            self.args += ["--warm", ",".join(warm)]
        self.log = workspace / "logs" / f"worker-{index}.log"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.proc = None
        self.lines: queue.Queue = queue.Queue()

    def start(self, fork: bool = False) -> None:
        """Start the worker process (it imports nbgrader, then waits for tasks).

        ``fork``: a fork of this process, which has imported what a worker needs
        (:func:`preload`), instead of a new interpreter that imports it again; only while
        this process has no other thread (a fork copies only the thread that forks), else
        a new interpreter. :meth:`listen` must follow (:meth:`start` without ``fork`` does
        both)."""
        if fork and threading.active_count() == 1:
            self.proc = _fork(self.args[3:], self.workspace, self.log)
        else:
            err = self.log.open("a", encoding="utf-8")
            self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=err, text=True,
                                         encoding="utf-8", env=child_env(),
                                         cwd=self.workspace, start_new_session=True)
            err.close()
        if not fork:
            self.listen()

    def listen(self) -> None:
        """Read the started worker's rows in a thread."""
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True).start()

    @staticmethod
    def _read(proc, lines) -> None:
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)  # EOF: the worker exited

    def finish(self) -> None:
        """Tell an idle worker there is nothing more to grade (the end of its input): it
        removes its warm sandbox's files and exits, while the grader goes on."""
        if self.proc and self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def stop(self, wait: float = 5.0) -> None:
        """Let an idle worker finish (:meth:`finish`), killing it after ``wait`` seconds."""
        self.finish()
        if self.proc and self.proc.poll() is None:
            try:
                self.proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def kill(self) -> None:
        """Kill the worker's process group (it and its kernels); remove the scratch folders
        it left (its sandboxes': what its last kernel wrote is memory in /dev/shm)."""
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:  # a forked worker not yet in its own session
                os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.proc is not None:
            remove_left_by(self.proc.pid)
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


# The grader's ends of the forked workers' pipes: a worker forked later closes them (or the
# first worker would never see the end of its input).
_PARENT_FDS: set[int] = set()


def preload() -> None:
    """Import, in the grader, what a worker imports (nbgrader, the course's plugins) and
    apply :mod:`~autograder.grading.speedups`, so that forked workers start warm."""
    sys.modules.setdefault("rfc3987_syntax", None)  # see autograder/__main__.py
    import nbgrader.apps  # noqa: F401
    import nbgrader.coursedir  # noqa: F401

    import autograder.grading.autograde  # noqa: F401
    import autograder.nbgrader_execute  # noqa: F401
    import autograder.sandboxed_kernel  # noqa: F401
    from autograder.grading import speedups

    speedups.apply()


def _forked(pid: int, stdin, stdout):
    """What :class:`Worker` uses of a ``subprocess.Popen``, for a forked worker."""
    from autograder.sandbox import PolledProcess

    class Forked(PolledProcess):
        def poll(self) -> int | None:
            if self.returncode is None:
                try:
                    done, status = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:
                    done, status = self.pid, 0
                if done:
                    self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode

    proc = Forked()
    proc.pid, proc.stdin, proc.stdout = pid, stdin, stdout
    return proc


def _fork(argv: list[str], workspace: Path, log: Path):
    """Fork a worker running :func:`main` ``(argv)``: its own session, the pipes as its
    standard input and output, ``log`` as its standard error, the workspace as its folder
    and :func:`child_env` as its environment."""
    import io
    import traceback

    sys.stdout.flush()
    sys.stderr.flush()
    task_r, task_w = os.pipe()
    row_r, row_w = os.pipe()
    err = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    pid = os.fork()
    if pid == 0:  # the worker: never returns into the grader's code
        code = 1
        try:
            os.setsid()
            for fd in (task_w, row_r, *_PARENT_FDS):
                os.close(fd)
            os.dup2(task_r, 0)
            os.dup2(row_w, 1)
            os.dup2(err, 2)
            for fd in (task_r, row_w, err):
                os.close(fd)
            os.chdir(workspace)
            env = child_env()
            os.environ.clear()
            os.environ.update(env)
            sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                          line_buffering=True)
            sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                          line_buffering=True)
            from autograder.grading import speedups

            speedups.forget_engines()  # the grader's database connections stay the grader's
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - the worker's error goes to its log
            traceback.print_exc()
        finally:
            try:
                from autograder import warm_zygotes

                warm_zygotes.close_warm()  # what atexit does for a worker that is a new interpreter
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    for fd in (task_r, row_w, err):
        os.close(fd)
    _PARENT_FDS.update((task_w, row_r))
    return _forked(pid, open(task_w, "w", encoding="utf-8"), open(row_r, encoding="utf-8"))
