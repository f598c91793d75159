"""``%check``: run ``python -m autograder check`` from inside the notebook, on the code as run.

Every exercise's set-up cell loads this IPython extension (``%load_ext
autograder.in_notebook``): from then on it remembers, per cell, the source the learner last
ran in this kernel. Its last cell, ``%check``, writes the notebook as it is (the saved file,
with the sources run this session in their cells) to a temporary folder in the exercise's
layout, runs the command on it in a subprocess and prints its table, so the verdicts are
those of the command (the open repository's hidden tests included, through the trusted
checker).

Cells are known by the id the editor sends with each run: JupyterLab and Jupyter Notebook
send the notebook's own cell id (``cellId``). VS Code and Colab send ids of their own; there
a source run replaces the solution cell that defines the same names. The file is found
through ``JPY_SESSION_NAME`` (Jupyter's server) or ``__vsc_ipynb_file__`` (VS Code). Where
there is no file to find: in Colab the notebook itself is asked for (Colab's front end
answers ``get_ipynb`` with the notebook as it is on screen); elsewhere the released exercise
whose cells the learner ran is checked, with the sources run this session in it.

The check never runs where it would check itself: the cell carries the ``skip-execution``
tag (nbclient, and so ``check`` and ``grade``, skip it), a line magic is left out by the
course's Python-only runners (the checker's set-up namespace, the standard-library probe,
the website's in-page check), and the command runs with :data:`GUARD` set, under which
``%check`` does nothing. This module holds no test, check or answer: a graded kernel loads
it (:data:`autograder.sandbox.KERNEL_FILES`).
"""

from __future__ import annotations

import ast
import atexit
import functools
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder import env_vars
from autograder.config import EXERCISES
from autograder.exercises import ASSIGNMENTS, assignment_of_path
from autograder.verdicts import nbgrader_meta, normalise

GUARD = env_vars.IN_NOTEBOOK_CHECK.name  # set while a check started here runs
WARM = "--warm"  # autograder.check_warm.WARM_FLAG (not imported: a kernel file)


class NotebookNotFound(Exception):
    """The notebook's file could not be found; the message says what was tried."""


class Recorder:
    """The source last run of each cell, by the id its editor sent (in run order)."""

    def __init__(self, shell):
        self.shell = shell
        self.ran: dict[str, str] = {}

    def pre_run_cell(self, info) -> None:
        """IPython's ``pre_run_cell`` event: remember ``info``'s source under its cell id."""
        cell_id = getattr(info, "cell_id", None) or self._parent_cell_id()
        if cell_id and not info.raw_cell.lstrip().startswith("%check"):
            self.ran.pop(cell_id, None)  # the latest run goes last
            self.ran[cell_id] = info.raw_cell

    def _parent_cell_id(self) -> str | None:
        kernel = getattr(self.shell, "kernel", None)
        try:
            return kernel.get_parent().get("metadata", {}).get("cellId")
        except Exception:  # noqa: BLE001 - no kernel (a terminal IPython): no id
            return None


def find_notebook(shell) -> Path:
    """The file of the notebook this kernel runs, or :class:`NotebookNotFound`."""
    tried = []
    vscode = shell.user_ns.get("__vsc_ipynb_file__")
    session = os.environ.get("JPY_SESSION_NAME")
    for what, value in (("VS Code's __vsc_ipynb_file__", vscode),
                        ("Jupyter's JPY_SESSION_NAME", session)):
        if not value:
            tried.append(f"{what} (not set)")
        elif Path(value).suffix == ".ipynb" and Path(value).is_file():
            return Path(value)
        else:
            tried.append(f"{what} ({value}: no such notebook)")
    raise NotebookNotFound(
        "cannot find this notebook's file; tried " + ", ".join(tried) + ". Save the "
        "notebook and run `python -m autograder check PATH/TO/NOTEBOOK.ipynb` in a terminal.")


def colab_notebook():
    """The notebook on screen in Colab (``nbformat`` node), or None outside Colab.

    Colab keeps no notebook file beside the kernel; its front end answers the
    ``get_ipynb`` request with the notebook as shown, unsaved edits included.
    """
    try:
        from google.colab import _message  # only in Colab's kernel
    except ImportError:
        return None
    import nbformat

    try:
        reply = _message.blocking_request("get_ipynb", timeout_sec=30)
        return nbformat.from_dict(reply["ipynb"])
    except Exception:  # noqa: BLE001 - an old or changed Colab: fall back to the release
        return None


def released_as_run(ran: dict[str, str]):
    """(assignment, its released notebook) whose read-only cells the learner ran most, or
    None when no run cell is one of a released exercise's (a notebook of another course).

    Cells run in a fresh session carry the editor's own ids, so the exercise is known by
    content: the set-up and test cells that ran, compared with every released notebook's.
    """
    import nbformat

    sources = {normalise(source) for source in ran.values()}
    best, best_count = None, 0
    for name in ASSIGNMENTS:
        path = EXERCISES / name / f"{name}.ipynb"
        if not path.is_file():
            continue
        nb = nbformat.read(path, as_version=4)
        count = sum(1 for c in nb.cells if c.cell_type == "code"
                    and not nbgrader_meta(c).get("solution") and normalise(c.source) in sources)
        if count > best_count:
            best, best_count = (name, nb), count
    return best


def _defined(source: str) -> set[str]:
    """The names ``source`` defines at its top level (none when it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def as_run(nb, ran: dict[str, str]) -> int:
    """Put the sources run this session into ``nb``'s cells (by id; a source whose id is
    not the notebook's replaces the solution cell defining the same names). Returns how
    many cells took a source from this session."""
    by_id = {c.get("id"): c for c in nb.cells if c.cell_type == "code"}
    solutions = [c for c in by_id.values()
                 if c.get("metadata", {}).get("nbgrader", {}).get("solution")]
    taken = set()
    for cell_id, source in ran.items():
        cell = by_id.get(cell_id)
        if cell is None:
            names = _defined(source)
            cell = next((c for c in solutions if names & _defined(c.source)), None)
        if cell is not None:
            cell.source = source
            taken.add(id(cell))
    return len(taken)


def run_check(path: Path, ran: dict[str, str], args: list[str]) -> int:
    """Check ``path`` as run (``ran``) with ``python -m autograder check ARGS``, printing
    its output as it comes; returns its exit status."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    taken = as_run(nb, ran)
    print(f"checking {path} as you ran it: {taken} cell(s) as run in this session, the "
          "others as saved", flush=True)
    return check_notebook(nb, assignment_of_path(path), path.name, args, shown_as=str(path))


def check_notebook(nb, name: str | None, file_name: str, args: list[str],
                   shown_as: str) -> int:
    """Write ``nb`` to this kernel's temporary folder in the exercise's layout
    (``name/name.ipynb``), run ``python -m autograder check ARGS --warm`` on it with
    :data:`GUARD` set and print its output as it comes, the temporary path shown as
    ``shown_as``; returns its exit status. ``--warm``: the next ``%check`` is served by a
    process kept ready for it (:mod:`autograder.check_warm`;
    ``AUTOGRADER_CHECK_IDLE=0`` keeps none)."""
    import nbformat

    folder = _workdir() / (name or Path(file_name).stem)
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():  # what the last check's kernel wrote there; the folder
        if old.is_dir() and not old.is_symlink():  # stays (the next kernel runs in it)
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink(missing_ok=True)
    copy = folder / (f"{name}.ipynb" if name else file_name)
    nbformat.write(nb, copy)
    env = dict(os.environ, **{GUARD: "1"})
    proc = subprocess.Popen([sys.executable, "-m", "autograder", "check", str(copy), *args,
                             WARM], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, cwd=folder)
    for line in proc.stdout:
        print(line.replace(str(copy), shown_as), end="", flush=True)
    return proc.wait()


@functools.cache
def _workdir() -> Path:
    """This kernel's temporary folder for the notebooks ``%check`` writes, the same for
    every check (``--warm``'s host has the next check's kernel started in it), removed when
    the kernel exits."""
    path = Path(tempfile.mkdtemp(prefix="autograder-check-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def check_without_file(ran: dict[str, str], args: list[str], why: NotebookNotFound) -> int:
    """``%check`` where the notebook has no file the kernel can read: Colab's notebook as
    shown, else the released exercise with the cells run this session; returns the exit
    status (2, with the reason printed, when neither can be had)."""
    nb = colab_notebook()
    if nb is not None:
        found = released_as_run({str(i): c.source for i, c in enumerate(nb.cells)
                                 if c.cell_type == "code"})
        name = found[0] if found else None
        print("checking this Colab notebook as it is on screen", flush=True)
        return check_notebook(nb, name, f"{name or 'notebook'}.ipynb", args,
                              shown_as="this notebook")
    found = released_as_run(ran)
    if found is None:
        print(f"error: {why}", file=sys.stderr)
        return 2
    name, nb = found
    taken = as_run(nb, ran)
    print(f"this notebook's file cannot be read here, so checking exercise {name} as released "
          f"with the {taken} answer cell(s) you ran in this session; an answer cell you have "
          "not run since the kernel started counts as not answered (run it, then %check)",
          flush=True)
    return check_notebook(nb, name, f"{name}.ipynb", args, shown_as=f"{name}.ipynb")


def check_magic(shell, recorder: Recorder, line: str) -> None:
    """``%check [--timeout S] [--visible-only]``: the command's check of this notebook."""
    if os.environ.get(GUARD):
        print("%check does nothing here: this notebook is being checked already")
        return
    try:
        path = find_notebook(shell)
    except NotebookNotFound as exc:
        check_without_file(recorder.ran, shlex.split(line), exc)
        return
    run_check(path, recorder.ran, shlex.split(line))


def load_ipython_extension(shell) -> None:
    """``%load_ext autograder.in_notebook``: remember each cell's run and define ``%check``."""
    if getattr(shell, "_autograder_recorder", None) is not None:
        return  # loaded already (the set-up cell run again)
    recorder = Recorder(shell)
    shell._autograder_recorder = recorder
    shell.events.register("pre_run_cell", recorder.pre_run_cell)
    shell.register_magic_function(lambda line: check_magic(shell, recorder, line),
                                  magic_kind="line", magic_name="check")
