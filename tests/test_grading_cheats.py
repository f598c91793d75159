"""Learners who try: cheating and escaping submissions graded in one class run (issues 13, 23).

Since issue 23, ex01's hidden tests run in the trusted checker: the cheats that reached
for the reference, the checks or the guard in the kernel find nothing there, and each
keeps exactly the points its own code earns (its ``fails:`` line); one that breaks the
kernel client's replies gets ``tampering``.

``tests/cheats/<assignment>/NAME.py`` are submissions in the format of
``tests/implementations`` (replacement solution cells after ``# %% <grade_id>``), with a
``status:`` line besides ``fails:``. The cheats reach the reference, the solutions or the
hidden checks, or change the check code, by every route the issue names (import,
importlib, sys.modules, reading files, gc, frames, ``__code__``, ``__globals__``,
``__defaults__``, setattr, a module's own dictionary, NumPy's comparison functions); each
must get ``tampering`` and lose exactly the tests from the one it touched on. The escapes
try to write into the course folder, the home folder, the workspace and the other
submissions and to reach the network; after the run nothing may have been written outside
the sandbox's scratch folders. Correct submissions in the same run keep full marks.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import nbformat
import pytest
from conftest import REPO, grade
from submissions import (filled_notebook, parse_variant, reference_solutions, variants,
                         write_submission)

from autograder.sandbox import sandbox_error

A = "ex01_python_attention"
FULL = 14.0
CHEATS = Path(__file__).parent / "cheats" / A
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("cheats"),
              pytest.mark.skipif(sandbox_error() is not None,
                                 reason=f"no sandbox here: {sandbox_error()}")]


def _cheats(assignment: str = A) -> dict[str, Path]:
    return {p.stem: p for p in sorted((CHEATS.parent / assignment).glob("*.py"))}


# Other assignments' cheats (routes that only their checks offer), graded in one run each.
OTHERS = sorted(d.name for d in CHEATS.parent.iterdir() if d.is_dir() and d.name != A)


def _expected_status(path: Path) -> str:
    m = re.search(r"^status:\s*(\S+)", path.read_text(encoding="utf-8"), flags=re.M)
    assert m, f"{path} has no 'status:' line"
    return m.group(1)


def _digest(paths) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.is_file()}


def _course_files() -> list[Path]:
    return sorted([*REPO.joinpath("autograder").rglob("*.py"),
                   *REPO.joinpath("solutions").rglob("*.ipynb"),
                   *REPO.joinpath("exercises").rglob("*.ipynb")])


@pytest.fixture(scope="module")
def cheat_run(tmp_path_factory):
    return _run(tmp_path_factory, A)


def _run(tmp_path_factory, A):
    root = tmp_path_factory.mktemp("cheats")
    subs, ws = root / "submitted", root / "ws"
    correct = "correct_logsumexp" if A == "ex01_python_attention" else min(
        n for n in variants(A) if n.startswith("correct"))
    expected = {"reference": (set(), "graded"), correct: (set(), "graded")}
    write_submission(subs, "reference", A, filled_notebook(A))
    write_submission(subs, correct, A, filled_notebook(A, parse_variant(variants(A)[correct])[0]))
    for name, path in _cheats(A).items():
        cells, fails = parse_variant(path)
        places = {"{REPO}": str(REPO), "{WORKSPACE}": str(ws), "{SUBMISSIONS}": str(subs),
                  "{STUDENT}": name}
        for gid, src in cells.items():
            src = src.replace("{REFERENCE}", reference_solutions(A).get(gid, ""))
            for k, v in places.items():
                src = src.replace(k, v)
            cells[gid] = src
        extra = {g: cells.pop(g) for g in list(cells) if g.startswith(("+", "!", "-"))}
        nb = filled_notebook(A, cells)
        for gid, src in extra.items():  # "+id": a new grade cell; "!id": a cell made graded
            if gid.startswith("-"):  # "-id": a learner's own cell (no metadata) before id
                at = [i for i, c in enumerate(nb.cells)
                      if c.metadata.get("nbgrader", {}).get("grade_id") == gid[1:]]
                nb.cells.insert(at[0], nbformat.v4.new_code_cell(src))
            elif gid.startswith("+"):
                cell = nbformat.v4.new_code_cell(src)
                cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True,
                                             "points": 50, "grade_id": gid[1:],
                                             "schema_version": 3}
                nb.cells.append(cell)
            else:
                for c in nb.cells:
                    if c.metadata.get("nbgrader", {}).get("grade_id") == gid[1:]:
                        c.metadata["nbgrader"].update(grade=True, points=10)
        write_submission(subs, name, A, nb)
        expected[name] = (fails, _expected_status(path))
    ws.mkdir()
    before = {"subs": _digest(sorted(subs.rglob("*"))),
              "paths": sorted(str(p) for p in subs.rglob("*"))}
    proc, rows, tests = grade(subs, ws, jobs=2, extra=["--no-progress"])
    return expected, proc, rows, tests, before, subs, ws


def test_every_submission_gets_a_row_in_one_sandboxed_run(cheat_run):
    expected, proc, rows, _, _, _, _ = cheat_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(rows) == set(expected)
    assert {r["sandbox"] for r in rows.values()} == {"bubblewrap"}
    assert "sandboxed with bubblewrap" in proc.stdout


@pytest.mark.parametrize("student", ["reference", "correct_logsumexp", *_cheats()])
def test_status_and_the_tests_it_touched(cheat_run, student):
    expected, _, rows, tests, _, _, _ = cheat_run
    fails, status = expected[student]
    row = rows[student]
    assert row["status"] == status, row
    assert float(row["score"] or 0) <= FULL, row  # no points from cells the release lacks
    lost = {t for t, r in tests[student].items() if float(r["score"] or 0) < float(r["max_score"])}
    assert lost == fails, (row["detail"], sorted(lost))
    if status == "tampering":
        assert "test(s) from there on scored 0" in row["detail"], row["detail"]


def _issue_23_cheats(assignment: str) -> list[str]:
    """The cheats written against the trusted checker (their docstrings name issue 23)."""
    return [n for n, p in _cheats(assignment).items() if "issue 23" in p.read_text().split(
        '"""')[1] and not n.startswith("correct")]


def test_checker_cheats_keep_at_most_half(cheat_run):
    """Issue 23: each cheat aimed at the trusted checker gets at most half its points, or
    tampering."""
    _, _, rows, _, _, _, _ = cheat_run
    names = _issue_23_cheats(A)
    assert len(names) >= 2
    for name in names:
        row = rows[name]
        assert row["status"] == "tampering" or float(row["score"]) <= FULL / 2, row


@pytest.fixture(scope="module", params=OTHERS)
def other_run(request, tmp_path_factory):
    return request.param, _run(tmp_path_factory, request.param)


def test_other_assignments_cheats(other_run):
    """ex05's hidden class and forbidden operator, ...: each cheat gets its status and
    loses exactly the tests it must; the reference and a correct variant keep full marks."""
    assignment, (expected, proc, rows, tests, _, _, _) = other_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(rows) == set(expected)
    wrong = []
    for student, (fails, status) in expected.items():
        row = rows[student]
        lost = {t for t, r in tests[student].items()
                if float(r["score"] or 0) < float(r["max_score"])}
        if row["status"] != status or lost != fails:
            wrong.append((student, row["status"], row["detail"], ", ".join(sorted(lost))))
    assert wrong == []


@pytest.mark.parametrize("other_run", ["ex05_torch_attention"], indirect=True)
def test_ex05_checker_cheats_keep_at_most_half_of_what_they_aim_at(other_run):
    """Issue 23, ex05: torch's fused attention by another name, torch's comparisons patched
    in the kernel for good or for one call, a tensor and a module that lie about themselves:
    each cheat earns at most half the points of the tests it aims at (its ``aims at:``
    line), or tampering."""
    assignment, (expected, _, rows, tests, _, _, _) = other_run
    aimed = {}
    for name, path in _cheats(assignment).items():
        m = re.search(r"^aims at:\s*(.*)$", path.read_text(encoding="utf-8"), flags=re.M)
        if m:
            aimed[name] = {t.strip() for t in m.group(1).split(",") if t.strip()}
    assert len(aimed) >= 8
    for name, targets in aimed.items():
        got = sum(float(tests[name][t]["score"] or 0) for t in targets)
        full = sum(float(tests[name][t]["max_score"]) for t in targets)
        assert rows[name]["status"] == "tampering" or got <= full / 2, (name, got, full)


def test_tampering_detail_names_the_route(cheat_run):
    """ex01's hidden tests run in the checker (issue 23): a cheat that stops the kernel's
    client from answering is a broken protocol, and what the static scan sees is a note
    for the instructor that costs no point."""
    _, _, rows, _, _, _, _ = cheat_run
    routes = {"shell_input_transformer": "broke the checker's protocol",
              "transformer_manager": "broke the checker's protocol",
              "globals_swap": "the static scan noted (no points lost)",
              "monkeypatch_numpy_compare": "the static scan noted (no points lost)"}
    for student, text in routes.items():
        assert text in rows[student]["detail"], (student, rows[student]["detail"])
    assert rows["globals_swap"]["status"] == "graded"


def test_nothing_written_outside_the_scratch_folders(cheat_run):
    _, _, _, _, before, subs, ws = cheat_run
    # (Other work may edit the course while this runs: look for the escapes' own writes.)
    assert [str(p) for p in _course_files() if p.read_bytes().endswith(b"escaped\n")] == []
    assert _digest(sorted(p for p in subs.rglob("*") if str(p) in before["subs"])) == \
        before["subs"], "a submission changed"
    assert sorted(str(p) for p in subs.rglob("*")) == before["paths"], "a file was added"
    places = [REPO, REPO / "autograder", REPO / "solutions", Path.home(), Path("/root"),
              Path("/tmp")]
    escaped = [str(p) for d in places for p in d.glob("ESCAPED-*")]
    escaped += [str(p) for p in ws.rglob("ESCAPED-*")]
    assert escaped == []
    assert not (ws / "gradebook.db").read_bytes().endswith(b"escaped\n")


def test_no_network_from_the_kernel(cheat_run):
    _, _, rows, _, _, _, ws = cheat_run
    nb = nbformat.read(ws / "autograded" / "escapes_write_and_network" / A / f"{A}.ipynb", 4)
    text = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "NETWORK-REACHED" not in text


def test_without_a_sandbox_grade_refuses_unless_told(tmp_path):
    """No sandbox can start (bwrap missing): refused; --no-sandbox grades and says so."""
    write_submission(tmp_path / "subs", "s", A, filled_notebook(A))
    env = {"AUTOGRADER_BWRAP": str(tmp_path / "no-such-bwrap")}
    proc, rows, _ = grade(tmp_path / "subs", tmp_path / "ws", jobs=1, env=env)
    assert proc.returncode == 2 and "--no-sandbox" in proc.stderr and not rows
    proc, rows, _ = grade(tmp_path / "subs", tmp_path / "ws", jobs=1, env=env,
                          extra=["--no-sandbox", "--no-progress"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rows["s"]["sandbox"] == "none" and float(rows["s"]["score"]) == FULL
    assert "WITHOUT a sandbox" in proc.stdout
