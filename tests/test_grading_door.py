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
from autograder.grading.results import Status

A = "ex01_python_attention"
ACCEPTED = ["alice", "a.b@uni.example", "s1234567", "josé", "Müller-Lüdenscheidt", "x_y"]
REFUSED = {"DOMAIN\\user": "a backslash", "a/b": "a slash", "a b": "a space",
           "a+b": "a plus sign", "a%41": "a percent sign", "a#b": "a hash",
           "a?b": "a question mark", "a*b": "ASTERISK", "..": "starts with '.'",
           "-rf": "starts with '-'", "x" * 129: "129 characters", "a\tb": "U+0009",
           "a<b": "LESS-THAN SIGN", "a\"b": "QUOTATION MARK",
           "@A1": "starts with '@' (a spreadsheet reads the id as a formula",
           "=1+2": "starts with '='", "+1-2": "starts with '+'"}


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
    assert submission.prevalidate(bob) == (None, bob.refused)
    assert found["alice"].refused is None


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
