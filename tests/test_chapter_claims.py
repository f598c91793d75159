"""A wrong derivation breaks the build: change one claim of a chapter, and the cells that
check it fail, so ``jupyter-book build -W`` exits non-zero. And the built chapters 1, 3 and
4 show their theorems, proofs, figures and computed results.

Each mutation edits the line of code that states one claim of each chapter (1 to 7) in a
copy of the chapter. One mini book holds all seven mutated chapters and their exercise
pages, and every chapter must fail with an ``AssertionError``; chapters 3 and 4 are also
built alone under the book's own configuration. The control is the whole book, unchanged.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import REPO, run

pytestmark = [pytest.mark.book, pytest.mark.xdist_group("book")]

JB = ["jupyter-book", "build", ".", "--builder", "html", "-W", "-n", "--keep-going"]

# chapter -> (the claim's code, the same claim made wrong). One derivation or measured
# statement per chapter; each wrong version is a mistake a reader could plausibly make.
CHAPTERS = {
    "01_from_recurrence_to_attention": (  # dc/dh_1 without the direct term alpha_1 I
        "analytic = alpha[0] * np.eye(d_h) + alpha[0] * np.outer(H[0] - c, q)",
        "analytic = alpha[0] * np.outer(H[0] - c, q)",
    ),
    "02_scaled_dot_product_attention": (  # the closed form of the worked example, without 2
        "closed_form = 20 + 10 * 2 * math.sinh(a) / (1 + 2 * math.cosh(a))",
        "closed_form = 20 + 10 * math.sinh(a) / (1 + 2 * math.cosh(a))",
    ),
    "03_why_sqrt_dk": (  # Var(q.k) = d_k + 1
        'equation (eq-var-result)."""\n    return d_k\n',
        'equation (eq-var-result)."""\n    return d_k + 1\n',
    ),
    "04_positional_encoding": (  # the rotation of the wrong sense
        "return np.array([[np.cos(theta), np.sin(theta)], [-np.sin(theta), np.cos(theta)]])",
        "return np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])",
    ),
    "05_masks_and_multihead": (  # h heads cost what one head of width d_k costs
        "4 * 128 * 512**2 + 2 * 128**2 * 512 ",
        "4 * 128 * 512**2 + 2 * 128**2 * 64 ",
    ),
    "06_attention_at_scale": (  # the online softmax without its rescaling
        "rescale = np.exp(m - m_new)          # e^{m_{k-1} - m_k}",
        "rescale = 1.0                        # e^{m_{k-1} - m_k}",
    ),
    "07_transformer_block": (  # "the vocabulary alone explains the gap to 65 million"
        "40_000 < vocab_for_65M < 41_500",
        "36_000 < vocab_for_65M < 38_000",
    ),
}
# Mutations that also run, one build each, under the book's own configuration.
SEPARATE_BUILDS = ("03_why_sqrt_dk", "04_positional_encoding")


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
    claim, wrong = CHAPTERS[name]
    text = _chapter(name)
    assert text.count(claim) == 1, f"the claim's code changed in chapters/{name}.md"
    assert wrong not in text


def test_unmutated_chapters_build(built_book):
    """Control for the mutations below: the book, unchanged, builds with every cell passing."""
    for name in CHAPTERS:
        assert (built_book / "chapters" / f"{name}.html").is_file()
    assert not (built_book / "reports").exists()  # myst-nb writes failed cells' tracebacks here


def test_a_wrong_claim_in_any_chapter_breaks_the_build(tmp_path):
    """All seven chapters, each with one claim made wrong, in one mini book whose failed
    notebooks are reported instead of aborting the build (raise_on_error: false), so one
    build shows that every chapter's own check catches its mutation."""
    book = _mini_book(tmp_path, {name: _chapter(name).replace(claim, wrong)
                                 for name, (claim, wrong) in CHAPTERS.items()})
    config = (book / "_config.yml").read_text(encoding="utf-8")
    assert config.count("raise_on_error: true") == 1
    (book / "_config.yml").write_text(config.replace("raise_on_error: true",
                                                     "raise_on_error: false"), encoding="utf-8")
    proc = run(JB, cwd=book, timeout=1800)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    for name in CHAPTERS:
        report = book / "_build" / "html" / "reports" / "chapters" / f"{name}.err.log"
        assert report.is_file(), f"{name}: the wrong claim did not fail\n" + out[-3000:]
        assert "AssertionError" in report.read_text(encoding="utf-8"), name


@pytest.mark.parametrize("name", SEPARATE_BUILDS)
def test_a_wrong_claim_breaks_the_build(name, tmp_path):
    claim, wrong = CHAPTERS[name]
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
