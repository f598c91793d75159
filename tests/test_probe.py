"""The standard-library probe (autograder/probe.py) started ahead: ``check`` runs ex01's
probe from the notebook's source while the kernel starts (issue 25), and the test that needs
it waits for that run instead of starting its own; another request runs on its own."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from autograder import notebook_run, probe, wire
from autograder.checker import setup_and_solution_cells
from autograder.checks import ex01
from autograder.python_only import BANNED_MODULES
from autograder.notebook import put_hidden_tests_back

sys.path.insert(0, str(Path(__file__).resolve().parent))
from submissions import filled_notebook  # noqa: E402

CELLS = ["def double(x):\n    return [2 * v for v in x]"]


def values(replies: list, tmp_path: Path) -> list:
    """The probe's replies as Python values (as the checker decodes them)."""
    return [wire.decode(r["value"], wire.Arrays(tmp_path, "none")) for r in replies]


@pytest.fixture
def counted(monkeypatch):
    """The requests the probe really ran, in order."""
    runs = []
    real = probe._run

    def run(request, n_calls, timeout):
        runs.append(request)
        return real(request, n_calls, timeout)

    monkeypatch.setattr(probe, "_run", run)
    return runs


def test_a_prefetched_request_runs_once(counted, tmp_path):
    probe.prefetch(CELLS, [("double", ([1.0, 2.5],))], timeout=20)
    replies, tried = probe.run(CELLS, [("double", ([1.0, 2.5],))], timeout=20)
    assert values(replies, tmp_path) == [[2.0, 5.0]] and tried == []
    assert len(counted) == 1                                  # the prefetched run, taken
    replies, _ = probe.run(CELLS, [("double", ([1.0, 2.5],))], timeout=20)
    assert values(replies, tmp_path) == [[2.0, 5.0]] and len(counted) == 2  # taken once only


def test_another_request_runs_on_its_own(counted, tmp_path):
    probe.prefetch(CELLS, [("double", ([1.0],))], timeout=20)
    replies, _ = probe.run(CELLS, [("double", ([3.0],))], timeout=20)
    assert values(replies, tmp_path) == [[6.0]]               # not the prefetched answer
    assert len(counted) == 2 and '"calls": [["double", [[3.0]]]]' in counted[-1]


def test_ex01_check_takes_the_probe_it_started(counted, tmp_path):
    """The whole of ex01 checked as ``check`` runs it: its prefetch (from the notebook's
    source, with the released names and the test's seed) is the request the hidden test
    makes, so the probe runs once; the test passes."""
    nb = filled_notebook("ex01_python_attention")
    put_hidden_tests_back(nb, "ex01_python_attention")  # as check does in the open course
    record = notebook_run.execute(nb, tmp_path, timeout=60, assignment="ex01_python_attention")
    assert not record.stopped_because
    assert len(counted) == 1 and not probe._PREFETCHED
    test = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")
                == "test_pure_python")
    assert not [o for o in test.outputs if o.output_type == "error"], test.outputs
    cells = setup_and_solution_cells(nb)
    assert probe._request(cells, ex01.PROBE_CALLS, BANNED_MODULES) == counted[0]
