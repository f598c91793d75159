"""Every hidden check is traced to a statement of the notebook the learner sees (issue 12).

Hidden tests may test only what the learner was told. In the source notebooks
(``solutions/``), every statement of a ``### BEGIN HIDDEN TESTS`` region that runs a check
is preceded by one or more comments

    # states: "<a fragment of the released notebook>"

and each fragment must occur in the released notebook (``exercises/``): its markdown, its
stubs' docstrings or a visible test's docstring. The comparison ignores line breaks,
runs of spaces and Markdown emphasis (``**``, ``*``, backticks). A hidden check with no
statement, or with a statement the learner never sees, fails this test.
"""

from __future__ import annotations

import re

import nbformat
import pytest

from autograder.config import EXERCISES, SOLUTIONS
from autograder.notebook import HIDDEN_BEGIN, grade_id, is_test_cell

ASSIGNMENTS = sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir())
STATES = re.compile(r'^#\s*states:\s*"(.+)"\s*$')


def normalise(text: str) -> str:
    text = text.replace("**", "").replace("*", "").replace("`", "")
    return re.sub(r"\s+", " ", text).strip()


def released_text(nb) -> str:
    return normalise("\n".join(c.source for c in nb.cells))


def untraced(source: str, released: str) -> list[str]:
    """Problems of one test cell: hidden checks without a statement, or with a statement
    that the released notebook does not contain."""
    if HIDDEN_BEGIN not in source:
        return []
    region = source.split(HIDDEN_BEGIN, 1)[1].split("### END HIDDEN TESTS", 1)[0]
    problems, pending = [], []
    for line in region.splitlines():
        text = line.strip()
        if not text or line[:1].isspace() or text.startswith(("import ", "from ")):
            continue  # blank, a continuation line, an import
        m = STATES.match(text)
        if m:
            pending.append(m.group(1))
            continue
        if text.startswith("#"):
            continue
        if not pending:
            problems.append(f"`{text}` has no `# states:` comment")
        for fragment in pending:
            if normalise(fragment) not in released:
                problems.append(f"`{text}` cites {fragment!r}, which the learner's notebook "
                                "does not say")
        pending = []
    return problems


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_hidden_check_cites_a_statement_of_the_notebook(assignment):
    source = nbformat.read(SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    released = released_text(nbformat.read(EXERCISES / assignment / f"{assignment}.ipynb",
                                           as_version=4))
    problems = [f"{grade_id(c)}: {p}" for c in source.cells if is_test_cell(c)
                for p in untraced(c.source, released)]
    assert not problems, "\n".join(problems)
    assert any(HIDDEN_BEGIN in c.source for c in source.cells)


def test_a_hidden_check_without_a_statement_fails():
    released = normalise("Raise `ValueError` when a matrix is **empty**.")
    ok = f'"""doc"""\n{HIDDEN_BEGIN}\n# states: "when a matrix is empty"\ncheck(f)\n### END HIDDEN TESTS'
    assert untraced(ok, released) == []
    missing = f'"""doc"""\n{HIDDEN_BEGIN}\nfrom m import check\ncheck(f)\n### END HIDDEN TESTS'
    assert untraced(missing, released) == ["`check(f)` has no `# states:` comment"]
    unsaid = f'{HIDDEN_BEGIN}\n# states: "when a matrix is 1-D"\ncheck(f)\n### END HIDDEN TESTS'
    assert "does not say" in untraced(unsaid, released)[0]
