"""Running a class: ``python -m autograder grade``. Lock the workspace, discover the
submissions, resume (skip rows that are final and whose inputs are unchanged: the notebook,
its timestamp, due date, extension, late-penalty option, source notebook and check code, see
:mod:`~autograder.grading.keys`), hand the rest out to the worker pool, save the side table
after every submission, derive ``grades.csv`` from the gradebook, print the summary."""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
from pathlib import Path

from filelock import FileLock, Timeout

from autograder import env_vars
from autograder.exercises import exercise_ids
from autograder.grading import gradebook, keys
from autograder.grading import cluster
from autograder.grading.autograde import STAGED
from autograder.grading.pool import Worker, default_jobs
from autograder.grading.pool import preload
from autograder.grading.release import ensure_released, source_notebook, write_config
from autograder.grading.record import add_note, derive, derive_rows
from autograder.grading.results import (FINAL, GRADES_CSV, Row, Status, load_state, save_rows,
                                        state_line, write_state)
from autograder.grading.submission import Submission, discover, strays
from autograder.sandbox import sandbox_error


CSV_INTERVAL = 1.0  # seconds between two rewrites of grades.csv while a class is graded


def mark(phase: str) -> None:
    """With ``$AUTOGRADER_PROFILE`` set (benchmarks/bench_grading.py --profile), note when
    ``phase`` of the run began (the profile prints the time between marks) and this
    process's peak resident memory so far (KiB; benchmarks/bench_scaling.py)."""
    path = env_vars.PROFILE.get()
    if path:
        try:
            import resource

            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB (macOS: bytes)
            peak = peak // 1024 if sys.platform == "darwin" else peak
        except ImportError:  # Windows
            peak = None
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"phase": phase, "at": time.time(), "maxrss_kb": peak}) + "\n")


class ClassRun:
    """The state of one grading run: the rows so far and the submissions left to grade."""

    def __init__(self, workspace: Path, subs: list[Submission], *, cell_timeout: int,
                 memory_mb: int, late_penalty: str, force: bool = False,
                 regrade: frozenset[str] = frozenset()):
        self.workspace = workspace
        self.subs = subs
        self.cell_timeout, self.memory_mb, self.late_penalty = cell_timeout, memory_mb, late_penalty
        self.rows = derive_rows(workspace, load_state(workspace))
        self.notes = {(s.student_id, s.assignment): s.note for s in subs if s.note}
        present = {(s.student_id, s.assignment) for s in subs}
        for key in [k for k, r in self.rows.items()  # a refused folder since renamed
                    if r.status == Status.INVALID_STUDENT_ID and k not in present]:
            del self.rows[key]
        self.unknown = sorted({s.assignment for s in subs
                               if not source_notebook(s.assignment).is_file()})
        self.inputs = self._inputs([s for s in subs if not s.refused])
        self.todo: list[Submission] = []
        self.reasons: dict[str, int] = {}  # input name -> rows regraded because it changed
        for s in subs:
            old = self.rows.get((s.student_id, s.assignment))
            if s.refused:  # at the door (submission.discover): nothing to grade
                self.rows[(s.student_id, s.assignment)] = Row(
                    s.student_id, s.assignment, status=s.refused[0], detail=s.refused[1],
                    submission_sha256=s.sha256)
                continue
            if s.assignment in self.unknown:
                self.rows[(s.student_id, s.assignment)] = Row(
                    s.student_id, s.assignment, status=Status.UNKNOWN_ASSIGNMENT,
                    detail=f"no assignment {s.assignment!r} in solutions/",
                    submission_sha256=s.sha256)
                continue
            new = self.inputs[(s.student_id, s.assignment)]
            if force or s.student_id in regrade:
                why = ["--force" if force else "--regrade"]
            elif old is None or old.status not in FINAL:
                why = []
            elif old.inputs_sha256 == keys.digest(new):
                continue  # graded before, nothing it depends on changed
            else:
                why = keys.changed(json.loads(old.inputs or "{}"), new)
            for name in why:
                self.reasons[name] = self.reasons.get(name, 0) + 1
            self.todo.append(s)
        self.workers: list[Worker] = []
        self._lock = threading.Lock()
        self._csv_saved = 0.0  # when grades.csv was last written (time.monotonic)
        self._csv_interval = CSV_INTERVAL  # and the seconds until the next write
        self._state: dict[tuple[str, str], str] | None = None  # each row's side table line

    def _inputs(self, subs: list[Submission]) -> dict[tuple[str, str], dict[str, str]]:
        """The inputs of each submission's grade (:func:`autograder.grading.keys.inputs`)."""
        check_code = keys.check_code_digest()
        out = {}
        with gradebook.open_gradebook(self.workspace) as gb:
            for s in subs:
                due, extension = keys.schedule(gb, s.assignment, s.student_id)
                out[(s.student_id, s.assignment)] = keys.inputs(
                    s, due=due, extension=extension, late_penalty=self.late_penalty,
                    source=source_notebook(s.assignment), check_code=check_code)
        return out

    def save(self) -> None:
        """The side table first (the durable record), then grades.csv and tests.csv."""
        self._state = {key: state_line(row) for key, row in self.rows.items()}
        write_state(self.workspace, self._state)
        save_rows(self.workspace, self.rows)

    def record(self, row: Row) -> None:
        """Keep a finished row: rewrite the side table, and grades.csv and tests.csv at most
        every :data:`CSV_INTERVAL` seconds, or twenty times as long as their last write took
        (called from worker threads; the class's end writes them from the gradebook, and a
        rerun resumes from the side table)."""
        with self._lock:
            if not row.max_score:  # a worker that died or hung did not read the gradebook
                row.max_score = gradebook.max_score(self.workspace, row.assignment)
            values = self.inputs.get(row.key, {})
            row.inputs, row.inputs_sha256 = json.dumps(values), keys.digest(values)
            row.sandbox = "none" if env_vars.SANDBOX.get() == "0" else "bubblewrap"
            add_note(row, self.notes.get(row.key, ""))
            self.rows[row.key] = row
            start = time.perf_counter()
            if self._state is None:  # not saved yet: every row formatted once
                self._state = {key: state_line(r) for key, r in self.rows.items()}
            self._state[row.key] = state_line(row)  # then only the row recorded
            write_state(self.workspace, self._state)  # the durable record: after every row
            if time.monotonic() - self._csv_saved >= self._csv_interval:
                began = time.monotonic()
                save_rows(self.workspace, self.rows)
                self._csv_saved = time.monotonic()
                # A large class's files take longer to write: at most a 20th of the time.
                self._csv_interval = max(CSV_INTERVAL, 20 * (self._csv_saved - began))
            if env_vars.PROFILE.get():  # benchmarks/bench_grading.py --profile
                with open(env_vars.PROFILE.get(), "a", encoding="utf-8") as f:
                    f.write(json.dumps({"student_id": row.student_id, "csv writes":
                                        time.perf_counter() - start}) + "\n")

    def grade(self, progress: bool) -> None:
        """Grade ``todo`` with one worker per job; each worker takes the next submission."""
        from tqdm import tqdm

        bar = tqdm(total=len(self.todo), desc=f"grading with {len(self.workers)} worker(s)",
                   unit="nb", disable=not progress, file=sys.stderr)
        pending: queue.Queue = queue.Queue()
        for s in self.todo:
            pending.put(s)

        def work(worker: Worker) -> None:
            try:
                while True:
                    try:
                        s = pending.get_nowait()
                    except queue.Empty:
                        return
                    limit = 120 + self.cell_timeout * (s.cell_count() + 2)
                    row = worker.grade(s, limit=limit)
                    self.record(row)
                    with self._lock:
                        bar.set_postfix_str(f"{s.student_id}: {row.status}")
                        bar.update()
            finally:
                worker.finish()  # it exits while the grades are derived (stop() waits)

        threads = [threading.Thread(target=work, args=(w,)) for w in self.workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        bar.close()

    def use_workers(self, workers: list[Worker]) -> None:
        """Grade with ``workers`` (started by :func:`start_workers` before the submissions
        to grade were known): as many as there are submissions to grade; the others stop."""
        self.workers, extra = workers[:len(self.todo)], workers[len(self.todo):]
        for w in extra:  # told first, waited for after: they exit (and remove their warm
            w.finish()  # sandboxes' files) together
        for w in extra:
            w.stop()

    def release(self) -> None:
        """Record each assignment and each student of the class in the workspace's gradebook
        (two workers grading one student's two assignments would both create the student)."""
        try:
            for assignment in sorted({s.assignment for s in self.subs} - set(self.unknown)):
                ensure_released(self.workspace, assignment, cell_timeout=self.cell_timeout,
                                late_penalty=self.late_penalty)
            with gradebook.open_gradebook(self.workspace) as gb:
                for student in sorted({s.student_id for s in self.todo}):
                    gb.update_or_create_student(student)
        except BaseException:
            for w in self.workers:
                w.kill()
            raise


def _import(*modules: str) -> None:
    import importlib

    for name in modules:
        importlib.import_module(name)


def start_workers(workspace: Path, subs: list[Submission], jobs: int, *, cell_timeout: int,
                  memory_mb: int, late_penalty: str) -> list[Worker]:
    """Start ``jobs`` workers (fewer for a smaller class) at the start of a run: they import
    nbgrader and start their warm sandboxes while the grader works out what to grade and
    releases the assignments (:meth:`ClassRun.use_workers` stops the ones not needed)."""
    warm = tuple(sorted({s.assignment for s in subs if source_notebook(s.assignment).is_file()}))
    workers = [Worker(workspace, i, cell_timeout, memory_mb, late_penalty, warm=warm)
               for i in range(min(jobs, len(subs)))]
    if workers:
        preload()  # imported once here, then forked: not once more in every worker
    for w in workers:  # all forked before the first thread (each listen() starts one)
        w.start(fork=True)
    for w in workers:
        w.listen()
    return workers


def grade_class(submissions: Path, workspace: Path, *, jobs: int = 1, cell_timeout: int = 60,
                memory_mb: int = 4096, progress: bool = True, late_penalty: str = "none",
                sandbox: bool = True, force: bool = False,
                regrade: tuple[str, ...] = (), scheduler: str | None = None,
                db_url: str | None = None) -> int:
    """Grade every submission under ``submissions``; write ``workspace/grades.csv``.

    A submission is graded when it has no final row yet or when an input of its grade
    changed since (:mod:`~autograder.grading.keys`); ``force`` regrades all, ``regrade``
    the named students' submissions.

    ``scheduler``: the address of a Dask scheduler (``tcp://HOST:8786``); each submission is
    graded by one of its workers (:mod:`~autograder.grading.cluster`) instead of ``jobs``
    local workers. ``db_url``: a PostgreSQL URL for the workspace's gradebook instead of its
    SQLite file, kept for later runs and nbgrader's own commands
    (:func:`~autograder.grading.gradebook.set_db_url`).

    ``submissions`` is only read (it may be the workspace's own ``submitted/``). Returns 0
    when every submission has a row, 1 otherwise, 2 for a bad command line or a workspace
    that another grading run holds.
    """
    if not submissions.is_dir():
        print(f"error: {submissions} is not a folder of submissions", file=sys.stderr)
        return 2
    staged = workspace.resolve() / STAGED
    if submissions.resolve() == staged or staged in submissions.resolve().parents:
        print(f"error: {submissions} is the grader's own staging folder; grade the "
              "submissions themselves (for instance the workspace's submitted/)", file=sys.stderr)
        return 2

    why = sandbox_error() if sandbox and not scheduler else None  # a cluster's: its workers'
    if why:
        print(f"error: the grading kernels cannot be sandboxed here: {why}. Learner code "
              "would run with your rights; to grade anyway, add --no-sandbox", file=sys.stderr)
        return 2
    os.environ[env_vars.SANDBOX.name] = "1" if sandbox else "0"  # read by the workers' config
    workspace = workspace.resolve()
    workspace.mkdir(parents=True, exist_ok=True)
    lock = FileLock(workspace / ".lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        print(f"error: another grading run is using {workspace}", file=sys.stderr)
        return 2
    client = None
    workers: list[Worker] = []
    try:
        if db_url:
            try:
                gradebook.set_db_url(workspace, db_url)
            except ValueError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
        if scheduler:
            try:
                client = cluster.connect(scheduler)
            except RuntimeError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
            if gradebook.db_url(workspace).startswith("sqlite"):
                print("warning: the gradebook is SQLite; with Dask workers on several machines "
                      "give --db-url postgresql://USER@HOST/DATABASE", file=sys.stderr)
        mark("start-up")
        write_config(workspace, release_directory=workspace / "release",
                     cell_timeout=cell_timeout, late_penalty=late_penalty)
        subs = discover(submissions.resolve())
        for stray in strays(submissions.resolve()):
            print(f"warning: {stray} is not graded: its folder's name is none of the course's "
                  f"assignments ({', '.join(exercise_ids())})", file=sys.stderr)
        jobs = jobs or default_jobs({s.assignment for s in subs})  # 0: what the machine holds
        unknown = sorted(set(regrade) - {s.student_id for s in subs})
        if unknown:
            print(f"error: --regrade names student(s) with no submission in {submissions}: "
                  f"{', '.join(unknown)}", file=sys.stderr)
            return 2
        if client is None:
            mark("start workers")
            workers = start_workers(workspace, subs, jobs, cell_timeout=cell_timeout,
                                    memory_mb=memory_mb, late_penalty=late_penalty)
        mark("resume: inputs of each grade")
        run = ClassRun(workspace, subs, cell_timeout=cell_timeout, memory_mb=memory_mb,
                       late_penalty=late_penalty, force=force, regrade=frozenset(regrade))
        if run.reasons:
            print(f"regrading {len(run.todo)} submission(s); changed: " + ", ".join(
                f"{name} ({n})" for name, n in sorted(run.reasons.items())))
        if client is not None:
            problems = cluster.check_workers(client, run) if run.todo else []
            if problems:
                print("error: the cluster cannot grade this class:\n  " + "\n  ".join(problems),
                      file=sys.stderr)
                return 2
            if run.todo and not cluster.workers_in_use(client)[0]:
                print(f"waiting for Dask workers to join {scheduler}", file=sys.stderr)
        else:
            run.use_workers(workers)
        mark("release")
        run.release()
        run.save()
        mark("grading")
        start = time.monotonic()
        if client is not None:
            used = cluster.grade(run, client, progress)
            connected, threads = cluster.workers_in_use(client)
            where = (f" on {len(used)} Dask worker(s) ({connected} connected, {threads} "
                     f"thread(s)) at {scheduler}")
        else:
            where = f" with {len(run.workers)} worker(s)"
            # The summary's plotting library, imported while the workers grade (not after).
            threading.Thread(target=_import, args=("matplotlib.figure",
                                                   "matplotlib.backends.backend_agg"),
                             daemon=True).start()
            run.grade(progress)
        # grades.csv, tests.csv and the summary from the gradebook (the one record).
        mark("grades.csv and summary")
        for line in derive(workspace)[1]:
            print(line)
        for w in run.workers:
            w.stop()
        print("kernels sandboxed with bubblewrap (no network, no course files)" if sandbox
              else "WARNING: graded WITHOUT a sandbox (--no-sandbox): learner code ran with "
                   "your rights; the sandbox column of grades.csv says 'none'")
        print(f"graded {len(run.todo)} submission(s) in {time.monotonic() - start:.1f} s{where}; "
              f"{len(run.rows)} row(s) in {workspace / GRADES_CSV}")
        if not gradebook.db_url(workspace).startswith("sqlite"):
            print(f"gradebook: {gradebook.shown(gradebook.db_url(workspace))}")
        expected = {(s.student_id, s.assignment) for s in subs}
        mark("end")
        return 0 if expected <= set(run.rows) else 1
    finally:
        for w in workers:  # a run that stopped early: no worker outlives it
            w.kill()
        if client is not None:
            client.close()
        lock.release()
