"""The in-page tier's Python side, without a browser: which chapter cells get a Run button
(_ext/runnable_cells.py), what a run prints (autograder.inpage.run_cells), and exercise 1's
in-page check giving the rows `python -m autograder check` prints (check_exercise)."""

from __future__ import annotations

import json
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
    assert "Cell In[1], line 2: raise ValueError('bad row')" in broken["error"]
    assert "'(' was never closed" in run_cells(["print((1)"])["error"]
    # every run starts afresh: nothing is left from the previous one
    assert "NameError" in run_cells(["print(x)"])["error"]


def _spec() -> dict:
    sys.modules.pop("course_runner", None)
    from course_runner import exercise_data

    return exercise_data(REPO)


def _code(softmax: str = SOFTMAX, answers: dict | None = None) -> dict[str, str]:
    return {"softmax": softmax, "scaled_dot_product_attention": ATTENTION,
            **(answers if answers is not None else ANSWERS)}


def test_the_in_page_check_of_a_correct_solution_fails_nothing():
    data = _spec()
    out = check_exercise(data["notebook"], _code(), data["spec"])
    rows = [line for line in out["lines"] if " pt  " in line]
    assert len(rows) == 12 and not out["failed"]
    assert all(" PASS " in r or " PENDING " in r for r in rows), rows
    assert sum(" PASS " in r for r in rows) >= 3  # the knowledge checks at least
    assert ", 0 failed, " in out["lines"][-1]


def test_the_in_page_check_names_the_missing_max_subtraction_and_wrong_answers():
    data = _spec()
    out = check_exercise(data["notebook"], _code(NO_MAX, {**ANSWERS, "kc1": 'kc1_answer = "a"'}),
                         data["spec"])
    rows = {line.split()[0]: line for line in out["lines"] if " pt  " in line}
    assert out["failed"]
    assert " FAIL " in rows["test_softmax_stable"] and "OverflowError" in rows["test_softmax_stable"]
    assert " FAIL " in rows["test_kc1"] and "'a' is not the right answer" in rows["test_kc1"]
    assert " FAIL " not in rows["test_softmax_known_values"]


def _check_rows(tmp_path, code: dict[str, str], *flags: str) -> dict[str, str]:
    nb = json.loads(NOTEBOOK.read_text())
    for cell in nb["cells"]:
        gid = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if gid in code:
            cell["source"] = code[gid]
    folder = tmp_path / "exercises" / "ex01_python_attention"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / NOTEBOOK.name
    path.write_text(json.dumps(nb))
    proc = subprocess.run([sys.executable, "-m", "autograder", "check", *flags, str(path)],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    return {line.split()[0]: line for line in proc.stdout.splitlines() if " pt  " in line}


@pytest.mark.slow
def test_the_in_page_rows_are_the_rows_check_prints(tmp_path):
    """Row by row, the page prints what `check --visible-only` prints for the tests whose
    hidden part it does not run, and what the whole `check` prints for the rest (the
    knowledge checks and the tests with no hidden part), right and wrong solutions."""
    data = _spec()
    wrong = _code(NO_MAX, {**ANSWERS, "kc3": "kc3_answer = 0.5"})
    for code in (_code(), wrong):
        page = {line.split()[0]: line for line in
                check_exercise(data["notebook"], code, data["spec"])["lines"] if " pt  " in line}
        visible = _check_rows(tmp_path, code, "--visible-only")
        whole = _check_rows(tmp_path, code)
        assert page.keys() == visible.keys() == whole.keys() and len(page) == 12
        for name, row in page.items():
            expected = visible[name] if name in data["spec"]["hidden"] else whole[name]
            assert row == expected, (name, row, expected)
