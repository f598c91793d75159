"""Static checks of a learner's own cells for attempts to fool the tests.

A test cell imports what it uses, so redefining a helper in the learner's cell is
harmless; what can fool a test is changing a module the tests use (``autograder``,
``numpy.testing``, ``torch.testing``, ``builtins``...) or the shell that runs them. This
module finds such assignments in the cells a learner may edit.
"""

from __future__ import annotations

import ast

from autograder.verdicts import python_source

SHELL_NAMES = {"get_ipython", "__builtins__", "builtins", "InteractiveShell", "ipykernel"}
SYS_HOOKS = {"modules", "settrace", "setprofile", "excepthook", "displayhook", "stdout",
             "stderr", "meta_path", "path_hooks"}


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.value if not isinstance(node, ast.Call) else node.func
    return node


def suspicious(source: str) -> list[str]:
    """Descriptions of the statements in ``source`` that modify modules or the shell."""
    try:
        tree = ast.parse(python_source(source))
    except SyntaxError:
        return []
    modules = {"sys", "builtins", "__builtins__"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {(a.asname or a.name.split(".")[0]) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            modules |= {(a.asname or a.name) for a in node.names}
    found = []

    def targets(node):
        if isinstance(node, (ast.Assign, ast.Delete)):
            return node.targets
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            return [node.target]
        return []

    for node in ast.walk(tree):
        for t in targets(node):
            for el in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                if isinstance(el, (ast.Attribute, ast.Subscript)):
                    root = _root(el)
                    if isinstance(root, ast.Name) and (root.id in modules
                                                       or root.id in SHELL_NAMES):
                        found.append(f"line {el.lineno}: assigns to {ast.unparse(el)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("setattr", "delattr") and node.args:
            root = _root(node.args[0])
            if isinstance(root, ast.Name) and (root.id in modules or root.id in SHELL_NAMES):
                found.append(f"line {node.lineno}: {node.func.id} on {ast.unparse(node.args[0])}")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id == "sys" and node.attr in SYS_HOOKS and \
                isinstance(getattr(node, "ctx", None), ast.Store):
            found.append(f"line {node.lineno}: replaces sys.{node.attr}")
    return sorted(set(found))
