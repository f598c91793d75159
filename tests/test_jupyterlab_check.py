"""The in-notebook check (``%check``, :mod:`autograder.in_notebook`) in JupyterLab, in Chromium.

A learner opens exercise 1 in JupyterLab, types a correct solution into its cells (nothing
saved), runs all the cells and reads, in the last cell's output, PASS for every test and
knowledge check (the open repository's hidden tests included); then scales by
1/sqrt(d_v), runs that cell and the check cell again, and reads the hint that names it;
that second check is served by the host the first one started (``check --warm``). One JupyterLab, offline, on a
copy of the released notebook in a temporary folder laid out as ``exercises/<id>/``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import REPO
from test_check_warm import NOTE, _socket, _wait, runtime_folder, stop_host
from test_inpage import ANSWERS, ATTENTION, SOFTMAX

A = "ex01_python_attention"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.book,  # no group: they need no built book, so the other worker runs them
              pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed")]
TESTS = ["test_softmax_known_values", "test_softmax_stable", "test_softmax_empty",
         "test_attention_worked_example", "test_attention_matches_reference",
         "test_attention_rectangular", "test_attention_stable", "test_attention_bad_input",
         "test_pure_python", "test_kc1", "test_kc2", "test_kc3"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_lab(root: Path, env: dict | None = None, args: list[str] = ()):
    """A JupyterLab server on ``root``, offline (no news, no update check), its settings,
    workspaces and config in ``root``: yields (its URL, token)."""
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, PYTHONPATH=str(REPO), JUPYTER_CONFIG_DIR=str(root / ".config"),
               JUPYTER_RUNTIME_DIR=str(root / ".runtime"), **(env or {}))
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
         f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}",
         f"--LabApp.user_settings_dir={root / '.settings'}",
         f"--LabApp.workspaces_dir={root / '.workspaces'}",
         "--allow-root", "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", *args],
        env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not start")
        yield url, token
    finally:
        # A loaded machine can take longer than any fixed wait to shut the server down
        # (kernels, extensions): ask, then make sure. How long it takes is no verdict.
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a copy of ex01: (its URL, token, root folder, the
    XDG_RUNTIME_DIR of its kernels, where ``check --warm`` keeps its host's socket)."""
    root = tmp_path_factory.mktemp("lab")
    runtime = runtime_folder()
    (root / "exercises" / A).mkdir(parents=True)
    shutil.copy(REPO / "exercises" / A / f"{A}.ipynb", root / "exercises" / A)
    # No autosave: the check must read the code from the session, not from the file.
    settings = root / ".settings" / "@jupyterlab" / "docmanager-extension"
    settings.mkdir(parents=True)
    (settings / "plugin.jupyterlab-settings").write_text('{"autosave": false}')
    try:
        with serve_lab(root, env={"XDG_RUNTIME_DIR": str(runtime),
                                  "AUTOGRADER_CHECK_IDLE": "600"}) as (url, token):
            yield url, token, root, runtime
    finally:
        stop_host(runtime)


def _type(page, index: int, source: str) -> None:
    """Replace cell ``index``'s source by typing it, as a learner would (no auto-indent)."""
    editor = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".cm-content")
    editor.scroll_into_view_if_needed()
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(source)


def _run_and_read(page, command: str, before: str = "") -> str:
    """Run ``command`` (every cell, or the active cell); the last cell's output once the
    check's table is complete (and not ``before``, the previous one)."""
    page.evaluate(f"() => window.jupyterapp.commands.execute('{command}')")
    out = page.locator(".jp-Notebook .jp-Cell").last.locator(".jp-OutputArea")
    deadline = time.monotonic() + 300
    text = ""
    while time.monotonic() < deadline:
        text = out.inner_text()
        if ("passed," in text or "error:" in text) and text != before:
            return text
        page.wait_for_timeout(500)
    pytest.fail(f"the check cell printed no table; it shows:\n{text}")


def _solution_indexes() -> dict[str, int]:
    import nbformat

    nb = nbformat.read(REPO / "exercises" / A / f"{A}.ipynb", as_version=4)
    return {c.metadata.get("nbgrader", {}).get("grade_id"): i for i, c in enumerate(nb.cells)
            if c.metadata.get("nbgrader", {}).get("solution")}


def test_check_in_jupyterlab_gives_every_verdict_and_names_a_wrong_scale(lab):
    from playwright.sync_api import sync_playwright

    url, token, root, runtime = lab
    cells = _solution_indexes()
    code = {"softmax": SOFTMAX, "scaled_dot_product_attention": ATTENTION, **ANSWERS}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/lab/tree/exercises/{A}/{A}.ipynb?token={token}")
        page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=120_000)
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell"
                               ".currentWidget?.sessionContext?.session?.kernel", timeout=120_000)
        for gid, source in code.items():
            _type(page, cells[gid], source)
        text = _run_and_read(page, 'notebook:run-all-cells')
        rows = {line.split()[0]: line for line in text.splitlines() if line.startswith("test_")}
        assert set(rows) == set(TESTS), text
        assert all(" PASS " in row for row in rows.values()), text
        assert "14 earned, 0 pending" in text and "12 passed, 0 failed" in text, text
        assert "Knowledge check 1: right — " in rows["test_kc1"], text  # and why
        assert f"exercises/{A}/{A}.ipynb" in text and "18 cell(s) as run" in text, text
        saved = (root / "exercises" / A / f"{A}.ipynb").read_text()
        assert "raise NotImplementedError" in saved and "math.exp(x - m)" not in saved
        # %check runs `check --warm`: the first starts a host, which serves the next.
        assert NOTE in text, text
        assert _wait(_socket(runtime).exists), "no check host started"

        # The attention cell changed and run again, then the check cell on its own (Run
        # All would stop at the visible test that now fails).
        _type(page, cells["scaled_dot_product_attention"],
              ATTENTION.replace("math.sqrt(d_k)", "math.sqrt(len(V[0]))"))
        page.keyboard.press("Control+Enter")
        page.evaluate("() => { const nb = window.jupyterapp.shell.currentWidget.content; "
                      "nb.activeCellIndex = nb.widgets.length - 1; }")
        wrong = _run_and_read(page, "notebook:run-cell", before=text)
        assert "1/sqrt(d_v) instead of 1/sqrt(d_k)" in wrong, wrong
        assert " FAIL " in wrong, wrong
        assert NOTE not in wrong, wrong  # served by the host
        browser.close()
