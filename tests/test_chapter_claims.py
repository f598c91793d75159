"""Every claim of the chapters is checked, and a wrong claim breaks the build.

The claims table, ``chapters/claims.yml``, lists each chapter's checkable claims with the
named cell that checks each and the mutations that make each claim false, the citation-only
facts with their source, and what the chapters say about the course's own files. The first
tests keep the table true without executing anything (they run in ``make check``): every
named cell exists and asserts, every mutation applies to its cell, at least 95 % of each
chapter's checkable claims are checked, every source is cited, the notation page is in the
book and retired notations stay out of the chapters. ``tools/mutate_chapters.py`` runs the
mutations; the test of its machinery executes a two-cell chapter.

The book tests (marked ``book``) build: each mutation of ``CHAPTERS`` edits the line of code
that states one claim of each chapter (1 to 7) in a copy of the chapter. One mini book holds
all seven mutated chapters and their exercise pages, and every chapter must fail with an
``AssertionError``; chapters 3 and 4 are also built alone under the book's own configuration.
The control is the whole book, unchanged. The built chapters 1, 3 and 4 show their theorems,
proofs, figures and computed results.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from pathlib import Path

import jupytext
import pytest
import yaml
from conftest import REPO, run

BOOK = [pytest.mark.book]

JB = ["jupyter-book", "build", ".", "--builder", "html", "-W", "-n", "--keep-going"]

# chapter -> (the claim's code, the same claim made wrong). One derivation or measured
# statement per chapter; each wrong version is a mistake a reader could plausibly make.
CHAPTERS = {
    "01_from_recurrence_to_attention": (  # dc/dz_0 without the direct term p_0 I
        "analytic = p[0] * np.eye(d_z) + p[0] * np.outer(Z[0] - c, q)",
        "analytic = p[0] * np.outer(Z[0] - c, q)",
    ),
    "02_scaled_dot_product_attention": (  # the closed form of the worked example, without 2
        "closed_form = 20 + 10 * 2 * math.sinh(u) / (1 + 2 * math.cosh(u))",
        "closed_form = 20 + 10 * math.sinh(u) / (1 + 2 * math.cosh(u))",
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
        "rescale = exp(m - m_new)          # alpha_r",
        "rescale = 1.0                     # alpha_r",
    ),
    "07_transformer_block": (  # "the vocabulary alone explains the gap to 65 million"
        "40_000 < vocab_for_65M < 41_500",
        "36_000 < vocab_for_65M < 38_000",
    ),
}
# Mutations that also run, one build each, under the book's own configuration.
SEPARATE_BUILDS = ("03_why_sqrt_dk", "04_positional_encoding")


def _load_mutation_tool():
    spec = importlib.util.spec_from_file_location("mutate_chapters",
                                                  REPO / "tools" / "mutate_chapters.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutate_chapters"] = module
    spec.loader.exec_module(module)
    return module


MUTATE = _load_mutation_tool()
CLAIMS_FILE = REPO / "chapters" / "claims.yml"
CLAIMS = yaml.safe_load(CLAIMS_FILE.read_text(encoding="utf-8"))
TABLE = CLAIMS["chapters"]
TOC_CHAPTERS = re.findall(r"- file: chapters/(\w+)", (REPO / "_toc.yml").read_text(encoding="utf-8"))
NOTEBOOKS = {name: jupytext.read(REPO / "chapters" / f"{name}.md") for name in TOC_CHAPTERS}
# An assertion: assert, a raised AssertionError, or a testing helper that raises one.
ASSERTS = re.compile(r"\bassert\b|raise AssertionError|assert_close|assert_allclose|"
                     r"assert_array_equal|assert_equal")
MIN_COVERAGE = 0.95
BIB_KEYS = set(re.findall(r"^@\w+\{([^,]+),", (REPO / "references.bib").read_text(encoding="utf-8"),
                          re.M))


def _named(name: str) -> dict[str, str]:
    """{cell name: source} of a chapter's named code cells."""
    cells = [c for c in NOTEBOOKS[name].cells if c.cell_type == "code" and "name" in c.metadata]
    return {c.metadata["name"]: c.source for c in cells}


def _prose(name: str) -> str:
    return "\n".join(c.source for c in NOTEBOOKS[name].cells if c.cell_type == "markdown")


# --- the claims table, kept true without executing anything (make check) -------------------

def test_the_claims_table_lists_every_chapter():
    assert list(TABLE) == TOC_CHAPTERS
    for name, entry in TABLE.items():
        assert set(entry) <= {"checked", "unchecked", "citation_only", "measured"}, name
        assert entry["checked"], name


@pytest.mark.parametrize("name", TOC_CHAPTERS)
def test_every_named_cell_exists_is_unique_and_asserts(name):
    names = [c.metadata["name"] for c in NOTEBOOKS[name].cells if "name" in c.metadata]
    assert len(names) == len(set(names)), f"duplicate cell names in {name}"
    cells = _named(name)
    entry = TABLE[name]
    used = {c["cell"] for c in entry["checked"]}
    used |= {m["cell"] for c in entry["checked"] for m in c.get("mutations", []) if isinstance(m, dict)}
    used |= {m["cell"] for m in entry.get("measured", [])}
    for cell in used:
        assert cell in cells, f"{name}: no cell named {cell!r}"
    for cell, source in cells.items():
        assert cell.startswith(f"ch{name[:2]}-"), f"{name}: {cell!r} is not named ch{name[:2]}-..."
        assert ASSERTS.search(source), f"{name}: cell {cell!r} checks nothing"
        assert cell in used, f"{name}: cell {cell!r} is named but no claim of the table cites it"


@pytest.mark.parametrize("name", TOC_CHAPTERS)
def test_every_checked_claim_has_mutations_that_apply(name):
    for claim in TABLE[name]["checked"]:
        assert claim.get("mutations"), f"{name}: no mutation makes {claim['claim']!r} false"
    for mutation in MUTATE.mutations_of(name, TABLE[name]):
        MUTATE.apply(NOTEBOOKS[name], mutation)  # ValueError unless find occurs once in the cell


@pytest.mark.parametrize("name", TOC_CHAPTERS)
def test_at_least_95_percent_of_the_checkable_claims_are_checked(name):
    checked, unchecked = len(TABLE[name]["checked"]), len(TABLE[name].get("unchecked") or [])
    for item in TABLE[name].get("unchecked") or []:
        assert item.get("why"), f"{name}: an unchecked claim needs its reason: {item}"
    assert checked / (checked + unchecked) >= MIN_COVERAGE, (name, checked, unchecked)


@pytest.mark.parametrize("name", TOC_CHAPTERS)
def test_citation_only_facts_name_their_source(name):
    for item in TABLE[name].get("citation_only") or []:
        for source in (s.strip() for s in item["source"].split(",")):
            assert source in BIB_KEYS or source.startswith("https://"), (name, source)
            if source in BIB_KEYS:
                assert f"`{source}" in _prose(name) or f",{source}" in _prose(name), \
                    f"{name} does not cite {source}"


@pytest.mark.parametrize("name", TOC_CHAPTERS)
def test_measured_statements_are_filled_from_their_cell(name):
    """A timing stated in the text comes from the cell's own output (glue), never a fixed
    number: every glued key is set in its cell and used in the chapter's text."""
    cells, prose = _named(name), _prose(name)
    for item in TABLE[name].get("measured") or []:
        for key in item.get("glue", []):
            assert f'glue("{key}"' in cells[item["cell"]], (name, key)
            assert f"{{glue:text}}`{key}" in prose, (name, key)
    for key in re.findall(r"\{glue:text\}`(\w+)", prose):
        assert any(key in item.get("glue", []) for item in TABLE[name].get("measured") or []), key


def test_statements_about_the_course_files_hold():
    for item in CLAIMS["repository"]:
        text = (REPO / item["file"]).read_text(encoding="utf-8")
        for fragment in item["contains"]:
            assert fragment in text, (item["file"], fragment)


# Notations the chapters no longer use: each had a second meaning elsewhere (issue 26).
RETIRED = {
    r"h_t|h_\{t|h_T|d_h\b": "the RNN state is z_t, of width d_z (h is the number of heads)",
    r"\\beta(\\,)?\s*(q|=\s*\()": "the lookup's sharpness is kappa; Adam's rates are named in words",
    r"J_k|J_\{k": "the keys seen so far are B_{<r} (J is the softmax Jacobian)",
    r"_\{[ij]=1\}|x_1, \\dots|k_1, \\dots|s_1, \\dots": "indices count from 0",
    r"P_\\text\{(attn|FFN|LN)\}": "parameter counts are params_attn etc. (P is the weights)",
    r"(?<![\w\\])P\s?X|PQK": "a permutation is Pi (P is the weights)",
    r"M_k|PE\(pos \+ k\)": "the offset is Delta (k is a key)",
    r"\\tilde M(?![a-z])|; M\)": "a mask is \\mathcal{M} (M_Delta is the shift matrix)",
    r"(?<![\w\\])x_\{?(l|N|i|2i)\b": "a subscript on x is a position (the stream after l layers is x^{(l)})",
    r"(?<![\w\\])g(\^N|\s*<\s*1)": "g is chapter 3's loss row (a layer's RMS gain is eta)",
    r"\\sqrt\{d\}|(?<![\w\\])d(?![_\w])": "a width is d_model, d_k or d_v, never a bare d",
    r"W_l\b": "the residual demo's matrices are A_l (W_1, W_2 are the feed-forward network's)",
    r"(?<![\w\\])z(?![_\w])": "z_t is the RNN state; a standard normal variable is xi",
}


def test_the_notation_page_is_in_the_book():
    toc = (REPO / "_toc.yml").read_text(encoding="utf-8")
    assert "- file: notation" in toc
    page = (REPO / "notation.md").read_text(encoding="utf-8")
    for convention in ("Vectors are rows", "numerator layout", "count from 0"):
        assert convention in page
    # The conventions' generic letters are none of the table's symbols (u is the worked
    # example's half spread, v a value).
    conventions = page.split("## Symbols")[0]
    for math in re.findall(r"\$[^$\n]+\$", conventions):
        assert not re.search(r"(?<![\w\\])[uv](?![\w])", math), math
    for name in TOC_CHAPTERS:
        assert "{doc}`../notation`" in _prose(name), f"{name} does not point to the notation page"


@pytest.mark.parametrize("name", TOC_CHAPTERS)
def test_retired_notations_stay_out_of_the_chapters(name):
    prose = _prose(name)
    math = "\n".join(re.findall(r"\$\$.*?\$\$|\$[^$\n]+\$|```\{math\}.*?```", prose, re.S))
    for pattern, why in RETIRED.items():
        if name == "04_positional_encoding" and pattern.startswith("M_k"):
            math = math.replace("PE_{pos+k}", "")  # the paper's own words, quoted
        found = re.search(pattern, math)
        assert not found, f"{name}: {found.group(0)!r}: {why}"


# --- the mutation run's machinery, on a chapter of two cells -----------------------------

TINY = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3 (ipykernel)
  language: python
  name: python3
---

# Tiny

```{code-cell} ipython3
:name: ch00-sum

total = 2 + 2
assert total == 4  # the claim: 2 + 2 = 4
```
"""


@pytest.mark.book
def test_the_mutation_run_kills_a_false_claim_and_reports_survivors(tmp_path):
    """A false claim that the check catches is killed, one it cannot see survives, and one
    that breaks the code is an error, not a kill."""
    (tmp_path / "00_tiny.md").write_text(TINY, encoding="utf-8")
    entry = {"checked": [{"claim": "2 + 2 = 4", "cell": "ch00-sum", "mutations": [
        ["total = 2 + 2", "total = 2 + 3"],             # the claim made false: killed
        ["assert total == 4", "assert total >= 4"],      # a weaker check: survives
        ["total = 2 + 2", "total = 2 + undefined"],      # broken code: an error
    ]}]}
    journal = tmp_path / "journal.jsonl"
    record = MUTATE.run_chapter("00_tiny", entry, chapters_dir=tmp_path, log=lambda *a: None,
                                journal=journal)
    assert record["control"]["status"] == "pass"
    statuses = [m["status"] for m in record["mutations"]]
    assert statuses == ["killed", "survived", "error"], record
    # A run cut short resumes from its journal: nothing runs again, the results are the same.
    (tmp_path / "00_tiny.md").write_text(TINY.replace("2 + 2 = 4", "2 + 2 = 4\nraise SystemExit"))
    again = MUTATE.run_chapter("00_tiny", entry, chapters_dir=tmp_path, log=lambda *a: None,
                               done=MUTATE._read_journal(journal))
    assert [m["status"] for m in again["mutations"]] == statuses
    assert record["mutations"][0]["cell"] == "ch00-sum"
    row = MUTATE.summary([record])[0]
    assert (row["mutations"], row["killed"], row["kill_rate"]) == (3, 1, 1 / 3)
    with pytest.raises(ValueError, match="not once"):
        MUTATE.apply(jupytext.read(tmp_path / "00_tiny.md"),
                     MUTATE.Mutation("00_tiny", "", "ch00-sum", "2", "3"))


def _chapter(name: str) -> str:
    return (REPO / "chapters" / f"{name}.md").read_text(encoding="utf-8")


def link_runtime(book: Path) -> None:
    """The in-page runtime a book's build copies (_ext/course_runner.py): the course's npm
    pins and a link to its installed node_modules."""
    shutil.copy(REPO / "package.json", book / "package.json")
    (book / "node_modules").symlink_to(REPO / "node_modules", target_is_directory=True)


def mini_book(tmp_path: Path, chapters: dict[str, str], package: bool = False) -> Path:
    """The book's configuration with the given chapters (name -> text) and the exercise
    pages they link to. ``package``: also copy the course's package and requirements.txt,
    so that a build run with PYTHONPATH=tmp_path imports (and tracks) the copy."""
    for name in ("_config.yml", "references.bib", "requirements.txt"):
        shutil.copy(REPO / name, tmp_path / name)
    if (REPO / "_ext").is_dir():  # the site's local Sphinx extensions, named in _config.yml
        shutil.copytree(REPO / "_ext", tmp_path / "_ext",
                        ignore=shutil.ignore_patterns("__pycache__"))
        link_runtime(tmp_path)
    (tmp_path / "intro.md").write_text(
        "# Intro\n\nA test book.\n\n```{bibliography}\n```\n", encoding="utf-8")
    # Every chapter links the notation page; the real one links every chapter, so a stub.
    (tmp_path / "notation.md").write_text("# Notation\n\nA stub.\n", encoding="utf-8")
    # The chapters show reference code with {literalinclude} ../autograder/reference/...
    src = REPO / "autograder" if package else REPO / "autograder" / "reference"
    shutil.copytree(src, tmp_path / src.relative_to(REPO),
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "chapters").mkdir()
    toc = ["format: jb-book", "root: intro", "chapters:", "  - file: notation"]
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


@pytest.mark.parametrize("name", sorted(CHAPTERS))
def test_the_build_mutation_is_in_the_claims_table(name):
    """The mutation each build test runs is one the mutation run counts too."""
    claim, wrong = CHAPTERS[name]
    text = _chapter(name)
    same = [m for m in MUTATE.mutations_of(name, TABLE[name])
            if text.count(m.find) == 1 and text.replace(m.find, m.replace) == text.replace(claim, wrong)]
    assert same, f"{name}: the build test's mutation is not in chapters/claims.yml"


@pytest.mark.book
def test_unmutated_chapters_build(built_book):
    """Control for the mutations below: the book, unchanged, builds with every cell passing."""
    for name in CHAPTERS:
        assert (built_book / "chapters" / f"{name}.html").is_file()
    assert not (built_book / "reports").exists()  # myst-nb writes failed cells' tracebacks here


@pytest.mark.book
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


@pytest.mark.book
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


@pytest.mark.book
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
