"""The course's modules import each other in layers (issue 24): no import circle among the
modules of ``autograder/``, and no import of a course module inside a function.

An import inside a function hides a circle instead of removing it: the module that needs
the other one reads as if it did not, and the circle shows again the day someone moves the
import to the top. Lazy imports of third-party packages (torch, nbgrader, numpy, dask...)
inside functions stay allowed: they keep ``python -m autograder check`` and the sandboxed
kernel's start fast.

The check reads ``autograder/**/*.py`` with ``ast`` (nothing is imported), builds the graph
of course imports (top-level and inside functions both count for circles; imports under
``if TYPE_CHECKING:`` are left out: they never run), and reports each circle as a chain of
module names with the ``file:line`` of each import in it, and each import of a course module
inside a function with its ``file:line``.

``KNOWN_INNER_IMPORTS`` and ``KNOWN_CIRCLES`` are what is left (see their comment); they
only shrink: a new function-level import or a new circle fails, and so does a known one that
is gone (lower the count, remove the circle).
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "autograder"


@dataclass(frozen=True)
class Import:
    """One import of a course module: who imports what, where, and whether in a function."""

    importer: str
    imported: str
    file: str
    line: int
    in_function: bool

    def where(self) -> str:
        """``file:line`` of the import statement."""
        return f"{self.file}:{self.line}"


def package_modules(root: Path, package: str = PACKAGE) -> dict[str, Path]:
    """The package's modules by dotted name (a package's ``__init__.py`` is the package)."""
    modules = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported_names(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
                    modules: dict[str, Path]) -> list[str]:
    """The course modules that one import statement in ``module`` imports."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            here = module.split(".") if is_package else module.split(".")[:-1]
            here = here[:len(here) - (node.level - 1)]
            base = ".".join(here + ([base] if base else []))
        # ``from pkg import mod`` imports the module pkg.mod; ``from pkg import name`` pkg.
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                 for alias in node.names]
    found = []
    for name in names:
        # ``import a.b.c`` where only a.b is a module of ours (c a name) still imports a.b.
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name not in found:
            found.append(name)
    return found


def course_imports(root: Path, package: str = PACKAGE) -> list[Import]:
    """Every import of a course module by a course module, in file and line order."""
    modules = package_modules(root, package)
    imports = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        file = path.relative_to(root).as_posix()
        is_package = path.name == "__init__.py"

        def visit(node: ast.AST, in_function: bool) -> None:
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                for child in node.orelse:
                    visit(child, in_function)
                return
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for imported in _imported_names(node, module, is_package, modules):
                    if imported != module:
                        imports.append(Import(module, imported, file, node.lineno,
                                              in_function))
                return
            inner = in_function or isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for child in ast.iter_child_nodes(node):
                visit(child, inner)

        visit(tree, False)
    return imports


def circles(imports: list[Import]) -> list[tuple[list[Import], list[str]]]:
    """The import circles (strongly connected components of more than one module): for each,
    a shortest chain of imports from the component's first module by name back to itself,
    and the component's other modules that chain does not pass through."""
    graph: dict[str, dict[str, Import]] = {}
    for imp in imports:
        graph.setdefault(imp.importer, {}).setdefault(imp.imported, imp)
        graph.setdefault(imp.imported, {})
    found = []
    for component in _strongly_connected(graph):
        if len(component) < 2:
            continue
        first = min(component)
        chain = _shortest_path(graph, first, first, component)
        others = sorted(component - {imp.importer for imp in chain})
        found.append((chain, others))
    return sorted(found, key=lambda circle: circle[0][0].importer)


def _strongly_connected(graph: dict[str, dict[str, Import]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    components.append(component)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return components


def _shortest_path(graph: dict[str, dict[str, Import]], start: str, end: str,
                   within: set[str]) -> list[Import]:
    """The imports along a shortest path from ``start`` to ``end`` inside ``within``."""
    previous: dict[str, Import] = {}
    frontier, seen = [start], {start}
    while frontier:
        following = []
        for node in frontier:
            for target, imp in sorted(graph[node].items()):
                if target not in within:
                    continue
                if target == end:
                    path = [imp]
                    while path[0].importer != start:
                        path.insert(0, previous[path[0].importer])
                    return path
                if target not in seen:
                    seen.add(target)
                    previous[target] = imp
                    following.append(target)
        frontier = following
    raise AssertionError(f"no path from {start} to {end} in a strongly connected component")


def describe_circle(chain: list[Import], others: list[str]) -> str:
    """A circle as ``a -> b (file:line) -> ... -> a``, then its other modules."""
    text = chain[0].importer
    for imp in chain:
        text += f"\n    -> {imp.imported}  ({imp.where()}{', in a function' * imp.in_function})"
    if others:
        text += "\n    (also in this circle: " + ", ".join(others) + ")"
    return text


def import_problems(root: Path, package: str = PACKAGE) -> tuple[list[str], list[str]]:
    """What the check reports for the package under ``root``: each circle as a chain of
    module names, and each import of a course module inside a function as ``file:line``."""
    imports = course_imports(root, package)
    found_circles = [describe_circle(*circle) for circle in circles(imports)]
    inner = [f"{imp.where()}: {imp.importer} imports {imp.imported} inside a function"
             for imp in imports if imp.in_function]
    return found_circles, inner


# What is left (issue 24); these lists only shrink. Main had 95 imports of course modules
# inside functions in 30 modules and three circles when this check came. Two modules keep
# theirs, for their start-up:
# - cli.py and check_command.py: each command imports its module when it runs, so that
#   ``check`` does not import nbformat (1.2 s), nbgrader (0.7 s) or the grading package first,
#   and starts the learner's kernel before it imports the notebook runner (the checks
#   package, which a class's private release may not have, is optional there).
# - grading/worker.py: a grading worker sets its memory cap and starts its warm sandbox before
#   it imports nbgrader and the grading modules (the sandbox boots while they import);
#   grading/pool.py: the grader imports them in preload() only when it forks workers.
KNOWN_CIRCLES: list[set[str]] = []
KNOWN_INNER_IMPORTS: dict[str, int] = {
    "autograder/cli.py": 8,
    "autograder/check_command.py": 3,
    "autograder/grading/pool.py": 8,
    "autograder/grading/worker.py": 6,
}


def test_no_new_import_circle():
    """Every circle among the course's modules is one of the known ones (none, once issue 24
    is done), and every known one is still there (else it leaves the list)."""
    found = [(chain, others, {imp.importer for imp in chain} | set(others))
             for chain, others in circles(course_imports(REPO))]
    new = [describe_circle(chain, others) for chain, others, members in found
           if members not in KNOWN_CIRCLES]
    assert not new, "import circles among the course's modules:\n" + "\n".join(new)
    gone = [sorted(known) for known in KNOWN_CIRCLES
            if known not in [members for _, _, members in found]]
    assert not gone, f"these circles are gone: remove them from KNOWN_CIRCLES: {gone}"


def test_no_new_import_of_a_course_module_inside_a_function():
    """No module imports more course modules inside functions than the known count (none,
    once issue 24 is done); a module with fewer than its count must lower it."""
    inner = [imp for imp in course_imports(REPO) if imp.in_function]
    counts = Counter(imp.file for imp in inner)
    over = [f"{imp.where()}: {imp.importer} imports {imp.imported} inside a function"
            for imp in inner if counts[imp.file] > KNOWN_INNER_IMPORTS.get(imp.file, 0)]
    assert not over, ("imports of course modules inside functions (import at the top, and "
                      "break the circle it hid):\n" + "\n".join(over))
    lower = {file: (known, counts[file]) for file, known in KNOWN_INNER_IMPORTS.items()
             if counts[file] < known}
    assert not lower, f"lower these counts in KNOWN_INNER_IMPORTS (known, now): {lower}"


def _plant(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_check_reports_a_planted_circle_and_a_function_level_import(tmp_path):
    """A fake package with a circle through a relative import and a top-level one, and an
    import of its own module inside a function, is reported with module names and
    file:line; a lazy third-party import inside a function and a TYPE_CHECKING one are not."""
    _plant(tmp_path, {
        "fake/__init__.py": "",
        "fake/low.py": "from fake.high import run\n",
        "fake/high.py": "from . import mid\n\ndef run():\n    import torch\n    return torch\n",
        "fake/mid.py": ("from typing import TYPE_CHECKING\n"
                        "if TYPE_CHECKING:\n    from fake.tools import x\n"
                        "import fake.low\n"),
        "fake/tools/__init__.py": "",
        "fake/tools/x.py": ("def helper():\n    from ..mid import low\n"
                            "    from fake import tools\n    return low, tools\n"),
    })
    found_circles, inner = import_problems(tmp_path, "fake")
    print("\n".join(found_circles + inner))
    assert found_circles == ["fake.high\n"
                             "    -> fake.mid  (fake/high.py:1)\n"
                             "    -> fake.low  (fake/mid.py:4)\n"
                             "    -> fake.high  (fake/low.py:1)"]
    assert inner == [
        "fake/tools/x.py:2: fake.tools.x imports fake.mid inside a function",
        "fake/tools/x.py:3: fake.tools.x imports fake.tools inside a function",
    ]


def test_no_problems_in_a_package_in_layers(tmp_path):
    """A package whose modules import downward only, at the top, passes the check."""
    _plant(tmp_path, {
        "fake/__init__.py": '"""The map."""\n',
        "fake/low.py": "import json\n",
        "fake/high.py": "from fake import low\nfrom .low import json\n\n"
                        "def run():\n    import numpy\n    return numpy, low\n",
    })
    assert import_problems(tmp_path, "fake") == ([], [])
