"""Every environment variable the course reads is declared once, in autograder/env_vars.py,
and the ones a person sets are documented in instructors.md (issue 24)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from autograder import env_vars

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "autograder"
NAME = re.compile(r"AUTOGRADER_[A-Z_]+")


def literal_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every AUTOGRADER_* name used as code rather than mentioned in text:
    a string constant indexing or passed to os.environ / os.getenv, or a keyword argument."""
    found = []
    for node in ast.walk(tree):
        keys = []
        if isinstance(node, ast.Subscript):
            keys = [node.slice]
        elif isinstance(node, ast.Call):
            keys = list(node.args[:1])
            found += [(node.lineno, k.arg) for k in node.keywords if k.arg and NAME.fullmatch(k.arg)]
        found += [(node.lineno, k.value) for k in keys
                  if isinstance(k, ast.Constant) and isinstance(k.value, str)
                  and NAME.fullmatch(k.value)]
    return found


def test_no_module_but_env_vars_reads_or_sets_a_variable_by_its_literal_name():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "env_vars.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        offenders += [f"{path.relative_to(REPO)}:{line}: {name}" for line, name in literal_uses(tree)]
    assert offenders == [], "read them through autograder.env_vars:\n" + "\n".join(offenders)


def test_every_variable_the_package_names_is_declared():
    declared = {v.name for v in env_vars.ALL}
    named = {m for path in PACKAGE.rglob("*.py") for m in NAME.findall(path.read_text(encoding="utf-8"))}
    assert named - declared == set()
    assert len(declared) == len(env_vars.ALL)  # one declaration each


def test_the_check_catches_a_literal_read():
    """The wrong code the first test exists for: it is found."""
    tree = ast.parse('import os\nos.environ.get("AUTOGRADER_SANDBOX")\nos.environ["AUTOGRADER_X"] = "1"\n'
                     'dict(AUTOGRADER_ASSIGNMENT="a")\nprint("set $AUTOGRADER_CGROUP")\n')
    assert literal_uses(tree) == [(2, "AUTOGRADER_SANDBOX"), (3, "AUTOGRADER_X"),
                                  (4, "AUTOGRADER_ASSIGNMENT")]


def test_instructors_md_documents_the_variables_a_person_sets():
    text = (REPO / "instructors.md").read_text(encoding="utf-8")
    section = text[text.index("## 8. Environment variables"):]
    rows = dict(re.findall(r"^\| `(AUTOGRADER_[A-Z_]+)` \| (.+) \|$", section, re.M))
    assert rows == {v.name: v.help for v in env_vars.ALL if v.set_by == "user"}
