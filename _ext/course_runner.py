"""Run buttons in the page: the zero-dependency tier runs in the reader's browser, offline.

- Chapter cells that need only the standard library and the pure-Python reference
  (:mod:`runnable_cells`) get the class ``course-run``: ``course-runner.js`` makes their code
  editable and gives them a Run button.
- Exercise 1's page (``EXERCISE``) gets an editor per solution cell and a Check button that
  runs its tests and knowledge checks (:func:`autograder.inpage.check_exercise`): every
  test whole, hidden parts included, when the book is built with the open course's
  ``solutions/`` and ``in_page_hidden_tests`` is true (the default, the course's
  ``_config.yml``); otherwise the visible parts only, the hidden ones pending.
- Pyodide's core runtime, installed by ``npm ci`` from package-lock.json (pinned version and
  checksum), is copied into ``_static/pyodide/``, with the course's Python files the page
  needs in ``_static/course-runner.json``. Nothing loads from another host, and the runtime
  loads only when a reader first presses Run or Check; pages without such a cell load
  nothing more than before.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from docutils import nodes
from sphinx.errors import ExtensionError

import autograder
from autograder.config import SOLUTIONS
from autograder.verdicts import HIDDEN_BEGIN, grade_id, is_test_cell
from runnable_cells import runnable

PACKAGE = Path(autograder.__file__).resolve().parent  # the course package the build imports
# The runtime's core: the interpreter, its WebAssembly, the standard library, the lock file.
RUNTIME = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
           "pyodide-lock.json")
ASSIGNMENT = "ex01_python_attention"
EXERCISE = f"exercises/{ASSIGNMENT}/{ASSIGNMENT}"  # the docname of exercise 1's page
# The course's Python files in the page (paths in the package), as the browser imports them.
IN_PAGE_FILES = {
    "autograder/__init__.py": None,  # the real one reads solutions/: a docstring instead
    "autograder/testing.py": "testing.py",
    "autograder/check_failure.py": "check_failure.py",  # testing imports these three
    "autograder/closeness.py": "closeness.py",
    "autograder/python_only.py": "python_only.py",
    "autograder/brief_tracebacks.py": "brief_tracebacks.py",  # testing imports it (no-op here)
    "autograder/verdicts.py": "verdicts.py",
    "autograder/check_report.py": "check_report.py",
    "autograder/inpage.py": "inpage.py",
    "autograder/reference/__init__.py": "reference/__init__.py",
    "autograder/reference/python_attention.py": "reference/python_attention.py",
}
# What the page needs to run exercise 1's hidden tests too (the open course's, which anyone
# can read): the checks, the knowledge checks' answers, the hints, the checker's proxy class.
HIDDEN_TEST_FILES = {
    "autograder/checks/__init__.py": "checks/__init__.py",
    "autograder/checks/ex01.py": "checks/ex01.py",
    "autograder/checks/knowledge.py": "checks/knowledge.py",
    "autograder/diagnose_python.py": "diagnose_python.py",
    "autograder/checker.py": "checker.py",
    "autograder/session.py": "session.py",  # the checker's parts
    "autograder/session_errors.py": "session_errors.py",
    "autograder/kernel_line.py": "kernel_line.py",
    "autograder/serving_run.py": "serving_run.py",
    "autograder/remote.py": "remote.py",
    "autograder/remote_torch.py": "remote_torch.py",
    "autograder/wire.py": "wire.py",
    "autograder/wire_folder.py": "wire_folder.py",  # wire's parts
    "autograder/wire_tensor.py": "wire_tensor.py",
    "autograder/wipe.py": "wipe.py",  # the checker removes its exchange folder with it
}


def _check_runtime(app) -> None:
    """Refuse to build without the pinned runtime: ``node_modules/pyodide`` beside the
    book's ``package.json`` (``make book`` runs ``npm ci`` first)."""
    root = Path(app.srcdir)
    pyodide = root / "node_modules" / "pyodide"
    pinned = json.loads((root / "package.json").read_text())["dependencies"]["pyodide"]
    installed = pyodide / "package.json"
    version = json.loads(installed.read_text())["version"] if installed.is_file() else None
    missing = [f for f in RUNTIME if not (pyodide / f).is_file()]
    if version != pinned or missing:
        raise ExtensionError(
            f"the in-page Python runtime (pyodide {pinned}, package.json) is "
            + (f"at version {version}" if version and version != pinned else "not installed")
            + f" in {pyodide.parent}: run `make node` (npm ci), which `make book` does")
    app.course_runtime = pyodide
    app.course_run_pages = set()


def _cells(doctree) -> list[nodes.container]:
    return [n for n in doctree.findall(nodes.container)
            if "cell" in n["classes"] and n.get("nb_element") == "cell_code"]


def _part(cell: nodes.container, name: str) -> nodes.container | None:
    return next((c for c in cell.children if isinstance(c, nodes.container)
                 and name in c["classes"]), None)


def _source_and_text_only(cell: nodes.container) -> tuple[str, bool]:
    """The cell's code ('' when its input is removed) and whether its output is text only."""
    given = _part(cell, "cell_input")
    blocks = list(given.findall(nodes.literal_block)) if given is not None else []
    output = _part(cell, "cell_output")
    shown = output.children if output is not None else []
    text = all(isinstance(o, nodes.literal_block) and "stream" in o["classes"] for o in shown)
    return (blocks[0].astext() if blocks else ""), text


def _mark_cells(app, doctree, docname: str) -> None:
    """Classes for course-runner.js: ``course-run`` cells and exercise 1's answer cells."""
    cells = _cells(doctree)
    if docname == EXERCISE:
        whole = ["course-whole"] if _hidden_tests(app) else []  # the panel says what runs
        for cell in cells:
            meta = (cell.get("cell_metadata") or {}).get("nbgrader", {})
            if meta.get("solution") and not meta.get("grade") and _part(cell, "cell_input"):
                cell["classes"] += ["course-answer", f"course-id-{meta['grade_id']}", *whole]
                app.course_run_pages.add(docname)
        return
    if not docname.startswith("chapters/"):
        return
    read = [_source_and_text_only(c) for c in cells]
    for cell, ok in zip(cells, runnable([s for s, _ in read], [t and bool(s) for s, t in read])):
        if ok:
            cell["classes"].append("course-run")
            app.course_run_pages.add(docname)


def _add_assets(app, pagename, templatename, context, doctree) -> None:
    if pagename in getattr(app, "course_run_pages", ()):
        app.add_js_file("course-runner.js", loading_method="defer")
        app.add_css_file("course-runner.css")


def _hidden_tests(app) -> bool:
    """Whether the page runs exercise 1's hidden tests: the book asks for them and has them."""
    return bool(app.config.in_page_hidden_tests) and \
        (SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()


def exercise_data(srcdir: Path, hidden_tests: bool) -> dict:
    """Exercise 1's released notebook (in the book at ``srcdir``) and what its in-page check
    needs (``spec`` of :func:`autograder.inpage.check_exercise`). With ``hidden_tests`` and
    the course's ``solutions/``: every test cell whole, as ``check`` runs it in the open
    repository, and why each knowledge check's answer is right (the rows of right answers
    show it, as ``check``'s do). Otherwise (a class's private release, or a site that must
    not publish its hidden tests): none, and which tests hide a part is unknown, so none counts as passed
    whole."""
    released = json.loads((srcdir / f"{EXERCISE}.ipynb").read_text())
    page = {"page": EXERCISE, "filename": f"{ASSIGNMENT}.ipynb", "notebook": released}
    path = SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    if not (hidden_tests and path.is_file()):
        return {**page, "spec": {"assignment": ASSIGNMENT, "tests": {}, "hidden": None}}
    source = json.loads(path.read_text())
    tests = {grade_id(cell): "".join(cell["source"]) for cell in source["cells"]
             if is_test_cell(cell) and HIDDEN_BEGIN in "".join(cell["source"])}
    from autograder.checks.knowledge import explanations

    return {**page, "spec": {"assignment": ASSIGNMENT, "tests": tests, "hidden": [],
                             "explanations": explanations(ASSIGNMENT)}}


def _write_runtime(app, exception) -> None:
    """Copy the runtime and the course's files into ``_static``."""
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    (static / "pyodide").mkdir(parents=True, exist_ok=True)
    for name in RUNTIME:
        shutil.copyfile(app.course_runtime / name, static / "pyodide" / name)
    exercise = EXERCISE in app.env.found_docs  # a book without exercise 1 has no Check
    data = exercise_data(Path(app.srcdir), app.config.in_page_hidden_tests) if exercise else None
    wanted = {**IN_PAGE_FILES, **(HIDDEN_TEST_FILES if data and data["spec"]["tests"] else {})}
    files = {path: ((PACKAGE / real).read_text(encoding="utf-8") if real else
                    '"""The course\'s package, as the in-page Python holds it."""\n')
             for path, real in wanted.items()}
    data = {"files": files, "exercise": data}
    (static / "course-runner.json").write_text(json.dumps(data), encoding="utf-8")


def _digest() -> str:
    """The runner's own code: when it changes, every page is written again (a config value
    Sphinx compares with the last build's), so no page keeps buttons an older rule gave."""
    here = Path(__file__).resolve().parent
    parts = [here / "course_runner.py", here / "runnable_cells.py",
             *sorted((here / "static").glob("course-runner*"))]
    return hashlib.sha256(b"".join(p.read_bytes() for p in parts)).hexdigest()[:16]


def setup(app):
    app.add_config_value("course_runner_digest", _digest(), "html")
    # False in a private fork's published site: its hidden tests and answers stay off it.
    app.add_config_value("in_page_hidden_tests", True, "html")
    app.connect("builder-inited", _check_runtime)
    app.connect("doctree-resolved", _mark_cells)
    app.connect("html-page-context", _add_assets)
    app.connect("build-finished", _write_runtime)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": False}
