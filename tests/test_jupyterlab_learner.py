"""The learners' JupyterLab (tools/jupyterlab/, installed by ``make venv`` and binder/postBuild),
in Chromium.

``tools/jupyterlab_settings.py --prefix`` installs the settings into a temporary prefix (the
shared environment is never touched), laid out as an environment's: its
``share/jupyter/lab`` (JUPYTERLAB_DIR: the settings' ``overrides.d``, the built application
linked from this Python's) and ``etc/jupyter`` (on JUPYTER_CONFIG_PATH: ``labconfig``'s
``page_config.json``). In that JupyterLab, offline: the menu bar and every menu in it name
no nbgrader item (Nbgrader, Formgrader, Assignment List, Course List, Create Assignment),
no nbgrader command or panel exists, and chapter 2 (MyST Markdown) opened by its URL opens as
a notebook of cells (jupytext), not in the text editor.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from test_jupyterlab_check import CHROMIUM, serve_lab

pytestmark = [pytest.mark.book,  # no group: they need no built book, so the other worker runs them
              pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed")]

CHAPTER = "chapters/02_scaled_dot_product_attention.md"
NBGRADER = ["Nbgrader", "Formgrader", "Assignment List", "Course List", "Create Assignment",
            "Validate"]
# Every label in the menu bar and in each of its menus (submenus included), as shown.
MENU_TEXT = """() => {
  const out = [];
  const walk = (menu, path) => {
    for (const item of menu.items) {
      const label = (item.label || '').replace(/&/g, '');
      if (label) out.push(path + label);
      if (item.submenu) walk(item.submenu, path + label + ' > ');
    }
  };
  for (const menu of window.jupyterapp.shell.widgets('menu').next().value.menus) {
    const title = menu.title.label.replace(/&/g, '');
    out.push(title);
    walk(menu, title + ' > ');
  }
  return out;
}"""


@pytest.fixture(scope="module")
def learner_lab(tmp_path_factory):
    """JupyterLab with the learners' settings, on a copy of chapter 2: (URL, token, prefix)."""
    root = tmp_path_factory.mktemp("learner-lab")
    (root / "chapters").mkdir()
    shutil.copy(REPO / CHAPTER, root / "chapters")
    prefix = root / ".prefix"
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "jupyterlab_settings.py"),
                           "--prefix", str(prefix)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    app_dir = prefix / "share" / "jupyter" / "lab"
    real = Path(sys.prefix) / "share" / "jupyter" / "lab"
    for name in ("static", "schemas", "themes"):
        (app_dir / name).symlink_to(real / name, target_is_directory=True)
    env = {"JUPYTERLAB_DIR": str(app_dir), "JUPYTER_CONFIG_PATH": str(prefix / "etc" / "jupyter")}
    with serve_lab(root, env=env) as (url, token):
        yield url, token, prefix


def test_learners_meet_no_nbgrader_menu_and_chapters_open_as_notebooks(learner_lab):
    from playwright.sync_api import sync_playwright

    url, token, prefix = learner_lab
    installed = sorted(str(p.relative_to(prefix)) for p in prefix.rglob("*.json"))
    assert installed == ["etc/jupyter/labconfig/page_config.json",
                         "share/jupyter/lab/settings/overrides.d/attention-course.json"], installed
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
            (url, "data:", "blob:")) else r.abort())
        page.goto(f"{url}/lab/tree/{CHAPTER}?token={token}")
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell"
                               ".currentWidget?.context?.isReady", timeout=120_000)
        page.locator(".lm-MenuBar-itemLabel").first.wait_for(timeout=60_000)

        bar = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
        labels = page.evaluate(MENU_TEXT)
        assert {"File", "Edit", "Kernel", "Help"} <= set(bar), bar  # the reading works
        assert any(t.startswith("File > ") for t in labels), labels[:10]
        assert not [t for t in bar + labels if any(n.lower() in t.lower() for n in NBGRADER)], \
            [t for t in labels if "grad" in t.lower() or "assignment" in t.lower()]
        commands = page.evaluate("() => window.jupyterapp.commands.listCommands()"
                                 ".filter(c => c.startsWith('nbgrader:'))")
        assert commands == [], commands
        sidebars = page.evaluate("""() => Array.from(document.querySelectorAll(
            '.jp-SideBar .lm-TabBar-tab')).map(t => t.getAttribute('title') || t.innerText)""")
        assert sidebars and not [t for t in sidebars if "assignment" in t.lower()], sidebars
        assert page.locator("#nbgrader-create_assignemnt, .nbgrader-mainarea-widget").count() == 0
        # no "Would you like to get notified about official Jupyter news?" prompt (the walk
        # met it): the lab's settings as its server sends them, overrides in the defaults
        news = page.evaluate("""async () => {
            const s = await window.jupyterapp.serviceManager.settings.fetch(
                '@jupyterlab/apputils-extension:notification');
            const p = s.schema.properties;
            return [s.settings.fetchNews ?? p.fetchNews.default,
                    s.settings.checkForUpdates ?? p.checkForUpdates.default];
        }""")
        assert news == ["false", False], news

        # chapter 2 opened as a notebook: a notebook panel of cells, no text editor
        opened = page.evaluate("""() => { const w = window.jupyterapp.shell.currentWidget;
            return {path: w.context.path, notebook: w.hasClass('jp-NotebookPanel'),
                    cells: w.content.widgets ? w.content.widgets.length : 0,
                    kinds: w.content.widgets ? [...new Set(w.content.widgets.map(
                        c => c.model.type))].sort() : [],
                    first: w.content.widgets?.[0]?.model.sharedModel.getSource() ?? null,
                    editors: document.querySelectorAll('.jp-FileEditor').length}; }""")
        browser.close()
    assert opened["path"] == CHAPTER and opened["notebook"], opened
    assert opened["cells"] > 10 and opened["kinds"] == ["code", "markdown"], opened
    assert "# Scaled dot-product attention" in opened["first"], opened["first"][:200]
    assert opened["editors"] == 0, opened
