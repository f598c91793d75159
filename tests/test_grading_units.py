"""Unit tests of the grading pieces on small notebooks, no kernel and no nbgrader run.

Each piece (discovery, pre-validation, restored-cell and tampering detection, the restoring
of the released cell order, the hiding of hidden tests in feedback, the diagnosis of a wrong
answer, the result table) is tested alone here in seconds; the class runs in
test_grading_contract.py and test_grading_robustness.py test them together through nbgrader.
"""

from __future__ import annotations

import copy
import json

import nbformat
import numpy as np
import pytest
from submissions import filled_notebook, write_submission

from autograder import diagnose, diagnose_heads
from autograder.config import EXERCISES
from autograder.grading import autograde, integrity, results, submission, tampering
from autograder.grading.prevalidate import prevalidate
from autograder.grading.results import Row, Status
from autograder.nbgrader_plugins import HideTestSource, RestoreOrder
from autograder.notebook import nbgrader_meta

A = "ex01_python_attention"


def _cell(nb, grade_id):
    return next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == grade_id)


def _learner_cell(source):
    return nbformat.v4.new_code_cell(source)


# -- discovery and pre-validation ------------------------------------------------------


def test_discover_reads_the_layout_and_other_notebook_names(tmp_path):
    write_submission(tmp_path, "alice", A, filled_notebook(A))
    (tmp_path / "bob" / A).mkdir(parents=True)
    (tmp_path / "bob" / A / "attempt1.ipynb").write_text("{}")
    (tmp_path / "bob" / A / "._attempt1.ipynb").write_text("")  # macOS's copy in a zip
    found = {s.student_id: s for s in submission.discover(tmp_path)}
    assert found["alice"].path.name == f"{A}.ipynb" and len(found["alice"].sha256) == 64
    assert found["bob"].path.name == "attempt1.ipynb" and found["bob"].refused is None
    assert (found["alice"].note, found["bob"].note) == ("", "")


def _folder(root, student, files):
    folder = root / student / A
    folder.mkdir(parents=True)
    for name, nb in files.items():
        (folder / name).write_text(nb if isinstance(nb, str) else nbformat.writes(nb))
    return folder


def test_two_attempts_in_one_folder_say_so_and_name_both(tmp_path):
    """Two notebooks of the assignment and none named for it (two attempts without
    timestamps) were missing-notebook, "no ex01_python_attention.ipynb in the submission
    folder"; the instructor must choose, and the detail names both files."""
    _folder(tmp_path, "carol", {"attempt1.ipynb": filled_notebook(A),
                                "attempt2.ipynb": filled_notebook(A)})
    (sub,) = submission.discover(tmp_path)
    nb, bad = prevalidate(sub)
    assert nb is None and bad[0] == Status.SEVERAL_NOTEBOOKS != Status.MISSING_NOTEBOOK
    assert bad[1].startswith("2 notebooks in the submission folder and none named "
                             f"{A}.ipynb: attempt1.ipynb, attempt2.ipynb; 2 of them are "
                             f"notebooks of {A}, so none is graded")
    assert [p.name for p in sub.others] == ["attempt1.ipynb", "attempt2.ipynb"]


def test_of_several_notebooks_the_one_of_the_assignment_is_graded_and_why(tmp_path):
    _folder(tmp_path, "dan", {"attempt.ipynb": filled_notebook(A), "notes.ipynb": "{}",
                              "ex02.ipynb": filled_notebook("ex02_numpy_attention")})
    _folder(tmp_path, "eve", {"a.ipynb": "{}", "b.ipynb": "not json"})
    found = {s.student_id: s for s in submission.discover(tmp_path)}
    dan, eve = found["dan"], found["eve"]
    assert dan.path.name == "attempt.ipynb" and dan.refused is None
    assert dan.note == (f"3 notebooks in the submission folder, none named {A}.ipynb: "
                        f"attempt.ipynb is graded, the only one that is a notebook of {A} "
                        "(not: ex02.ipynb, notes.ipynb)")
    assert prevalidate(dan)[1] is None
    assert eve.path is None and eve.refused[0] == Status.SEVERAL_NOTEBOOKS
    assert f"a.ipynb, b.ipynb; none of them is a notebook of {A}" in eve.refused[1]


def test_the_named_notebook_is_graded_and_the_others_are_named(tmp_path):
    _folder(tmp_path, "fay", {f"{A}.ipynb": filled_notebook(A),
                              "attempt2.ipynb": filled_notebook(A)})
    (sub,) = submission.discover(tmp_path)
    assert sub.path.name == f"{A}.ipynb" and sub.refused is None
    assert sub.note == (f"also in the submission folder, not graded: attempt2.ipynb "
                        f"({A}.ipynb is graded, the notebook nbgrader grades)")


def test_the_other_notebooks_are_inputs_of_the_grade(tmp_path):
    """Which notebook is graded depends on the others: a changed one regrades."""
    from autograder.grading import keys

    folder = _folder(tmp_path, "gus", {"attempt.ipynb": filled_notebook(A),
                                       "notes.ipynb": "{}"})
    values = dict(due="", extension="", late_penalty="none", source=None, check_code="c")
    before = keys.inputs(submission.discover(tmp_path)[0], **values)
    (folder / "notes.ipynb").write_text(nbformat.writes(filled_notebook(A)))
    after = keys.inputs(submission.discover(tmp_path)[0], **values)
    assert keys.changed(before, after) == ["notebook", "other notebooks"]
    alone = _folder(tmp_path / "b", "hal", {f"{A}.ipynb": filled_notebook(A)})
    assert "other notebooks" not in keys.inputs(submission.discover(alone.parents[1])[0],
                                                **values)


@pytest.mark.parametrize("content,status,detail", [
    (None, Status.MISSING_NOTEBOOK, "no ex01_python_attention.ipynb"),
    (b"  \n", Status.INVALID_NOTEBOOK, "the file is empty"),
    (b'{"cells": [', Status.INVALID_NOTEBOOK, "not valid JSON"),
    (b'{"cells": 3, "nbformat": 4}', Status.INVALID_NOTEBOOK, "not a valid Jupyter notebook"),
    (nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x")])).encode(),
     Status.WRONG_ASSIGNMENT, "no cell of ex01_python_attention"),
])
def test_prevalidate_names_what_is_wrong(tmp_path, content, status, detail):
    path = None
    if content is not None:
        path = tmp_path / "nb.ipynb"
        path.write_bytes(content)
    nb, bad = prevalidate(submission.Submission("s", A, path))
    assert nb is None and bad[0] == status and detail in bad[1]


def test_prevalidate_upgrades_nbformat3(tmp_path):
    path = tmp_path / "nb.ipynb"
    path.write_text(nbformat.writes(nbformat.convert(filled_notebook(A), 3), version=3))
    sub = submission.Submission("s", A, path)
    nb, bad = prevalidate(sub)
    assert bad is None and sub.converted and nb.nbformat == 4
    assert all(c.get("id") for c in nb.cells)
    assert integrity.grade_ids(nb) == set(integrity.released_cells(A))


def test_stage_copies_and_never_touches_the_input(tmp_path):
    src = write_submission(tmp_path / "in", "s", A, filled_notebook(A))
    (src.parent / "timestamp.txt").write_text("2026-01-01 12:00:00 UTC")
    before = {p.name: p.read_bytes() for p in src.parent.iterdir()}
    sub = submission.Submission("s", A, src)
    nb, _ = prevalidate(sub)
    ws = tmp_path / "ws"
    staged = autograde.stage(sub, nb, ws)
    assert staged == ws / autograde.STAGED / "s" / A / f"{A}.ipynb"
    # the time in the one form nbgrader's parser reads exactly (autograder.grading.times)
    assert (staged.parent / "timestamp.txt").read_text() == "2026-01-01 12:00:00.000000 UTC\n"
    assert {p.name: p.read_bytes() for p in src.parent.iterdir()} == before
    # Staging the workspace's own submitted/ copy does not delete it either.
    inside = write_submission(ws / "submitted", "t", A, filled_notebook(A))
    sub = submission.Submission("t", A, inside)
    autograde.stage(sub, prevalidate(sub)[0], ws)
    assert inside.is_file()


# -- integrity: restored cells and tampering -------------------------------------------


def test_an_untouched_notebook_has_no_restored_cells():
    assert integrity.restored_cells(filled_notebook(A), A) == []


def test_restored_cells_name_each_change():
    nb = filled_notebook(A)
    _cell(nb, "test_softmax_stable").source = '"""softmax is stable."""\npass'
    nb.cells.remove(_cell(nb, "test_softmax_empty"))
    md = _cell(nb, "test_attention_rectangular")
    md.cell_type = "markdown"
    dup = copy.deepcopy(_cell(nb, "softmax"))
    nb.cells.append(dup)
    changes = integrity.restored_cells(nb, A)
    assert "test_softmax_stable edited" in changes
    assert "test_softmax_empty deleted" in changes
    assert "test_attention_rectangular turned into markdown" in changes
    assert "softmax appears 2 times" in changes
    assert "cells reordered" not in changes  # a duplicate at the end moves nothing


def test_moving_a_section_is_a_change():
    nb = filled_notebook(A)
    first = nb.cells.index(_cell(nb, "softmax-text"))
    second = nb.cells.index(_cell(nb, "attention-text"))
    end = nb.cells.index(_cell(nb, "knowledge-checks"))
    nb.cells = nb.cells[:first] + nb.cells[second:end] + nb.cells[first:second] + nb.cells[end:]
    assert integrity.restored_cells(nb, A) == ["cells reordered"]


def test_editing_a_solution_cell_is_not_a_change():
    nb = filled_notebook(A)
    _cell(nb, "softmax").source += "\n# my own comment"
    assert integrity.restored_cells(nb, A) == []


def test_learner_tampering_finds_the_cell_and_its_anchor():
    nb = filled_notebook(A)
    idx = nb.cells.index(_cell(nb, "softmax"))
    nb.cells.insert(idx + 1, _learner_cell(
        "import numpy as np\nnp.testing.assert_allclose = lambda *a, **k: None"))
    anchor, found = integrity.learner_tampering(nb, A)
    assert anchor == "softmax"
    assert found == ["line 2: assigns to np.testing.assert_allclose"]


def test_tampering_inside_a_locked_cell_is_ignored():
    """A locked cell's source is restored by nbgrader, so what it says cannot act."""
    nb = filled_notebook(A)
    _cell(nb, "test_softmax_stable").source += "\nimport sys\nsys.modules['x'] = None"
    assert integrity.learner_tampering(nb, A) == (None, [])


@pytest.mark.parametrize("source,found", [
    ("import autograder.testing as T\nT.check_answer = None", "assigns to T.check_answer"),
    ("setattr(__builtins__, 'len', None)", "setattr on __builtins__"),
    ("import sys\nsys.settrace(None)\nsys.stdout = None", "replaces sys.stdout"),
    ("get_ipython().showtraceback = print", "assigns to get_ipython().showtraceback"),
    ("%config InlineBackend.figure_format = 'svg'", None),
    ("def f(x):\n    x.y = 1\n    return x", None),
    ("this is ( not python", None),
])
def test_suspicious_statements(source, found):
    result = tampering.suspicious(source)
    if found is None:
        assert result == []
    else:
        assert any(found in r for r in result), result


# -- nbgrader preprocessors: restored order, hidden tests in feedback ------------------


def test_restore_order_puts_cells_back_and_keeps_learner_cells_with_their_anchor():
    nb = filled_notebook(A)
    mine = _learner_cell("helper = 1")
    nb.cells.insert(nb.cells.index(_cell(nb, "softmax")) + 1, mine)
    released_order = [nbgrader_meta(c).get("grade_id") for c in nb.cells]
    first, second = nb.cells.index(_cell(nb, "softmax-text")), nb.cells.index(
        _cell(nb, "attention-text"))
    shuffled = nb.cells[:first] + nb.cells[second:] + nb.cells[first:second]
    nb.cells = shuffled
    out, _ = RestoreOrder(release_directory=str(EXERCISES)).preprocess(
        nb, {"nbgrader": {"assignment": A, "notebook": A}})
    assert [nbgrader_meta(c).get("grade_id") for c in out.cells] == released_order
    assert out.cells[out.cells.index(_cell(out, "softmax")) + 1] is mine


def test_hide_test_source_keeps_the_docstring_and_one_line_of_error():
    cell = nbformat.v4.new_code_cell(
        '"""softmax is stable."""\n### BEGIN HIDDEN TESTS\nsecret = [0.2689]\n'
        '### END HIDDEN TESTS')
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "t",
                                 "points": 1, "locked": True}
    cell.outputs = [nbformat.v4.new_output("stream", text="expected 0.2689"),
                    nbformat.v4.new_output("error", ename="AssertionError",
                                           evalue="values differ\nexpected 0.2689",
                                           traceback=["  secret = [0.2689]"])]
    out, _ = HideTestSource().preprocess_cell(cell, {}, 0)
    assert out.source == '"""softmax is stable."""'
    assert len(out.outputs) == 1 and out.outputs[0].traceback == [
        "AssertionError: values differ"]
    assert "0.2689" not in out.source + "".join(out.outputs[0].traceback)


# -- diagnosis -------------------------------------------------------------------------


def test_diagnosis_names_the_missing_scale_and_nothing_for_a_right_answer():
    rng = np.random.default_rng(0)
    Q, K, V = (rng.normal(size=(4, 8)) for _ in range(3))
    scores = Q @ K.T
    right = diagnose._softmax(scores / np.sqrt(8)) @ V
    unscaled = diagnose._softmax(scores) @ V
    assert diagnose.attention_hint(right, Q, K, V) == ""
    assert "scale" in diagnose.attention_hint(unscaled, Q, K, V)
    assert "over the queries" in diagnose.weights_hint(diagnose._softmax(scores, axis=0))


def test_multi_head_diagnosis_is_silent_for_torch_and_names_a_head_split_mistake():
    """Case 005: mistakes inside the multi-head module get a diagnosis. The right answer is
    nn.MultiheadAttention's (not our own NumPy formula), so the diagnosis cannot agree with
    itself by construction."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    B, L, S, d, h = 2, 3, 4, 8, 2
    builtin = torch.nn.MultiheadAttention(d, h, batch_first=True).double().eval()
    w, b = builtin.in_proj_weight.detach().numpy(), builtin.in_proj_bias.detach().numpy()
    params = {n: (w[i * d:(i + 1) * d], b[i * d:(i + 1) * d]) for i, n in enumerate("qkv")}
    params["o"] = (builtin.out_proj.weight.detach().numpy(), builtin.out_proj.bias.detach().numpy())
    x, y = torch.randn(B, L, d, dtype=torch.float64), torch.randn(B, S, d, dtype=torch.float64)
    with torch.no_grad():
        right = builtin(x, y, y, need_weights=False)[0].numpy()
    x, y = x.numpy(), y.numpy()
    assert diagnose_heads.multi_head_attention_hint(right, x, y, y, params, h) == ""
    # the heads cut across positions: project, reshape (B, T, d) -> (B, h, T, d_k) directly
    q = (x @ params["q"][0].T + params["q"][1]).reshape(B, h, L, d // h)
    k = (y @ params["k"][0].T + params["k"][1]).reshape(B, h, S, d // h)
    v = (y @ params["v"][0].T + params["v"][1]).reshape(B, h, S, d // h)
    heads = diagnose._softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // h)) @ v
    wrong = heads.transpose(0, 2, 1, 3).reshape(B, L, d) @ params["o"][0].T + params["o"][1]
    assert "heads split by reshaping" in diagnose_heads.multi_head_attention_hint(
        wrong, x, y, y, params, h)


# -- the result table ------------------------------------------------------------------


def test_status_values_are_the_csv_strings():
    assert Status.NEEDS_MANUAL_GRADING == "needs-manual-grading"
    assert json.dumps({"s": Status.OUT_OF_MEMORY}) == '{"s": "out-of-memory"}'
    assert f"{Status.KERNEL_DIED}" == "kernel-died"
    assert Status.ERROR not in results.FINAL and Status.TIMEOUT in results.FINAL


def test_rows_survive_the_csv_and_the_worker_protocol(tmp_path):
    row = Row("alice", A, 12.5, 14.0, Status.LATE, "late: 2.0 h", "ab" * 32, "feedback/x.html",
              tests=[{"student_id": "alice", "assignment": A, "test": "t", "score": 1.0,
                      "max_score": 1.0, "needs_manual_grade": False}])
    row.inputs_sha256, row.scored, row.events = "cd" * 32, True, '{"late": "x"}'
    assert Row.from_dict(json.loads(json.dumps(row.to_dict()))) == row
    results.save_rows(tmp_path, {row.key: row})
    header = (tmp_path / results.GRADES_CSV).read_text().splitlines()[0]
    assert header.split(",")[:8] == ["student_id", "assignment", "score", "max_score", "status",
                                     "detail", "submission_sha256", "feedback"]
    assert "late_penalty" in header and "inputs_sha256" not in header  # side table only
    assert (tmp_path / results.TESTS_CSV).read_text().splitlines()[1].startswith(f"alice,{A},t,")
    results.save_state(tmp_path, {row.key: row})  # the side table keeps the regrade key
    again = results.load_state(tmp_path)[row.key]
    assert (again.score, again.status, again.detail) == (12.5, Status.LATE, "late: 2.0 h")
    assert (again.inputs_sha256, again.scored, again.events) == ("cd" * 32, True,
                                                                 '{"late": "x"}')


def test_combine_names_the_most_serious_event_first():
    status, detail = autograde.combine({Status.LATE: "2 h late",
                                        Status.KERNEL_DIED: "died in test_x",
                                        Status.RESTORED_TESTS: "t edited"})
    assert status == Status.KERNEL_DIED
    assert detail == "died in test_x; restored-tests: t edited; late: 2 h late"
    assert autograde.combine({}) == (Status.GRADED, "")


@pytest.mark.parametrize("log,status", [
    ("... DeadKernelError: Kernel died", Status.KERNEL_DIED),
    ("CellTimeoutError: A cell timed out", Status.TIMEOUT),
    ("Traceback\nValueError: something else\n", Status.ERROR),
])
def test_classify_failure(log, status):
    assert autograde.classify_failure(log)[0] == status


def test_every_status_has_a_row_on_the_contract_page(repo):
    text = (repo / "contract.md").read_text(encoding="utf-8")
    missing = [s.value for s in Status if f"| `{s.value}` |" not in text]
    assert not missing, f"contract.md has no row for the statuses {missing}"


def test_grading_the_staging_folder_is_refused(tmp_path, capsys):
    """The staging folder is the grader's own: grading it would replace its input."""
    from autograder.grading.grade import grade_class

    ws = tmp_path / "ws"
    path = write_submission(ws / autograde.STAGED, "s", A, filled_notebook(A))
    assert grade_class(ws / autograde.STAGED, ws, progress=False) == 2
    assert "staging folder" in capsys.readouterr().err
    assert path.is_file()


def test_the_package_docstring_lists_every_module(repo):
    """A newcomer finds the room for a change by the map in autograder/grading/__init__.py."""
    import autograder.grading as grading

    modules = sorted(p.stem for p in (repo / "autograder" / "grading").glob("*.py")
                     if p.stem != "__init__")
    missing = [m for m in modules if f":mod:`~autograder.grading.{m}`" not in grading.__doc__]
    assert not missing, f"add a line for {missing} to autograder/grading/__init__.py"


# -- work done once per process (grading.speedups) ------------------------------------


def test_a_new_gradebook_is_stamped_with_the_revision_alembic_names():
    """The revision read with alembic's API is what ``alembic heads`` prints for nbgrader's
    migration scripts (what nbgrader itself ran in a subprocess)."""
    import os
    import subprocess
    import sys

    from nbgrader.dbutil import _temp_alembic_ini

    from autograder.grading import speedups

    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    with _temp_alembic_ini("sqlite:////tmp/unused.db") as ini:
        out = subprocess.run(["alembic", "-c", ini, "heads"], capture_output=True, text=True,
                             env=env, check=True).stdout
    assert speedups.alembic_head() == out.split()[0]


def test_a_gradebook_reuses_its_engine_until_the_database_is_made_again(tmp_path):
    """Opening a gradebook again reuses its engine (no schema inspection, statements
    compiled once); a database file deleted and created again gets a new engine and is
    empty, whatever the URL's options."""
    from nbgrader.api import Gradebook, MissingEntry

    from autograder.grading import speedups

    speedups.apply()
    url = f"sqlite:///{tmp_path / 'gradebook.db'}?timeout=120"
    with Gradebook(url) as gb:
        gb.add_assignment("ex01_python_attention")
        first = gb.engine
    with Gradebook(url) as gb:
        assert gb.engine is first
        assert gb.find_assignment("ex01_python_attention").name == "ex01_python_attention"
    (tmp_path / "gradebook.db").unlink()
    with Gradebook(url) as gb:
        assert gb.engine is not first
        with pytest.raises(MissingEntry):
            gb.find_assignment("ex01_python_attention")
        gb.add_student("s1")  # the tables exist: nbgrader's own __init__ made them
        assert [s.id for s in gb.students] == ["s1"]


def test_closing_a_gradebook_keeps_the_connections_of_the_database_opened_last(tmp_path):
    """A closed gradebook's engine keeps its pooled connection for the next open (nbgrader's
    close disposes of it: a new connection and pool at every one of a notebook's eleven
    opens), but only the engine of the database opened last: the first database's
    connections are closed when a second one is opened, and a gradebook reopened on it
    still reads what was written."""
    from nbgrader.api import Gradebook

    from autograder.grading import speedups

    speedups.apply()
    first, second = (f"sqlite:///{tmp_path / name}" for name in ("a.db", "b.db"))
    for url in (first, second):
        with Gradebook(url) as gb:  # nbgrader's own open: creates the tables
            gb.add_student("s1")
    with Gradebook(first) as gb:
        a = gb.engine
    assert a.pool.checkedin() == 1  # kept for the next open
    with Gradebook(first) as gb:
        assert gb.engine is a and gb.find_student("s1").id == "s1"
    assert a.pool.checkedin() == 1
    with Gradebook(second) as gb:
        b = gb.engine
    assert b.pool.checkedin() == 1 and a.pool.checkedin() == 0  # only the last one's kept
    with Gradebook(first) as gb:
        gb.add_student("s2")
    with Gradebook(first) as gb:
        assert sorted(s.id for s in gb.students) == ["s1", "s2"]
    assert b.pool.checkedin() == 0 and a.pool.checkedin() == 1



PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJ"
       "RU5ErkJggg==")


@pytest.mark.parametrize("template, image, parsed", [
    ("classic", False, 0),  # nbgrader's feedback is classic-style: nothing to change, no parse
    ("classic", True, 1),   # an image without alt: the pass runs and gives it a text
    ("lab", False, 1),      # JupyterLab's cells: the pass runs and gives them tab stops
])
def test_the_feedback_page_is_parsed_only_where_the_accessibility_pass_changes_it(
        monkeypatch, template, image, parsed):
    """speedups skips nbconvert's BeautifulSoup pass over a page where it would change
    nothing, and only there: an image keeps its alternative text and the lab template's
    cells their tab stops (an exporter that always skipped the pass would lose both)."""
    import bs4
    import nbformat
    from nbconvert import HTMLExporter

    from autograder.grading import speedups

    speedups.apply()
    calls = []
    parse = bs4.BeautifulSoup.__init__

    def counted(self, *args, **kwargs):
        calls.append(1)
        parse(self, *args, **kwargs)

    monkeypatch.setattr(bs4.BeautifulSoup, "__init__", counted)
    outputs = [nbformat.v4.new_output("stream", name="stdout", text="weights sum to 1\n")]
    if image:
        outputs.append(nbformat.v4.new_output("display_data", data={"image/png": PNG}))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "print('weights sum to 1')", outputs=outputs, execution_count=1)])
    page, _ = HTMLExporter(template_name=template).from_notebook_node(nb)
    assert len(calls) == parsed
    assert "weights sum to 1" in page
    assert ('alt="No description has been provided for this image"' in page) == image
    assert ('tabindex="0"' in page) == (template == "lab")



def test_the_feedback_highlights_each_source_once_as_nbconvert_would(monkeypatch):
    """feedback_render keeps the feedback's highlighted code per source: a source highlighted
    again (a locked cell of the next submission) is not lexed again, and every result
    equals nbconvert's own. The key holds what the HTML depends on: a cell whose
    ``magics_language`` differs, another language or other formatter options give other
    HTML (a cache keyed by the source alone would return the Python page for them). What is
    kept is bounded in characters, so a class of unique learner cells cannot grow it."""
    from html import escape

    import nbconvert.filters.highlight as highlight
    from pygments.formatters import HtmlFormatter

    from autograder.grading import feedback_render, speedups

    speedups.apply()
    lexed = []
    lex = highlight._pygments_highlight

    def counted(source, formatter, language, metadata=None):
        lexed.append(language)
        return lex(source, formatter, language, metadata)

    monkeypatch.setattr(highlight, "_pygments_highlight", counted)

    def nbconvert_own(source, language, metadata=None, **options):
        return lex(source, HtmlFormatter(cssclass=escape(f" highlight hl-{language}"),
                                         **options), language, metadata)

    source = "fn f(x: f64) -> f64 { x }  # the same text, read as Python or as Rust"
    h = highlight.Highlight2HTML(pygments_lexer="ipython3")
    first = h(source)
    assert h(source) == first == nbconvert_own(source, "ipython3") and len(lexed) == 1
    as_rust = h(source, metadata={"magics_language": "rust"})
    assert as_rust == nbconvert_own(source, "ipython3", {"magics_language": "rust"})
    assert as_rust != first and len(lexed) == 2
    assert h(source, "python") == nbconvert_own(source, "python") != first
    numbered = highlight.Highlight2HTML(pygments_lexer="ipython3",
                                        extra_formatter_options={"linenos": "inline"})
    assert numbered(source) == nbconvert_own(source, "ipython3", linenos="inline") != first
    assert len(lexed) == 4
    long = "x = 1\n" * (feedback_render.CACHED_CHARS // 6 + 1)
    assert h(long) == h(long) and len(lexed) == 6  # too long to keep: lexed each time
    # What is kept is bounded in characters: past the bound the least recently used goes.
    monkeypatch.setattr(feedback_render, "KEPT_CHARS", len(first) + len(as_rust))
    assert h("y = 2") and len(lexed) == 7  # kept; the oldest (first, as_rust) let go
    assert h(source) == first and len(lexed) == 8
    assert h("y = 2") and len(lexed) == 8  # still kept: it was used last but one


def test_the_feedback_renders_each_markdown_source_once_as_nbconvert_would(monkeypatch):
    """feedback_render keeps the feedback's Markdown HTML per source: a locked cell's
    instructions, rendered again for the next submission, are not parsed again, and every
    result equals nbconvert's own. Other anchor options give other HTML; a cell with
    attachments and an exporter that embeds images are rendered each time."""
    import nbconvert.exporters.html as html_exporter

    from autograder.grading import speedups

    speedups.apply()
    parsed = []
    render = html_exporter.MarkdownWithMath.render
    monkeypatch.setattr(html_exporter.MarkdownWithMath, "render",
                        lambda self, s: parsed.append(s) or render(self, s))
    def page(exporter, cell):  # (kept, nbconvert's own) HTML, as the template's filter
        context = {"cell": cell, "resources": {"metadata": {"path": "."}}}
        return (exporter.markdown2html(context, cell.source),
                html_exporter.HTMLExporter.markdown2html.__wrapped__(exporter, context,
                                                                    cell.source))

    cell = nbformat.v4.new_markdown_cell("## Why $\\sqrt{d_k}$\n\nThe variance of $q \\cdot k$.")
    exporter = html_exporter.HTMLExporter()
    first, own = page(exporter, cell)
    assert first == own and "sqrt" in first and len(parsed) == 2
    again, _ = page(exporter, cell)
    assert again == first and len(parsed) == 3  # nbconvert's own parsed; the kept did not
    plain = html_exporter.HTMLExporter(anchor_link_text="#")
    other, own = page(plain, cell)
    assert other == own != first and len(parsed) == 5
    attached = nbformat.v4.new_markdown_cell("![x](attachment:x.png)",
                                            attachments={"x.png": {"image/png": "iVBO"}})
    assert page(exporter, attached)[0] == page(exporter, attached)[0] and len(parsed) == 9
    embedding = html_exporter.HTMLExporter(embed_images=True)
    assert page(embedding, cell)[0] == first and len(parsed) == 11


def test_a_cell_or_output_is_validated_by_its_compiled_schema_part(monkeypatch):
    """speedups: nbformat's validation of one output or cell (nbclient makes an output of
    each kernel message) runs that part of the schema compiled by fastjsonschema; jsonschema,
    which nbformat's fastjsonschema validator hands it to, runs only for a node refused, and
    gives nbformat's own error."""
    from nbformat import ValidationError
    from nbformat.json_compat import JsonSchemaValidator
    from nbformat.v4 import new_code_cell, new_output

    from autograder.grading import speedups

    speedups.apply()
    calls = []
    own = JsonSchemaValidator.iter_errors
    monkeypatch.setattr(JsonSchemaValidator, "iter_errors",
                        lambda self, *args: calls.append(1) or own(self, *args))
    new_output("stream", name="stdout", text="x")
    new_output("error", ename="E", evalue="v", traceback=["a"])
    new_code_cell("x = 1")
    assert calls == []
    with pytest.raises(ValidationError, match="3 is not of type 'string'"):
        new_output("stream", name=3, text="x")
    assert calls
    calls.clear()
    with pytest.raises(Exception, match="a-kind-of-its-own"):  # no such part of the schema
        new_output("a-kind-of-its-own")
    assert calls


def test_a_conversion_validates_the_notebook_once_after_its_last_preprocessor(tmp_path,
                                                                             monkeypatch):
    """With the course's nbgrader settings, an exporter validates the notebook once per
    conversion, after its last preprocessor (nbconvert's default: after each one), and
    still refuses a notebook a preprocessor made invalid."""
    import nbconvert.exporters.exporter as exporter_module
    import nbformat
    from nbconvert import NotebookExporter
    from nbconvert.preprocessors import Preprocessor
    from traitlets.config import Config

    from autograder.nbgrader_settings import apply

    config = Config()
    apply(config, tmp_path / "ws", release_directory=tmp_path / "release", sandbox=False)
    validations = []
    validate = exporter_module.Exporter._validate_preprocessor

    def counted(self, nb, preprocessor):
        validations.append(type(preprocessor).__name__)
        return validate(self, nb, preprocessor)

    monkeypatch.setattr(exporter_module.Exporter, "_validate_preprocessor", counted)

    class Unchanged(Preprocessor):
        def preprocess(self, nb, resources):
            return nb, resources

    class Breaks(Preprocessor):
        def preprocess(self, nb, resources):
            nb.cells[0]["execution_count"] = "NaN"
            return nb, resources

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    exporter = NotebookExporter(config=config, preprocessors=[Unchanged(), Unchanged(),
                                                              Unchanged()])
    exporter.from_notebook_node(nb)
    assert len(exporter._preprocessors) > 3 and validations == ["Unchanged"]
    with pytest.raises(nbformat.ValidationError):
        NotebookExporter(config=config, preprocessors=[Breaks(), Unchanged()]
                         ).from_notebook_node(nb)


def test_autograde_validates_the_notebook_before_saving_its_scores(tmp_path):
    """With validation after the last preprocessor only, autograde validates once more just
    before nbgrader's SaveAutoGrades: a notebook an earlier step left invalid is refused
    before any score of it reaches the gradebook."""
    import nbformat
    from traitlets.config import Config

    from autograder.nbgrader_plugins import ValidateBeforeSaving
    from autograder.nbgrader_settings import apply

    config = Config()
    apply(config, tmp_path / "ws", release_directory=tmp_path / "release", sandbox=False)
    steps = list(config.Autograde.autograde_preprocessors)
    saving = steps.index("nbgrader.preprocessors.SaveAutoGrades")
    assert steps[saving - 1] == "autograder.nbgrader_plugins.ValidateBeforeSaving"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    assert ValidateBeforeSaving()(nb, {})[0] is nb
    nb.cells[0]["execution_count"] = "NaN"
    with pytest.raises(nbformat.ValidationError):
        ValidateBeforeSaving()(nb, {})


def test_texts_a_spreadsheet_would_run_as_formulas_are_written_as_text():
    """A student id taken from a folder named =HYPERLINK(...) (found by the adversarial
    review) opens in a spreadsheet as text, not as a formula; numbers stay numbers."""
    from autograder.grading.results import spreadsheet_safe

    rows = [{"student_id": '=HYPERLINK("http://x","y")', "score": 1.5, "late_penalty": "-2.0",
             "detail": "@SUM(A1)", "assignment": "ex01_python_attention", "test": "+1+1"}]
    safe = spreadsheet_safe(rows)[0]
    assert safe["student_id"] == "'" + rows[0]["student_id"]
    assert safe["detail"] == "'@SUM(A1)" and safe["test"] == "'+1+1"
    assert safe["score"] == 1.5 and safe["late_penalty"] == "-2.0"
    assert safe["assignment"] == "ex01_python_attention"


def _elements(page: str) -> list[tuple[str, tuple]]:
    """(tag, attributes) of every element of an HTML page's body."""
    from html.parser import HTMLParser

    found = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, tuple(attrs)))

    Collect().feed(page.split("<body", 1)[1])
    return found


def test_feedback_runs_and_loads_nothing_a_learner_wrote():
    """InertLearnerContent: a learner's HTML output and a Markdown cell with a script, an
    event handler, an iframe and a remote image render as inert text in the feedback page;
    the release's own Markdown and a plain-text output stay as they were."""
    import nbformat
    from nbconvert import HTMLExporter

    from autograder.nbgrader_plugins import InertLearnerContent

    released = nbformat.v4.new_markdown_cell("## Question\n\n<b>Derive</b> $a < b$.")
    released.metadata["nbgrader"] = {"grade_id": "q", "locked": True, "solution": False,
                                     "grade": False, "schema_version": 3}
    evil = ("<script>alert(1)</script> <img src=x onerror=alert(2)> "
            "<iframe src=http://evil.example/f></iframe> ![x](http://evil.example/p.png) "
            "[here](javascript:alert(3)) $x < y$")
    code = nbformat.v4.new_code_cell("show()", outputs=[
        nbformat.v4.new_output("display_data", data={
            "text/html": "<script>alert(4)</script>", "text/plain": "<IPython.display>",
            "application/javascript": "alert(5)", "image/svg+xml": "<svg onload=alert(6)/>"}),
        nbformat.v4.new_output("stream", name="stdout", text="printed <script>\n")])
    nb = nbformat.v4.new_notebook(cells=[released, nbformat.v4.new_markdown_cell(evil), code])
    nb, _ = InertLearnerContent().preprocess(nb, {})
    assert nb.cells[0].source == "## Question\n\n<b>Derive</b> $a < b$."  # the release's own
    assert nb.cells[2].outputs[0]["data"] == {"text/plain": "<IPython.display>"}
    elements = _elements(HTMLExporter().from_notebook_node(nb)[0])
    template = _elements(HTMLExporter().from_notebook_node(nbformat.v4.new_notebook())[0])
    assert [e for e in elements if e[0] in ("script", "iframe", "style", "svg")] == \
        [e for e in template if e[0] in ("script", "iframe", "style", "svg")]
    assert not [e for e in elements if any(k.startswith("on") for k, _ in e[1])]
    assert not [e for e in elements for k, v in e[1] if v and (  # nothing loads by itself
        (k == "src" and v.startswith("http")) or v.startswith("javascript"))]
    assert ("b", ()) in elements  # the release's <b>Derive</b>
    # the wrong implementation it catches: without the preprocessor the script is live
    raw = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(evil)])
    assert ("iframe", (("src", "http://evil.example/f"),)) in \
        _elements(HTMLExporter().from_notebook_node(raw)[0])


def test_a_learner_s_text_reaches_the_terminal_inert():
    """Escape sequences (clear screen, a window title, OSC 52's clipboard write) and a
    right-to-left override in a learner's error message or answer are printed as escapes."""
    from autograder.check_report import printable, report
    from autograder.verdicts import TestResult

    evil = "\x1b[2J\x1b[H FAKE: all passed \x1b]0;title\x07\x1b]52;c;aGk=\x07 \u202eevil"
    shown = printable(evil)
    assert not [c for c in shown if ord(c) < 32 or 0x7f <= ord(c) <= 0x9f or
                0x202a <= ord(c) <= 0x202e]
    assert shown.startswith("\\x1b[2J\\x1b[H FAKE") and shown.endswith("\\u202eevil")
    assert printable("tab\tand\nnewline, ≤ and é") == "tab\tand\nnewline, ≤ and é"
    lines, _ = report([TestResult("test_x", 1, "fail", "ValueError: " + evil)],
                      [(0, "softmax", "RuntimeError: " + evil)], whole=True)
    assert "\x1b" not in "".join(lines) and "\u202e" not in "".join(lines)


def test_what_stopped_the_cells_is_kept_in_the_notebook_and_read_back():
    """The grader's record of what stopped a notebook's cells travels with the autograded
    notebook (no list shared between modules); a notebook without one reads as nothing."""
    from autograder.trusted_tests import GRADER_KEY, record_stopped, stopped_in

    nb = nbformat.v4.new_notebook()
    assert stopped_in(nb) == []
    record_stopped(nb, [("DeadKernelError", "test_shape"), ("CellTimeoutError", "test_loop")])
    again = nbformat.reads(nbformat.writes(nb), as_version=4)
    assert stopped_in(again) == [("DeadKernelError", "test_shape"),
                                 ("CellTimeoutError", "test_loop")]
    assert list(again.metadata[GRADER_KEY]) == ["stopped"]


def test_phase_times_are_taken_once():
    from autograder import phase_times

    phase_times.take()
    phase_times.add("execute", 1.5)
    with phase_times.timed("execute"):
        pass
    taken = phase_times.take()
    assert list(taken) == ["execute"] and 1.5 <= taken["execute"] < 60  # an empty block
    assert phase_times.take() == {}
