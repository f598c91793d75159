"""Which chapter cells a reader can run in the page: pure logic, no Sphinx.

A cell runs in the browser's Python (Pyodide's core: the standard library, no packages)
when it imports nothing but the standard library and the course's pure-Python reference
(``IN_PAGE_MODULES``), every name it uses is a builtin, its own, or last bound by an earlier
cell that runs in the page too, and what the build printed for it is text only. The page
then runs those earlier cells first, so the output is the one the build printed, for
unchanged code.
"""

from __future__ import annotations

import ast
import builtins
import sys

# The course modules the page's Python holds (copied by course_runner), by import name.
IN_PAGE_MODULES = frozenset({"autograder.reference.python_attention"})
# Standard-library modules Pyodide's core lacks or cannot use in a browser (processes,
# threads, sockets, terminals, native libraries).
NOT_IN_BROWSER = frozenset({
    "_tkinter", "asyncio", "concurrent", "ctypes", "curses", "dbm", "ensurepip", "fcntl",
    "idlelib", "lzma", "mmap", "multiprocessing", "pty", "readline", "resource", "select",
    "selectors", "signal", "socket", "sqlite3", "ssl", "subprocess", "termios", "threading",
    "tkinter", "tty", "turtle", "venv", "webbrowser",
})
BUILTINS = frozenset(dir(builtins)) | {"__name__", "__file__"}


def imports_allowed(tree: ast.AST) -> bool:
    """Whether every import in ``tree`` is a browser-safe standard-library module or one of
    ``IN_PAGE_MODULES``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # a relative import: no package in the page
                return False
            names = [node.module or ""]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if name in IN_PAGE_MODULES:
                continue
            if top not in sys.stdlib_module_names or top in NOT_IN_BROWSER:
                return False
    return True


def bound_and_used(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(names the cell binds anywhere, names it loads anywhere): a deliberately generous
    reading, since a name bound in a function counts as bound."""
    bound, used = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (used if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound |= set(node.names)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
    return bound, used


def runnable(sources: list[str], text_only: list[bool]) -> list[bool]:
    """For each cell of a page, in order, whether it runs in the page (module docstring).

    ``sources``: the cells' code; ``text_only``: whether the build's output of each cell
    is printed text only (no figure, no expression value, no error).
    """
    last_in_page: dict[str, bool] = {}  # name -> whether the last cell to bind it runs here
    out = []
    for source, text in zip(sources, text_only):
        try:
            tree = ast.parse(source)
        except SyntaxError:  # IPython magics, or not Python
            tree = None
        if tree is not None:
            bound, used = bound_and_used(tree)
            needed = used - bound - BUILTINS
            ok = (text and imports_allowed(tree)
                  and all(last_in_page.get(name, False) for name in needed))
        else:
            bound, ok = set(), False
        out.append(ok)
        last_in_page.update(dict.fromkeys(bound, ok))
    return out
