"""The class report: ``WORKSPACE/report-<assignment>.html``, one page per assignment,
written with the summary after every run of ``grade`` (and ``manual score``, ``export``).

What it shows: the score distribution, each autograded test's pass rate with the behaviour
it checks (its docstring, and the statements of the notebook its hidden part relies on:
the source's ``# states:`` lines), the hints the diagnosis gave most often (``Hint:`` in the
failures of the autograded notebooks), the statuses, the late submissions, and a link to
each learner's feedback. Readable offline: CSS inline, charts inline SVG, no script.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from html import escape
from pathlib import Path

import nbformat

from autograder.grading.html import bars, page, table
from autograder.grading.release import source_notebook
from autograder.notebook import released_notebook
from autograder.verdicts import grade_id, is_test_cell, test_summary

STATES = re.compile(r'^\s*#\s*states:\s*"(.+)"\s*$', re.M)
HINT = re.compile(r"Hint: (.+?)\.?$", re.S)
LATE = re.compile(r"submitted ([\d.]+) h after the due date")


def behaviours(assignment: str) -> dict[str, tuple[str, list[str]]]:
    """test grade_id -> (its docstring's first line, the statements its hidden checks
    rely on), from the source notebook (else the release: docstrings only)."""
    path = source_notebook(assignment)
    nb = nbformat.read(path, as_version=4) if path.is_file() else released_notebook(assignment)
    if nb is None:
        return {}
    return {grade_id(c): (test_summary(c.source), list(dict.fromkeys(STATES.findall(c.source))))
            for c in nb.cells if is_test_cell(c)}


def failures(workspace: Path, row) -> dict[str, str]:
    """test grade_id -> the first lines of its error in the learner's autograded notebook."""
    path = workspace / "autograded" / row.student_id / row.assignment / f"{row.assignment}.ipynb"
    if not row.scored or not path.is_file():
        return {}
    out = {}
    for cell in nbformat.read(path, as_version=4).cells:
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error" and is_test_cell(cell):
                out[grade_id(cell)] = f"{o.get('ename', '')}: {o.get('evalue', '')}".strip()
    return out


def hint_of(error: str) -> str:
    """The diagnosis a failure names (the text after ``Hint:``), or ''."""
    m = HINT.search(error)
    return " ".join(m.group(1).split()) if m else ""


def pass_rates(rows) -> dict[str, tuple[int, int]]:
    """Autograded test -> (submissions that got all its points, submissions scored)."""
    rates: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        for t in row.tests:
            if t.get("kind") == "manual":
                continue
            rates[t["test"]][1] += 1
            rates[t["test"]][0] += float(t["score"] or 0) >= float(t["max_score"] or 0)
    return {name: (p, n) for name, (p, n) in rates.items()}


def score_chart(rows, max_score: float) -> str:
    """The scores in one bin per point (ten bins when the maximum is over 20)."""
    top = max(max_score, 1.0)
    n = int(top) + 1 if top <= 20 else 10
    counts = [0] * n
    for r in rows:
        at = int(round(r.score)) if n == int(top) + 1 else int(r.score / top * 10)
        counts[min(max(at, 0), n - 1)] += 1
    labels = ([str(i) for i in range(n)] if n == int(top) + 1
              else [f"{top * i / 10:g}–" for i in range(n)])
    return bars(counts, labels, title=f"submissions by score (of {max_score:g} points)")


def tests_section(rows, assignment: str) -> str:
    """Each autograded test: pass rate and the behaviour it checks, hardest first."""
    known = behaviours(assignment)
    order = {name: i for i, name in enumerate(known)}
    rates = pass_rates(rows)
    out = []
    for name, (passed, n) in sorted(rates.items(),
                                    key=lambda kv: (kv[1][0] / kv[1][1], order.get(kv[0], 99))):
        doc, states = known.get(name, ("", []))
        what = escape(doc) + ("<br><span class=\"note\">hidden checks rely on: " + "; ".join(
            f"“{escape(s)}”" for s in states) + "</span>" if states else "")
        out.append([f"<code>{escape(name)}</code>", what,
                    f'<span class="nowrap"><span class="rate" style="width:'
                    f'{4 * passed / n:.2f}rem"></span> {passed} of {n} ({passed / n:.0%})</span>'])
    return table(["test", "behaviour it checks", "passed"], out)


def hints_section(workspace: Path, rows, limit: int = 12) -> str:
    """What went wrong most often: the diagnosis' hints first, then the failures it had no
    hint for (their first line), each with how many learners and which tests."""
    seen: dict[tuple[bool, str], tuple[set, set]] = defaultdict(lambda: (set(), set()))
    for row in rows:
        for test, error in failures(workspace, row).items():
            hint = hint_of(error)
            key = (not hint, hint or error.splitlines()[0][:200])
            seen[key][0].add(row.student_id)
            seen[key][1].add(test)
    ranked = sorted(seen.items(), key=lambda kv: (kv[0][0], -len(kv[1][0]), -len(kv[1][1]),
                                                  kv[0][1]))[:limit]
    if not ranked:
        return "<p>No autograded test failed.</p>"
    return table(["what the diagnosis said", "learners", "tests"],
                 [[("" if unhinted else "<b>Hint:</b> ") + escape(text), str(len(who)),
                   ", ".join(f"<code>{escape(t)}</code>" for t in sorted(tests))]
                  for (unhinted, text), (who, tests) in ranked], numeric={1})


def learners_section(rows) -> str:
    """One row per learner: status, score, the late hours, a link to the feedback."""
    out = []
    for r in sorted(rows, key=lambda r: r.student_id):
        late = LATE.search(r.detail or "")
        link = (f'<a href="{escape(Path(r.feedback).as_posix())}">feedback</a>'
                if r.feedback else "none")
        out.append([escape(r.student_id), escape(str(r.status)),
                    f"{r.score:g} / {r.max_score:g}", f"{late.group(1)} h" if late else "",
                    link, escape(r.detail or "")])
    return table(["learner", "status", "score", "late", "feedback", "detail"], out,
                 numeric={2})


def render(workspace: Path, assignment: str, rows) -> str:
    """The whole page of ``assignment``'s ``rows`` (:class:`~.results.Row`)."""
    rows = list(rows)
    max_score = max((r.max_score for r in rows), default=0.0)
    scores = [r.score for r in rows]
    statuses = Counter(str(r.status) for r in rows)
    late = [r for r in rows if LATE.search(r.detail or "")]
    mean = sum(scores) / len(scores) if scores else 0.0
    body = [
        f"<p><b>{len(rows)}</b> submission(s); mean score <b>{mean:.1f}</b> of "
        f"{max_score:g}; <b>{len(late)}</b> late. Grades are in <code>grades.csv</code>, "
        "per test in <code>tests.csv</code>.</p>",
        "<h2>Score distribution</h2>", score_chart(rows, max_score),
        "<h2>Statuses</h2>",
        table(["status", "submissions"], [[escape(s), str(n)] for s, n in
                                          sorted(statuses.items(), key=lambda kv: -kv[1])],
              numeric={1}),
        "<h2>Tests, hardest first</h2>", tests_section(rows, assignment),
        "<h2>What went wrong most often</h2>", hints_section(workspace, rows),
        "<h2>Learners</h2>", learners_section(rows),
    ]
    return page(f"Class report: {assignment}", "\n".join(body))


def write_all(workspace: Path, rows) -> list[Path]:
    """Write ``report-<assignment>.html`` for every assignment of ``rows``; their paths."""
    by: dict[str, list] = defaultdict(list)
    for r in rows:
        by[r.assignment].append(r)
    paths = []
    for assignment, group in sorted(by.items()):
        path = Path(workspace) / f"report-{assignment}.html"
        path.write_text(render(Path(workspace), assignment, group), encoding="utf-8")
        paths.append(path)
    return paths
