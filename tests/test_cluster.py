"""Grading on a Dask cluster with the gradebook in PostgreSQL (issue 18).

A real PostgreSQL server (a throwaway cluster in a temporary folder, run as an unprivileged
user, on a free port of 127.0.0.1) and a real Dask cluster (``dask scheduler`` and
``dask worker --nworkers 2`` over TCP on the loopback address, started as an instructor
starts them). One class of 30 mixed submissions of ex01 and ex02 (references, stubs, wrong
and correct variants; most students hand in both) is graded once locally into SQLite and
once on the cluster into PostgreSQL; the tests below read those two runs. The last two
kill the coordinator (``grade``) and a Dask worker process while they grade.
"""

from __future__ import annotations

import csv
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from conftest import REPO, grade, run
from submissions import filled_notebook, parse_variant, variants, write_submission

from autograder.config import EXERCISES
from autograder.grading import cluster, gradebook
from autograder.grading.results import STATE_CSV

EX01, EX02 = "ex01_python_attention", "ex02_numpy_attention"
CLASS = pytest.mark.slow, pytest.mark.xdist_group("cluster")  # one worker: the runs once


def _mark(*marks):
    def wrap(f):
        for m in reversed(marks):
            f = m(f)
        return f
    return wrap


slow = _mark(*CLASS)


# -- unit: URLs, keys, what a worker needs (no server, no cluster) --------------------------


def test_postgres_urls_get_the_psycopg_driver_and_others_are_refused():
    assert gradebook.normalise_url("postgresql://grader@db:5432/course") == \
        "postgresql+psycopg://grader@db:5432/course"
    assert gradebook.normalise_url("postgres://g:pw@db/c") == "postgresql+psycopg://g:pw@db/c"
    assert gradebook.shown("postgresql+psycopg://g:secret@db/c") == "postgresql+psycopg://g:***@db/c"
    with pytest.raises(ValueError, match="not mysql"):
        gradebook.normalise_url("mysql://g@db/c")
    with pytest.raises(ValueError, match="not a database URL"):
        gradebook.normalise_url("db.example.org")


def test_the_url_is_kept_for_the_workspace_and_not_switched_under_its_grades(tmp_path):
    assert gradebook.db_url(tmp_path).startswith("sqlite:///") and not gradebook.exists(tmp_path)
    url = gradebook.set_db_url(tmp_path, "postgresql://g:pw@db/course")
    assert gradebook.db_url(tmp_path) == url == "postgresql+psycopg://g:pw@db/course"
    assert gradebook.exists(tmp_path)
    assert (tmp_path / gradebook.DB_URL_FILE).stat().st_mode & 0o077 == 0  # owner only
    (tmp_path / STATE_CSV).write_text("student_id\n")  # the workspace holds grades now
    assert gradebook.set_db_url(tmp_path, "postgres://g:pw@db/course") == url  # the same
    with pytest.raises(ValueError, match="already holds grades"):
        gradebook.set_db_url(tmp_path, "postgresql://g@db/other")


def test_a_retry_is_the_same_task_and_a_changed_input_another():
    key = cluster.task_key("ada", EX01, "ab" * 32)
    assert key == cluster.task_key("ada", EX01, "ab" * 32) == f"autograde-ada/{EX01}-" + "ab" * 8
    assert key != cluster.task_key("ada", EX01, "cd" * 32)


def test_a_worker_that_cannot_see_the_workspace_or_the_database_says_so(tmp_path):
    (tmp_path / cluster.TOKEN_FILE).parent.mkdir(parents=True)
    (tmp_path / cluster.TOKEN_FILE).write_text("token-of-another-run\n")
    from autograder.grading import keys

    problems = cluster.worker_problems(
        str(tmp_path), "this-run", keys.check_code_digest(), [str(tmp_path / "nope.ipynb")],
        "postgresql+psycopg://nobody@127.0.0.1:1/none?connect_timeout=2", sandbox=False)
    assert len(problems) == 3, problems
    assert "does not see the workspace" in problems[0]
    assert "nope.ipynb" in problems[1]
    assert "cannot open the gradebook postgresql+psycopg://nobody@127.0.0.1:1/none" in problems[2]
    ok = cluster.worker_problems(str(tmp_path), "token-of-another-run",
                                 keys.check_code_digest(), [], f"sqlite:///{tmp_path}/g.db",
                                 sandbox=False)
    assert ok == []


def test_grading_on_one_machine_does_not_import_dask():
    code = ("import sys, autograder.cli, autograder.grading.grade, autograder.grading.pool; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed', "
            "'psycopg')))")
    proc = run([sys.executable, "-c", code])
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr


# -- a PostgreSQL server and a Dask cluster on this machine ----------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pg_bin() -> Path | None:
    """The folder of PostgreSQL's initdb and pg_ctl (PATH, else Debian's versioned one)."""
    if shutil.which("initdb") and shutil.which("pg_ctl"):
        return Path(shutil.which("initdb")).parent
    for folder in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    return None


class Postgres:
    """A throwaway PostgreSQL cluster in a temporary folder, as an unprivileged user when
    this runs as root (the server refuses root)."""

    def __init__(self, bin_dir: Path):
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="autograder-pg-"))
        self.port = _free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                user = pwd.getpwnam("nobody")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self.as_user = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
                            "--clear-groups", "--"]

    def _run(self, *args: str) -> None:
        done = subprocess.run(self.as_user + [str(a) for a in args], cwd=self.root,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (args, done.stdout, done.stderr)

    def start(self) -> None:
        data = self.root / "data"
        self._run(self.bin / "initdb", "-D", data, "-U", "grader", "--auth=trust", "-E", "UTF8",
                  "--no-sync")
        self._run(self.bin / "pg_ctl", "-D", data, "-l", self.root / "server.log", "-w", "-o",
                  f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off",
                  "start")

    def stop(self) -> None:
        subprocess.run(self.as_user + [str(self.bin / "pg_ctl"), "-D", str(self.root / "data"),
                                       "-m", "immediate", "stop"], cwd=self.root,
                       capture_output=True, timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)

    def createdb(self, name: str) -> str:
        """Create database ``name``; return the URL an instructor passes to --db-url."""
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user="grader",
                             dbname="postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://grader@127.0.0.1:{self.port}/{name}"

    def query(self, name: str, sql: str) -> list[tuple]:
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user="grader",
                             dbname=name) as conn:
            return conn.execute(sql).fetchall()


@pytest.fixture(scope="module")
def postgres():
    bin_dir = _pg_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL's server programs (initdb, pg_ctl) are not installed: "
                    "apt-get install postgresql (.ci/run installs it)")
    server = Postgres(bin_dir)
    try:
        server.start()
        yield server
    finally:
        server.stop()


PAGE = (REPO / "instructors.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """``dask scheduler`` and ``dask worker --nworkers 2 --nthreads 1`` (a nanny each) on
    127.0.0.1, as the instructors page starts them; yields (address, client)."""
    from distributed import Client

    logs = tmp_path_factory.mktemp("dask")
    dask = str(Path(sys.executable).parent / "dask")
    address = f"tcp://127.0.0.1:{_free_port()}"
    procs = []
    try:
        with (logs / "scheduler.log").open("w") as log:
            procs.append(subprocess.Popen(
                [dask, "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                 "--no-dashboard"], stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True))
        # The instructors page's commands, on the loopback address.
        assert "dask scheduler --port 8786" in PAGE
        assert "dask worker tcp://sched:8786 --nworkers 1 --nthreads 8" in PAGE
        with (logs / "workers.log").open("w") as log:
            procs.append(subprocess.Popen(
                [dask, "worker", address, "--nworkers", "2", "--nthreads", "1", "--host",
                 "127.0.0.1", "--no-dashboard"], stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                start_new_session=True))
        client = Client(address, timeout="60s", set_as_default=False)
        client.wait_for_workers(2, timeout=180)
        yield address, client
        client.close()
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


# -- one class, graded locally (SQLite) and on the cluster (PostgreSQL) ----------------


def _rows(workspace: Path) -> list[dict]:
    with (workspace / "grades.csv").open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _tests(workspace: Path) -> dict[tuple, float]:
    with (workspace / "tests.csv").open(encoding="utf-8") as f:
        return {(r["student_id"], r["assignment"], r["test"]): float(r["score"])
                for r in csv.DictReader(f)}


def _first_submissions(klass: Path, assignment: str, n: int, dest: Path) -> list[str]:
    """Copy the first ``n`` students' (sorted) submissions of ``assignment`` into ``dest``;
    return those students."""
    students = sorted(p.parent.name for p in klass.glob(f"*/{assignment}"))[:n]
    for student in students:
        shutil.copytree(klass / student / assignment, dest / student / assignment)
    return students


def _grading_env() -> dict:
    """This environment, with the venv's bin first on PATH (nbgrader, jupyter, dask)."""
    return dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])


def _by_key(rows: list[dict]) -> dict[tuple, dict]:
    return {(r["student_id"], r["assignment"]): r for r in rows}


@pytest.fixture(scope="module")
def klass(tmp_path_factory) -> Path:
    """30 submissions: ex01's reference, stub and 16 variants; ex02's reference, stub and
    10 variants (the students of ex02 also hand in ex01)."""
    subs = tmp_path_factory.mktemp("class") / "submitted"
    for assignment, count in ((EX01, 16), (EX02, 10)):
        write_submission(subs, "reference", assignment, filled_notebook(assignment))
        write_submission(subs, "stub", assignment,
                         nbformat.read(EXERCISES / assignment / f"{assignment}.ipynb",
                                       as_version=4))
        for name, path in list(variants(assignment).items())[:count]:
            cells, _ = parse_variant(path)
            write_submission(subs, name, assignment, filled_notebook(assignment, cells))
    assert len(list(subs.glob("*/*/*.ipynb"))) == 30
    return subs


@pytest.fixture(scope="module")
def local_run(klass, tmp_path_factory):
    ws = tmp_path_factory.mktemp("local") / "ws"
    proc, _, _ = grade(klass, ws, jobs=2)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    return proc, ws


@pytest.fixture(scope="module")
def cluster_run(klass, postgres, dask_cluster, tmp_path_factory):
    address, _ = dask_cluster
    ws = tmp_path_factory.mktemp("cluster") / "ws"
    url = postgres.createdb("course")
    assert "--scheduler tcp://sched:8786 --db-url postgresql://grader@" in PAGE
    proc, _, _ = grade(klass, ws, extra=["--scheduler", address, "--db-url", url])
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    return proc, ws


@slow
def test_the_cluster_gives_the_local_runs_rows_and_scores(local_run, cluster_run):
    (lproc, lws), (cproc, cws) = local_run, cluster_run
    local, remote = _rows(lws), _rows(cws)
    assert len(remote) == len({(r["student_id"], r["assignment"]) for r in remote}) == 30
    fields = ("score", "max_score", "status", "detail", "late_penalty", "sandbox",
              "submission_sha256")
    assert {k: tuple(r[f] for f in fields) for k, r in _by_key(remote).items()} == \
        {k: tuple(r[f] for f in fields) for k, r in _by_key(local).items()}
    assert _tests(cws) == _tests(lws)
    scores = {float(r["score"]) for r in remote}
    assert len(scores) >= 4, scores  # a mixed class: full marks, zero and partial scores
    assert _by_key(remote)[("reference", EX01)]["score"] == "14.0"
    assert _by_key(remote)[("stub", EX02)]["score"] == "0.0"
    # The progress bar and the summary say how many workers graded.
    assert "grading on 2 Dask worker(s)" in cproc.stderr
    assert "graded 30 submission(s) in" in cproc.stdout
    assert "on 2 Dask worker(s) (2 connected, 2 thread(s))" in cproc.stdout, cproc.stdout
    assert "grading with 2 worker(s)" in lproc.stderr and " with 2 worker(s); " in lproc.stdout
    # Each Dask worker kept its own grading processes and logs in the shared workspace.
    assert len(list((cws / "logs").glob("worker-dask-*.log"))) >= 2


@slow
def test_the_gradebook_is_in_postgres(klass, cluster_run, postgres):
    _, ws = cluster_run
    assert not (ws / "gradebook.db").exists()
    assert gradebook.db_url(ws) == f"postgresql+psycopg://grader@127.0.0.1:{postgres.port}/course"
    counts = postgres.query("course", "SELECT a.name, count(*) FROM submitted_assignment s "
                                      "JOIN assignment a ON s.assignment_id = a.id GROUP BY a.name")
    assert dict(counts) == {EX01: 18, EX02: 12}
    students = postgres.query("course", "SELECT count(*) FROM student")
    assert students == [(len(list(klass.iterdir())),)]  # each learner once (most submit both)
    assert students[0][0] < 30


@slow
def test_nbgrader_export_reads_postgres(cluster_run, tmp_path):
    _, ws = cluster_run
    out = tmp_path / "nbgrader-export.csv"
    proc = run([sys.executable, "-m", "nbgrader", "export", "--to", str(out)], cwd=ws)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with out.open(encoding="utf-8") as f:
        exported = {(r["student_id"], r["assignment"]): float(r["score"])
                    for r in csv.DictReader(f)}
    rows = {k: float(r["score"]) for k, r in _by_key(_rows(ws)).items()}
    assert {k: v for k, v in exported.items() if k in rows} == rows
    assert all(v == 0.0 for k, v in exported.items() if k not in rows)  # not submitted


@slow
def test_formgrader_data_comes_from_postgres(cluster_run):
    """What formgrader shows (nbgrader's ``NbGraderAPI``, its backend) on the workspace's
    config: the submissions, their scores and the per-notebook grades."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from autograder.nbgrader_settings import apply

    _, ws = cluster_run
    config = Config()
    apply(config, ws, release_directory=ws / "release", sandbox=False)
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    assert api.coursedir.db_url.startswith("postgresql+psycopg://")
    rows = _by_key(_rows(ws))
    seen = {}
    for assignment in (EX01, EX02):
        scores = [float(r["score"]) for (_, a), r in rows.items() if a == assignment]
        assert api.get_assignment(assignment)["average_score"] == \
            pytest.approx(sum(scores) / len(scores))
        for s in api.get_submissions(assignment):
            seen[(s["student"], assignment)] = s["score"]
        nb = api.get_notebook_submissions(assignment, assignment)
        assert {n["student"] for n in nb} == {s for s, a in rows if a == assignment}
    assert seen == {k: float(r["score"]) for k, r in rows.items()}


@slow
def test_a_restarted_coordinator_grades_nothing_again(klass, cluster_run, dask_cluster):
    address, _ = dask_cluster
    _, ws = cluster_run
    before = _rows(ws)
    proc, _, _ = grade(klass, ws, extra=["--scheduler", address])  # the URL is kept
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "graded 0 submission(s)" in proc.stdout, proc.stdout
    assert _rows(ws) == before


@slow
def test_a_killed_coordinator_resumes_where_it_stopped(klass, local_run, dask_cluster, tmp_path):
    """SIGKILL the ``grade`` command itself once two rows are recorded, then run it again:
    it grades only the rest, and the rows are the local run's (the SQLite gradebook: the
    cluster's workers share this machine's filesystem)."""
    address, _ = dask_cluster
    subs = tmp_path / "submitted"
    students = _first_submissions(klass, EX02, 6, subs)
    ws = tmp_path / "ws"
    cmd = [sys.executable, "-m", "autograder", "grade", str(subs), "--workspace", str(ws),
           "--scheduler", address, "--no-progress"]
    env = _grading_env()
    coordinator = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    side = ws / STATE_CSV
    while coordinator.poll() is None and time.monotonic() < deadline:
        if side.is_file() and len(side.read_text(encoding="utf-8").splitlines()) >= 3:
            coordinator.kill()  # header + two rows
            break
        time.sleep(0.2)
    coordinator.wait()
    assert coordinator.returncode == -signal.SIGKILL, "the class finished before the kill"
    done = len(side.read_text(encoding="utf-8").splitlines()) - 1
    assert 2 <= done < 6
    proc = run(cmd)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert f"graded {6 - done} submission(s)" in proc.stdout, proc.stdout
    rows = _rows(ws)
    assert sorted(r["student_id"] for r in rows) == students
    local = _by_key(_rows(local_run[1]))
    for r in rows:
        assert (r["score"], r["status"]) == (local[(r["student_id"], EX02)]["score"],
                                             local[(r["student_id"], EX02)]["status"]), r


@slow
def test_a_worker_killed_while_it_grades_has_its_submission_graded_once(
        klass, local_run, postgres, dask_cluster, tmp_path):
    """SIGKILL one Dask worker process (its nanny starts another) while it runs a grading
    task: its grading process dies with it, the scheduler sends the task to a worker again,
    and the class completes with every row once and the local run's scores."""
    import psutil

    address, client = dask_cluster
    subs = tmp_path / "submitted"
    students = _first_submissions(klass, EX01, 8, subs)
    ws = tmp_path / "ws"
    env = _grading_env()
    coordinator = subprocess.Popen(
        [sys.executable, "-m", "autograder", "grade", str(subs), "--workspace", str(ws),
         "--scheduler", address, "--db-url", postgres.createdb("killed"), "--no-progress"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim = key = None
    deadline = time.monotonic() + 600
    try:
        while victim is None and coordinator.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
            stacks = {w: s for w, s in client.call_stack().items() if s}
            if stacks:  # a worker is running a grading task: let its kernel start, then kill
                time.sleep(2)
                worker, running = next((w, s) for w, s in client.call_stack().items() if s)
                key = next(iter(running))
                pid = client.run(os.getpid, workers=[worker])[worker]
                victim = psutil.Process(pid)
                graders = [p for p in victim.children(recursive=True)
                           if "autograder.grading.worker" in " ".join(p.cmdline())]
                assert graders, "the worker runs its submission in a grading process"
                os.kill(pid, signal.SIGKILL)
        out, err = coordinator.communicate(timeout=900)
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
    assert victim is not None, "no grading task was seen running"
    assert not victim.is_running()
    time.sleep(1)
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in graders), \
        "the grading process outlived its Dask worker"
    assert coordinator.returncode == 0, out + err[-3000:]
    rows = _rows(ws)
    assert sorted((r["student_id"], r["assignment"]) for r in rows) == \
        sorted((s, EX01) for s in students)  # every row, each once
    local = _by_key(_rows(local_run[1]))
    for r in rows:
        mine = local[(r["student_id"], EX01)]
        assert (r["score"], r["status"], r["detail"]) == \
            (mine["score"], mine["status"], mine["detail"]), r
    assert key.startswith("autograde-") and any(key.startswith(f"autograde-{s}/") for s in students)
    assert postgres.query("killed", "SELECT count(*) FROM submitted_assignment") == [(8,)]
    client.wait_for_workers(2, timeout=120)  # the nanny replaced the worker
