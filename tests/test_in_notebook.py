"""The in-notebook check's parts without a browser (autograder.in_notebook): the code as run
goes into the right cells, a missing notebook is named with what was tried, the check
cell never runs inside ``check`` or ``grade`` (no recursion), and grading a notebook with
it scores as without it. JupyterLab itself: tests/test_jupyterlab_check.py."""

from __future__ import annotations

from types import SimpleNamespace

import nbformat
import pytest
from conftest import grade
from submissions import filled_notebook, write_submission

from autograder import in_notebook
from autograder.sandbox import sandbox_error

A = "ex01_python_attention"


def test_sources_run_go_into_their_cells_by_id_or_by_the_names_they_define():
    nb = filled_notebook(A, fill_reference=False)
    ran = {"softmax": "def softmax(row):\n    return row\n",
           "vscode-notebook-cell:x#W3": "kc2_answer = 'b'\n",
           "vscode-notebook-cell:x#W9": "unrelated = 1\n"}
    assert in_notebook.as_run(nb, ran) == 2
    by_id = {c.id: c.source for c in nb.cells}
    assert by_id["softmax"] == ran["softmax"] and by_id["kc2"] == "kc2_answer = 'b'\n"
    assert "unrelated" not in "".join(by_id.values())


def test_a_notebook_that_cannot_be_found_is_named_with_what_was_tried(monkeypatch):
    monkeypatch.setenv("JPY_SESSION_NAME", "/nowhere/ex01.ipynb")
    with pytest.raises(in_notebook.NotebookNotFound) as err:
        in_notebook.find_notebook(SimpleNamespace(user_ns={}))
    text = str(err.value)
    assert "__vsc_ipynb_file__ (not set)" in text and "/nowhere/ex01.ipynb" in text
    assert "python -m autograder check" in text


def test_check_inside_a_check_does_nothing(monkeypatch, capsys):
    monkeypatch.setenv(in_notebook.GUARD, "1")
    in_notebook.check_magic(SimpleNamespace(user_ns={}), in_notebook.Recorder(None), "")
    assert "does nothing here" in capsys.readouterr().out


def test_check_does_not_run_the_check_cell(tmp_path, monkeypatch):
    from autograder import notebook_run as nbk

    path = write_submission(tmp_path, "s", A, filled_notebook(A))
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))  # were it run, it would find the file
    nb = nbformat.read(path, as_version=4)
    nbk.execute(nb, path.parent, timeout=60)
    cell = nb.cells[-1]
    assert cell.id == "check" and cell.outputs == [] and cell.execution_count is None
    assert nb.cells[1].outputs == []  # the set-up cell loads the extension without a word


@pytest.mark.slow
def test_grading_with_the_check_cell_scores_as_without_it(tmp_path):
    with_cell = filled_notebook(A)
    without = filled_notebook(A)
    without.cells = [c for c in without.cells if c.get("id") != "check"]
    write_submission(tmp_path / "sub", "with", A, with_cell)
    write_submission(tmp_path / "sub", "without", A, without)
    proc, rows, tests = grade(tmp_path / "sub", tmp_path / "ws",
                              extra=[] if sandbox_error() is None else ["--no-sandbox"])
    # without it, grading puts the released cell back (status restored-tests), as for any
    # deleted read-only cell: the same points
    assert rows["with"]["status"] == "graded", rows["with"]
    assert float(rows["with"]["score"]) == float(rows["without"]["score"]) == 14
    points = {s: {t: r["score"] for t, r in per.items()} for s, per in tests.items()}
    assert points["with"] == points["without"]


@pytest.mark.slow
def test_check_s_rows_say_what_each_test_checks_and_why_an_answer_is_right(tmp_path, capsys):
    """%check prints the command's rows on the code as run (issue 27): a failed test's row
    gives its sentence and then the error, a right knowledge check's row says why it is
    right, a wrong one's the reasoning that leads to the answer."""
    from autograder.checks.knowledge import EXPLANATIONS

    folder = tmp_path / A
    folder.mkdir()
    path = folder / f"{A}.ipynb"
    nbformat.write(filled_notebook(A), path)  # saved: every answer right
    ran = {"kc2": "kc2_answer = 'c'\n",  # as run: kc2 wrong, softmax without the max
           "softmax": "def softmax(row):\n    e = [math.exp(x) for x in row]\n"
                      "    return [v / sum(e) for v in e]\n"}
    assert in_notebook.run_check(path, ran, []) == 1
    out = capsys.readouterr().out
    # it says what it reads (the session, then the saved file), not the terminal's line
    assert "as you ran it: 2 cell(s) as run in this session" in out.splitlines()[0], out
    assert "as last saved" not in out, out
    rows = {ln.split()[0]: ln for ln in out.splitlines() if " pt  " in ln}
    right, reasoning = EXPLANATIONS[A]["kc1"][0], EXPLANATIONS[A]["kc2"][1]
    assert f"PASS     Knowledge check 1: right — {right}" in rows["test_kc1"], rows
    assert "FAIL     Knowledge check 2: softmax of doubled scores. — CheckFailed: Knowledge " \
        f"check 2: 'c' is not the right answer. {reasoning}" in rows["test_kc2"], rows
    assert "FAIL     softmax([1000, 1001]) does not overflow: the max is subtracted first. — " \
        in rows["test_softmax_stable"] and " Hint: " in rows["test_softmax_stable"], rows


def _session_of(nb, cells: set[str] | None = None) -> dict[str, str]:
    """The sources a front end without the notebook's ids (Colab) sends as they are run:
    every code cell of ``nb`` but ``%check`` (or only the named cells), under ids of its own."""
    return {f"colab-cell-{i}": c.source for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and c.id != "check" and (cells is None or c.id in cells)}


def test_check_without_a_file_checks_the_released_exercise_with_the_cells_run(
        monkeypatch, capsys):
    """Where the kernel cannot read the notebook (no JPY_SESSION_NAME, not VS Code, not
    Colab), %check knows the exercise by the set-up and test cells run and checks its
    release with the learner's run sources: every answer run earns its points, an answer
    cell not run counts as not answered (issue 27: an exercise runs where it is opened)."""
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    solved = filled_notebook(A)
    ran = _session_of(solved)
    why = in_notebook.NotebookNotFound("cannot find this notebook's file")
    assert in_notebook.check_without_file(ran, [], why) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"this notebook's file cannot be read here, so "
                                          f"checking exercise {A} as released with the 5 "), out
    assert "0 failed, 0 pending" in out and " FAIL " not in out, out
    # softmax never run in this session: the release's stub is what is checked
    unsolved = {k: v for k, v in ran.items() if not v.startswith("def softmax")}
    assert in_notebook.check_without_file(unsolved, [], why) == 1
    rows = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines() if " pt  " in ln}
    assert "FAIL" in rows["test_softmax_known_values"] and "PASS" in rows["test_kc1"], rows
    assert "NotImplementedError" in rows["test_softmax_known_values"], rows


def test_check_without_a_file_or_an_exercise_says_what_was_tried(monkeypatch, capsys):
    why = in_notebook.NotebookNotFound("cannot find this notebook's file; tried X")
    assert in_notebook.released_as_run({"c1": "x = 1\n"}) is None
    assert in_notebook.check_without_file({"c1": "x = 1\n"}, [], why) == 2
    assert "error: cannot find this notebook's file; tried X" in capsys.readouterr().err


def test_check_in_colab_asks_colab_for_the_notebook_on_screen(monkeypatch, capsys):
    """In Colab there is no file: the front end's ``get_ipynb`` answer (the notebook as
    shown, unsaved edits included) is what is checked. Colab's module is faked here."""
    import sys
    import types

    shown = filled_notebook(A, {"kc2": "kc2_answer = 'c'\n"})  # one wrong answer on screen
    message = types.ModuleType("google.colab._message")
    asked = []

    def blocking_request(kind, timeout_sec=None):
        asked.append(kind)
        return {"ipynb": nbformat.from_dict(shown)}

    message.blocking_request = blocking_request
    colab = types.ModuleType("google.colab")
    colab._message = message
    google = types.ModuleType("google")
    google.colab = colab
    monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google.colab._message", message)
    why = in_notebook.NotebookNotFound("no file")
    assert in_notebook.check_without_file({}, [], why) == 1
    out = capsys.readouterr().out
    assert asked == ["get_ipynb"] and out.startswith("checking this Colab notebook"), out
    rows = {ln.split()[0]: ln for ln in out.splitlines() if " pt  " in ln}
    assert "FAIL" in rows["test_kc2"] and "PASS" in rows["test_kc1"], rows
    assert "1 failed, 0 pending" in out, out
