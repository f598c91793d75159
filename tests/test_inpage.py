"""The in-page tier's Python side, without a browser: which chapter cells get a Run button
(_ext/runnable_cells.py), what a run prints (autograder.inpage.run_cells), and exercise 1's
in-page check giving the rows `python -m autograder check` prints (check_exercise)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "_ext"))

from autograder.inpage import check_exercise, run_cells  # noqa: E402
from runnable_cells import runnable  # noqa: E402

NOTEBOOK = REPO / "exercises" / "ex01_python_attention" / "ex01_python_attention.ipynb"
SOFTMAX = '''def softmax(row):
    if not row:
        raise ValueError("softmax of an empty row")
    m = max(row)
    exps = [math.exp(x - m) for x in row]
    total = sum(exps)
    return [e / total for e in exps]
'''
NO_MAX = SOFTMAX.replace("math.exp(x - m)", "math.exp(x)")
ATTENTION = '''def scaled_dot_product_attention(Q, K, V):
    for name, M in (("Q", Q), ("K", K), ("V", V)):
        if not M or not M[0] or any(len(r) != len(M[0]) for r in M):
            raise ValueError(f"{name} is empty or ragged")
    if len(Q[0]) != len(K[0]) or len(K) != len(V):
        raise ValueError("shapes do not match")
    d_k = len(Q[0])
    out = []
    for q in Q:
        w = softmax([sum(a * b for a, b in zip(q, k)) / math.sqrt(d_k) for k in K])
        out.append([sum(w[j] * V[j][c] for j in range(len(V))) for c in range(len(V[0]))])
    return out
'''
ANSWERS = {"kc1": 'kc1_answer = "b"', "kc2": 'kc2_answer = "b"', "kc3": "kc3_answer = 0.75"}


def _cells(*sources: str) -> list[bool]:
    return runnable(list(sources), [True] * len(sources))


def test_cells_that_need_only_the_standard_library_run_in_the_page():
    assert _cells("import math\nfrom autograder.reference.python_attention import softmax",
                  "print(softmax([1.0, 2.0]), math.pi)") == [True, True]
    # numpy, a package the page lacks, and everything that needs what it bound
    assert _cells("import numpy as np\nx = 1", "print(x)", "y = 2\nprint(y)") == \
        [False, False, True]
    # a name rebound by a cell that does not run in the page: the page would print another value
    assert _cells("x = 1", "import numpy as np\nx = np.int64(2)", "print(x)") == \
        [True, False, False]
    # ...but a later cell that runs in the page binds it afresh: the page prints the same
    assert _cells("import numpy as np\nx = np.int64(2)", "x = 3", "print(x)") == \
        [False, True, True]
    # subprocess is standard library, not in a browser; magics are not Python
    assert _cells("import subprocess", "%timeit 1 + 1", "import os.path") == \
        [False, False, True]
    # names bound in the cell's own functions, loops and comprehensions are its own
    assert _cells("def f(a):\n    return [b * a for b in range(a)]\nprint(f(3))") == [True]
    # a cell whose build output is a figure or a value is not text: no Run button
    assert runnable(["print(1)", "1 + 1"], [True, False]) == [True, False]


def test_a_run_prints_what_the_last_cell_prints_after_the_cells_above():
    assert run_cells(["x = 2", "print(x * 21)"]) == {"stdout": "42\n", "error": ""}
    failed = run_cells(["x = 1 / 0", "print(x)"])
    assert failed["stdout"] == "" and "a cell above this one failed" in failed["error"]
    assert "ZeroDivisionError: division by zero" in failed["error"]
    broken = run_cells(["print('before')\nraise ValueError('bad row')"])
    assert broken["stdout"] == "before\n" and broken["error"].endswith("ValueError: bad row")
    assert broken["error"].startswith("line 2: raise ValueError('bad row')")
    assert run_cells(["print((1)"])["error"] == "line 1: print((1)\nSyntaxError: '(' was never closed"
    above = run_cells(["x = 1", "y = x +", "print(x)"])["error"]  # named as the page numbers it
    assert above.startswith("a cell above this one failed:\nrunnable cell 2 of this page, line 1")
    assert "standard library" in run_cells(["import no_such_package"])["error"]
    # every run starts afresh: nothing is left from the previous one
    assert "NameError" in run_cells(["print(x)"])["error"]


def _spec(hidden_tests: bool = True) -> dict:
    sys.modules.pop("course_runner", None)
    from course_runner import exercise_data

    return exercise_data(REPO, hidden_tests)


def _code(softmax: str = SOFTMAX, answers: dict | None = None,
          attention: str = ATTENTION) -> dict[str, str]:
    return {"softmax": softmax, "scaled_dot_product_attention": attention,
            **(answers if answers is not None else ANSWERS)}


def _page_rows(code: dict[str, str], hidden_tests: bool = True) -> dict[str, str]:
    data = _spec(hidden_tests)
    out = check_exercise(data["notebook"], code, data["spec"])
    return {line.split()[0]: line for line in out["lines"] if " pt  " in line}


def test_the_in_page_check_gives_every_verdict_of_a_correct_solution():
    data = _spec()
    out = check_exercise(data["notebook"], _code(), data["spec"])
    rows = [line for line in out["lines"] if " pt  " in line]
    assert len(rows) == 12 and not out["failed"]
    assert all(" PASS " in r for r in rows), rows  # hidden parts and knowledge checks ran
    from autograder.checks.knowledge import EXPLANATIONS

    for kc, (right, _) in EXPLANATIONS["ex01_python_attention"].items():  # and say why
        assert any(f"Knowledge check {kc[2:]}: right — {right}" in r for r in rows), rows
    assert "points: 14 earned, 0 pending" in "\n".join(out["lines"])


def test_without_the_hidden_tests_the_page_leaves_them_pending():
    """A site built without them (a private fork's, in_page_hidden_tests false): the
    visible parts run, and no test with a hidden part counts as passed."""
    rows = _page_rows(_code(), hidden_tests=False)
    assert len(rows) == 12 and not [r for r in rows.values() if " FAIL " in r]
    assert all(" PENDING " in r for r in rows.values()), rows
    assert not _spec(hidden_tests=False)["spec"]["tests"]


def test_the_in_page_check_names_the_mistakes():
    """No max subtraction, a wrong knowledge-check answer, the scale 1/sqrt(d_v), no scale:
    each fails its tests with a hint naming it, and only its tests."""
    rows = _page_rows(_code(NO_MAX, {**ANSWERS, "kc1": 'kc1_answer = "a"'}))
    stable = rows["test_softmax_stable"]
    assert " FAIL " in stable and "OverflowError" in stable and \
        "subtract the row's maximum" in stable
    assert " FAIL " in rows["test_kc1"] and "'a' is not the right answer" in rows["test_kc1"]
    assert "Knowledge check 1: the shape of the attention weights. — " in rows["test_kc1"]
    assert "count the rows and the columns of Q Kᵀ" in rows["test_kc1"]
    assert "softmax([1000, 1001]) does not overflow: the max is subtracted first. — " in stable
    assert " FAIL " not in rows["test_softmax_known_values"] + rows["test_kc2"]
    d_v = _page_rows(_code(attention=ATTENTION.replace("math.sqrt(d_k)", "math.sqrt(len(V[0]))")))
    unscaled = _page_rows(_code(attention=ATTENTION.replace(" / math.sqrt(d_k)", "")))
    for wrong, words in ((d_v, "1/sqrt(d_v) instead of 1/sqrt(d_k)"),
                         (unscaled, "without the 1/sqrt(d_k) scale")):
        failed = {name for name, row in wrong.items() if " FAIL " in row}
        assert failed == {"test_attention_worked_example", "test_attention_matches_reference",
                          "test_attention_rectangular", "test_attention_stable"} or \
            failed == {"test_attention_worked_example", "test_attention_matches_reference",
                       "test_attention_rectangular"}, failed
        assert all(words in wrong[name] for name in failed
                   if name != "test_attention_stable"), wrong


def test_the_page_s_python_files_need_only_the_standard_library(tmp_path):
    """The files the site gives the page, alone on sys.path of a Python started without
    site-packages (-S -I), run the whole check of a correct and a wrong solution."""
    sys.modules.pop("course_runner", None)
    from course_runner import HIDDEN_TEST_FILES, IN_PAGE_FILES

    for path, real in {**IN_PAGE_FILES, **HIDDEN_TEST_FILES}.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text((REPO / "autograder" / real).read_text() if real else "")
    (tmp_path / "spec.json").write_text(json.dumps({"data": _spec(), "right": _code(),
                                                    "wrong": _code(NO_MAX)}))
    script = """import json, sys
sys.path[:] = [p for p in sys.path if 'site-packages' not in p and 'dist-packages' not in p]
sys.path.insert(0, '.')
from autograder.inpage import check_exercise
d = json.load(open('spec.json'))
for name in ('right', 'wrong'):
    print(name, check_exercise(d['data']['notebook'], d[name], d['data']['spec'])['lines'][-1])
assert 'numpy' not in sys.modules and 'nbformat' not in sys.modules, sorted(sys.modules)
"""
    proc = subprocess.run([sys.executable, "-S", "-I", "-c", script], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["right 12 passed, 0 failed, 0 pending",
                                        "wrong 10 passed, 2 failed, 0 pending"], proc.stdout


def _check_rows(tmp_path, code: dict[str, str], private: bool = False) -> dict[str, str]:
    """The rows `check` prints; ``private``: as a class's private release does (no
    solutions/ beside the course package)."""
    nb = json.loads(NOTEBOOK.read_text())
    for cell in nb["cells"]:
        gid = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if gid in code:
            cell["source"] = code[gid]
    folder = tmp_path / "exercises" / "ex01_python_attention"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / NOTEBOOK.name
    path.write_text(json.dumps(nb))
    env = dict(os.environ, AUTOGRADER_SOLUTIONS=str(tmp_path / "none")) if private else None
    proc = subprocess.run([sys.executable, "-m", "autograder", "check", str(path)], env=env,
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    return {line.split()[0]: line for line in proc.stdout.splitlines() if " pt  " in line}


@pytest.mark.slow
def test_the_in_page_rows_are_the_rows_check_prints(tmp_path):
    """Row by row, the page prints what the whole `check` prints (the open course's site)
    and what it prints in a private release (a site without the hidden tests), for a right
    solution and for wrong ones (no max subtraction and a wrong answer; the scale
    1/sqrt(d_v))."""
    wrong = _code(NO_MAX, {**ANSWERS, "kc3": "kc3_answer = 0.5"})
    d_v = _code(attention=ATTENTION.replace("math.sqrt(d_k)", "math.sqrt(len(V[0]))"))
    for code in (_code(), wrong, d_v):
        for hidden_tests in (True, False):
            page = _page_rows(code, hidden_tests)
            cli = _check_rows(tmp_path, code, private=not hidden_tests)
            assert page == cli and len(page) == 12, (hidden_tests, page, cli)
