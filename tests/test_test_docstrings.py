"""A test's docstring says what its visible body checks (issue 27).

The docstring's first line is the sentence of the test's row in ``check`` (PASS, PENDING,
FAIL) and what a learner reads above the test's code. The issue found two that claimed
what the visible code does not do: ex05's "random inputs agree with torch" and ex01's
"random inputs with T_q == T_k", each over one fixed example (the random inputs were the
hidden part's). This test finds such claims mechanically: a docstring that says "random"
over a visible body that draws nothing at random, or "the reference" over one that calls
no reference. A test whose body is all hidden is described by its hidden check, and is
left out. (The other test cells were read by hand, against their visible bodies and
hidden checks; see the commit that added this file.)
"""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from autograder import ASSIGNMENTS
from autograder.checker import segments
from autograder.config import SOLUTIONS
from autograder.verdicts import grade_id, is_test_cell
from autograder.verdicts import test_summary as sentence

# What drawing random inputs looks like in the course's test cells (NumPy's generators,
# torch's, Python's random module, the course's random_digits).
DRAWS = re.compile(r"default_rng|\brandom\b|\brandom_\w+\(|\brandn\b|\brandint\b|\brand\b|"
                   r"manual_seed|\.normal\(|\buniform\(")


def visible_code(source: str) -> str:
    """The code of a test cell outside its hidden parts, without the docstring and the
    comments ('' when all of it is hidden)."""
    out = []
    for hidden, code in segments(source):
        if hidden:
            continue
        body = ast.parse(code).body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str) and not out:
            body = body[1:]
        out += [ast.unparse(node) for node in body]
    return "\n".join(out)


def unbacked_claims(source: str) -> list[str]:
    """What the docstring of a test cell claims that its visible body does not do."""
    doc, code = sentence(source), visible_code(source)
    if not code.strip():
        return []  # all hidden: the hidden check's docstring says what it does
    claims = []
    if re.search(r"\brandom\b", doc, flags=re.I) and not DRAWS.search(code):
        claims.append(f"'random' but the visible body draws nothing at random: {doc}")
    if re.search(r"\bthe (course's )?reference\b", doc) and "reference" not in code:
        claims.append(f"'the reference' but the visible body calls none: {doc}")
    return claims


def _tests(assignment: str):
    nb = nbformat.read(SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    return [(grade_id(c), c.source) for c in nb.cells if is_test_cell(c)]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_docstring_claims_what_its_visible_body_does_not_do(assignment):
    found = {gid: claims for gid, source in _tests(assignment)
             if (claims := unbacked_claims(source))}
    assert not found, found


def test_the_check_catches_the_docstrings_the_issue_found():
    """The wrong implementations it catches: ex05's and ex01's old docstrings over their
    visible bodies (a fixed example), while a docstring that says "random" over a body that
    draws its inputs (ex06's) and one over a body that is all hidden pass."""
    one_query = ('out = scaled_dot_product_attention(q, k, v)\n'
                 'assert_close(out.cpu(), [[w]], "one query over two keys", rtol=1e-6)\n')
    ex05_old = ('"""One query, two keys: the known weighted average; random inputs agree with '
                'torch."""\n' + one_query + "### BEGIN HIDDEN TESTS\n"
                "ex05.sdpa_matches_torch(scaled_dot_product_attention)\n### END HIDDEN TESTS\n")
    ex01_old = ('"""Attention of random inputs with T_q == T_k matches the reference."""\n'
                "### BEGIN HIDDEN TESTS\nex01.attention_matches_reference(f)\n"
                "### END HIDDEN TESTS\n# random inputs are drawn by the hidden part\n"
                + one_query)
    assert unbacked_claims(ex05_old) and len(unbacked_claims(ex01_old)) == 2
    sources = dict(_tests("ex06_tiled_attention"))
    assert "Random inputs" in sentence(sources["test_matches_dense"])
    assert not unbacked_claims(sources["test_matches_dense"])
    assert not unbacked_claims('"""Random inputs agree.""";\n### BEGIN HIDDEN TESTS\n'
                               "ex01.f(g)\n### END HIDDEN TESTS\n")
