"""The class report ``grade`` writes (``report-<assignment>.html``), for a small mixed class,
opened in headless Chromium with every request that leaves the machine aborted.

The class of ex01: two full marks (one of them 2 h late), the missing 1/sqrt(d_k) scale, an
unstable softmax, the released notebook untouched, and a file that is not a notebook.
"""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from conftest import REPO, grade
from submissions import filled_notebook, parse_variant, variants, write_submission
from test_website import CHROMIUM, browser  # noqa: F401 - the fixture

from autograder.grading.gradebook import open_gradebook

A = "ex01_python_attention"
SHOTS = REPO / "_build" / "screenshots"
pytestmark = pytest.mark.slow  # grades a class of six


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(workspace, the report's path) after grading the class."""
    root = tmp_path_factory.mktemp("report")
    subs, ws = root / "submissions", root / "ws"
    ws.mkdir()
    with open_gradebook(ws) as gb:
        gb.update_or_create_assignment(A, duedate=datetime(2026, 3, 1, 17, 0))
    wrong = {n: filled_notebook(A, parse_variant(variants(A)[n])[0])
             for n in ("attention_no_scale", "softmax_unstable")}
    for student, nb in (("alice", filled_notebook(A)), ("bob", wrong["attention_no_scale"]),
                        ("carol", wrong["softmax_unstable"]),
                        ("dave", filled_notebook(A, fill_reference=False)),
                        ("erin", filled_notebook(A)), ("frank", b'{"cells": [')):
        write_submission(subs, student, A, nb)
    (subs / "alice" / A / "timestamp.txt").write_text("2026-03-01 16:00:00 UTC\n")
    (subs / "erin" / A / "timestamp.txt").write_text("2026-03-01T19:00:00Z\n")
    proc, rows, _ = grade(subs, ws)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"class report: {ws / f'report-{A}.html'}" in proc.stdout
    return ws, ws / f"report-{A}.html", rows


def test_the_report_counts_what_grades_csv_says(graded):
    ws, report, rows = graded
    html = report.read_text(encoding="utf-8")
    assert "<b>6</b> submission(s)" in html and "<b>1</b> late" in html
    assert "mean score <b>8.0</b> of 14" in html  # (14 + 8 + 12 + 0 + 14 + 0) / 6
    assert [rows[s]["score"] for s in sorted(rows)] == ["14.0", "8.0", "12.0", "0.0", "14.0",
                                                         "0.0"]
    statuses = dict(re.findall(r"<tr><td>([a-z-]+)</td><td class=\"num\">(\d+)</td></tr>", html))
    assert statuses == {"graded": "4", "late": "1", "invalid-notebook": "1"}
    # Hardest first: the stable-attention test, failed by bob (no scale), carol (overflow)
    # and dave (the stub); frank's notebook was never scored.
    tests = re.findall(r"<tr><td><code>(\w+)</code></td><td>(.*?)</td><td>.*?"
                       r"(\d+) of (\d+) \((\d+)%\)</span></td></tr>", html)
    assert tests[0][0] == "test_attention_stable" and tests[0][2:] == ("2", "5", "40")
    stable = next(t for t in tests if t[0] == "test_softmax_stable")
    assert stable[2:] == ("3", "5", "60")
    assert "does not overflow" in stable[1] and "keeps every exponent ≤ 0" in stable[1]
    assert len(tests) == 12 and all(t[3] == "5" for t in tests)
    hint = re.search(r"<b>Hint:</b> your output matches attention without the 1/sqrt\(d_k\) "
                     r"scale</td><td class=\"num\">(\d+)</td><td>(.*?)</td>", html)
    assert hint and hint.group(1) == "1" and hint.group(2).count("<code>") == 4  # bob's 4 tests
    assert re.search(r"<td>erin</td><td>late</td><td class=\"num\">14 / 14</td><td>2\.0 h</td>",
                     html)
    for student in ("alice", "bob", "carol", "dave", "erin"):
        link = f'href="feedback/{student}/{A}/{A}.html"'
        assert link in html and (ws / "feedback" / student / A / f"{A}.html").is_file()
    assert 'href="feedback/frank' not in html


def test_the_report_in_a_browser_requests_nothing_from_another_host(graded, browser):  # noqa: F811
    _, report, _ = graded
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    left = []

    def route(r):
        if r.request.url.startswith(("file:", "data:", "about:")):
            return r.continue_()
        left.append(r.request.url)
        return r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.goto(report.as_uri(), wait_until="load")
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / f"class-report-{A}.png"
    page.screenshot(path=str(shot), full_page=True)
    text = page.inner_text("body")
    bars = page.locator("svg rect.bar").count()
    links = page.locator("a", has_text="feedback").count()
    context.close()
    assert left == []
    assert "Class report: ex01_python_attention" in text and "2 of 5 (40%)" in text
    assert bars == 15 and links == 5  # 0 to 14 points; five learners with feedback
    assert shot.stat().st_size > 20_000
