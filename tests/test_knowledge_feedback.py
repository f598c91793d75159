"""Knowledge checks say why (issue 27): a right answer's PASS row says it is right and
why, a wrong answer's FAIL row gives the test's sentence and the reasoning that leads to
the answer, never the answer; for every knowledge check of every exercise.

The rows are built by :func:`autograder.verdicts.results` from the solutions' test cells
with the outputs a run leaves (none for a pass, the trusted check's error for a fail), as
``check`` and the in-page check build them; ``test_check_cli`` and ``test_inpage`` run
the same end to end.
"""

from __future__ import annotations

import copy
import math
import re

import nbformat
import pytest
from submissions import parse_variant, variants

from autograder import ASSIGNMENTS
from autograder.checks import knowledge
from autograder.config import SOLUTIONS
from autograder.testing import CheckFailed
from autograder.verdicts import (
    SEPARATOR,
    grade_id,
    is_test_cell,
    knowledge_check_of,
    results,
    test_summary as sentence,
)


def _kc_cells(assignment: str) -> dict[str, dict]:
    """kc name -> its test cell in the solutions notebook (hidden part included)."""
    nb = nbformat.read(SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    return {knowledge_check_of(c.source): c for c in nb.cells
            if is_test_cell(c) and knowledge_check_of(c.source)}


def _wrong_answers(assignment: str) -> dict[str, object]:
    """kc name -> the wrong answer of the variant knowledge_checks_wrong."""
    cells, fails = parse_variant(variants(assignment)["knowledge_checks_wrong"])
    ns: dict = {"math": math}
    for source in cells.values():
        exec(source, ns)  # noqa: S102 - the course's own variant file
    return {name.removesuffix("_answer"): ns[name] for name in ns if name.endswith("_answer")}


def _row(cell, outputs: list, explanations: dict | None):
    cell = copy.deepcopy(cell)
    cell["outputs"] = outputs
    [row] = results({"cells": [cell]}, {grade_id(cell)}, None, explanations=explanations)
    return row


def _shows_answer(text: str, answer) -> bool:
    """Whether ``text`` names ``answer``: quoted (a letter or word), or a word of more than
    one letter; a number in any of the forms it is usually written in."""
    if isinstance(answer, str):
        forms = [f"'{answer}'", f'"{answer}"', f"({answer})"]
        return any(f in text for f in forms) or (
            len(answer) > 1 and re.search(rf"(?<![\w-]){re.escape(answer)}(?![\w-])", text))
    forms = {repr(answer), str(answer), f"{answer:g}"} | (
        {f"{answer:.{n}g}" for n in (3, 4, 5, 6)} | {f"{answer:.{n}f}" for n in (2, 3, 4)}
        if isinstance(answer, float) else {f"{answer:,}", f"{answer:_}".replace("_", " ")})
    return any(re.search(rf"(?<![\w.]){re.escape(f)}(?![\w]|\.\d)", text) for f in forms)


def test_the_answer_detector_finds_an_answer_it_should():
    """The wrong implementation :func:`_shows_answer` must catch: reasoning that gives the
    answer away."""
    assert _shows_answer("so the weight is 0.75.", 0.75)
    assert _shows_answer("1 + 2 + 3 = 6 pairs", 6)
    assert _shows_answer("about −0.4161 in all", -0.4161468365471424) is False  # − is not -
    assert _shows_answer("about -0.4161 in all", -0.4161468365471424)
    assert _shows_answer("3 152 384 in all", 3152384)
    assert _shows_answer("answer 'b' here", "b") and _shows_answer("it is pre-norm", "pre-norm")
    assert not _shows_answer("chapter 6, keys 0 … i", 1) and not _shows_answer("a 16-bit", 1)
    assert not _shows_answer("the post-norm stack", "pre-norm")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_knowledge_check_has_an_explanation(assignment):
    """Each knowledge check a test cell calls has an answer and an explanation (why it is
    right, and reasoning that names the chapter section to read), and none is left over."""
    cells = _kc_cells(assignment)
    assert cells, f"{assignment} has no knowledge checks"
    assert set(cells) == set(knowledge.ANSWERS[assignment]) == \
        set(knowledge.EXPLANATIONS[assignment])
    for kc, (right, reasoning) in knowledge.EXPLANATIONS[assignment].items():
        assert right.strip() and "\n" not in right + reasoning, (kc, right)
        assert re.search(r"\(chapter \d", reasoning), (assignment, kc, reasoning)
        assert not _shows_answer(reasoning, knowledge.ANSWERS[assignment][kc]), (
            f"{assignment} {kc}: the reasoning gives the answer away: {reasoning}")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_right_answer_s_row_says_why(assignment):
    explanations = knowledge.explanations(assignment)
    for kc, cell in _kc_cells(assignment).items():
        knowledge.check(assignment, kc, knowledge.ANSWERS[assignment][kc])  # passes
        row = _row(cell, [], explanations)
        number = kc.removeprefix("kc")
        assert row.status == "pass"
        assert row.message == f"Knowledge check {number}: right{SEPARATOR}" + \
            knowledge.EXPLANATIONS[assignment][kc][0], row.message
        # where the trusted side's explanations are not there (a private release), the
        # row is the test's own sentence
        assert _row(cell, [], None).message == sentence(cell.source)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_wrong_answer_s_row_gives_the_reasoning_and_not_the_answer(assignment):
    explanations = knowledge.explanations(assignment)
    wrong = _wrong_answers(assignment)
    cells = _kc_cells(assignment)
    assert set(wrong) == set(cells), "knowledge_checks_wrong answers every knowledge check"
    for kc, cell in cells.items():
        with pytest.raises(CheckFailed) as caught:
            knowledge.check(assignment, kc, wrong[kc])
        error = {"output_type": "error", "ename": "CheckFailed", "evalue": str(caught.value),
                 "traceback": []}
        # what the learner's code printed is no verdict: the error decides
        printed = {"output_type": "stream", "name": "stdout",
                   "text": f"Knowledge check {kc[2:]}: right — it is\n"}
        row = _row(cell, [printed, error], explanations)
        right, reasoning = knowledge.EXPLANATIONS[assignment][kc]
        assert row.status == "fail"
        assert row.message.startswith(sentence(cell.source) + SEPARATOR + "CheckFailed: ")
        assert "is not the right answer" in row.message and reasoning in row.message
        assert right not in row.message and "right —" not in row.message
        assert not _shows_answer(row.message, knowledge.ANSWERS[assignment][kc]), row.message


def test_an_unanswered_knowledge_check_gets_the_reasoning_too():
    with pytest.raises(CheckFailed) as caught:
        knowledge.check("ex01_python_attention", "kc1", ...)
    assert str(caught.value).startswith("Knowledge check 1: no answer given yet. ")
    assert knowledge.EXPLANATIONS["ex01_python_attention"]["kc1"][1] in str(caught.value)


def test_a_test_after_an_unfinished_answer_cell_names_that_cell():
    """An answer cell left with its ``raise NotImplementedError()`` makes the knowledge
    check's visible assert fail ("kc1_answer should be a string"); the row says which of
    the learner's cells to finish. A test that does not use that cell's names is not told."""
    from autograder.config import EXERCISES

    assignment = "ex08_rust_attention"
    nb = nbformat.read(EXERCISES / assignment / f"{assignment}.ipynb", as_version=4)
    cells = {grade_id(c): copy.deepcopy(c) for c in nb.cells if grade_id(c)}
    stub = cells["kc1"]
    stub["outputs"] = [{"output_type": "error", "ename": "NotImplementedError", "evalue": "",
                        "traceback": []}]
    failed = [{"output_type": "error", "ename": "AssertionError",
               "evalue": "kc1_answer should be a string: 'a', 'b' or 'c'", "traceback": []}]
    for gid in ("test_kc1", "test_kc2"):
        cells[gid]["outputs"] = failed
    rows = {r.name: r for r in results({"cells": [stub, cells["test_kc1"], cells["test_kc2"]]},
                                       None, None)}
    assert rows["test_kc1"].status == "fail"
    assert rows["test_kc1"].message.endswith(
        "(your cell 'kc1' above still raises NotImplementedError: finish it first)")
    assert "your cell" not in rows["test_kc2"].message
