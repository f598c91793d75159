"""``python -m autograder grade``: grade a class. Refuse what cannot be graded (no folder,
the staging folder, no sandbox), lock the workspace, connect the gradebook's database and
the Dask cluster when asked, start the local workers, resume (:class:`ClassRun`), grade,
and derive ``grades.csv``, ``tests.csv`` and the summary from the gradebook."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from filelock import FileLock, Timeout

from autograder import env_vars
from autograder.exercises import exercise_ids
from autograder.grading import cluster, gradebook
from autograder.grading.autograde import STAGED
from autograder.grading.pool import Worker, default_jobs, preload
from autograder.grading.record import rewrite_records
from autograder.grading.release import source_notebook, write_config
from autograder.grading.results import GRADES_CSV
from autograder.grading.run import ClassRun, mark_phase
from autograder.grading.submission import Submission, discover, strays
from autograder.sandbox import sandbox_error


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


def _refusal(submissions: Path, workspace: Path, sandbox: bool, scheduler: str | None):
    """Why this run cannot start (a message for stderr), or None."""
    if not submissions.is_dir():
        return f"error: {submissions} is not a folder of submissions"
    staged = workspace.resolve() / STAGED
    if submissions.resolve() == staged or staged in submissions.resolve().parents:
        return (f"error: {submissions} is the grader's own staging folder; grade the "
                "submissions themselves (for instance the workspace's submitted/)")
    why = sandbox_error() if sandbox and not scheduler else None  # a cluster's: its workers'
    if why:
        return (f"error: the grading kernels cannot be sandboxed here: {why}. Learner code "
                "would run with your rights; to grade anyway, add --no-sandbox")
    return None


class _Refused(Exception):
    """A run that stops before it grades (its message goes to stderr, exit status 2)."""


def _connect(workspace: Path, db_url: str | None, scheduler: str | None):
    """The gradebook's database set (``db_url``) and the Dask client (``scheduler``), or
    None; _Refused when either cannot be had."""
    if db_url:
        try:
            gradebook.set_db_url(workspace, db_url)
        except ValueError as exc:
            raise _Refused(f"error: {exc}") from None
    if not scheduler:
        return None
    try:
        client = cluster.connect(scheduler)
    except RuntimeError as exc:
        raise _Refused(f"error: {exc}") from None
    if gradebook.db_url(workspace).startswith("sqlite"):
        print("warning: the gradebook is SQLite; with Dask workers on several machines "
              "give --db-url postgresql://USER@HOST/DATABASE", file=sys.stderr)
    return client


def _submissions(submissions: Path, regrade: tuple[str, ...]) -> list[Submission]:
    """The submissions to grade, strays warned of; _Refused for an unknown ``regrade``."""
    subs = discover(submissions.resolve())
    for stray in strays(submissions.resolve()):
        print(f"warning: {stray} is not graded: its folder's name is none of the course's "
              f"assignments ({', '.join(exercise_ids())})", file=sys.stderr)
    unknown = sorted(set(regrade) - {s.student_id for s in subs})
    if unknown:
        raise _Refused(f"error: --regrade names student(s) with no submission in "
                       f"{submissions}: {', '.join(unknown)}")
    return subs


def _grade_on(run: ClassRun, client, scheduler: str | None, progress: bool) -> str:
    """Grade ``run``'s submissions on the cluster or the local workers; where, in words."""
    if client is not None:
        used = cluster.grade(run, client, progress)
        connected, threads = cluster.workers_in_use(client)
        return (f" on {len(used)} Dask worker(s) ({connected} connected, {threads} "
                f"thread(s)) at {scheduler}")
    # The summary's plotting library, imported while the workers grade (not after).
    threading.Thread(target=_import, args=("matplotlib.figure",
                                           "matplotlib.backends.backend_agg"),
                     daemon=True).start()
    run.grade(progress)
    return f" with {len(run.workers)} worker(s)"


def _summary(run: ClassRun, workspace: Path, sandbox: bool, seconds: float, where: str) -> None:
    """grades.csv, tests.csv and the summary derived from the gradebook (the one record),
    and the run's last lines."""
    mark_phase("grades.csv and summary")
    for line in rewrite_records(workspace)[1]:
        print(line)
    for w in run.workers:
        w.stop()
    print("kernels sandboxed with bubblewrap (no network, no course files)" if sandbox
          else "WARNING: graded WITHOUT a sandbox (--no-sandbox): learner code ran with "
               "your rights; the sandbox column of grades.csv says 'none'")
    print(f"graded {len(run.todo)} submission(s) in {seconds:.1f} s{where}; "
          f"{len(run.rows)} row(s) in {workspace / GRADES_CSV}")
    if not gradebook.db_url(workspace).startswith("sqlite"):
        print(f"gradebook: {gradebook.shown(gradebook.db_url(workspace))}")


def _ready(run: ClassRun, client, workers: list[Worker], scheduler: str | None) -> None:
    """Say what is regraded and why; hand the run its local workers, or make sure the
    cluster's can grade it (:class:`_Refused` when they cannot)."""
    if run.reasons:
        print(f"regrading {len(run.todo)} submission(s); changed: " + ", ".join(
            f"{name} ({n})" for name, n in sorted(run.reasons.items())))
    if client is None:
        run.use_workers(workers)
        return
    problems = cluster.check_workers(client, run) if run.todo else []
    if problems:
        raise _Refused("error: the cluster cannot grade this class:\n  " + "\n  ".join(problems))
    if run.todo and not cluster.workers_in_use(client)[0]:
        print(f"waiting for Dask workers to join {scheduler}", file=sys.stderr)


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
    refusal = _refusal(submissions, workspace, sandbox, scheduler)
    if refusal:
        print(refusal, file=sys.stderr)
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
    try:
        return _grade_locked(submissions, workspace, jobs=jobs, cell_timeout=cell_timeout,
                             memory_mb=memory_mb, progress=progress,
                             late_penalty=late_penalty, sandbox=sandbox, force=force,
                             regrade=regrade, scheduler=scheduler, db_url=db_url)
    finally:
        lock.release()


def _grade_locked(submissions: Path, workspace: Path, *, jobs: int, cell_timeout: int,
                  memory_mb: int, progress: bool, late_penalty: str, sandbox: bool,
                  force: bool, regrade: tuple[str, ...], scheduler: str | None,
                  db_url: str | None) -> int:
    """:func:`grade_class` once it holds ``workspace``'s lock (the same arguments; the
    workspace resolved): 0 when every submission has a row, 1 otherwise, 2 when the run is
    refused (said before the workers stop)."""
    client = None
    workers: list[Worker] = []
    try:
        client = _connect(workspace, db_url, scheduler)
        mark_phase("start-up")
        write_config(workspace, release_directory=workspace / "release",
                     cell_timeout=cell_timeout, late_penalty=late_penalty)
        subs = _submissions(submissions, regrade)
        jobs = jobs or default_jobs({s.assignment for s in subs})  # 0: what the machine holds
        if client is None:
            mark_phase("start workers")
            workers = start_workers(workspace, subs, jobs, cell_timeout=cell_timeout,
                                    memory_mb=memory_mb, late_penalty=late_penalty)
        mark_phase("resume: inputs of each grade")
        run = ClassRun(workspace, subs, cell_timeout=cell_timeout, memory_mb=memory_mb,
                       late_penalty=late_penalty, force=force, regrade=frozenset(regrade))
        _ready(run, client, workers, scheduler)
        mark_phase("release")
        run.release()
        run.save()
        mark_phase("grading")
        start = time.monotonic()
        where = _grade_on(run, client, scheduler, progress)
        _summary(run, workspace, sandbox, time.monotonic() - start, where)
        expected = {(s.student_id, s.assignment) for s in subs}
        mark_phase("end")
        return 0 if expected <= set(run.rows) else 1
    except _Refused as exc:
        print(str(exc), file=sys.stderr)
        return 2
    finally:
        for w in workers:  # a run that stopped early: no worker outlives it
            w.kill()
        if client is not None:
            client.close()
