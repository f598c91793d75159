"""Run buttons in the page: the zero-dependency tier runs in the reader's browser, offline.

- Chapter cells that need only the standard library and the pure-Python reference
  (:mod:`runnable_cells`) get the class ``course-run``: ``course-runner.js`` makes their code
  editable and gives them a Run button.
- Exercise 1's page (``EXERCISE``) gets an editor per solution cell and a Check button that
  runs its visible tests and knowledge checks (:func:`autograder.inpage.check_exercise`).
- Pyodide's core runtime, installed by ``npm ci`` from package-lock.json (pinned version and
  checksum), is copied into ``_static/pyodide/``, with the course's Python files the page
  needs in ``_static/course-runner.json``. Nothing loads from another host, and the runtime
  loads only when a reader first presses Run or Check; pages without such a cell load
  nothing more than before.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

from docutils import nodes
from sphinx.errors import ExtensionError

import autograder
from autograder.checks.knowledge import ANSWERS
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
    "autograder/verdicts.py": "verdicts.py",
    "autograder/inpage.py": "inpage.py",
    "autograder/reference/__init__.py": "reference/__init__.py",
    "autograder/reference/python_attention.py": "reference/python_attention.py",
}
KNOWLEDGE_CALL = re.compile(r"knowledge_check\(\s*[\"'](kc\d+)[\"']\s*,\s*(\w+)\s*\)")


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
        for cell in cells:
            meta = (cell.get("cell_metadata") or {}).get("nbgrader", {})
            if meta.get("solution") and not meta.get("grade") and _part(cell, "cell_input"):
                cell["classes"] += ["course-answer", f"course-id-{meta['grade_id']}"]
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


def exercise_data(srcdir: Path) -> dict:
    """Exercise 1's released notebook (in the book at ``srcdir``) and what its in-page check
    needs (``spec`` of :func:`autograder.inpage.check_exercise`): the tests whose hidden
    part runs only in ``check`` and in grading, and its knowledge checks' answers, which the
    open repository holds in :mod:`autograder.checks.knowledge`."""
    released = json.loads((srcdir / f"{EXERCISE}.ipynb").read_text())
    page = {"page": EXERCISE, "filename": f"{ASSIGNMENT}.ipynb", "notebook": released}
    path = SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    if not path.is_file():  # a class's private release: which tests hide a part is unknown
        return {**page, "spec": {"assignment": ASSIGNMENT, "hidden": None, "knowledge": {},
                                 "answers": {}}}
    source = json.loads(path.read_text())
    hidden, knowledge = [], {}
    for cell in source["cells"]:
        text = "".join(cell["source"])
        if not (is_test_cell(cell) and HIDDEN_BEGIN in text):
            continue
        call = KNOWLEDGE_CALL.search(text.split(HIDDEN_BEGIN, 1)[1])
        if call:
            knowledge[grade_id(cell)] = [call.group(1), call.group(2)]
        else:
            hidden.append(grade_id(cell))
    answers = {name: ANSWERS[ASSIGNMENT][name] for name, _ in knowledge.values()}
    return {**page, "spec": {"assignment": ASSIGNMENT, "hidden": hidden,
                             "knowledge": knowledge, "answers": answers}}


def _write_runtime(app, exception) -> None:
    """Copy the runtime and the course's files into ``_static``."""
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    (static / "pyodide").mkdir(parents=True, exist_ok=True)
    for name in RUNTIME:
        shutil.copyfile(app.course_runtime / name, static / "pyodide" / name)
    files = {path: ((PACKAGE / real).read_text(encoding="utf-8") if real else
                    '"""The course\'s package, as the in-page Python holds it."""\n')
             for path, real in IN_PAGE_FILES.items()}
    exercise = EXERCISE in app.env.found_docs  # a book without exercise 1 has no Check
    data = {"files": files, "exercise": exercise_data(Path(app.srcdir)) if exercise else None}
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
    app.connect("builder-inited", _check_runtime)
    app.connect("doctree-resolved", _mark_cells)
    app.connect("html-page-context", _add_assets)
    app.connect("build-finished", _write_runtime)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": False}
