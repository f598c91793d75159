"""Sphinx extension: a chapter is re-executed when anything it imports or includes changes.

myst-nb's ``execute_notebooks: cache`` looks a notebook up in jupyter-cache by a hash of its
code cells (source and metadata) only, so a chapter whose cells did not change keeps its old
outputs even when a module it imports was edited (shared/cases/004). This extension makes
the cache key cover the chapter's dependencies:

- When Sphinx reads a MyST notebook (``source-read``), it finds the chapter's dependencies:
  the course's modules its code cells import (``import autograder...``,
  ``from autograder... import ...``), transitively (the modules those import, also inside
  their functions, and the ``__init__.py`` of every package on the way with what those
  import at import time); the files it shows with ``{literalinclude}`` or ``{include}``;
  and ``requirements.txt``.
- It appends one hidden code cell (tag ``remove-cell``) holding a SHA-256 digest of those
  files' contents. jupyter-cache hashes that cell like any other, so a changed dependency
  changes the cache key and the chapter runs again; an unchanged one hits the cache.
- Each dependency is noted with ``env.note_dependency`` (Sphinx re-reads the chapter when a
  dependency's mtime is newer), and ``env-get-outdated`` compares the stored digest with
  the files' current contents, so a change that keeps an old mtime is noticed too.

A chapter whose dependencies did not change is neither re-read nor re-executed.
Configuration (``sphinx: config:`` in ``_config.yml``): ``course_deps_packages``, the
top-level packages counted as the course's own (default ``["autograder"]``), and
``course_deps_files``, files every notebook depends on (default ``["requirements.txt"]``).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import re
from pathlib import Path

CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
INCLUDE = re.compile(r"^[`:]{3,}\{(?:literalinclude|include)\}\s+(\S+)", re.M)
MARKER = "# course_deps: build dependencies of this page, digest"


def _package_dir(top: str) -> Path | None:
    """The directory of top-level package ``top`` as the kernel would import it (no import)."""
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]).resolve()


def _module_files(name: str, roots: dict[str, Path]) -> list[Path]:
    """Files run by ``import name``: every package ``__init__.py`` on the way and the module."""
    parts = name.split(".")
    root = roots.get(parts[0])
    if root is None:
        return []
    files, here = [], root
    if (root / "__init__.py").is_file():
        files.append(root / "__init__.py")
    for part in parts[1:]:
        if (here / part / "__init__.py").is_file():
            here = here / part
            files.append(here / "__init__.py")
        elif (here / f"{part}.py").is_file():
            files.append(here / f"{part}.py")
            break
        else:
            break
    return files


def _nodes(tree: ast.AST, in_functions: bool):
    """The nodes of ``tree``; without ``in_functions``, only those that run at import time
    (function bodies are skipped: their imports run only when the function is called)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if in_functions or not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                      ast.Lambda)):
                todo.append(child)


def _imported_names(tree: ast.AST, package: str | None, in_functions: bool = True) -> set[str]:
    """Absolute module names imported in ``tree`` (``from X import y`` gives X and X.y, since
    y may be a submodule); relative imports are resolved against ``package``."""
    names = set()
    for node in _nodes(tree, in_functions):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                if package is None:
                    continue
                parent = package.split(".")
                parent = parent[: len(parent) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def _cell_imports(text: str) -> set[str]:
    names = set()
    for source in CELL.findall(text):
        lines = [line for line in source.splitlines()
                 if not line.lstrip().startswith(("%", "!", ":", "---"))]
        try:
            names |= _imported_names(ast.parse("\n".join(lines)), None)
        except SyntaxError:  # cell options in YAML form, or IPython syntax: read line by line
            for line in lines:
                try:
                    names |= _imported_names(ast.parse(line.strip()), None)
                except SyntaxError:
                    pass
    return names


def dependencies(text: str, source: Path, packages: list[str], files: list[Path]) -> list[Path]:
    """Every file that chapter ``text`` (stored at ``source``) depends on, sorted.

    A module the chapter names in an import counts with everything it imports, also inside
    its functions (the chapter may call them). A package's ``__init__.py`` counts with
    what it imports at import time.
    """
    roots = {top: d for top in packages if (d := _package_dir(top)) is not None}
    # (module name, whether its function-level imports count)
    todo = [(n, True) for n in _cell_imports(text) if n.split(".")[0] in roots]
    done: dict[Path, bool] = {}
    while todo:
        name, called = todo.pop()
        files_of = _module_files(name, roots)
        for i, path in enumerate(files_of):
            # a package's __init__.py counts with its import-time imports only
            full = called and i == len(files_of) - 1 and path.stem != "__init__"
            if path in done and (done[path] or not full):
                continue
            done[path] = full
            rel = path.relative_to(roots[name.split(".")[0]].parent).with_suffix("")
            module = ".".join(rel.parts)
            package = module[: -len(".__init__")] if module.endswith(".__init__") \
                else module.rpartition(".")[0]
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            todo += [(n, full) for n in _imported_names(tree, package, full)
                     if n.split(".")[0] in roots]
    deps = set(done)
    for target in INCLUDE.findall(text):
        path = (source.parent / target).resolve()
        if path.is_file():
            deps.add(path)
    deps.update(f.resolve() for f in files if f.is_file())
    return sorted(deps)


def digest(paths: list[Path]) -> str:
    """SHA-256 over the files' contents, in order (not their locations, so a copy of the
    repository hits the same cache entries)."""
    h = hashlib.sha256()
    for path in paths:
        data = path.read_bytes()
        h.update(f"{path.name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _is_text_notebook(app, docname: str, text: str) -> bool:
    path = Path(app.env.doc2path(docname))
    return path.suffix == ".md" and "```{code-cell}" in text and "jupytext" in text


def _files(app) -> list[Path]:
    return [Path(app.srcdir) / f for f in app.config.course_deps_files]


def _source_read(app, docname: str, source: list[str]) -> None:
    text = source[0]
    if not _is_text_notebook(app, docname, text):
        return
    path = Path(app.env.doc2path(docname))
    deps = dependencies(text, path, app.config.course_deps_packages, _files(app))
    key = digest(deps)
    if not hasattr(app.env, "course_deps"):
        app.env.course_deps = {}
    app.env.course_deps[docname] = ([str(p) for p in deps], key)
    for dep in deps:
        app.env.note_dependency(str(dep))
    names = ", ".join(p.name for p in deps)
    source[0] = (text.rstrip("\n") + "\n\n```{code-cell} ipython3\n:tags: [remove-cell]\n"
                 f"{MARKER} {key}\n# of: {names}\n```\n")


def _outdated(app, env, added, changed, removed) -> list[str]:
    """Chapters whose dependencies' contents changed since they were read."""
    stale = []
    for docname, (deps, key) in getattr(env, "course_deps", {}).items():
        if docname in changed or docname in removed or docname not in env.found_docs:
            continue
        paths = [Path(p) for p in deps]
        if not all(p.is_file() for p in paths) or digest(paths) != key:
            stale.append(docname)
    return stale


def _purge(app, env, docname: str) -> None:
    getattr(env, "course_deps", {}).pop(docname, None)


def _merge(app, env, docnames, other) -> None:
    if not hasattr(env, "course_deps"):
        env.course_deps = {}
    for docname in docnames:
        if docname in getattr(other, "course_deps", {}):
            env.course_deps[docname] = other.course_deps[docname]


def setup(app):
    app.add_config_value("course_deps_packages", ["autograder"], "env")
    app.add_config_value("course_deps_files", ["requirements.txt"], "env")
    app.connect("source-read", _source_read)
    app.connect("env-get-outdated", _outdated)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
