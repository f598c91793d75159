"""Give every exercise's set-up cell the lines that install the course package where it is
missing, idempotently.

Opened outside the course folder (downloaded from the website, in Colab, on Binder without
the course), an exercise notebook has no ``autograder``, which its set-up cell loads
(``%load_ext autograder.in_notebook``) and its tests import. :data:`BLOCK`, put first in
the set-up cell (nbgrader id ``setup``), installs it into the kernel's environment when it
cannot be imported: from a course wheel beside the notebook (``attention_course-*.whl``,
offline: ``--no-index``, dependencies from wheels in the same folder or already installed),
else from the repository that ``_config.yml`` names (``repository.url``). It runs only in
an IPython kernel (``get_ipython``), never in the course's plain-Python runners (the
checker's set-up namespace, the standard-library probe, the website's in-page check),
and where ``autograder`` imports it does nothing: no pip, no output. The cell gets the tag
``hide-input``: the website folds its source away, as chapters hide their set-up.

Run over ``solutions/*/*.ipynb`` (then ``python -m autograder release`` regenerates
``exercises/``)::

    python tools/add_install_block.py [NOTEBOOK ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
TAG = "hide-input"
BLOCK = '''\
# Outside the course folder (a downloaded notebook, Colab, Binder) this installs the course's
# package, `autograder`: from a course wheel beside this notebook (offline), else from the
# course's repository. Where `autograder` imports already, it does nothing.
import importlib.util

COURSE_REPOSITORY = "https://github.com/attention-course/attention-course"  # = _config.yml
if importlib.util.find_spec("autograder") is None and "get_ipython" in globals():
    import glob, subprocess, sys
    wheels = sorted(glob.glob("attention_course-*.whl"))
    source = wheels[-1] if wheels else f"git+{COURSE_REPOSITORY}"
    offline = ["--no-index", "--find-links", "."] if wheels else []
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                          "--disable-pip-version-check", *offline, source],
                         capture_output=True, text=True)
    if pip.returncode != 0:
        class CourseSetupError(Exception):
            def _render_traceback_(self):  # IPython shows this line, not a traceback
                return [str(self)]
        raise CourseSetupError(
            f"Could not install the course package from {source}: connect to the internet, "
            "or put the course wheel (attention_course-*.whl) and the wheels of what it needs "
            "beside this notebook, and run this cell again.")
    importlib.invalidate_caches()
    print(f"Installed the course package (autograder) from {source}.")
'''
LAST = '    print(f"Installed the course package'  # the block's last line begins so


def setup_cell(nb):
    """The set-up cell of ``nb``: nbgrader id ``setup``."""
    return next(c for c in nb.cells if c.cell_type == "code"
                and c.metadata.get("nbgrader", {}).get("grade_id") == "setup")


def add(nb) -> bool:
    """Put :data:`BLOCK` first in ``nb``'s set-up cell and tag the cell :data:`TAG` where
    either is missing; True if changed."""
    cell = setup_cell(nb)
    changed = False
    if not cell.source.startswith(BLOCK):
        rest = cell.source
        if rest.startswith(BLOCK.split("\n", 1)[0]):  # an older block: replace it
            rest = rest.split(LAST, 1)[1].split("\n", 1)[1] if LAST in rest else ""
        cell.source = BLOCK + "\n" + rest.lstrip("\n")
        changed = True
    tags = cell.metadata.setdefault("tags", [])
    if TAG not in tags:
        tags.append(TAG)
        changed = True
    return changed


def main(paths: list[str]) -> int:
    """Update each notebook of ``paths`` (default: every exercise in ``solutions/``)."""
    for path in [Path(p) for p in paths] or sorted(REPO.glob("solutions/*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if add(nb):
            nbformat.write(nb, path)
            print(f"updated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
