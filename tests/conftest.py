"""Shared fixtures: the repository, grading a class through the instructor's command."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import wipe

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))
# %check runs `check --warm`: no test's check leaves a process waiting for the next one
# unless the test asks for it (tests/test_check_warm.py)
os.environ.setdefault("AUTOGRADER_CHECK_IDLE", "0")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Make ``--dist loadgroup`` keep an ``xdist_group`` on one worker again.

    pytest-xdist 3.8 marks a test's group by renaming ``item._nodeid``, which pytest 9 no
    longer reads (``Node.nodeid`` is ``str(item._id)``); the groups were silently ignored and
    every class-level fixture (the book build, each test class's grading) ran once per
    worker. This appends the ``@group`` suffix xdist's scheduler splits on.

    Every test that uses the built book (the ``built_book`` fixture, directly or through
    another fixture) is put in the group ``book``, so one worker builds it; a test that
    builds a book of its own, or needs none, is free to run on the other worker.
    """
    if not getattr(config.option, "loadgroup", False):
        return
    from _pytest import nodes

    for item in items:
        names = {str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                 for m in item.iter_markers("xdist_group")}
        names = sorted(names | ({"book"} if "built_book" in item.fixturenames else set()))
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix) and hasattr(nodes, "coerce_node_id"):
            item._id = nodes.coerce_node_id(item.nodeid + suffix)


def run(cmd: list[str], cwd: Path = REPO, env: dict | None = None, timeout: int = 1800):
    """Run a command with this Python's bin/ on PATH; return the CompletedProcess."""
    full_env = dict(os.environ)
    full_env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full_env.get("PATH", "")
    full_env.update(env or {})
    return subprocess.run(cmd, cwd=cwd, env=full_env, capture_output=True, text=True,
                          encoding="utf-8", errors="replace", timeout=timeout)


def grade(submissions: Path, workspace: Path, jobs: int = 2, env: dict | None = None,
          extra: list[str] | None = None):
    """``python -m autograder grade`` as an instructor runs it; returns (proc, rows, tests)."""
    proc = run([sys.executable, "-m", "autograder", "grade", str(submissions), "--workspace",
                str(workspace), "--jobs", str(jobs), *(extra or [])], env=env)
    rows, tests = read_results(workspace)
    return proc, rows, tests


def read_results(workspace: Path) -> tuple[dict, dict]:
    """(grades.csv rows by student, tests.csv rows by student and test) of a workspace."""
    rows, tests = {}, {}
    if (workspace / "grades.csv").is_file():
        with (workspace / "grades.csv").open(encoding="utf-8") as f:
            rows = {r["student_id"]: r for r in csv.DictReader(f)}
    if (workspace / "tests.csv").is_file():
        with (workspace / "tests.csv").open(encoding="utf-8") as f:
            for r in csv.DictReader(f):
                tests.setdefault(r["student_id"], {})[r["test"]] = r
    return rows, tests


@pytest.fixture
def deep_tree():
    """``make(top, depth)``: folders ``top/d/d/...`` nested ``depth`` deep (deeper than
    Python's recursion limit, 1000, is what a learner's code can make). Whatever is left of
    them at the test's end is wiped: pytest removes old temporary folders with rmtree,
    which such a tree stops with RecursionError at the end of a later run."""
    made = []

    def make(top: Path, depth: int) -> None:
        made.append(Path(top) / "d")
        fd = os.open(top, os.O_RDONLY)
        for _ in range(depth):  # relative to the last folder: no path grows past a name
            os.mkdir("d", dir_fd=fd)
            below = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = below
        os.close(fd)

    yield make
    for top in made:
        wipe.remove(top)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def built_book() -> Path:
    """Build the whole book once per session (as `make book` does); return _build/html.

    Tests using it belong to the xdist group "book", so one worker builds it.
    """
    cmd = ["jupyter-book", "build", ".", "--builder", "html", "-W", "-n", "--keep-going"]
    proc = run(cmd, cwd=REPO, timeout=3000)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return REPO / "_build" / "html"
