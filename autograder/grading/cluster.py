"""Grading on a Dask cluster: ``python -m autograder grade SUBMISSIONS --scheduler tcp://HOST:PORT``.

The coordinator (the ``grade`` command) keeps everything the local path does: the workspace
lock, discovery, resume, release, and the one writer of the side table and ``grades.csv``
(:meth:`~autograder.grading.run.ClassRun.record`). Only the grading of each submission moves:
it becomes one Dask task (:func:`grade_task`) whose key names the student, the assignment
and the digest of the grade's inputs, so Dask's retry of a task whose worker died is the
same task, and a restarted coordinator asks for the same key again. In the Dask worker
process the task hands the submission to a :class:`~autograder.grading.pool.Worker` that the
process keeps, one per Dask thread: the same grading process as a local run, with its cell
timeout, memory cap and sandbox applied on that machine. When a Dask worker dies its grading
process dies with it (``PR_SET_PDEATHSIG``), the scheduler hands the task to another worker,
and the coordinator records the first result it receives for each submission.

Workers need the course environment (this package, nbgrader, bubblewrap), the workspace,
the course's ``solutions/`` and the submissions at the same paths as the coordinator (a
shared filesystem), and a gradebook they can all write: PostgreSQL (``--db-url``).
:func:`worker_problems` checks each of these on every connected worker before anything is
submitted. This module imports ``distributed`` only when a cluster is used.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import secrets
import socket
import sys
import threading
import time
from pathlib import Path

from autograder import env_vars
from autograder.grading import gradebook, keys
from autograder.grading.gradebook import shown
from autograder.grading.pool import Worker
from autograder.grading.release import source_notebook
from autograder.grading.results import Row, Status
from autograder.grading.submission import Submission
from autograder.sandbox import sandbox_error

# What the coordinator writes and each worker must read back through the shared filesystem.
TOKEN_FILE = ".autograder/cluster-token"
# Settings of the grading processes a worker starts that come from the coordinator.
FORWARDED_ENV = (env_vars.SANDBOX.name, env_vars.SOLUTIONS.name)

_workers: dict[tuple, object] = {}  # in a Dask worker process: (thread, settings) -> Worker
_workers_lock = threading.Lock()
_names = itertools.count()


def task_key(student_id: str, assignment: str, inputs_sha256: str) -> str:
    """The Dask key of one submission's grading: the same for a retry and for a restarted
    coordinator as long as nothing the grade depends on changed."""
    return f"autograde-{student_id}/{assignment}-{inputs_sha256[:16]}"


def _pool_worker(task: dict):
    """This Dask thread's grading process for the task's settings (started on first use)."""
    settings = (task["workspace"], task["cell_timeout"], task["memory_mb"],
                task["late_penalty"], tuple(sorted(task["env"].items())))
    thread = threading.get_ident()
    with _workers_lock:
        worker = _workers.get((thread, settings))
        if worker is None:
            for key in [k for k in _workers if k[0] == thread]:  # settings changed
                _workers.pop(key).kill()
            name = f"dask-{socket.gethostname()}-{os.getpid()}-{next(_names)}"
            worker = Worker(Path(task["workspace"]), name, task["cell_timeout"],
                            task["memory_mb"], task["late_penalty"])
            _workers[(thread, settings)] = worker
    return worker


def grade_task(task: dict) -> dict:
    """Grade one submission inside a Dask worker process; return its row as a dict.

    ``task`` holds the submission (``student_id``, ``assignment``, ``path``, ``sha256``), the
    workspace, the grading settings, ``limit`` (seconds for the whole submission) and
    ``env`` (:data:`FORWARDED_ENV` as the coordinator has them). A file lock per submission in
    the shared workspace keeps two runs of the same task (a task the scheduler re-sent while a
    forgotten copy still ran) from grading it at the same time.
    """
    from filelock import FileLock

    os.environ.update(task["env"])  # read by the grading process this worker starts
    worker = _pool_worker(task)
    sub = Submission(task["student_id"], task["assignment"],
                     Path(task["path"]) if task["path"] else None, task["sha256"])
    locks = Path(task["workspace"]) / ".staged" / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(f"{sub.student_id}\0{sub.assignment}".encode()).hexdigest()[:32]
    with FileLock(locks / f"{name}.lock"):
        row = worker.grade(sub, limit=task["limit"])
    out = row.to_dict()
    out["status"] = str(row.status)
    try:
        from distributed import get_worker

        out["dask_worker"] = get_worker().address
    except (ImportError, ValueError):  # called outside a Dask worker (a unit test)
        out["dask_worker"] = ""
    return out


def worker_problems(workspace: str, token: str, check_code: str, sources: list[str],
                    db_url: str, sandbox: bool) -> list[str]:
    """On one Dask worker: what keeps it from grading this run (empty when nothing does)."""
    problems = []
    try:
        seen = (Path(workspace) / TOKEN_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        seen = ""
    if seen != token:
        problems.append(f"does not see the workspace {workspace} as the coordinator wrote it "
                        "(it must be on a shared filesystem, at the same path)")
    missing = [s for s in sources if not Path(s).is_file()]
    if missing:
        problems.append(f"has no {missing[0]} (the course's solutions/ at the same path)")

    on_disk = keys.check_code_digest.__wrapped__()
    if on_disk != check_code:
        problems.append("runs other course code than the coordinator (its autograder/checks "
                        "differ: install the same version of the course)")
    elif keys.check_code_digest() != on_disk:  # cached when this process first checked
        problems.append("was started before the course's check code changed: restart the "
                        "Dask workers")
    if sandbox:
        why = sandbox_error()
        if why:
            problems.append(f"cannot sandbox the grading kernels: {why}")
    try:
        from sqlalchemy import create_engine, text

        engine = create_engine(db_url)
        try:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        finally:
            engine.dispose()
    except Exception as exc:  # noqa: BLE001 - any failure is the worker's problem to report

        problems.append(f"cannot open the gradebook {shown(db_url)}: "
                        f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    return problems


def connect(address: str):
    """A ``distributed.Client`` on the scheduler at ``address``.

    Raises:
        RuntimeError: the scheduler cannot be reached within 30 s (the message names it).
    """
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - requirements.txt installs it
        raise RuntimeError("--scheduler needs the 'distributed' package (pip install -r "
                           "requirements.txt)") from None
    try:
        return Client(address, timeout="30s", set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise RuntimeError(f"cannot reach the Dask scheduler at {address}: {exc}") from None


def workers_in_use(client) -> tuple[int, int]:
    """(Dask workers, their threads) connected to the scheduler now."""
    nthreads = client.nthreads()
    return len(nthreads), sum(nthreads.values())


def check_workers(client, run) -> list[str]:
    """Ask every connected worker whether it can grade ``run``; one line per problem."""
    token = secrets.token_hex(16)
    path = run.workspace / TOKEN_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(token + "\n", encoding="utf-8")
    sources = sorted({str(source_notebook(s.assignment)) for s in run.todo})
    found = client.run(worker_problems, str(run.workspace), token, keys.check_code_digest(),
                       sources, gradebook.db_url(run.workspace),
                       env_vars.SANDBOX.get() != "0")
    return [f"Dask worker {address} {p}" for address, problems in sorted(found.items())
            for p in problems]


def grade(run, client, progress: bool) -> set[str]:
    """Grade ``run.todo`` on the cluster; record each row through ``run.record`` as it comes
    back. Returns the addresses of the Dask workers that graded them."""
    from distributed import as_completed
    from distributed.scheduler import KilledWorker
    from tqdm import tqdm

    env = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}
    futures = {}
    for s in run.todo:
        task = {"student_id": s.student_id, "assignment": s.assignment,
                "path": str(s.path) if s.path else None, "sha256": s.sha256,
                "workspace": str(run.workspace), "cell_timeout": run.cell_timeout,
                "memory_mb": run.memory_mb, "late_penalty": run.late_penalty, "env": env,
                "limit": 120 + run.cell_timeout * (s.cell_count() + 2)}
        key = task_key(s.student_id, s.assignment, keys.digest(run.inputs[(s.student_id, s.assignment)]))
        futures[client.submit(grade_task, task, key=key, pure=False)] = s
    used: set[str] = set()
    bar = tqdm(total=len(futures), desc=f"grading on {workers_in_use(client)[0]} Dask worker(s)",
               unit="nb", disable=not progress, file=sys.stderr)
    last = time.monotonic()
    for future in as_completed(futures, loop=client.loop):
        s = futures[future]
        base = Row(s.student_id, s.assignment, submission_sha256=s.sha256)
        try:
            result = future.result()
            used.add(result.get("dask_worker", ""))
            row = Row.from_dict(result)
        except KilledWorker:
            base.status = Status.ERROR
            base.detail = ("the Dask workers grading it died each time it was sent "
                           "(distributed.scheduler.allowed-failures); see their logs")
            row = base
        except Exception as exc:  # noqa: BLE001 - a row is owed whatever happened
            base.detail = f"grader error on the cluster: {type(exc).__name__}: {exc}"
            row = base
        future.release()
        run.record(row)
        if time.monotonic() - last > 5:  # workers join and leave while a class grades
            bar.set_description(f"grading on {workers_in_use(client)[0]} Dask worker(s)")
            last = time.monotonic()
        bar.set_postfix_str(f"{s.student_id}: {row.status}")
        bar.update()
    bar.close()
    return used - {""}
