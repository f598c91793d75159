"""What is checked once, at the door of a class run (issue 28): learner ids that nbgrader's
tools cannot carry, and submission folders with several notebooks.

The id rule is tested against formgrader itself: its pages build each link by joining the
raw id into a URL (``static/js/manage_*.js``); a browser's URL parser (Node's WHATWG
``URL``) reads that link, and tornado's router matches the path against formgrader's own
handler table. An accepted id comes back as itself; a refused one (``DOMAIN\\user``) does
not, which is why it is refused.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import warnings

import pytest
from conftest import grade
from submissions import filled_notebook, write_submission

from autograder.grading import ids, submission
from autograder.grading.prevalidate import prevalidate
from autograder.grading.results import Status

A = "ex01_python_attention"
# Combining marks after a letter (issue: refused before): Devanagari's vowel sign (Mc), Thai's
# (Mn), and NFD's accent, what macOS's unzip makes of "José".
MARKED = ["\u0905\u092e\u093f\u0924", "\u0e01\u0e34\u0e15\u0e15\u0e34", "Jose\u0301"]
ACCEPTED = ["alice", "a.b@uni.example", "s1234567", "josé", "Müller-Lüdenscheidt", "x_y",
            *MARKED]
REFUSED = {"DOMAIN\\user": "a backslash", "a/b": "a slash", "a b": "a space",
           "a+b": "a plus sign", "a%41": "a percent sign", "a#b": "a hash",
           "a?b": "a question mark", "a*b": "ASTERISK", "..": "starts with '.'",
           "-rf": "starts with '-'", "x" * 129: "129 characters", "a\tb": "U+0009",
           "a<b": "LESS-THAN SIGN", "a\"b": "QUOTATION MARK",
           "@A1": "starts with '@' (a spreadsheet reads the id as a formula",
           "=1+2": "starts with '='", "+1-2": "starts with '+'",
           "\u0301a": "a combining mark that follows no letter",
           "a.\u0301": "a combining mark that follows no letter"}


@pytest.mark.parametrize("student_id", ACCEPTED)
def test_an_accepted_id_has_no_problem(student_id):
    assert ids.id_problem(student_id) == ""


@pytest.mark.parametrize("student_id,why", sorted(REFUSED.items()))
def test_a_refused_id_is_named_with_its_character(student_id, why):
    assert why in ids.id_problem(student_id)


@pytest.mark.parametrize("start", list("=+-@\t\r"))
def test_no_accepted_id_starts_as_a_spreadsheet_formula(start):
    """An id a spreadsheet reads as a formula would need escaping in every CSV file, and an
    escaped id (``'@A1``) is one no platform matches: refused at the door instead."""
    problem = ids.id_problem(start + "A1")
    assert problem.startswith(f"it starts with {start!r} (a spreadsheet reads the id as a "
                              "formula"), problem
    assert ids.id_problem("a@A1") == "" and ids.id_problem("A1-") == ""


def _browser_paths(hrefs: list[str]) -> list[str]:
    """What a browser requests for each link (Node's WHATWG URL parser, as browsers)."""
    script = ("const hrefs = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "console.log(JSON.stringify(hrefs.map(h => new URL(h, 'http://localhost:8888/')"
              ".pathname)))")
    out = subprocess.run(["node", "-e", script], input=json.dumps(hrefs), text=True,
                         capture_output=True, check=True)
    return json.loads(out.stdout)


def _formgrader_args(path: str) -> tuple[str, list[str]] | None:
    """(handler name, its decoded arguments) of formgrader's route for ``path``, as tornado
    routes and decodes it; None when no route matches."""
    import tornado.httputil
    import tornado.routing
    from nbgrader.server_extensions.formgrader import apihandlers, handlers

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        request = tornado.httputil.HTTPServerRequest(method="GET", uri=path)
    for pattern, handler, *_ in handlers.default_handlers + apihandlers.default_handlers:
        match = tornado.routing.PathMatches(pattern).match(request)
        if match is not None:
            args = match.get("path_args") or list(match.get("path_kwargs", {}).values())
            return handler.__name__, [a.decode("utf-8") for a in args]
    return None


# formgrader's JavaScript builds these: base_url + "/formgrader/..." + id (+ "/" + assignment).
LINKS = [("ManageStudentsAssignmentsHandler", "/formgrader/manage_students/{s}", "s"),
         ("ManageStudentNotebookSubmissionsHandler", "/formgrader/manage_students/{s}/{a}", "sa"),
         ("AutogradeHandler", "/formgrader/api/submission/{a}/{s}/autograde", "as")]


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node for a browser's URL parser")
def test_formgrader_opens_every_accepted_id_and_not_a_domain_login():
    """formgrader's links, as its pages build them, lead back to every accepted id: the
    student's page, the submission's page, the autograde button. ``DOMAIN\\user`` is opened
    as the student ``DOMAIN``'s notebook ``user`` (the 404 of issue 28); the other ids the
    URL breaks on are refused too. (The rest of the refused ids open in formgrader but
    break nbgrader's globs, exchange, command line or gradebook: ``ids``'s docstring.)"""
    everyone = ACCEPTED + [s for s in REFUSED if len(s) < 129]
    hrefs = [link.format(s=s, a=A) for s in everyone for _, link, _ in LINKS]
    paths = iter(_browser_paths(hrefs))
    opens = {s: [_formgrader_args(next(paths)) for _ in LINKS] for s in everyone}
    for s in everyone:
        expected = [(name, [s if c == "s" else A for c in order]) for name, _, order in LINKS]
        opens[s] = opens[s] == expected
    assert [s for s in ACCEPTED if not opens[s]] == []
    assert [s for s, ok in opens.items() if not ok and not ids.id_problem(s)] == []
    assert {s for s in REFUSED if s in opens and not opens[s]} == {
        "DOMAIN\\user", "a/b", "a%41", "a#b", "a?b", "..", "a\tb"}
    student, submission_page = _browser_paths([f"/formgrader/manage_students/{s}"
                                               for s in ("DOMAIN\\user", f"DOMAIN\\user/{A}")])
    assert _formgrader_args(student) == ("ManageStudentNotebookSubmissionsHandler",
                                         ["DOMAIN", "user"])  # another student's page
    assert _formgrader_args(submission_page) is None  # formgrader's 404


def test_discover_refuses_a_domain_login_and_reads_nothing_in_it(tmp_path):
    write_submission(tmp_path, "alice", A, filled_notebook(A))
    write_submission(tmp_path, "UNI\\bob", A, filled_notebook(A))
    found = {s.student_id: s for s in submission.discover(tmp_path)}
    bob = found["UNI\\bob"]
    assert bob.path is None and bob.refused[0] == Status.INVALID_STUDENT_ID
    assert bob.refused[1].startswith(f"the folder '{tmp_path / 'UNI'}\\bob' is not graded: its "
                                     "name 'UNI\\bob' cannot be a student id, since it holds "
                                     "a backslash")
    assert prevalidate(bob) == (None, bob.refused)
    assert found["alice"].refused is None


@pytest.mark.parametrize("student_id", MARKED)
def test_nbgrader_paths_and_gradebook_carry_an_id_with_combining_marks(tmp_path, student_id):
    """nbgrader finds a submission by globbing its folders and reads the id back with a
    regular expression (its converters), and keeps it in the gradebook: the id comes back
    as the folder's name, code point for code point (never normalised)."""
    import glob
    import os
    import re

    from nbgrader.coursedir import CourseDirectory

    from autograder.grading.gradebook import open_gradebook

    course = CourseDirectory(root=str(tmp_path))
    folder = tmp_path / "submitted" / student_id / A
    folder.mkdir(parents=True)
    (found,) = glob.glob(course.format_path("submitted", "*", A))
    match = re.fullmatch(course.format_path("submitted", "(?P<student_id>.*)", A, escape=True),
                         found)
    assert match["student_id"] == student_id and os.path.isdir(found)
    with open_gradebook(tmp_path) as gb:
        gb.add_student(student_id)
        assert [s.id for s in gb.students] == [student_id]


def test_ids_one_once_normalised_are_both_refused_as_ambiguous(tmp_path):
    """NFC "José" and NFD "Jose\u0301" (one unzipped on a Mac) are two folders, each a
    valid id, that every platform shows as one: neither is graded, each names the other;
    an NFD id alone is graded under the folder's own name."""
    for name in ("Jos\u00e9", "Jose\u0301", "Mari\u0301a"):
        write_submission(tmp_path, name, A, filled_notebook(A))
    found = {s.student_id: s for s in submission.discover(tmp_path)}
    assert sorted(found) == sorted(["Jos\u00e9", "Jose\u0301", "Mari\u0301a"])
    for name, other in (("Jos\u00e9", "'Jose\\u0301'"), ("Jose\u0301", "'Jos\\xe9'")):
        status, detail = found[name].refused
        assert status == Status.INVALID_STUDENT_ID and found[name].path is None
        assert "same id as " + other in detail and "normalised" in detail, detail
    assert found["Mari\u0301a"].refused is None and found["Mari\u0301a"].path is not None


def test_a_folder_that_is_no_assignment_is_named_escaped_and_never_a_submission(tmp_path):
    """An assignment folder named as a formula (or a typo) is not taken for an assignment:
    no submission, no row; :func:`submission.strays` names it escaped."""
    evil = '=HYPERLINK("evil.example","click")'
    write_submission(tmp_path, "alice", A, filled_notebook(A))
    write_submission(tmp_path, "alice", evil, filled_notebook(A))
    write_submission(tmp_path, "bob", "ex1_python_attention", filled_notebook(A))
    assert [(s.student_id, s.assignment) for s in submission.discover(tmp_path)] == [
        ("alice", A)]
    assert submission.strays(tmp_path) == [ascii(f"alice/{evil}"),
                                           "'bob/ex1_python_attention'"]


def test_an_older_row_of_no_assignment_reaches_no_export_and_no_file(tmp_path, capsys):
    """A side table from before the door checked assignments (a row for the folder
    ``=HYPERLINK(...)``): the export, Moodle's file and the workspace's file names hold no
    such assignment, and no learner gets a ``missing`` row for it (the side table drops
    the row)."""
    from autograder import cli
    from autograder.grading.results import Row, save_state

    evil = '=HYPERLINK("evil.example","click")'
    ws = tmp_path / "ws"
    ws.mkdir()
    save_state(ws, {("alice", A): Row("alice", A, status=Status.INVALID_NOTEBOOK, detail="x"),
                    ("bob", evil): Row("bob", evil, status=Status.UNKNOWN_ASSIGNMENT,
                                       detail="no assignment")})
    assert cli.main(["export", "--workspace", str(ws)]) == 0
    with (ws / "export.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [(r["student_id"], r["assignment"], r["status"]) for r in rows] == [
        ("alice", A, "invalid-notebook")]
    assert cli.main(["export", "--workspace", str(ws), "--moodle", "username"]) == 0
    header = (ws / "moodle-import.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == f"username,{A}"
    assert [p.name for p in ws.rglob("*") if "HYPERLINK" in p.name] == []
    assert "HYPERLINK" not in (ws / "grades.csv").read_text(encoding="utf-8")
    capsys.readouterr()


# -- a class run ----------------------------------------------------------------------


def _rows(ws):
    with (ws / "grades.csv").open(encoding="utf-8") as f:
        return {r["student_id"]: r for r in csv.DictReader(f)}


@pytest.mark.slow
def test_a_class_with_a_refused_id_and_several_notebooks_is_graded(tmp_path):
    """The refused folder and the ambiguous one get rows with their reasons; the others
    grade; renaming and choosing, the next run grades them and drops the stale row."""
    subs, ws = tmp_path / "submitted", tmp_path / "ws"
    write_submission(subs, "alice", A, filled_notebook(A))
    write_submission(subs, "DOMAIN\\bob", A, filled_notebook(A))
    first = write_submission(subs, "carol", A, filled_notebook(A)).rename(
        subs / "carol" / A / "attempt1.ipynb")
    shutil.copy(first, first.with_name("attempt2.ipynb"))
    write_submission(subs, "dan", A, filled_notebook(A)).rename(subs / "dan" / A / "try.ipynb")
    (subs / "dan" / A / "Untitled.ipynb").write_text("{}")
    proc, rows, _ = grade(subs, ws, jobs=1, extra=["--timeout", "20", "--no-progress"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = {s: (r["status"], float(r["score"])) for s, r in rows.items()}
    assert got == {"alice": ("graded", 14.0), "DOMAIN\\bob": ("invalid-student-id", 0.0),
                   "carol": ("several-notebooks", 0.0), "dan": ("graded", 14.0)}
    assert "it holds a backslash" in rows["DOMAIN\\bob"]["detail"]
    assert "attempt1.ipynb, attempt2.ipynb; 2 of them are notebooks" in rows["carol"]["detail"]
    assert rows["dan"]["detail"].startswith("2 notebooks in the submission folder, none "
                                            f"named {A}.ipynb: try.ipynb is graded")
    assert not (ws / "feedback" / "DOMAIN\\bob").exists()
    from autograder.grading.gradebook import open_gradebook

    with open_gradebook(ws) as gb:
        assert sorted(s.id for s in gb.students) == ["alice", "dan"]

    (subs / "DOMAIN\\bob").rename(subs / "DOMAIN_bob")
    (subs / "carol" / A / "attempt1.ipynb").unlink()
    proc, rows, _ = grade(subs, ws, jobs=1, extra=["--timeout", "20", "--no-progress"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = {s: (r["status"], float(r["score"])) for s, r in rows.items()}
    assert got == {"alice": ("graded", 14.0), "DOMAIN_bob": ("graded", 14.0),
                   "carol": ("graded", 14.0), "dan": ("graded", 14.0)}
    assert "graded 2 submission(s)" in proc.stdout, proc.stdout


def test_moodle_leaves_out_two_ids_that_are_one_once_normalised(tmp_path, capsys):
    """Moodle would put the grades of NFC "José" and NFD "Jose\\u0301" on one user: both
    are listed, neither is in the file."""
    from autograder import cli
    from autograder.grading.results import Row, save_state

    ws = tmp_path / "ws"
    ws.mkdir()
    save_state(ws, {(s, A): Row(s, A, status=Status.INVALID_STUDENT_ID, detail="ambiguous")
                    for s in ("Jos\u00e9", "Jose\u0301")}
               | {("alice", A): Row("alice", A, status=Status.INVALID_NOTEBOOK, detail="x")})
    assert cli.main(["export", "--workspace", str(ws), "--moodle", "username"]) == 1
    err = capsys.readouterr().err
    assert "'Jos\\xe9': another folder is the same id once normalised" in err, err
    assert "'Jose\\u0301': another folder is the same id once normalised" in err, err
    lines = (ws / "moodle-import.csv").read_text(encoding="utf-8").splitlines()
    assert lines == [f"username,{A}", "alice,0"]
