"""The website builds with warnings as errors, and a broken cell or reference fails it."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from conftest import REPO, run
from test_chapter_claims import link_runtime

pytestmark = pytest.mark.book  # the built_book users share one worker (conftest)

JB = ["jupyter-book", "build", ".", "--builder", "html", "-W", "-n", "--keep-going"]


def _mini_book(tmp_path: Path, chapter_text: str) -> Path:
    """A copy of the book's configuration with one chapter, for failure tests."""
    for name in ("_config.yml", "references.bib", "intro.md"):
        shutil.copy(REPO / name, tmp_path / name)
    shutil.copytree(REPO / "_ext", tmp_path / "_ext")
    link_runtime(tmp_path)
    (tmp_path / "intro.md").write_text("# Intro\n\nA test book.\n", encoding="utf-8")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nchapters:\n  - file: chapters/broken\n", encoding="utf-8")
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "broken.md").write_text(chapter_text, encoding="utf-8")
    return tmp_path


def _chapter_with_cell(source: str) -> str:
    text = (REPO / "chapters" / "02_scaled_dot_product_attention.md").read_text(encoding="utf-8")
    header = text.split("---", 2)
    return f"---{header[1]}---\n\n# A chapter\n\n```{{code-cell}} ipython3\n{source}\n```\n"


def test_book_builds(built_book):
    assert (built_book / "index.html").is_file()
    assert (built_book / "chapters" / "02_scaled_dot_product_attention.html").is_file()


def test_chapter_output_is_computed(built_book):
    html = (built_book / "chapters" / "02_scaled_dot_product_attention.html").read_text()
    assert "[[20.0, 2.0], [21.9706, 2.1971], [23.2016, 2.3202]]" in html
    assert "OverflowError" in html  # the intended error, tagged raises-exception
    assert 'alt="Heat map' in html


def test_exercise_page_is_the_learner_version(built_book):
    html = (built_book / "exercises" / "ex01_python_attention" /
            "ex01_python_attention.html").read_text(encoding="utf-8")
    assert "NotImplementedError" in html
    assert "BEGIN SOLUTION" not in html and "BEGIN HIDDEN TESTS" not in html
    assert "math.fsum(exps)" not in html  # a line of the reference solution


def test_exercise_setup_cells_are_folded_away(built_book):
    """The set-up cell (its lines install the course outside the course folder) is tagged
    hide-input: its source sits in a closed toggle, as chapters hide their set-up; the
    page's other cells are shown as they are."""
    from bs4 import BeautifulSoup

    for page in sorted((built_book / "exercises").rglob("*.html")):
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        cells = soup.select("div.cell")
        first = cells[0]
        assert "tag_hide-input" in first["class"], page.name
        folded = first.select_one("details.hide")
        assert folded is not None and not folded.has_attr("open"), page.name
        assert "COURSE_REPOSITORY" in folded.get_text(), page.name
        assert not any("tag_hide-input" in c["class"] for c in cells[1:]), page.name


def test_masks_chapter_output_is_computed(built_book):
    html = (built_book / "chapters" / "05_masks_and_multihead.html").read_text(encoding="utf-8")
    assert "comparisons with PyTorch" in html and "agree" in html  # the executed sweep
    assert "loss with NaN rows: nan" in html
    assert 'alt="Four 5 by 5 grids of boolean masks' in html
    assert "ex05_torch_attention.html" in html and "ex02_numpy_attention.html" in html


def test_transformer_chapter_output_is_computed(built_book):
    html = (built_book / "chapters" / "07_transformer_block.html").read_text(encoding="utf-8")
    assert "one encoder block: 3,152,384" in html  # the executed parameter count
    assert "held-out sequences, reversed exactly: 9" in html or \
        "held-out sequences, reversed exactly: 100" in html  # the trained model's accuracy
    assert 'alt="Two 8 by 8 heat maps of cross-attention' in html
    assert "ex07_transformer.html" in html


def test_solutions_are_not_published(built_book):
    assert not (built_book / "solutions").exists()
    for page in built_book.rglob("*.html"):
        assert "BEGIN HIDDEN TESTS" not in page.read_text(encoding="utf-8"), page


def test_broken_cell_fails_the_build(tmp_path):
    book = _mini_book(tmp_path, _chapter_with_cell("x = 1\nassert x == 2, 'a wrong claim'"))
    proc = run(JB, cwd=book, timeout=600)
    assert proc.returncode != 0
    assert "a wrong claim" in proc.stdout + proc.stderr


def test_a_good_cell_builds(tmp_path):
    """Control for the test above: the same mini book with a correct cell builds."""
    book = _mini_book(tmp_path, _chapter_with_cell("x = 1\nassert x == 1, 'a wrong claim'"))
    proc = run(JB, cwd=book, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


def test_broken_reference_fails_the_build(tmp_path):
    book = _mini_book(tmp_path, _chapter_with_cell("x = 1") + "\nSee {eq}`eq-does-not-exist`.\n")
    proc = run(JB, cwd=book, timeout=600)
    assert proc.returncode != 0
    assert "eq-does-not-exist" in proc.stdout + proc.stderr


DISPLAY_AFTER_TEXT = "# A chapter\n\nThe weights are{gap}\n$$\nw = \\operatorname{{softmax}}(x)\n$$\n"


def test_raw_tex_fails_the_build(tmp_path):
    """`$$` on the line right after text is not a display equation: the page shows two raw
    `$` around inline mathematics, and the build fails naming the page."""
    book = _mini_book(tmp_path, DISPLAY_AFTER_TEXT.format(gap=""))
    proc = run(JB, cwd=book, env={"NO_COLOR": "1"}, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert re.search(r"chapters/broken\.html shows raw TeX \['\$\$'\]", out), out[-3000:]


def test_display_maths_after_a_blank_line_builds(tmp_path):
    """Control for the test above: with a blank line before `$$` the same book builds."""
    book = _mini_book(tmp_path, DISPLAY_AFTER_TEXT.format(gap="\n"))
    proc = run(JB, cwd=book, env={"NO_COLOR": "1"}, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "raw TeX" not in proc.stdout + proc.stderr


# --- the execution cache follows what a chapter imports and includes (shared/cases/004) ---

SOFTMAX = "    return [e / total for e in exps]\n"
HALF_SOFTMAX = "    return [e / (2 * total) for e in exps]\n"  # weights sum to 1/2


def _executed(out: str) -> int:
    return out.count("Executing notebook using")


def _build(book: Path, env: dict) -> tuple[int, str]:
    proc = run(JB, cwd=book, env={**env, "NO_COLOR": "1"}, timeout=900)
    return proc.returncode, re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)


# A chapter that imports no course module, under chapter 3's name: chapter 3's front matter
# (jupytext's and the kernel's), a title and one cell. Chapter 3 itself took 15 of this
# test's seconds to run, for nothing the test looks at.
_FRONT = (REPO / "chapters" / "03_why_sqrt_dk.md").read_text(encoding="utf-8")
OTHER_CHAPTER = (_FRONT[:_FRONT.index("\n---\n") + 5] + "\n# Another chapter\n\n"
                 "```{code-cell} ipython3\nimport math\n\nassert math.sqrt(4.0) == 2.0\n```\n")


def test_changed_module_reexecutes_its_chapters_only(tmp_path):
    """Case 004: on a warm cache, a reference module edited so that softmax weights sum to
    1/2 fails the build (chapter 1, which imports it, checks that the soft lookup with
    kappa = 0 returns the mean of the values; chapter 2, the case's own example, pulls in the
    Rust toolchain, so chapter 1 keeps this test light); reverted, the book builds again
    from the cache, and another chapter, which does not import that module, is never
    re-read."""
    from test_chapter_claims import mini_book

    chapters = {"01_from_recurrence_to_attention": (
        REPO / "chapters" / "01_from_recurrence_to_attention.md").read_text(encoding="utf-8"),
        "03_why_sqrt_dk": OTHER_CHAPTER}
    book = mini_book(tmp_path, chapters, package=True)
    env = {"PYTHONPATH": str(book)}  # the kernel imports the copy of autograder/
    module = book / "autograder" / "reference" / "python_attention.py"
    good = module.read_text(encoding="utf-8")
    assert good.count(SOFTMAX) == 1

    rc, out = _build(book, env)
    assert rc == 0, out[-4000:]
    assert _executed(out) == 2, out[-4000:]

    rc, out = _build(book, env)  # nothing changed: nothing read, nothing run
    assert rc == 0 and _executed(out) == 0, out[-4000:]
    assert "0 added, 0 changed, 0 removed" in out, out[-4000:]

    module.write_text(good.replace(SOFTMAX, HALF_SOFTMAX), encoding="utf-8")
    rc, out = _build(book, env)
    assert rc != 0, out[-4000:]
    assert "AssertionError" in out, out[-4000:]
    assert "0 added, 1 changed, 0 removed" in out, out[-4000:]  # chapter 1 only
    assert _executed(out) == 1, out[-4000:]

    rc, out = _build(book, env)  # a failure is not cached: the same build fails again
    assert rc != 0 and "AssertionError" in out, out[-4000:]

    # A failed build makes Sphinx delete its saved environment, so the next build re-reads
    # every page; both notebooks come from the cache (chapter 1's earlier, correct run).
    module.write_text(good, encoding="utf-8")
    rc, out = _build(book, env)
    assert rc == 0, out[-4000:]
    assert _executed(out) == 0, out[-4000:]
    assert out.count("Using cached notebook") == 2, out[-4000:]


def test_chapter_dependencies_are_found():
    """What _ext/course_deps.py counts as a chapter's dependencies: the course modules its
    cells import (with the package __init__ files on the way), its literalincluded files and
    requirements.txt; not the modules of other chapters, nor imports inside functions of a
    package __init__'s imports."""
    sys.path.insert(0, str(REPO / "_ext"))
    try:
        import course_deps
    finally:
        sys.path.remove(str(REPO / "_ext"))
    ref = REPO / "autograder" / "reference"

    def deps(name):
        path = REPO / "chapters" / f"{name}.md"
        return set(course_deps.dependencies(path.read_text(encoding="utf-8"), path,
                                            ["autograder"], [REPO / "requirements.txt"]))

    two, three = deps("02_scaled_dot_product_attention"), deps("03_why_sqrt_dk")
    assert {ref / "python_attention.py", ref / "__init__.py", REPO / "autograder" / "__init__.py",
            REPO / "requirements.txt"} <= two
    assert ref / "scaling.py" in three and ref / "python_attention.py" not in three
    assert {ref / "torch_attention.py", REPO / "autograder" / "transformer_given.py",
            ref / "transformer.py"} <= deps("07_transformer_block")
    assert REPO / "autograder" / "grading" / "gradebook.py" not in three  # a lazy import only
    for chapter in (REPO / "chapters").glob("*.md"):
        text = chapter.read_text(encoding="utf-8")
        for target in re.findall(r"\{literalinclude\}\s+(\S+)", text):
            assert (chapter.parent / target).resolve() in deps(chapter.stem), (chapter, target)
