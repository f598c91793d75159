"""A wrong derivation breaks the build: change one numeric claim of a chapter, and the
cells that check it fail, so ``jupyter-book build -W`` exits non-zero. And the built
chapters 1, 3 and 4 show their theorems, proofs, figures and computed results.

Each mutation edits the line of code that states a derivation's result (the predicted
variance of chapter 3, the rotation matrix of chapter 4's proof) in a copy of the chapter,
builds a mini book holding only that chapter and its exercise page, and expects a failing
build caused by an ``AssertionError``. The control builds the unmutated chapters.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import REPO, run

pytestmark = [pytest.mark.book, pytest.mark.xdist_group("book")]

JB = ["jupyter-book", "build", ".", "--builder", "html", "-W", "-n", "--keep-going"]

# chapter -> (exercise page it links to, the claim's code, the same claim made wrong)
CHAPTERS = {
    "03_why_sqrt_dk": (
        "ex03_scaling",
        'equation (eq-var-result)."""\n    return d_k\n',
        'equation (eq-var-result)."""\n    return d_k + 1\n',  # Var(q.k) = d_k + 1
    ),
    "04_positional_encoding": (
        "ex04_positional_encoding",
        "return np.array([[np.cos(theta), np.sin(theta)], [-np.sin(theta), np.cos(theta)]])",
        "return np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])",
    ),
}


def _chapter(name: str) -> str:
    return (REPO / "chapters" / f"{name}.md").read_text(encoding="utf-8")


def mini_book(tmp_path: Path, chapters: dict[str, str], package: bool = False) -> Path:
    """The book's configuration with the given chapters (name -> text) and the exercise
    pages they link to. ``package``: also copy the course's package and requirements.txt,
    so that a build run with PYTHONPATH=tmp_path imports (and tracks) the copy."""
    for name in ("_config.yml", "references.bib", "requirements.txt"):
        shutil.copy(REPO / name, tmp_path / name)
    if (REPO / "_ext").is_dir():  # the site's local Sphinx extensions, named in _config.yml
        shutil.copytree(REPO / "_ext", tmp_path / "_ext",
                        ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "intro.md").write_text(
        "# Intro\n\nA test book.\n\n```{bibliography}\n```\n", encoding="utf-8")
    # The chapters show reference code with {literalinclude} ../autograder/reference/...
    src = REPO / "autograder" if package else REPO / "autograder" / "reference"
    shutil.copytree(src, tmp_path / src.relative_to(REPO),
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "chapters").mkdir()
    toc = ["format: jb-book", "root: intro", "chapters:"]
    exercises = []
    for name, text in chapters.items():
        (tmp_path / "chapters" / f"{name}.md").write_text(text, encoding="utf-8")
        toc.append(f"  - file: chapters/{name}")
        exercises += [e for e in re.findall(r"exercises/(ex\w+)/", text) if e not in exercises]
    for exercise in exercises:
        shutil.copytree(REPO / "exercises" / exercise, tmp_path / "exercises" / exercise)
        toc.append(f"  - file: exercises/{exercise}/{exercise}")
    (tmp_path / "_toc.yml").write_text("\n".join(toc) + "\n", encoding="utf-8")
    return tmp_path


_mini_book = mini_book


@pytest.mark.parametrize("name", sorted(CHAPTERS))
def test_the_claim_is_where_the_mutation_expects_it(name):
    _, claim, wrong = CHAPTERS[name]
    text = _chapter(name)
    assert text.count(claim) == 1, f"the claim's code changed in chapters/{name}.md"
    assert wrong not in text


def test_unmutated_chapters_build(tmp_path):
    """Control for the mutations below: the same mini book, unchanged, builds cleanly."""
    book = _mini_book(tmp_path, {name: _chapter(name) for name in CHAPTERS})
    proc = run(JB, cwd=book, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]


@pytest.mark.parametrize("name", sorted(CHAPTERS))
def test_a_wrong_claim_breaks_the_build(name, tmp_path):
    _, claim, wrong = CHAPTERS[name]
    book = _mini_book(tmp_path, {name: _chapter(name).replace(claim, wrong)})
    proc = run(JB, cwd=book, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "AssertionError" in out, out[-3000:]


# page -> (its exercise, theorems, a computed output, alt texts of its figures)
MATH_CHAPTERS = {
    "01_from_recurrence_to_attention": (
        "ex01_python_attention", 1, "self-attention: 1 and 1 (T = 1..40)",
        ["Semi-logarithmic plot", "Two computation graphs"]),
    "03_why_sqrt_dk": (
        "ex03_scaling", 2, "Var(q.k) = d_k exactly for d_k = 1, 2, 3, 4",
        ["Two panels against d_k", "Three panels"]),
    "04_positional_encoding": (
        "ex04_positional_encoding", 2, "identities checked",
        ["Heat map of the positional encoding", "Plot of the dot product"]),
}


@pytest.mark.parametrize("page", sorted(MATH_CHAPTERS))
def test_math_chapter_is_rendered(page, built_book):
    exercise, theorems, output, alts = MATH_CHAPTERS[page]
    html = (built_book / "chapters" / f"{page}.html").read_text(encoding="utf-8")
    assert html.count('class="proof theorem admonition"') == theorems   # sphinx-proof blocks
    assert html.count('class="proof admonition"') == theorems
    assert 'class="eqno">(' in html                                    # numbered equations
    assert output in html                                               # the cells ran
    for alt in alts:
        assert f'alt="{alt}' in html
    assert html.count('class="exercise admonition"') == 3                # knowledge checks,
    assert html.count('class="solution dropdown admonition"') == 3       # answers hidden
    assert f'href="../exercises/{exercise}/{exercise}.html"' in html     # the exercise
