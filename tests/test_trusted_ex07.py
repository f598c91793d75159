"""ex07 through the trusted checker (issue 23), with a stand-in kernel in this process.

ex07 is not in ``autograder.exercises.TRUSTED`` yet: its setup cell imports the course's
``MultiHeadAttention`` and the toy task's helpers from ``autograder.reference``, which a
trusted kernel does not get (``sandbox.KERNEL_FILES`` is one flat list for every trusted
exercise, and the ex05 solution must stay out of ex05's kernel). Its checks already drive
the learner's modules by command; these tests run the notebook's test cells whole in the
checker (:func:`autograder.checker.run_test`) against a kernel namespace served over the
real exchange folder and socket, so every block and model is built, loaded, run and
probed through plain data, as it will be once the kernel can have those helpers. The
training tests are left out (they train twice: once for the kernel's display, once for the
checker; see the grading of ex07 for them).
"""

from __future__ import annotations

import pytest
from submissions import filled_notebook, parse_variant, variants

A = "ex07_transformer"
TRAINING = ("test_training_time", "test_trained_accuracy")
pytestmark = pytest.mark.slow


def _checked(cells: dict | None = None) -> dict[str, tuple | None]:
    """grade_id -> the checker's verdict (None: passed) for every test cell but training."""
    import tempfile
    from pathlib import Path

    import nbformat
    from nbgrader.utils import is_grade, is_solution

    from autograder import checker
    from autograder.config import SOLUTIONS

    filled = filled_notebook(A, cells or {})
    solutions = {c.metadata["nbgrader"]["grade_id"]: c.source for c in filled.cells
                 if is_solution(c)}
    nb = nbformat.read(SOLUTIONS / A / f"{A}.ipynb", as_version=4)  # the hidden tests too
    kernel: dict = {"__name__": "__main__"}
    with tempfile.TemporaryDirectory() as folder:
        session = checker.Session(lambda code: exec(code, kernel), Path(folder), nb)
        setup_sources, setup, verdicts = [], None, {}
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            meta = cell.metadata.get("nbgrader", {})
            if is_grade(cell) and not is_solution(cell):
                if meta["grade_id"] in TRAINING:
                    continue
                if setup is None:
                    setup = checker.setup_namespace(setup_sources)
                verdicts[meta["grade_id"]] = checker.run_test(
                    session, cell.source, setup, meta["grade_id"],
                    checker.visible_part(cell.source))
                continue
            if is_solution(cell):
                cell.source = solutions[meta["grade_id"]]
            elif meta.get("locked"):
                setup_sources.append(cell.source)
            exec(compile(cell.source, "<cell>", "exec"), kernel)
        session.close()
    return verdicts


def test_the_reference_passes_every_test_through_the_checker():
    verdicts = _checked()
    assert len(verdicts) == 15 and {g: v for g, v in verdicts.items() if v} == {}


@pytest.mark.parametrize("name", ["block_norm_inside_residual", "model_final_norm_unused",
                                  "positional_encoding_after_first_block", "dropout_on_in_eval",
                                  "correct_unusual_modules"])
def test_a_variant_loses_exactly_its_tests_through_the_checker(name):
    cells, fails = parse_variant(variants(A)[name])
    verdicts = _checked(cells)
    assert {g for g, v in verdicts.items() if v} == set(fails) - set(TRAINING)
    for line in (ln.split(":", 1)[1].strip() for ln in variants(A)[name].read_text(
            encoding="utf-8").splitlines() if ln.startswith("hint:")):
        assert any(line in v[1] for v in verdicts.values() if v), (line, verdicts)
