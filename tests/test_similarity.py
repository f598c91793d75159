"""``python -m autograder similarity``: planted copies rank above independent solutions.

The class: independent correct solutions (the reference, correct alternatives from
``tests/implementations/`` and those of ``tests/similarity/``, written apart), planted copies
in ``tests/similarity/`` (each names its original in a ``copy of:`` line: renamed, helpers
reordered, comments, spacing and line breaks changed), and two learners who handed in the
released notebook untouched. Read without grading (``--submissions``), so it takes seconds.
"""

from __future__ import annotations

import csv
import itertools
import math
import random
import re
from pathlib import Path

import nbformat
import pytest

from autograder.cli import main as cli
from autograder.grading import similarity
from submissions import filled_notebook, parse_variant, variants, write_submission

HERE = Path(__file__).parent / "similarity"
EX01, EX08 = "ex01_python_attention", "ex08_rust_attention"
# variant name -> in this class (the reference and the starter are not files)
CLASS = {
    EX01: ["reference", "correct_integer_friendly", "correct_logsumexp",
           "independent_index_loops", "independent_matrix_helpers", "independent_functional",
           "copy_renamed", "copy_reordered", "copy_reformatted", "starter", "starter"],
    EX08: ["reference", "correct_iterator_chains", "correct_lifetimes_struct_threads",
           "correct_online_softmax", "independent_flat_buffers", "copy_renamed", "starter"],
}


def variant_path(assignment: str, name: str) -> Path:
    """A variant of this suite (tests/similarity) or of the grading tests'."""
    mine = HERE / assignment / f"{name}.py"
    return mine if mine.is_file() else variants(assignment)[name]


def copy_of(assignment: str, name: str) -> str | None:
    """The variant a planted copy was made from (its ``copy of:`` line), else None."""
    if name in ("reference", "starter"):
        return None
    m = re.search(r"^copy of:\s*(\S+)", variant_path(assignment, name).read_text(), re.M)
    return m.group(1) if m else None


def notebook(assignment: str, name: str):
    if name == "reference":
        return filled_notebook(assignment)
    if name == "starter":
        return filled_notebook(assignment, fill_reference=False)
    return filled_notebook(assignment, parse_variant(variant_path(assignment, name))[0])


def build_class(root: Path, assignment: str) -> dict[str, str]:
    """Write the class's submissions; student id -> variant. Ids say nothing of the variant
    (the order is shuffled with a fixed seed)."""
    names = list(CLASS[assignment])
    random.Random(28).shuffle(names)
    who = {f"learner{i:02d}": name for i, name in enumerate(names, 1)}
    for student, name in who.items():
        write_submission(root, student, assignment, notebook(assignment, name))
    return who


def scores(workspace: Path, assignment: str) -> dict[frozenset, float]:
    with (workspace / f"similarity-{assignment}.csv").open(encoding="utf-8") as f:
        return {frozenset((r["student_a"], r["student_b"])): float(r["similarity"])
                for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Both classes compared through the command line: (workspace, {assignment: who})."""
    root = tmp_path_factory.mktemp("similarity")
    who = {}
    for assignment in CLASS:
        who[assignment] = build_class(root / "submissions", assignment)
        assert cli(["similarity", assignment, "--workspace", str(root / "ws"),
                    "--submissions", str(root / "submissions")]) == 0
    return root / "ws", who


def planted(assignment: str, who: dict[str, str]) -> set[frozenset]:
    pairs = set()
    for a, b in itertools.combinations(who, 2):
        if copy_of(assignment, who[a]) == who[b] or copy_of(assignment, who[b]) == who[a]:
            pairs.add(frozenset((a, b)))
    return pairs


def test_every_planted_pair_ranks_above_every_independent_pair(graded):
    workspace, who = graded
    lowest_planted, highest_independent = 1.0, 0.0
    for assignment in CLASS:
        found = scores(workspace, assignment)
        copies = planted(assignment, who[assignment])
        assert len(copies) == (3 if assignment == EX01 else 1)
        assert len(found) == math.comb(len(who[assignment]), 2)
        lowest_planted = min(lowest_planted, min(found[p] for p in copies))
        highest_independent = max(highest_independent,
                                  max(s for p, s in found.items() if p not in copies))
    # Measured with copydetect 0.5.0 (the larger share): planted 0.97 and above,
    # independent 0.44 at most.
    assert lowest_planted >= 0.9 > 0.6 > highest_independent, (lowest_planted,
                                                               highest_independent)


def test_the_starter_code_alone_scores_no_similarity(graded):
    workspace, who = graded
    for assignment in CLASS:
        starters = {s for s, name in who[assignment].items() if name == "starter"}
        found = scores(workspace, assignment)
        touching = {p: s for p, s in found.items() if p & starters}
        assert touching and set(touching.values()) == {0.0}, touching


def test_the_report_shows_the_copies_side_by_side_and_loads_nothing(graded):
    workspace, who = graded
    html = (workspace / f"similarity-{EX08}.html").read_text(encoding="utf-8")
    copy = next(s for s, n in who[EX08].items() if n == "copy_renamed")
    first = re.search(r'<h3 id="pair-1">1\. (\S+) &amp; (\S+): (\d+)% similar', html)
    assert first and copy in first.groups()[:2] and int(first.group(3)) >= 90
    assert "<h4>Rust</h4>" in html and "<mark>" in html and "hi2.exp" not in html
    assert "let hi2 = hi.max(s);" in re.sub(r"</?mark>", "", html)
    assert not re.search(r"(src|href)=\"(?!#)", html) and "http" not in html.split("<body>")[1]


def test_knowledge_check_answers_and_read_only_cells_are_not_compared():
    released = nbformat.read(Path(similarity.__file__).parents[2] / "exercises" / EX01 /
                             f"{EX01}.ipynb", as_version=4)
    assert similarity.answer_cells(released) == {"kc1", "kc2", "kc3"}
    code = similarity.learner_code(filled_notebook(EX01), similarity.answer_cells(released))
    assert set(code) == {"python"}
    assert "# --- softmax ---" in code["python"] and "kc1_answer" not in code["python"]
    assert "import math" not in code["python"]  # the given setup cell is read-only
    rust = similarity.learner_code(filled_notebook(EX08), set())
    assert rust["rust"].startswith("// --- softmax ---\n") and "%%rust" not in rust["rust"]


def test_the_graded_workspace_is_read_when_no_folder_is_named(tmp_path, capsys):
    ws = tmp_path / "ws"
    for student, name in (("ann", "correct_logsumexp"), ("bob", "copy_reformatted"),
                          ("cy", "reference")):
        write_submission(ws / "autograded", student, EX01, notebook(EX01, name))
    write_submission(ws / ".staged" / "submitted", "dee", EX01, b"not a notebook")
    assert cli(["similarity", EX01, "--workspace", str(ws)]) == 0
    out = capsys.readouterr().out
    assert "4 submission(s)" not in out and "dee: ex01_python_attention.ipynb not read" in out
    found = scores(ws, EX01)
    assert max(found, key=found.get) == frozenset(("ann", "bob"))
    assert cli(["similarity", EX01, "--workspace", str(tmp_path / "empty")]) == 2


@pytest.mark.parametrize("name", ["independent_index_loops", "independent_matrix_helpers",
                                  "independent_functional", "copy_renamed", "copy_reordered",
                                  "copy_reformatted"])
def test_the_class_s_python_solutions_are_correct(name):
    """The solutions of tests/similarity/ex01 agree with the reference (float64 rounding)."""
    from autograder.reference import python_attention as ref

    space = {"math": math}
    for code in parse_variant(variant_path(EX01, name))[0].values():
        exec(code, space)  # noqa: S102 - the suite's own files
    rng = random.Random(name)
    for t_q, t_k, d_k, d_v in ((1, 1, 1, 1), (3, 5, 4, 2), (2, 3, 7, 3)):
        Q, K, V = ([[rng.gauss(0, 3) for _ in range(c)] for _ in range(r)]
                   for r, c in ((t_q, d_k), (t_k, d_k), (t_k, d_v)))
        got = space["scaled_dot_product_attention"](Q, K, V)
        want = ref.scaled_dot_product_attention(Q, K, V)
        assert len(got) == t_q and all(len(r) == d_v for r in got)
        assert [x for r in got for x in r] == pytest.approx([x for r in want for x in r],
                                                            rel=1e-12, abs=1e-12)
    assert space["softmax"]([1000.0, 1001.0]) == pytest.approx([0.2689414213699951,
                                                               0.7310585786300049])
    for bad in (([], [[1.0]], [[1.0]]), ([[1.0, 2.0], [1.0]], [[1.0, 2.0]], [[1.0]]),
                ([[1.0, 2.0]], [[1.0]], [[1.0]]), ([[1.0]], [[1.0], [2.0]], [[1.0]])):
        with pytest.raises(ValueError):
            space["scaled_dot_product_attention"](*bad)
    with pytest.raises(ValueError):
        space["softmax"]([])


PADDING = "\n".join(f"def helper_{i}(x):\n    return x * {i} + {i % 7}" for i in range(400))


def test_a_copy_padded_with_dead_code_ranks_above_every_independent_pair():
    """A learner's exact code plus 400 unused helpers (16 KB): little of the padded side
    matches, all of the original does; the pair ranks by the larger share."""
    released = nbformat.read(Path(similarity.__file__).parents[2] / "exercises" / EX01 /
                             f"{EX01}.ipynb", as_version=4)
    skip = similarity.answer_cells(released)
    names = [n for n in CLASS[EX01] if n != "starter"]
    sources = [similarity.Source(n, similarity.learner_code(notebook(EX01, n), skip))
               for n in names]
    orig = next(s for s in sources if s.student_id == "correct_integer_friendly")
    padded = similarity.Source("padcopy", {"python": orig.code["python"] + "\n" + PADDING})
    assert len(padded.code["python"]) > 16_000
    pairs = similarity.compare([*sources, padded], similarity.starter_code(released))
    pad = next(p for p in pairs if {p.a.student_id, p.b.student_id} == {"padcopy", orig.student_id})
    shares = {pad.a.student_id: pad.share_a, pad.b.student_id: pad.share_b}
    assert shares[orig.student_id] == 1.0 and shares["padcopy"] < 0.2, shares
    assert pad.similarity == max(pad.share_a, pad.share_b) == 1.0
    independent = [p.similarity for p in pairs
                   if "padcopy" not in (p.a.student_id, p.b.student_id)
                   and copy_of(EX01, p.a.student_id) != p.b.student_id
                   and copy_of(EX01, p.b.student_id) != p.a.student_id]
    assert max(independent) < 0.6, max(independent)


def test_a_learner_s_code_is_compared_up_to_the_cap_only():
    """2 MB of generated code is cut to its first CAP characters, at a line end."""
    line = "def f(a, b):\n    return [a[k] * 3 + b[k] for k in range(7)]\n"
    code = {"python": line * (2_000_000 // len(line)), "rust": "fn g() {}\n"}
    kept, cut = similarity.capped(code)
    assert sum(map(len, kept.values())) <= similarity.CAP == 200_000
    assert kept["python"].endswith("\n") and "rust" not in kept
    assert sum(map(len, kept.values())) + cut == sum(map(len, code.values()))
    small = {"python": line}
    assert similarity.capped(small) == (small, 0)


def test_a_huge_notebook_is_cut_and_the_report_says_so(tmp_path, capsys, monkeypatch):
    """A copy followed by 1 MB of code of its own: its start is compared (the pair still
    ranks first), the rest cut, and the command line and the report name the learner."""
    monkeypatch.setattr(similarity, "CAP", 20_000)  # the same path, fingerprinted quickly
    subs, ws = tmp_path / "submitted", tmp_path / "ws"
    for student, name in (("ann", "correct_logsumexp"), ("cy", "reference"),
                          ("dee", "independent_functional")):
        write_submission(subs, student, EX01, notebook(EX01, name))
    nb = notebook(EX01, "correct_logsumexp")
    filler = "\n".join(f"def pad_{i}(x):\n    return [x * {i} for _ in range({i % 50})]"
                       for i in range(20_000))
    nb.cells.append(nbformat.v4.new_code_cell(filler))
    assert len(filler) > 1_000_000
    write_submission(subs, "bob", EX01, nb)
    assert cli(["similarity", EX01, "--workspace", str(ws), "--submissions", str(subs)]) == 0
    out = capsys.readouterr().out
    assert "  cut: bob: only the first " in out and "(at most 20,000 are compared)" in out
    html = (ws / f"similarity-{EX01}.html").read_text(encoding="utf-8")
    assert "<h2>Not compared in full</h2>" in html and "bob: only the first" in html
    found = scores(ws, EX01)
    assert max(found, key=found.get) == frozenset(("ann", "bob"))
