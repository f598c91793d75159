"""The zero-dependency tier in the page, in a real browser (headless Chromium), offline.

The built site is served on 127.0.0.1 and every request to any other host is aborted and
recorded. Chapter 2's worked example runs in the page and prints what the build printed;
edited, it prints the new scores. Exercise 1's page checks a correct solution (every test
passes, hidden parts included) and one without the max subtraction (the stable-softmax
test fails with its reason and the hint naming the mistake: the rows `check` prints),
keeps the code across a reload, and downloads a notebook that `check` reads. Pages without
a Run button load no runtime. The times from pressing Run to the first output, cold and
warm, go to _build/in-page-timings.json and the test's output.
"""

from __future__ import annotations

import functools
import http.server
import json
import subprocess
import sys
import threading
import time
from urllib.parse import urlparse

import pytest
from conftest import REPO
from test_inpage import ANSWERS, ATTENTION, NO_MAX, SOFTMAX
from test_website import CHROMIUM, browser  # noqa: F401 - the fixture

pytestmark = pytest.mark.book  # the built_book users share one worker (conftest)

CHAPTER = "chapters/02_scaled_dot_product_attention.html"
EXERCISE = "exercises/ex01_python_attention/ex01_python_attention.html"
RUNTIME_WAIT_MS = 240_000  # a cold start on a loaded 2-core machine: generous, never asserted


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site(built_book):
    """The built site on http://127.0.0.1:<port>/."""
    handler = functools.partial(_Quiet, directory=str(built_book))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture
def offline(browser):  # noqa: F811 - the fixture imported above
    """A browser context that aborts every request leaving 127.0.0.1; yields (context,
    the URLs it aborted, every URL requested)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900},
                                  accept_downloads=True)
    aborted, requested = [], []

    def route(r):
        requested.append(r.request.url)
        host = urlparse(r.request.url).hostname
        if r.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
            r.continue_()
        else:
            aborted.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    yield context, aborted, requested
    context.close()


def _wait_output(page, cell, previous: str | None = None) -> str:
    page.wait_for_function(
        """([cell, previous]) => { const o = cell.querySelector('.course-run-output');
             return o && !o.hidden && !o.textContent.startsWith('running…') && o.textContent !== previous; }""",
        arg=[cell, previous], timeout=RUNTIME_WAIT_MS)
    return cell.query_selector(".course-run-output").text_content()


def _run(page, cell, previous: str | None = None) -> tuple[str, float]:
    start = time.perf_counter()
    cell.query_selector("button:has-text('Run')").click()
    text = _wait_output(page, cell, previous)
    return text, time.perf_counter() - start


def test_chapter_2_runs_the_worked_example_in_the_page(site, offline):
    context, aborted, requested = offline
    page = context.new_page()
    page.goto(site + CHAPTER, wait_until="load")
    assert not [u for u in requested if "pyodide" in u], "the runtime loaded before Run"
    cells = page.query_selector_all("div.cell.course-run")
    assert len(cells) >= 3
    worked = next(c for c in cells if "Q3 = " in c.query_selector("textarea").input_value())
    built = worked.query_selector(".cell_output pre").text_content()
    assert built.startswith("query 0: scores [0.0, 0.0, 0.0]")
    out, cold = _run(page, worked)
    assert out == built, (out, built)
    again, warm = _run(page, worked, previous="")
    assert again == built
    area = worked.query_selector("textarea")
    area.fill(area.input_value().replace("/ math.sqrt(4)", "/ math.sqrt(1)"))
    edited, _ = _run(page, worked, previous=built)
    assert edited.startswith("query 0: scores [0.0, 0.0, 0.0]")
    assert "query 1: scores [-0.6, 0.0, 0.6]" in edited and "AssertionError" in edited
    assert not aborted, aborted
    timings = {"run_to_first_output_s": {"cold": round(cold, 2), "warm": round(warm, 2)}}
    (REPO / "_build" / "in-page-timings.json").write_text(json.dumps(timings, indent=1))
    print("in-page Run to first output:", timings)


def test_every_runnable_cell_prints_what_the_build_printed(site, offline, built_book):
    """On every chapter, each cell with a Run button prints, unchanged, the build's output."""
    context, aborted, _ = offline
    page = context.new_page()
    ran = 0
    for path in sorted((built_book / "chapters").glob("*.html")):
        if "cell course-run" not in path.read_text(encoding="utf-8"):
            continue
        page.goto(site + f"chapters/{path.name}", wait_until="load")
        for cell in page.query_selector_all("div.cell.course-run"):
            shown = cell.query_selector(".cell_output pre")
            built = shown.text_content() if shown else ""
            out, _ = _run(page, cell)
            assert out == built, (path.name, out[:300], built[:300])
            # a cell that prints nothing says it ran (the walk met an empty strip)
            said = cell.evaluate("c => getComputedStyle(c.querySelector('.course-run-output'),"
                                 " '::before').content")
            assert ("printed nothing" in said) == (built == ""), (path.name, said)
            ran += 1
    # chapter 2's four cells (chapter 1's path-length cell now tests the NumPy layers
    # themselves, so it needs NumPy and runs in JupyterLab only)
    assert ran >= 4 and not aborted, (ran, aborted)


def _fill(page, code: dict[str, str]) -> None:
    for gid, source in code.items():
        page.fill(f"textarea[aria-label='your code for {gid}']", source)


def _check(page, previous: str = "") -> str:
    page.click("section.course-check button:has-text('Check')")
    page.wait_for_function(
        """(previous) => { const o = document.querySelector('.course-check-result');
             return o && !o.hidden && !o.textContent.startsWith('checking…') && o.textContent !== previous; }""",
        arg=previous, timeout=RUNTIME_WAIT_MS)
    return page.text_content(".course-check-result")


def _rows(report: str) -> dict[str, str]:
    return {line.split()[0]: line for line in report.splitlines() if " pt  " in line}


def test_exercise_1_checks_in_the_page_and_keeps_the_code(site, offline, tmp_path):
    context, aborted, _ = offline
    page = context.new_page()
    page.goto(site + EXERCISE, wait_until="load")
    right = {"softmax": SOFTMAX, "scaled_dot_product_attention": ATTENTION, **ANSWERS}
    _fill(page, right)
    report = _check(page)
    rows = _rows(report)
    assert len(rows) == 12 and "12 passed, 0 failed, 0 pending" in report, report
    assert all(" PASS " in r for r in rows.values()), report  # hidden parts ran too
    _fill(page, {"softmax": NO_MAX})
    report = _check(page, previous=report)
    stable = _rows(report)["test_softmax_stable"]
    assert " FAIL " in stable and "OverflowError" in stable, report
    assert "subtract the row's maximum score" in stable, report  # the mistake, named
    assert "does not overflow: the max is subtracted first. — " in stable, report  # the test
    assert "Knowledge check 1: right — " in rows["test_kc1"], report  # and why it is right
    page.reload(wait_until="load")
    assert page.input_value("textarea[aria-label='your code for softmax']") == NO_MAX
    assert page.input_value("textarea[aria-label='your code for kc3']") == ANSWERS["kc3"]
    with page.expect_download() as info:
        page.click("section.course-check button:has-text('Download notebook')")
    folder = tmp_path / "exercises" / "ex01_python_attention"
    folder.mkdir(parents=True)
    notebook = folder / "ex01_python_attention.ipynb"
    info.value.save_as(notebook)
    proc = subprocess.run([sys.executable, "-m", "autograder", "check", str(notebook)],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert "warning" not in proc.stdout and proc.returncode == 1, proc.stdout + proc.stderr
    assert _rows(proc.stdout) == _rows(report)  # every row, as check prints it
    assert not aborted, aborted


def test_a_check_from_the_last_editor_shows_its_rows_on_screen(site, offline):
    """Shift+Enter in an editor far below the Check panel checks and brings the panel,
    with its rows, into view (the walk pressed it in kc3 and saw no result)."""
    context, aborted, _ = offline
    page = context.new_page()
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(site + EXERCISE, wait_until="load")
    _fill(page, {"softmax": SOFTMAX, "scaled_dot_product_attention": ATTENTION, **ANSWERS})
    last = page.locator("textarea[aria-label='your code for kc3']")
    last.scroll_into_view_if_needed()
    last.press("Shift+Enter")
    page.wait_for_function(
        """() => { const o = document.querySelector('.course-check-result');
             return o && !o.hidden && o.textContent.includes(' passed, '); }""",
        timeout=RUNTIME_WAIT_MS)
    box = page.locator(".course-check-result").bounding_box()
    assert box is not None and 0 <= box["y"] < 800, box  # its first rows on screen
    assert "12 passed, 0 failed, 0 pending" in page.text_content(".course-check-result")
    assert not aborted, aborted


def test_pages_without_a_run_button_load_no_runtime(site, offline, built_book):
    """No page without a Run or Check button names the runner or the runtime, and in the
    browser none requests them; chapter 2 loads the runner's script and style (measured)
    but no runtime until Run is pressed."""
    from test_website import pages

    plain = []
    for path in pages(built_book):
        html = path.read_text(encoding="utf-8")
        if "cell course-run" in html or "course-answer" in html:
            continue
        plain.append(path)
        assert "course-runner" not in html and "pyodide" not in html, path
    assert len(plain) >= 10
    context, aborted, requested = offline
    page = context.new_page()
    weight = {}
    for name in ("intro.html", "chapters/07_transformer_block.html", CHAPTER):
        requested.clear()
        page.goto(site + name, wait_until="networkidle")
        weight[name] = sum((built_book / urlparse(u).path.lstrip("/")).stat().st_size
                           for u in dict.fromkeys(requested)
                           if (built_book / urlparse(u).path.lstrip("/")).is_file())
        runner = [u for u in requested if "course-runner" in u]
        assert not [u for u in requested if "pyodide" in u], name
        assert bool(runner) == (name == CHAPTER), (name, runner)
    assert not aborted, aborted
    print("bytes loaded per page:", weight)


def test_a_page_opened_from_a_file_says_how_to_serve_it(built_book, browser):  # noqa: F811
    context = browser.new_context()
    page = context.new_page()
    page.goto((built_book / CHAPTER).as_uri(), wait_until="load")
    cell = page.query_selector_all("div.cell.course-run")[0]
    cell.query_selector("button:has-text('Run')").click()
    assert "python -m http.server -d _build/html" in _wait_output(page, cell)
    context.close()
