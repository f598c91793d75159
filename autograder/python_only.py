"""The rule of the pure-Python exercise (ex01): a learner's function, and every helper it
reaches, uses no array library (:func:`check_pure_python`); what a function refers to
(:func:`referenced_values`, also used by the checks that forbid torch's attention).
Standard library only; :mod:`autograder.testing` re-exports every name."""

from __future__ import annotations

import dis
import types
from typing import Any, Callable

from autograder.check_failure import fail

BANNED_MODULES = ("numpy", "torch", "scipy", "jax", "tensorflow", "pandas")


def _code_names(code: types.CodeType) -> set[str]:
    """Global names a function loads and modules it imports (not attribute names)."""
    names, stack = set(), [code]
    while stack:
        c = stack.pop()
        for ins in dis.get_instructions(c):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "IMPORT_NAME", "STORE_GLOBAL"):
                names.add(str(ins.argval).split(".")[0])
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return names


def referenced_values(fn: Callable, names) -> list[tuple[str | None, Any]]:
    """What a learner's function refers to: ``(name, value)`` for each of ``names`` bound in
    its globals, then ``(None, value)`` for each filled cell of its closure (the helpers and
    modules of an enclosing function). The checks that forbid libraries or functions walk
    the learner's helpers with it."""
    g = getattr(fn, "__globals__", {})
    found: list[tuple[str | None, Any]] = [(n, g[n]) for n in names if n in g]
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            found.append((None, cell.cell_contents))
        except ValueError:  # an empty cell
            continue
    return found


def check_pure_python(*functions: Callable, banned: tuple[str, ...] = BANNED_MODULES) -> None:
    """Check that the functions (and the helpers they call) use no array library.

    Looks at every global name the functions' code refers to, following the learner's own
    helper functions: a module from ``banned``, or a function or class defined in one, fails.
    So do ``import numpy`` inside a function and ``__import__`` or ``importlib``.
    """
    seen: set[int] = set()
    stack = list(functions)
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        code = getattr(fn, "__code__", None)
        if code is None:
            continue
        names = _code_names(code)
        for name in names & {"__import__", "importlib", "import_module", *banned}:
            fail(f"{fn.__name__} refers to {name!r}: this exercise is pure Python")
        for name, obj in referenced_values(fn, names):
            root = (getattr(obj, "__name__", "") if isinstance(obj, types.ModuleType)
                    else getattr(obj, "__module__", None) or "").split(".")[0]
            if root in banned:
                fail(f"{fn.__name__} uses {name!r} from {root}: this exercise is pure Python"
                     if name else f"{fn.__name__} uses {root}: this exercise is pure Python")
            if isinstance(obj, types.FunctionType):
                stack.append(obj)
            elif name and isinstance(obj, type):
                stack.extend(v for v in vars(obj).values() if isinstance(v, types.FunctionType))
