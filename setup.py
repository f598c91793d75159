"""Build step of the course package: ``pyproject.toml`` holds the metadata; this file only
bundles the course's notebooks into the wheel.

A learner who installs the wheel (or ``pip install git+<course repository>``) works on a
downloaded exercise far from this repository: ``python -m autograder check`` must still
know each exercise's released notebook (to tell which exercise a notebook is and put its
read-only cells back) and its test cells *with* their hidden parts (to give every test a
verdict, as in the repository). So the build writes, for each exercise whose source
``solutions/<id>/<id>.ipynb`` and release ``exercises/<id>/<id>.ipynb`` are both present:

- ``autograder/course/release/<id>/<id>.ipynb``: the released notebook, as it is;
- ``autograder/course/source/<id>/<id>.ipynb``: the released notebook with each test cell's
  source taken from the source notebook (hidden parts included). It holds no solution:
  solution cells keep the release's stubs.

``autograder.config`` reads these where the repository's folders are not there. A course
folder without ``solutions/`` (a class's private release) bundles nothing, so its wheel's
``check`` shows the hidden parts as pending. Standard library only: ``pip install git+...``
builds in an isolated environment that has nothing but setuptools.
"""

from __future__ import annotations

import json
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _is_test_cell(cell: dict) -> bool:
    """nbgrader's "autograder tests" cell (as ``autograder.verdicts.is_test_cell``)."""
    meta = cell.get("metadata", {}).get("nbgrader", {}) or {}
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def _grade_id(cell: dict) -> str | None:
    return (cell.get("metadata", {}).get("nbgrader", {}) or {}).get("grade_id")


def _source(cell: dict) -> str:
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def bundle_course(root: Path, out: Path) -> list[str]:
    """Write ``out/release`` and ``out/source`` (see the module docstring) from the course
    folder ``root``; returns the exercise ids bundled, in order."""
    bundled = []
    solutions = root / "solutions"
    for src_path in sorted(solutions.glob("ex[0-9][0-9]_*/*.ipynb")):
        ex = src_path.parent.name
        rel_path = root / "exercises" / ex / f"{ex}.ipynb"
        if src_path.stem != ex or not rel_path.is_file():
            continue
        released_text = rel_path.read_text(encoding="utf-8")
        released = json.loads(released_text)
        whole = {_grade_id(c): _source(c)
                 for c in json.loads(src_path.read_text(encoding="utf-8"))["cells"]
                 if _is_test_cell(c)}
        for cell in released["cells"]:
            if _is_test_cell(cell) and _grade_id(cell) in whole:
                cell["source"] = whole[_grade_id(cell)]
        for kind, text in (("release", released_text),
                           ("source", json.dumps(released, indent=1, ensure_ascii=False) + "\n")):
            target = out / kind / ex / f"{ex}.ipynb"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        bundled.append(ex)
    return bundled


class BuildWithCourse(build_py):
    """setuptools' build_py, then the course's notebooks into the built package."""

    def run(self):
        super().run()
        # An editable install reads the repository's own folders.
        if not getattr(self, "editable_mode", False):
            bundle_course(HERE, Path(self.build_lib) / "autograder" / "course")


if __name__ == "__main__":  # how pip's build backend runs it; a test imports bundle_course
    setup(cmdclass={"build_py": BuildWithCourse})
