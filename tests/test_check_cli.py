"""``python -m autograder check NOTEBOOK``: one row per graded cell, and only true claims.

A test with a hidden part is never shown as passed with its points earned (case 002);
edited or missing tests are run as grading runs them (the released version) and warned
about; written answers are listed as graded by the instructor; a timeout, a syntax error,
a wrong path and another assignment's notebook each get a clear answer.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from conftest import run
from submissions import filled_notebook, parse_variant, variants

import autograder
from autograder.config import EXERCISES, SOLUTIONS
from autograder.notebook import grade_id, is_manual_cell, is_test_cell
from autograder.rust_source import find_rustc

ASSIGNMENTS = list(autograder.ASSIGNMENTS)  # the registry: exercises found in solutions/
pytestmark = pytest.mark.slow  # runs notebooks in kernels
EX01 = "ex01_python_attention"
EX08 = "ex08_rust_attention"


def _graded(assignment):
    nb = nbformat.read(SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    return ([grade_id(c) for c in nb.cells if is_test_cell(c)],
            [grade_id(c) for c in nb.cells if is_manual_cell(c)])


def _check(path, *extra):
    return run([sys.executable, "-m", "autograder", "check", str(path), *extra])


class _Rows(dict):
    """grade_id -> its row of the table; a missing row fails with all that check printed."""

    def __init__(self, proc):
        super().__init__((ln.split()[0], ln) for ln in proc.stdout.splitlines()
                         if re.search(r"\s\d+(\.\d+)? pt\s", ln))
        self.printed = f"exit {proc.returncode}\n{proc.stdout}{proc.stderr}"

    def __missing__(self, grade_id):
        raise AssertionError(f"no row for {grade_id}; check printed:\n{self.printed}")


_rows = _Rows


def _points(stdout: str) -> tuple[float, float, float]:
    m = re.search(r"points: ([\d.]+) earned, ([\d.]+) pending.*?, ([\d.]+) lost", stdout)
    assert m, stdout
    return tuple(float(x) for x in m.groups())


def _write(tmp_path, assignment, cells=None, name=None, edit=None):
    nb = filled_notebook(assignment, cells)
    if edit:
        edit(nb)
    path = tmp_path / (name or f"{assignment}.ipynb")
    nbformat.write(nb, path)
    return path


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_check_passes_on_solution(assignment):
    """The instructor's source runs its hidden parts too: every test PASS, written answers
    listed as graded by the instructor."""
    proc = _check(SOLUTIONS / assignment / f"{assignment}.ipynb")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tests, manual = _graded(assignment)
    rows = _rows(proc)
    assert sorted(rows) == sorted(tests + manual)
    assert all(" PASS " in rows[t] for t in tests), proc.stdout
    assert all(" MANUAL " in rows[m] and "graded by your instructor" in rows[m] for m in manual)
    # each knowledge check's row says its answer is right, and why (issue 27)
    from autograder.checks.knowledge import EXPLANATIONS

    for kc, (right, _) in EXPLANATIONS[assignment].items():
        assert f"PASS     Knowledge check {kc[2:]}: right — {right}" in rows[f"test_{kc}"], \
            rows[f"test_{kc}"]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_correct_learner_notebook_earns_every_point_with_none_pending(assignment, tmp_path):
    """Issue 27's must-show: the released notebook with correct answers (as a learner holds
    it, no hidden test in it) checked in the open repository: every test PASS, every
    autograded point earned, nothing pending but the written answers the instructor grades."""
    nb = filled_notebook(assignment)
    for cell in nb.cells:  # a written answer, filled in as a learner would
        if is_manual_cell(cell) and cell.cell_type == "markdown":
            cell.source = "My answer, in my own words."
    folder = tmp_path / assignment
    folder.mkdir()
    nbformat.write(nb, folder / f"{assignment}.ipynb")
    proc = _check(folder / f"{assignment}.ipynb")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tests, manual = _graded(assignment)
    rows = _rows(proc)
    assert all(" PASS " in rows[t] for t in tests), proc.stdout
    earned, pending, lost = _points(proc.stdout)
    by_instructor = sum(float(re.search(r"\s(\d+(?:\.\d+)?) pt\s", rows[m]).group(1))
                        for m in manual)
    assert (pending, lost) == (by_instructor, 0.0) and earned > 0, proc.stdout
    assert re.search(rf"^{len(tests)} passed, 0 failed, {len(manual)} pending$", proc.stdout, re.M), \
        proc.stdout


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_check_fails_on_learner_notebook(assignment):
    proc = _check(EXERCISES / assignment / f"{assignment}.ipynb")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    tests, manual = _graded(assignment)
    rows = _rows(proc)
    assert sorted(rows) == sorted(tests + manual)
    assert any(" FAIL " in r and "NotImplementedError" in r for r in rows.values())
    assert _points(proc.stdout)[0] == 0, "the untouched notebook earns nothing"
    for m in manual:  # a blank written answer is named, and makes the exit status 1
        assert " BLANK " in rows[m] and f"written answer {m} is still empty" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "without encryption" not in proc.stdout + proc.stderr


def test_check_reports_the_failing_behaviour(tmp_path):
    cells, _ = parse_variant(variants(EX01)["softmax_unstable"])
    proc = _check(_write(tmp_path, EX01, cells))
    assert proc.returncode == 1
    # the terminal check says what it reads (%check, in the notebook, says it reads the session)
    assert proc.stdout.splitlines()[1].startswith("(the notebook as last saved: save it first"), \
        proc.stdout
    rows = _rows(proc)
    assert " FAIL " in rows["test_softmax_stable"] and "OverflowError" in rows["test_softmax_stable"]
    assert " FAIL " not in rows["test_softmax_known_values"]
    # the row says what the test checks, then the error and its hint, on one line (issue 27)
    assert rows["test_softmax_stable"].split("  FAIL     ")[1].startswith(
        "softmax([1000, 1001]) does not overflow: the max is subtracted first. — CheckFailed: "
        "softmax([1000, 1001]): raised OverflowError: math range error. Hint: exp of a large "
        "score overflows"), rows["test_softmax_stable"]


def test_a_failure_in_a_hidden_case_says_so(tmp_path):
    """The row's sentence describes the visible example; a failure of another case (a
    hidden part's, with its own sizes) says it is one, and a visible failure does not."""
    ex02 = "ex02_numpy_attention"
    cells, _ = parse_variant(variants(ex02)["softmax_global_max"])
    rows = _rows(_check(_write(tmp_path, ex02, cells)))
    assert " FAIL " in rows["test_softmax_stable"], rows
    assert "— CheckFailed: in a hidden case of this test: softmax of one row near +1000" in \
        rows["test_softmax_stable"], rows["test_softmax_stable"]
    cells, _ = parse_variant(variants(ex02)["softmax_ignores_axis"])
    rows = _rows(_check(_write(tmp_path, ex02, cells)))
    assert " FAIL " in rows["test_softmax_axis"], rows
    assert "hidden case" not in rows["test_softmax_axis"], rows["test_softmax_axis"]


@pytest.mark.skipif(find_rustc() is None, reason="needs a Rust toolchain")
def test_a_rust_stub_is_named_as_todo(tmp_path):
    """ex08 with scaled_dot_product_attention still the release's todo!(): its failing
    rows, hidden ones included, name todo!(), not Python's NotImplementedError."""
    ex08 = "ex08_rust_attention"
    released = nbformat.read(EXERCISES / ex08 / f"{ex08}.ipynb", as_version=4)
    (stub,) = [c.source for c in released.cells
               if c.metadata.get("nbgrader", {}).get("grade_id") == "scaled_dot_product_attention"]
    assert "todo!()" in stub
    rows = _rows(_check(_write(tmp_path, ex08, {"scaled_dot_product_attention": stub})))
    stubbed = [r for r in rows.values() if "not implemented yet" in r]
    assert any("hidden case" in r for r in stubbed), rows
    assert all("still reaches the stub's todo!()" in r for r in stubbed), stubbed
    assert not any("NotImplementedError" in r for r in rows.values()), rows


def test_no_hidden_input_reaches_the_rows_through_an_exception(tmp_path):
    """A softmax that raises with the hidden row in its message (and in its exception
    class's name) fails the hidden tests with the case and ValueError named, never the row,
    the message or the class's name; the visible tests keep their whole messages."""
    path = variants(EX01)["softmax_raises_with_its_input"]
    cells, fails = parse_variant(path)
    proc = _check(_write(tmp_path, EX01, cells))
    rows = _rows(proc)
    assert {t for t, r in rows.items() if " FAIL " in r} == fails, \
        f"exit status {proc.returncode}\n{proc.stdout}\nstderr: {proc.stderr[-3000:]}"
    assert "HIDDEN-ROW" not in proc.stdout + proc.stderr, proc.stdout
    assert not re.search(r"Row\d", proc.stdout + proc.stderr), proc.stdout
    assert ("softmax of a random row of length 1: raised ValueError (a hidden case: its "
            "message is not shown)") in rows["test_softmax_known_values"]


@pytest.mark.skipif(find_rustc() is None, reason="needs a Rust toolchain")
def test_no_hidden_input_reaches_the_rows_through_a_rust_err(tmp_path):
    """ex08: a softmax whose Err holds the row it was given (a Rust Err reaches Python as
    ValueError) fails the checks with ValueError named, never the Err's text."""
    cells, fails = parse_variant(variants(EX08)["softmax_err_with_its_input"])

    def unmarked(nb):  # the Rust cells' own solution markers: a learner's notebook has none
        for c in nb.cells:
            c.source = "\n".join(ln for ln in c.source.splitlines()
                                 if "BEGIN SOLUTION" not in ln and "END SOLUTION" not in ln)
    proc = _check(_write(tmp_path, EX08, cells, edit=unmarked))
    rows = _rows(proc)
    assert {t for t, r in rows.items() if " FAIL " in r} == fails, proc.stdout + proc.stderr
    assert "HIDDEN-ROW" not in proc.stdout + proc.stderr, proc.stdout
    assert "raised ValueError (a hidden case" in rows["test_safe_std_only"]


def test_hidden_tests_run_where_the_course_has_them(tmp_path):
    """Issue 27: in the open repository the hidden tests run too, through the trusted
    checker as grading runs them: every point gets its verdict, a wrong knowledge check is
    named wrong, and no hidden expected value is shown."""
    cells, fails = parse_variant(variants(EX01)["knowledge_checks_wrong"])
    proc = _check(_write(tmp_path, EX01, cells))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "hidden tests run too, by the course's checker" in proc.stdout
    rows = _rows(proc)
    assert {t for t, r in rows.items() if " FAIL " in r} == fails
    assert all("is not the right answer" in rows[t] for t in fails), proc.stdout
    assert _points(proc.stdout) == (11.0, 0.0, 3.0)
    from autograder.checks.knowledge import ANSWERS, EXPLANATIONS

    shown = [str(v) for v in ANSWERS[EX01].values()]
    assert not any(f"'{v}'" in rows[t] or f" {v} " in rows[t] for t in fails for v in shown)
    # each wrong answer's row: the test's sentence, then the reasoning that leads to the
    # answer (issue 27)
    assert "FAIL     Knowledge check 1: the shape of the attention weights. — CheckFailed: " \
        "Knowledge check 1: 'a' is not the right answer. " in rows["test_kc1"], rows["test_kc1"]
    for kc, (right, reasoning) in EXPLANATIONS[EX01].items():
        assert reasoning in rows[f"test_{kc}"] and right not in rows[f"test_{kc}"]


def test_case_002_knowledge_check_points_are_pending_not_earned(tmp_path):
    """Case 002: every function right, the knowledge checks wrong, checked with the visible
    tests only (a class's private release has no hidden tests). The kc tests' visible
    parts pass, their hidden parts (the answers) are graded later: pending, never earned;
    exit 0 since nothing the learner can see failed."""
    cells, fails = parse_variant(variants(EX01)["knowledge_checks_wrong"])
    assert fails == {"test_kc1", "test_kc2", "test_kc3"}
    proc = _check(_write(tmp_path, EX01, cells), "--visible-only")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = _rows(proc)
    for t in ("test_kc1", "test_kc2", "test_kc3"):
        assert " PENDING " in rows[t] and "the rest is graded later" in rows[t], rows[t]
    # Entirely visible tests are the only ones earned: test_softmax_empty (1 point) and
    # test_attention_worked_example (2 points); the other 11 points wait for hidden tests.
    earned = {t for t, r in rows.items() if " PASS " in r}
    assert earned == {"test_softmax_empty", "test_attention_worked_example"}, proc.stdout
    assert _points(proc.stdout) == (3.0, 11.0, 0.0)


def test_wrong_assignment_is_named_before_anything_runs(tmp_path):
    """An ex02 notebook where ex01 is expected (file named like ex01, ids largely shared)."""
    ran = tmp_path / "ran"  # the first cell would create it if the notebook were run
    path = _write(tmp_path, "ex02_numpy_attention", name=f"{EX01}.ipynb",
                  edit=lambda nb: nb.cells.insert(0, nbformat.v4.new_code_cell(
                      f"open({str(ran)!r}, 'w').close()")))
    proc = _check(path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "wrong-assignment" in proc.stderr and "ex02_numpy_attention" in proc.stderr
    assert not _rows(proc)
    assert not ran.exists()


def test_edited_and_deleted_tests_are_restored_and_warned_about(tmp_path):
    def edit(nb):
        for c in nb.cells:
            if grade_id(c) == "test_softmax_stable":
                c.source = '"""softmax([1000, 1001]) does not overflow."""\nassert True\n'
        nb.cells = [c for c in nb.cells if grade_id(c) != "test_softmax_empty"]

    cells, _ = parse_variant(variants(EX01)["softmax_unstable"])
    proc = _check(_write(tmp_path, EX01, cells, edit=edit))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "test test_softmax_stable was edited" in proc.stdout
    assert "test test_softmax_empty was missing" in proc.stdout
    rows = _rows(proc)
    assert " FAIL " in rows["test_softmax_stable"], "the released test runs, not the edited one"
    assert " PASS " in rows["test_softmax_empty"]


def test_syntax_error_is_named_with_the_learners_line(tmp_path):
    def edit(nb):
        for c in nb.cells:
            if grade_id(c) == "softmax":
                c.source = c.source.replace("m = max(row)", "m = max(row")

    proc = _check(_write(tmp_path, EX01, edit=edit))
    assert proc.returncode == 1
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("error in your cell"))
    assert "softmax" in line and "SyntaxError" in line and "m = max(row" in line, line
    assert re.search(r"line \d+", line)
    rows = _rows(proc)
    assert "fix the error in cell 'softmax' above first" in rows["test_softmax_known_values"]


def test_endless_loop_is_a_timed_out_row(tmp_path):
    def edit(nb):
        for c in nb.cells:
            if grade_id(c) == "softmax":
                c.source = "def softmax(row):\n    while True:\n        pass\n"

    proc = _check(_write(tmp_path, EX01, edit=edit), "--timeout", "3")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = _rows(proc)
    assert " TIMEOUT " in rows["test_softmax_known_values"] and "after 3 s" in rows[
        "test_softmax_known_values"]
    assert "TIMEOUT  softmax([1, 2, 3]) returns three floats with the known values. — timed " \
        "out: still running after 3 s" in rows["test_softmax_known_values"]
    assert all(" NOT RUN " in r for t, r in rows.items() if t != "test_softmax_known_values")
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "CellTimeoutError" not in proc.stdout + proc.stderr


def test_a_kernel_that_dies_in_a_test_fails_that_test_and_keeps_the_ones_before(tmp_path):
    """softmax ends the kernel (os._exit) when it gets an empty row: test_softmax_empty
    fails with the death, the two softmax tests before it (served in the same kernel cell)
    keep their PASS, and the tests after it are not run; no traceback of the check's own."""
    def edit(nb):
        for c in nb.cells:
            if grade_id(c) == "softmax":
                c.source += ("\nimport os\n_softmax = softmax\n\n\ndef softmax(row):\n"
                             "    if len(row) == 0:\n        os._exit(1)\n"
                             "    return _softmax(row)\n")

    proc = _check(_write(tmp_path, EX01, edit=edit))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = _rows(proc)
    assert " PASS " in rows["test_softmax_known_values"]
    assert " PASS " in rows["test_softmax_stable"]
    assert " FAIL " in rows["test_softmax_empty"] and \
        "DeadKernelError: the kernel died while running this test" in rows["test_softmax_empty"]
    assert " NOT RUN " in rows["test_attention_worked_example"] and \
        "the kernel died while cell" in rows["test_attention_worked_example"]
    assert "Traceback" not in proc.stdout + proc.stderr


def test_check_missing_notebook_is_a_clear_error_with_a_suggestion(tmp_path):
    proc = _check(tmp_path / "nope.ipynb")
    assert proc.returncode == 2 and "no notebook" in proc.stderr
    proc = _check(EXERCISES / EX01 / "ex01.ipynb")
    assert proc.returncode == 2
    assert f"did you mean exercises/{EX01}/{EX01}.ipynb" in proc.stderr, proc.stderr


def test_not_a_notebook_is_a_clear_error(tmp_path):
    path = tmp_path / f"{EX01}.ipynb"
    path.write_text("{ not json", encoding="utf-8")
    proc = _check(path)
    assert proc.returncode == 2 and "is not a Jupyter notebook" in proc.stderr


def test_check_of_a_folder_checks_its_one_notebook(tmp_path):
    """The newcomer walk typed `check exercises/ex01_python_attention/` and got a list of
    other exercises' notebooks: a folder holding one notebook is that notebook."""
    folder = tmp_path / EX01
    folder.mkdir()
    nbformat.write(filled_notebook(EX01), folder / f"{EX01}.ipynb")
    proc = _check(folder)
    assert f"checking {folder / f'{EX01}.ipynb'}, the notebook in {folder}" in proc.stderr
    assert proc.returncode == 0 and "0 failed" in proc.stdout, proc.stdout + proc.stderr
    (folder / "copy.ipynb").write_text("{}", encoding="utf-8")
    proc = _check(folder)  # two notebooks: which one is not guessed
    assert proc.returncode == 2 and "no notebook at" in proc.stderr, proc.stderr


def test_a_mistyped_name_suggests_the_notebooks_of_its_folder_never_a_checkpoint(
        tmp_path, monkeypatch):
    """The newcomer walk: `check exercises/ex01_python_attention/nope.ipynb` suggested
    ex03's notebook, and a misspelt name JupyterLab's checkpoint copy."""
    from autograder.check_command import _suggest

    folder = tmp_path / "exercises" / EX01
    (folder / ".ipynb_checkpoints").mkdir(parents=True)
    (folder / f"{EX01}.ipynb").write_text("{}", encoding="utf-8")
    (folder / ".ipynb_checkpoints" / f"{EX01}-checkpoint.ipynb").write_text("{}")
    monkeypatch.chdir(tmp_path)
    mine = f"exercises/{EX01}/{EX01}.ipynb"
    assert _suggest(folder / "nope.ipynb") == [mine]
    assert _suggest(folder / "ex01_pyton_attention.ipynb") == [mine]


def test_check_runs_without_importing_nbgrader():
    """``check`` runs the notebook and its trusted tests without nbgrader (issue 25: its
    import is about a second of a check that should take one): the checker reads cells by
    their metadata and finds the hidden-test delimiters itself, which are nbgrader's."""
    from nbgrader.preprocessors import ClearHiddenTests

    from autograder import checker

    marks = ClearHiddenTests()
    assert (checker.HIDDEN_TESTS_BEGIN, checker.HIDDEN_TESTS_END) == (
        marks.begin_test_delimeter, marks.end_test_delimeter)
    # check ends its process itself (exit_without_teardown), after the atexit handlers
    code = ("import atexit, runpy, sys\n"
            "atexit.register(lambda: print('nbgrader', sorted(m for m in sys.modules"
            " if m.split('.')[0] == 'nbgrader')[:3]))\n"
            f"sys.argv = ['autograder', 'check', {str(SOLUTIONS / EX01 / (EX01 + '.ipynb'))!r}]\n"
            "runpy.run_module('autograder', run_name='__main__')\n")
    proc = run([sys.executable, "-c", code])
    assert "12 passed, 0 failed, 0 pending" in proc.stdout, proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stdout[-500:] + proc.stderr
    assert proc.stdout.splitlines()[-1] == "nbgrader []", proc.stdout[-500:]


def test_a_check_ends_without_teardown_yet_keeps_its_output_and_clean_up():
    """exit_without_teardown: the exit status is the check's, the output written to a pipe
    arrives whole and the atexit handlers run (the probes' clean-up); while another thread
    still runs, it returns and the process ends as usual."""
    ends = ("import atexit, threading\n"
            "from autograder.cli import exit_without_teardown\n"
            "atexit.register(lambda: print('clean-up ran'))\n"
            "print('row 1 of the table')\n")
    buffered = {"PYTHONUNBUFFERED": ""}  # a pipe's output waits in a buffer, as by default
    proc = run([sys.executable, "-c", ends + "exit_without_teardown(3)\nprint('not reached')\n"],
               env=buffered)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "row 1 of the table\nclean-up ran\n"
    busy = ("done = threading.Event()\n"
            "threading.Thread(target=done.wait).start()\n"
            "exit_without_teardown(3)\n"
            "print('returned')\n"
            "done.set()\n")
    proc = run([sys.executable, "-c", ends + busy], env=buffered)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "row 1 of the table\nreturned\nclean-up ran\n"


def test_every_command_ends_without_the_interpreters_teardown():
    """``python -m autograder`` ends every command through ``exit_without_teardown`` once it
    returned (0.9 s of teardown after a graded class): a module-level object's finaliser,
    which the interpreter's teardown runs, does not run after ``grade`` or ``release``;
    ``atexit`` handlers still do. Run under plain ``python -c`` (no autograder), the same
    finaliser does run: the check can tell the two apart."""
    probe = ("import atexit, runpy, sys\n"
             "class Finalised:\n"
             "    def __del__(self):\n"
             "        print('teardown ran', flush=True)\n"
             "kept = Finalised()\n"
             "atexit.register(lambda: print('atexit ran', flush=True))\n")
    plain = run([sys.executable, "-c", probe])
    assert plain.stdout.splitlines()[-2:] == ["atexit ran", "teardown ran"], plain.stdout
    with tempfile.TemporaryDirectory() as tmp:
        for argv in (["grade", str(Path(tmp) / "none"), "--workspace", str(Path(tmp) / "ws")],
                     ["release", "ex01_python_attention", "--to", str(Path(tmp) / "out")]):
            code = probe + (f"sys.argv = ['autograder', *{argv!r}]\n"
                            "runpy.run_module('autograder', run_name='__main__')\n")
            proc = run([sys.executable, "-c", code])
            lines = proc.stdout.splitlines()
            assert "atexit ran" in lines, (argv, proc.stdout[-500:], proc.stderr[-500:])
            assert "teardown ran" not in lines, (argv, proc.stdout[-500:])
