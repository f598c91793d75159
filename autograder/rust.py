"""Rust in a Python notebook: compile safe Rust with ``rustc`` and call it from Python.

The learner (``ex08_rust_attention``) and the reader (chapter 2) write ordinary safe Rust
functions with these signatures, standard library only::

    fn softmax(row: &[f64]) -> Result<Vec<f64>, String>
    fn scaled_dot_product_attention(q: &[Vec<f64>], k: &[Vec<f64>], v: &[Vec<f64>])
        -> Result<Vec<Vec<f64>>, String>

The course adds the foreign-function glue itself (generated ``extern "C"`` wrappers with
``catch_unwind``; the learner never writes ``unsafe`` or ``extern``), compiles the crate
with ``rustc --crate-type cdylib -O`` into a shared library, cached by the hash of its
source (:mod:`autograder.rust_glue`), and returns Python callables
(:class:`~autograder.rust_ffi.RustFunction`) through :mod:`ctypes`
(:mod:`autograder.rust_ffi`); the names both this and the grader's build use are
:mod:`autograder.rust_source`'s. This module is the face: :func:`compile_rust`,
:func:`load` and the ``%%rust`` magic.

- arguments are lists of numbers, lists of lists, or NumPy arrays (passed without copying);
  results are lists of Python floats;
- ``Err(message)`` raises ``ValueError(message)``;
- a panic raises :class:`~autograder.rust_source.RustPanic` (a ``RuntimeError``) with the
  panic's message and the line of the Rust source; ``todo!()`` and ``unimplemented!()``
  raise :class:`~autograder.rust_source.RustNotImplemented`, a ``NotImplementedError``, as
  a Python stub would;
- a call runs in a helper thread, so an interrupt (Ctrl-C, a cell timeout) stops the wait
  even when the Rust code loops forever; the loop itself runs on until the kernel exits;
- a compile error raises :class:`~autograder.rust_source.RustCompileError` with rustc's
  own message, pointing at the learner's file and line (each cell is its own file, line 1
  being the ``%%rust`` line, as the notebook numbers it).

In a notebook, ``%load_ext autograder.rust`` registers the cell magic ``%%rust``
(:func:`load_ipython_extension`): all Rust cells run so far form one crate, so a later cell
can call a function of an earlier one; a cell that defines a name again replaces the cell
that defined it before.
"""

from __future__ import annotations

import ctypes
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from autograder.rust_ffi import RustFunction
from autograder.rust_glue import compile_library
# rustc_version: the released ex08 notebook imports it from here.
from autograder.rust_source import (SIGNATURES, RustCompileError, RustSource, defined_names,
                                    rustc_version)

__all__ = ["REFERENCE", "RustLibrary", "RustCells", "RustSource", "compile_rust", "load",
           "load_ipython_extension", "rustc_version"]

REFERENCE = Path(__file__).resolve().parent / "reference" / "rust" / "attention.rs"
"""The course's reference ``softmax`` and ``scaled_dot_product_attention`` in Rust."""


@dataclass
class RustLibrary:
    """A compiled crate: its path, its source files and the Python callables it exports."""

    path: Path
    sources: tuple[RustSource, ...]
    functions: dict[str, RustFunction]
    warnings: str = ""


def compile_rust(files: list[RustSource]) -> RustLibrary:
    """Compile ``files`` (one crate) and wrap the functions of :data:`SIGNATURES` it defines.

    Raises:
        RustcNotFound: no rustc on this machine (the message says how to install it).
        RustCompileError: rustc's message, with the files' own names and line numbers.
    """
    names = set().union(*(defined_names(f.text) for f in files)) if files else set()
    wanted = [n for n in SIGNATURES if n in names]
    path, warnings = compile_library(list(files), wanted)
    lib = ctypes.CDLL(str(path))
    sources = tuple(files)
    return RustLibrary(path, sources, {n: RustFunction(n, lib, sources, path) for n in wanted},
                       warnings)


def load(path: Path | str = REFERENCE) -> RustLibrary:
    """Compile a Rust source file (by default the course's reference, :data:`REFERENCE`)."""
    path = Path(path)
    return compile_rust([RustSource(path.name, path.read_text(encoding="utf-8"))])


# ------------------------------------------------------------------------ the cell magic

class RustCells:
    """The Rust cells run so far in one IPython session, compiled together as one crate."""

    def __init__(self, shell):
        self.shell = shell
        self.cells: list[RustSource] = []
        self.library: RustLibrary | None = None
        self.broken: set[str] = set()  # functions whose last cell did not compile

    def run(self, line: str, cell: str) -> None:
        """``%%rust``: compile this cell with the earlier ones; bind the graded functions."""
        text = "\n" + cell  # line 1 is the %%rust line, as the notebook numbers it
        names = defined_names(cell)
        label = sorted(names & set(SIGNATURES)) or sorted(names) or [str(len(self.cells) + 1)]
        name = f"cell_{label[0]}.rs"
        kept = [c for c in self.cells if not (defined_names(c.text) & names)
                and c.text != text and c.name != name]
        try:
            library = compile_rust(kept + [RustSource(name, text)])
        except RustCompileError as exc:
            for n in names & set(SIGNATURES):  # never leave the old version callable,
                self.shell.user_ns.pop(n, None)
            self.cells = kept  # not even by a later cell that calls it
            self.broken |= names
            needs = sorted(n for n in self.broken - names if re.search(rf"\b{n}\s*\(", cell))
            if needs:  # its errors are most likely that cell's, showing again
                raise RustCompileError(
                    f"this cell calls {needs[0]}, whose cell above does not compile: fix "
                    f"that cell first, then run this one again\n\n{exc}") from None
            raise
        self.broken -= names
        self.cells = kept + [RustSource(name, text)]
        self.library = library
        if library.warnings:
            print(library.warnings, file=sys.stderr)
        self.shell.user_ns.update(library.functions)


def load_ipython_extension(ipython) -> None:
    """``%load_ext autograder.rust``: register the cell magic ``%%rust``."""
    cells = RustCells(ipython)
    ipython.register_magic_function(cells.run, magic_kind="cell", magic_name="rust")
