"""Similar submissions: ``python -m autograder similarity ASSIGNMENT``.

Every pair of a class's submissions of one assignment is compared on the learners' own
code: their solution cells and the code cells they added, Python and (ex08) ``%%rust``
cells apart. The detector is copydetect's (PyPI ``copydetect``): each cell's code is
tokenized with Pygments, names become one letter (so renaming changes nothing), comments
and whitespace are dropped, and the k-grams of what remains are the fingerprints; a pair's
shared fingerprints mark the matching regions. What the released notebook holds (the
starter code, the given cells, the test cells) is discounted as boilerplate, and so is
what more than half of the class wrote alike (the idioms every correct solution shares).
Answer cells (a knowledge check's ``kc1_answer = "b"``) are left out: every right answer
is the same. A pair's score is the larger of its two shares (how much of one learner's code
is found in the other's), so a copy padded with code of its own still ranks high; and only
the first :data:`CAP` characters of a learner's code are compared (fingerprinting costs
some 25 s per MB), the report saying whose code was cut.

It is a report for a human (:mod:`~autograder.grading.similarity_report` writes it); it
never changes a grade, and it reads the notebooks without running them.
"""

from __future__ import annotations

import io
import itertools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.grading import similarity_report
from autograder.grading.autograde import STAGED
from autograder.grading.results import spreadsheet_safe, write_csv
from autograder.grading.submission import discover, read_submitted
from autograder.notebook import released_notebook
from autograder.verdicts import grade_id, is_fixed_cell, nbgrader_meta

# copydetect's default noise threshold: the shortest match (in characters of the filtered
# code, where a name is one letter) that counts. Every k-gram is a fingerprint (winnowing
# window 1): the scores do not depend on Python's per-process string hashes.
NOISE = 25
LANGUAGES = ("python", "rust")
COMMON = 0.5  # a fingerprint in more than this share of the submissions is an idiom
CSV_FIELDS = ["rank", "student_a", "student_b", "similarity", "share_a", "share_b",
              "shared_tokens"]
CAP = 200_000  # characters of one learner's code compared at most (the rest: cut, reported)
DEFINES = re.compile(r"^\s*(def|class|fn|struct|impl|enum|trait)\b", re.M)


@dataclass
class Source:
    """One learner's code of one assignment: per language, the text compared; ``cut``:
    how many characters of it were left out (beyond :data:`CAP`)."""

    student_id: str
    code: dict[str, str] = field(default_factory=dict)
    cut: int = 0


@dataclass
class Pair:
    """Two submissions compared: ``share_a``/``share_b`` the share of each side's
    fingerprinted tokens that match the other's; ``similarity`` the larger of the two (a
    copy inside a larger submission scores high); ``regions`` per language,
    the matching character ranges ((starts, ends) arrays) in each side's code."""

    a: Source
    b: Source
    similarity: float
    share_a: float
    share_b: float
    shared_tokens: int
    regions: dict[str, tuple] = field(default_factory=dict)


def language_of(source: str) -> tuple[str, str]:
    """(language, code) of a code cell: a ``%%rust`` cell's Rust without its magic line."""
    if source.lstrip().startswith("%%rust"):
        return "rust", source.lstrip().split("\n", 1)[1] if "\n" in source.lstrip() else ""
    return "python", source


def answer_cells(released) -> set[str]:
    """grade_ids of the released notebook's answer cells: solution cells whose stub
    defines nothing (a knowledge check's ``kc1_answer = ...``)."""
    return {grade_id(c) for c in released.cells if c.cell_type == "code"
            and nbgrader_meta(c).get("solution") and not DEFINES.search(c.source)}


def learner_code(nb, skip: set[str]) -> dict[str, str]:
    """The learner's own code in ``nb`` per language: solution cells and cells the learner
    added (read-only cells are the release's), each under a comment naming it (comments
    are not compared)."""
    parts: dict[str, list[str]] = {lang: [] for lang in LANGUAGES}
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code" or is_fixed_cell(cell) or grade_id(cell) in skip:
            continue
        lang, code = language_of(cell.get("source", ""))
        if not code.strip():
            continue
        mark = "//" if lang == "rust" else "#"
        parts[lang].append(f"{mark} --- {grade_id(cell) or f'cell {index + 1}'} ---\n"
                           f"{code.rstrip()}\n")
    return {lang: "\n".join(p) for lang, p in parts.items() if p}


def capped(code: dict[str, str], limit: int | None = None) -> tuple[dict[str, str], int]:
    """(``code`` cut to its first ``limit`` (default :data:`CAP`) characters in all,
    languages in :data:`LANGUAGES` order, at a line end; how many characters were cut)."""
    out, room, cut = {}, CAP if limit is None else limit, 0
    for lang in LANGUAGES:
        text = code.get(lang)
        if text is None:
            continue
        if len(text) > room:
            kept = text[:room]
            kept = kept[:kept.rfind("\n") + 1] if "\n" in kept else ""
            cut += len(text) - len(kept)
            text = kept
        room -= len(text)
        if text.strip():
            out[lang] = text
    return out, cut


def starter_code(released) -> dict[str, str]:
    """The boilerplate per language: every code cell of the released notebook, and its
    solution cells as :func:`learner_code` joins them (a match across two untouched stubs
    is the release's too)."""
    parts: dict[str, list[str]] = {lang: [] for lang in LANGUAGES}
    for cell in released.cells:
        if cell.get("cell_type") == "code":
            lang, code = language_of(cell.get("source", ""))
            parts[lang].append(code)
    for lang, code in learner_code(released, set()).items():
        parts[lang].append(code)
    return {lang: "\n\n".join(p) for lang, p in parts.items() if p}


# --- The class's notebooks ---------------------------------------------------------------

def workspace_notebooks(workspace: Path, assignment: str) -> dict[str, Path]:
    """student id -> the notebook ``grade`` graded: nbgrader's autograded copy, else the
    staged copy (a submission nbgrader could not autograde)."""
    found = {}
    for folder in (workspace / STAGED, workspace / "autograded"):  # autograded wins
        for path in sorted(folder.glob(f"*/{assignment}/{assignment}.ipynb")):
            found[path.parent.parent.name] = path
    return dict(sorted(found.items()))


def submitted_notebooks(submissions: Path, assignment: str) -> dict[str, Path]:
    """student id -> the notebook of a submissions folder in nbgrader's layout, found as
    ``grade`` finds it (:func:`~autograder.grading.submission.discover`)."""
    return {s.student_id: s.path for s in discover(submissions)
            if s.assignment == assignment and s.path is not None}


def read_sources(notebooks: dict[str, Path], skip: set[str]) -> tuple[list[Source], list[str]]:
    """(the learners' code, one line per notebook that could not be read)."""
    sources, unread = [], []
    for student, path in notebooks.items():
        try:
            nb = nbformat.reads(read_submitted(path).decode("utf-8"), as_version=4)
        except Exception as exc:  # noqa: BLE001 - any unreadable notebook is only listed
            unread.append(f"{student}: {path.name} not read ({type(exc).__name__})")
            continue
        code, cut = capped(learner_code(nb, skip))
        sources.append(Source(student, code, cut))
    return sources, unread


# --- Fingerprints and scores (copydetect) -----------------------------------------------

def fingerprint(code: str, language: str, boilerplate=None):
    """copydetect's fingerprint of ``code`` (every k-gram, ``boilerplate`` hashes left out)."""
    from copydetect.detector import CodeFingerprint

    return CodeFingerprint(f"code.{language}", NOISE, 1, boilerplate=boilerplate,
                           language=language, fp=io.StringIO(code))


def boilerplate(sources: list[Source], starter: dict[str, str],
                common: float = COMMON) -> dict[str, object]:
    """Per language, the hashes not compared: the starter code's, and those found in more
    than ``common`` of the submissions (at least three) that have code in that language."""
    import numpy as np

    out = {}
    for lang in LANGUAGES:
        hashes = set(fingerprint(starter[lang], lang).hashes) if lang in starter else set()
        seen: dict[int, int] = {}
        having = [s for s in sources if lang in s.code]
        for s in having:
            for h in fingerprint(s.code[lang], lang, np.array(sorted(hashes))).hashes:
                seen[h] = seen.get(h, 0) + 1
        limit = max(2, int(common * len(having)))
        hashes |= {h for h, n in seen.items() if n > limit}
        out[lang] = np.array(sorted(hashes))
    return out


def compare(sources: list[Source], starter: dict[str, str],
            common: float = COMMON) -> list[Pair]:
    """Every pair of ``sources``, most similar first (then by student ids)."""
    skip = boilerplate(sources, starter, common)
    prints = {(s.student_id, lang): fingerprint(code, lang, skip[lang])
              for s in sources for lang, code in s.code.items()}
    pairs = [compare_pair(a, b, prints) for a, b in itertools.combinations(sources, 2)]
    pairs.sort(key=lambda p: (-p.similarity, p.a.student_id, p.b.student_id))
    return pairs


def compare_pair(a: Source, b: Source, prints: dict) -> Pair:
    """The :class:`Pair` of ``a`` and ``b`` from their fingerprints ``prints`` (by
    (student id, language)): the languages' matching tokens and covered tokens summed."""
    from copydetect.detector import compare_files

    matched, covered, regions = [0.0, 0.0], [0.0, 0.0], {}
    for lang in LANGUAGES:
        fa, fb = prints.get((a.student_id, lang)), prints.get((b.student_id, lang))
        covered[0] += fa.token_coverage if fa else 0.0
        covered[1] += fb.token_coverage if fb else 0.0
        if fa is None or fb is None:
            continue
        shared, (share_a, share_b), slices = compare_files(fa, fb)
        if shared:
            matched[0] += share_a * fa.token_coverage
            matched[1] += share_b * fb.token_coverage
            regions[lang] = slices
    share_a = matched[0] / covered[0] if covered[0] else 0.0
    share_b = matched[1] / covered[1] if covered[1] else 0.0
    return Pair(a, b, similarity=max(share_a, share_b), share_a=share_a, share_b=share_b,
                shared_tokens=int(round(matched[0])), regions=regions)


def write_pairs_csv(path: Path, pairs: list[Pair]) -> None:
    """The CSV of every pair, ranked: ids, similarity and each side's share (0 to 1)."""
    rows = [{"rank": i, "student_a": p.a.student_id, "student_b": p.b.student_id,
             "similarity": f"{p.similarity:.3f}", "share_a": f"{p.share_a:.3f}",
             "share_b": f"{p.share_b:.3f}", "shared_tokens": p.shared_tokens}
            for i, p in enumerate(pairs, 1)]
    write_csv(path, CSV_FIELDS, spreadsheet_safe(rows))


# --- The command ------------------------------------------------------------------------

def cut_lines(sources: list[Source]) -> list[str]:
    """One line per learner whose code was longer than :data:`CAP` (only its start compared)."""
    return [f"{s.student_id}: only the first {sum(map(len, s.code.values())):,} characters "
            f"of the code compared, {s.cut:,} cut (at most {CAP:,} are compared)"
            for s in sources if s.cut]


def release_of(workspace: Path, assignment: str):
    """The released notebook the class started from: the workspace's release (what
    ``grade`` generated), else the course's ``exercises/``; None when neither has it."""
    return released_notebook(assignment, workspace / "release") or released_notebook(assignment)


def main(assignment: str, workspace: Path, submissions: Path | None = None,
         common: float = COMMON, top: int = 50) -> int:
    """Compare every pair of the class's submissions of ``assignment`` (from
    ``submissions``, nbgrader's layout, or else the notebooks ``grade`` graded in
    ``workspace``); write ``WORKSPACE/similarity-ASSIGNMENT.html`` (the ``top`` pairs
    side by side) and ``.csv`` (every pair). Exit status 0, or 2 when the assignment has
    no release or no submission is found."""
    workspace = Path(workspace).resolve()
    released = release_of(workspace, assignment)
    if released is None:
        print(f"error: no released notebook of {assignment!r} (in {workspace / 'release'} "
              "or exercises/)", file=sys.stderr)
        return 2
    notebooks = (submitted_notebooks(Path(submissions), assignment) if submissions
                 else workspace_notebooks(workspace, assignment))
    if not notebooks:
        where = submissions or f"{workspace} (grade the class first, or pass --submissions)"
        print(f"error: no submission of {assignment} in {where}", file=sys.stderr)
        return 2
    sources, unread = read_sources(notebooks, answer_cells(released))
    pairs = compare(sources, starter_code(released), common)
    workspace.mkdir(parents=True, exist_ok=True)
    csv_path = workspace / f"similarity-{assignment}.csv"
    html_path = workspace / f"similarity-{assignment}.html"
    write_pairs_csv(csv_path, pairs)
    similarity_report.write(html_path, assignment, sources, pairs, unread=unread, top=top,
                            common=common, noise=NOISE, cap=CAP, cut=cut_lines(sources))
    print(f"{assignment}: {len(sources)} submission(s), {len(pairs)} pair(s) compared")
    for line in unread:
        print(f"  not compared: {line}")
    for line in cut_lines(sources):
        print(f"  cut: {line}")
    for p in pairs[:5]:
        if p.similarity > 0:
            print(f"  {p.similarity:.0%}  {p.a.student_id} & {p.b.student_id}")
    print(f"report: {html_path}\npairs: {csv_path}\n(a report to read: no grade is changed)")
    return 0
