"""The module map (issue 24): the docstrings of ``autograder/__init__.py`` and
``autograder/grading/__init__.py`` list every module of the package with its job and its
size in lines, so a newcomer sees the whole package and where each thing lives. This test
fails when a module is missing from its map, when a listed module is gone, and when a
stated size is off by more than 20 % (a module that grew or shrank that much has likely
changed its job too: read its entry again)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "autograder"
# Each map and the modules it lists: the grading package's own, and the rest.
MAPS = {"autograder/grading/__init__.py": "autograder/grading/",
        "autograder/__init__.py": "autograder/"}
# ":mod:`~autograder.x` (123 lines)", ":mod:`autograder.x` (123: ...)" or "(123),"
ENTRY = re.compile(r":mod:`~?(autograder(?:\.\w+)*)`\s*\((\d+)\b")
TOLERANCE = 0.20


def module_name(path: Path, root: Path = REPO) -> str:
    """``autograder/checks/ex05/__init__.py`` -> ``autograder.checks.ex05``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def lines(path: Path) -> int:
    """A file's size in lines."""
    return path.read_text(encoding="utf-8").count("\n")


def stated_sizes(map_file: Path) -> dict[str, int]:
    """The modules a map's docstring lists, with the size it states for each."""
    doc = ast.get_docstring(ast.parse(map_file.read_text(encoding="utf-8"))) or ""
    return {name: int(size) for name, size in ENTRY.findall(doc)}


def map_problems(root: Path = REPO) -> list[str]:
    """What is wrong with the maps under ``root``: missing, gone or resized modules."""
    problems = []
    owner = {}
    for path in sorted((root / "autograder").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in MAPS:
            continue
        owner[module_name(path, root)] = (next(m for m, d in MAPS.items() if rel.startswith(d)),
                                    lines(path))
    for map_file in MAPS:
        stated = stated_sizes(root / map_file)
        for name, (home, size) in owner.items():
            if home != map_file:
                continue
            if name not in stated:
                problems.append(f"{map_file}: {name} ({size} lines) is missing from the map")
            elif abs(stated[name] - size) > TOLERANCE * size:
                problems.append(f"{map_file}: {name} is {size} lines, the map says "
                                f"{stated[name]}: update its entry")
        for name in stated:
            if owner.get(name, (None,))[0] != map_file:
                problems.append(f"{map_file}: {name} is listed but is not a module of this map")
    return problems


def test_every_module_is_in_the_map_with_its_size():
    """Every module is listed in its map, no listed module is gone, each size within 20 %."""
    problems = map_problems()
    assert not problems, "the module map is out of date:\n" + "\n".join(problems)


def _module_map(tmp_path: Path) -> Path:
    (tmp_path / "autograder" / "grading").mkdir(parents=True)
    (tmp_path / "autograder" / "grading" / "__init__.py").write_text(
        '"""- :mod:`~autograder.grading.run` (3 lines): runs."""\n', encoding="utf-8")
    (tmp_path / "autograder" / "grading" / "run.py").write_text("a\nb\nc\n", encoding="utf-8")
    (tmp_path / "autograder" / "__init__.py").write_text(
        '"""- :mod:`~autograder.cli` (10 lines): the commands.\n'
        '- :mod:`~autograder.old` (5 lines): gone."""\n', encoding="utf-8")
    (tmp_path / "autograder" / "cli.py").write_text("x\n" * 13, encoding="utf-8")
    (tmp_path / "autograder" / "new.py").write_text("y\n", encoding="utf-8")
    return tmp_path


def test_the_check_reports_a_missing_a_gone_and_a_resized_module(tmp_path):
    """A map that lacks a new module, lists a removed one and states 10 lines for 13 is
    reported, each with its map; an entry within 20 % is not."""
    assert map_problems(_module_map(tmp_path)) == [
        "autograder/__init__.py: autograder.cli is 13 lines, the map says 10: update its entry",
        "autograder/__init__.py: autograder.new (1 lines) is missing from the map",
        "autograder/__init__.py: autograder.old is listed but is not a module of this map",
    ]


# One job per module (issue 24): a module longer than this has grown a second job. The
# reference implementations (autograder/reference/, read as a whole by the chapters) are
# exempt.
MAX_LINES = 300
EXEMPT = ("autograder/reference/",)
# What is left (issue 24): only shrinks; empty since warm_sandbox.py went under 300.
KNOWN_LONG: set[str] = set()


def long_modules(root: Path = REPO) -> list[str]:
    """Every module of the package under ``root`` over :data:`MAX_LINES`, with its size."""
    out = []
    for path in sorted((root / "autograder").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if not rel.startswith(EXEMPT) and lines(path) > MAX_LINES:
            out.append(f"{rel}: {lines(path)} lines")
    return out


def test_no_module_is_over_300_lines():
    """No module outside ``reference/`` is over 300 lines: split it along its jobs."""
    too_long = [m for m in long_modules() if m not in KNOWN_LONG]
    gone = KNOWN_LONG - set(long_modules())
    assert not gone, f"remove from KNOWN_LONG (split or resized): {sorted(gone)}"
    assert not too_long, "split these modules (one job each):\n" + "\n".join(too_long)


def test_the_size_check_reports_a_long_module_and_spares_the_references(tmp_path):
    """A 301-line module is reported with its size; a 300-line one and a 400-line reference
    module are not."""
    (tmp_path / "autograder" / "reference").mkdir(parents=True)
    (tmp_path / "autograder" / "long.py").write_text("x\n" * 301, encoding="utf-8")
    (tmp_path / "autograder" / "fits.py").write_text("x\n" * 300, encoding="utf-8")
    (tmp_path / "autograder" / "reference" / "model.py").write_text("x\n" * 400,
                                                                    encoding="utf-8")
    assert long_modules(tmp_path) == ["autograder/long.py: 301 lines"]


# Functions that fit on a screen (issue 24): "no function over about 60 lines", counted from
# `def` to its last line, docstring included; the references' and checks' too.
MAX_FUNCTION_LINES = 65


def long_functions(root: Path = REPO, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """Every function or method of the package under ``root`` longer than ``limit`` lines,
    as ``path:line name (N lines)``."""
    out = []
    for path in sorted((root / "autograder").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = node.end_lineno - node.lineno + 1
                if size > limit:
                    out.append(f"{path.relative_to(root).as_posix()}:{node.lineno} "
                               f"{node.name} ({size} lines)")
    return out


def test_no_function_is_over_65_lines():
    """No function of the package is over 65 lines: split it where its steps are."""
    too_long = long_functions()
    assert not too_long, "split these functions:\n" + "\n".join(too_long)


def test_the_function_check_reports_a_long_function_and_a_long_method(tmp_path):
    """A 66-line function and a 66-line method are reported; a 65-line one is not."""
    (tmp_path / "autograder").mkdir()
    body = "    x = 1\n" * 64 + "    return x\n"
    (tmp_path / "autograder" / "m.py").write_text(
        "def long():\n" + body + "\n\ndef fits():\n" + body[len("    x = 1\n"):]
        + "\n\nclass C:\n    def method(self):\n" + "    " + body.replace("\n    ", "\n        "),
        encoding="utf-8")
    assert long_functions(tmp_path) == ["autograder/m.py:1 long (66 lines)",
                                        "autograder/m.py:137 method (66 lines)"]
