"""Release: generating learner notebooks from ``solutions/`` with ``nbgrader
generate_assignment``, recording them in a workspace's gradebook, and writing the
workspace's ``nbgrader_config.py`` (this module is its only writer)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from autograder.config import SOLUTIONS
from autograder.grading import speedups
from autograder.grading.environment import child_env
from autograder.grading.submission import sha256
from autograder.nbgrader_settings import apply

CONFIG = "nbgrader_config.py"


def write_config(workspace: Path, *, release_directory: Path, cell_timeout: int = 60,
                 late_penalty: str = "none") -> None:
    """Write ``workspace/nbgrader_config.py``, read by nbgrader's own commands run there
    (autograde, generate_feedback, export, formgrader): the same settings as ``grade``'s."""
    text = (
        "# Written by python -m autograder; nbgrader's own commands run in this folder\n"
        "# (nbgrader autograde, generate_feedback, export, formgrader) read it.\n"
        "from autograder.nbgrader_settings import apply\n\n"
        f"apply(get_config(), {str(workspace)!r}, release_directory={str(release_directory)!r},"
        f" cell_timeout={cell_timeout}, late_penalty={late_penalty!r})\n"
    )
    path = Path(workspace) / CONFIG
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def nbgrader(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run ``nbgrader ARGS`` in ``cwd`` (which holds the nbgrader_config.py to use)."""
    return subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=child_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          encoding="utf-8", errors="replace")


def source_notebook(assignment: str) -> Path:
    """The nbgrader source of an assignment: ``solutions/<id>/<id>.ipynb``."""
    return SOLUTIONS / assignment / f"{assignment}.ipynb"


def release(assignment: str, to: Path, workspace: Path | None = None, *,
            cell_timeout: int = 60, late_penalty: str = "none") -> Path:
    """Generate the learner notebook of ``assignment`` from solutions/ into ``to``.

    Runs ``nbgrader generate_assignment`` with the course's config; the gradebook it
    records the assignment in is ``workspace/gradebook.db`` (a temporary folder by default).
    A workspace's config keeps ``cell_timeout`` and ``late_penalty``.
    """
    if not (SOLUTIONS / assignment).is_dir():
        raise ValueError(f"no source for assignment {assignment!r} in {SOLUTIONS}")
    to = Path(to).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(workspace) if workspace else Path(tmp)
        ws.mkdir(parents=True, exist_ok=True)
        write_config(ws, release_directory=to, cell_timeout=cell_timeout,
                     late_penalty=late_penalty)
        done = _generate_assignment(assignment, ws, release_directory=to,
                                    cell_timeout=cell_timeout, late_penalty=late_penalty)
        if not done.get("success"):
            raise RuntimeError(f"nbgrader generate_assignment {assignment} failed:\n"
                               f"{done.get('log') or ''}{done.get('error') or ''}")
    return to / assignment / f"{assignment}.ipynb"


def _generate_assignment(assignment: str, workspace: Path, **settings) -> dict:
    """``nbgrader generate_assignment ASSIGNMENT --force`` in this process, with the
    config ``nbgrader_config.py`` in ``workspace`` holds (:func:`write_config`; ``settings``
    are its arguments): nbgrader's API, without a second Python and its imports."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    speedups.apply()
    config = Config()
    apply(config, workspace, **settings)
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    return api.generate_assignment(assignment, force=True)


def ensure_released(workspace: Path, assignment: str, *, cell_timeout: int,
                    late_penalty: str) -> None:
    """Record the assignment in the workspace gradebook unless its source is unchanged."""
    stamp = workspace / "release" / f".{assignment}.sha256"
    digest = sha256(source_notebook(assignment))
    if stamp.is_file() and stamp.read_text() == digest:
        return
    release(assignment, workspace / "release", workspace=workspace, cell_timeout=cell_timeout,
            late_penalty=late_penalty)
    stamp.write_text(digest)
