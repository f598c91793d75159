"""CONTRIBUTING.md's checklists, kept honest: every chapter and every exercise in the
registry (the ``exNN_*`` folders of ``solutions/``) has done every step of "Add a chapter"
and "Add an exercise"; a missing step fails with a message naming it."""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

import pytest

import autograder
from autograder.exercises import ID_PATTERN, exercise_ids

REPO = Path(__file__).resolve().parent.parent


def missing_steps(exercise: str, root: Path = REPO) -> list[str]:
    """The checklist steps (CONTRIBUTING.md, "Add an exercise") not done for ``exercise``."""
    nn = exercise[:4]  # "ex05"
    missing = []

    def need(ok: bool, step: str) -> None:
        if not ok:
            missing.append(step)

    source = root / "solutions" / exercise / f"{exercise}.ipynb"
    need(source.is_file(), f"1. source notebook solutions/{exercise}/{exercise}.ipynb")
    checks = root / "autograder" / "checks" / f"{nn}.py"
    checks_pkg = root / "autograder" / "checks" / nn / "__init__.py"
    checks_file = checks if checks.is_file() else checks_pkg
    need(checks_file.is_file(), f"2. checks module autograder/checks/{nn}.py")
    if source.is_file():
        text = source.read_text(encoding="utf-8")
        need(f"from autograder.checks import {nn}" in text or f"autograder.checks.{nn}" in text,
             f"2. hidden tests of solutions/{exercise} call autograder.checks.{nn}")
    if checks_file.is_file():
        imported = set()
        for node in ast.walk(ast.parse(checks_file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
                imported |= {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
        need(any(m.startswith(("autograder.reference", "autograder.checks.ex"))
                 for m in imported),
             f"3. reference implementation in autograder/reference/, used by checks/{nn}.py")
    released = root / "exercises" / exercise / f"{exercise}.ipynb"
    need(released.is_file(), f"4. released notebook exercises/{exercise}/{exercise}.ipynb "
                             "(make assignments)")
    impls = root / "tests" / "implementations" / exercise
    need(impls.is_dir() and any(impls.glob("*.py")),
         f"5. wrong and right implementations in tests/implementations/{exercise}/")
    toc = (root / "_toc.yml").read_text(encoding="utf-8")
    need(f"file: exercises/{exercise}/{exercise}" in toc,
         f"6. _toc.yml entry exercises/{exercise}/{exercise}")
    contract = (root / "contract.md").read_text(encoding="utf-8")
    need(re.search(rf"^\| `{exercise}` \|", contract, flags=re.M) is not None,
         f"7. a row for `{exercise}` in contract.md's table of exercises")
    return missing


@pytest.mark.parametrize("exercise", autograder.ASSIGNMENTS)
def test_exercise_has_every_step(exercise):
    missing = missing_steps(exercise)
    assert not missing, f"{exercise} misses CONTRIBUTING.md steps: {missing}"


def test_every_exercise_folder_is_in_the_registry():
    """A folder named like an exercise but without its notebook is not silently skipped."""
    folders = sorted(p.name for p in (REPO / "solutions").iterdir()
                     if p.is_dir() and not p.name.startswith((".", "_")))
    assert [f for f in folders if not ID_PATTERN.fullmatch(f)] == [], \
        "folders of solutions/ are named exNN_name"
    assert list(autograder.ASSIGNMENTS) == folders, (
        f"no solutions/<id>/<id>.ipynb in {sorted(set(folders) - set(autograder.ASSIGNMENTS))}")


def test_a_new_exercise_missing_steps_is_named(tmp_path):
    """A new exercise folder with only its source notebook fails on every other step."""
    for name in ("_toc.yml", "contract.md"):
        shutil.copy(REPO / name, tmp_path / name)
    new = "ex99_new_thing"
    (tmp_path / "solutions" / new).mkdir(parents=True)
    (tmp_path / "solutions" / new / f"{new}.ipynb").write_text(json.dumps({"cells": []}))
    assert exercise_ids(tmp_path / "solutions") == (new,)
    missing = missing_steps(new, tmp_path)
    assert [m.split(" ")[0] for m in missing] == ["2.", "2.", "4.", "5.", "6.", "7."], missing
    assert "autograder/checks/ex99.py" in missing[0]
    # Doing the steps one by one removes them from the list.
    (tmp_path / "autograder" / "checks").mkdir(parents=True)
    (tmp_path / "autograder" / "checks" / "ex99.py").write_text("import math\n")
    assert "3. reference" in missing_steps(new, tmp_path)[1]
    (tmp_path / "autograder" / "checks" / "ex99.py").write_text(
        "from autograder.reference import python_attention as ref\n")
    (tmp_path / "solutions" / new / f"{new}.ipynb").write_text(
        json.dumps({"cells": [{"source": "from autograder.checks import ex99"}]}))
    (tmp_path / "exercises" / new).mkdir(parents=True)
    (tmp_path / "exercises" / new / f"{new}.ipynb").write_text("{}")
    (tmp_path / "tests" / "implementations" / new).mkdir(parents=True)
    (tmp_path / "tests" / "implementations" / new / "wrong.py").write_text('"""fails: x"""')
    toc = tmp_path / "_toc.yml"
    toc.write_text(toc.read_text() + f"      - file: exercises/{new}/{new}\n")
    contract = tmp_path / "contract.md"
    contract.write_text(contract.read_text() + f"\n| `{new}` | `f()` |\n")
    assert missing_steps(new, tmp_path) == []


def missing_chapter_steps(chapter: Path, root: Path = REPO) -> list[str]:
    """The "Add a chapter" steps not done for ``chapters/NN_name.md``."""
    text = chapter.read_text(encoding="utf-8")
    missing = []
    if not re.fullmatch(r"\d\d_[a-z0-9_]+", chapter.stem):
        missing.append("1. file named chapters/NN_name.md")
    if "format_name: myst" not in text.split("---")[1 if text.startswith("---") else 0]:
        missing.append("1. jupytext header with format_name: myst")
    toc = (root / "_toc.yml").read_text(encoding="utf-8")
    if f"file: chapters/{chapter.stem}" not in toc:
        missing.append(f"2. _toc.yml entry chapters/{chapter.stem}")
    cells = re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```", text, flags=re.M | re.S)
    if not any("assert" in c for c in cells):
        missing.append("3. a code cell that checks a claim with assert")
    return missing


@pytest.mark.parametrize("chapter", sorted((REPO / "chapters").glob("*.md")), ids=lambda p: p.stem)
def test_chapter_has_every_step(chapter):
    missing = missing_chapter_steps(chapter)
    assert not missing, f"chapters/{chapter.name} misses CONTRIBUTING.md steps: {missing}"


def test_a_new_chapter_missing_steps_is_named(tmp_path):
    shutil.copy(REPO / "_toc.yml", tmp_path / "_toc.yml")
    new = tmp_path / "chapters" / "09_new.md"
    new.parent.mkdir()
    new.write_text("# New\n\n```{code-cell} ipython3\nx = 1\n```\n")
    missing = missing_chapter_steps(new, tmp_path)
    assert [m[:2] for m in missing] == ["1.", "2.", "3."], missing
