"""Launch and download: a chapter notebook runs outside the course folder.

Every chapter starts with a set-up cell (tags remove-cell and course-setup: hidden on the
website) that installs the course's package when ``autograder`` cannot be imported, from the
repository that ``_config.yml`` names (``repository.url``) or from ``$COURSE_PACKAGE``. The
test runs a chapter's first cells in a fresh folder with a fresh virtual environment, offline,
against a wheel of the course built from this checkout.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from test_exercise_anywhere import build_wheel

CHAPTERS = sorted((REPO / "chapters").glob("*.md"))


def code_cells(chapter: Path) -> list:
    import jupytext

    nb = jupytext.read(chapter)
    return [c for c in nb.cells if c.cell_type == "code"]


def test_binder_and_one_repository_name():
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    assert config["repository"]["url"].startswith("https://github.com/")
    assert "jupyterhub_url" not in config["launch_buttons"], "no button to a placeholder hub"
    binder = (REPO / "binder" / "requirements.txt").read_text(encoding="utf-8")
    assert "-r ../requirements.txt" in binder and "download.pytorch.org/whl/cpu" in binder
    assert os.access(REPO / "binder" / "postBuild", os.X_OK)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_first_code_cell_is_a_hidden_setup_cell(chapter):
    repository = yaml.safe_load((REPO / "_config.yml").read_text())["repository"]["url"]
    first = code_cells(chapter)[0]
    tags = first.metadata.get("tags", [])
    assert "course-setup" in tags and "remove-cell" in tags, (chapter.name, tags)
    assert f'COURSE_REPOSITORY = "{repository}"' in first.source, chapter.name
    imports = "\n".join(c.source for c in code_cells(chapter)[1:])
    assert "autograder" in imports  # the set-up cell is needed: a later cell imports the package


@pytest.fixture(scope="module")
def course_wheel(tmp_path_factory) -> Path:
    """The course wheel, built from a copy of the checkout (a build in the checkout leaves
    build/ there: stale files for a later wheel, and a changed folder on sys.path)."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_downloaded_chapter_runs_its_first_cells_offline_in_a_fresh_venv(tmp_path, course_wheel):
    """A fresh folder and venv that can see the course's dependencies (a .pth line to this
    environment's site-packages, whose own .pth files, the editable course among them, are
    not processed) but not the course: the set-up cell installs the wheel with pip, offline;
    then the chapter's next cell, which imports ``autograder``, runs."""
    chapter = REPO / "chapters" / "03_why_sqrt_dk.md"
    cells = code_cells(chapter)
    folder = tmp_path / "downloads"
    folder.mkdir()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.check_output(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        text=True).strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    before = subprocess.run([str(python), "-c", "import autograder"], cwd=folder,
                            capture_output=True, text=True)
    assert before.returncode != 0, "the fresh venv must not see the course package yet"

    script = folder / "first_cells.py"
    source = "\n\n".join(c.source for c in cells[:2])
    source = re.sub(r"^\s*[%!].*$", "", source, flags=re.MULTILINE)  # no IPython magics
    script.write_text("import matplotlib\nmatplotlib.use('Agg')\n" + source, encoding="utf-8")
    env = {**os.environ, "COURSE_PACKAGE": str(course_wheel), "PIP_NO_INDEX": "1",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONNOUSERSITE": "1",
           "MPLBACKEND": "Agg", "PYTHONPATH": ""}  # pip comes through deps.pth too
    proc = subprocess.run([str(python), str(script)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    after = subprocess.run([str(python), "-c", "import autograder; print(autograder.__file__)"],
                           cwd=folder, capture_output=True, text=True)
    assert after.returncode == 0 and str(site) in after.stdout, after.stdout + after.stderr
