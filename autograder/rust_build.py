"""ex08's Rust, built and run by the grader itself: "Rust by construction" (issue 23). This
module is what the checker calls; the ``rust_*`` modules below each do one part.

The learner's ``%%rust`` solution cells are taken from the submitted notebook
(:func:`rust_cells`), compiled by the grader into one program, and that program is what
the checker calls (:class:`BuiltRust`, :func:`built_functions`), so no Python object of
the kernel can pose as a compiled Rust function. The exercise's rules are enforced by the
compiler and the sandbox, not by reading the text:

- **One binary crate** (:func:`autograder.rust_main.crate_root`): the cells ``include!``d
  at the crate root, in notebook order (a cell that defines a name again replaces the
  earlier cell, as the ``%%rust`` magic does), then a course-written ``main`` (safe Rust,
  standard library only) that reads one request per line on stdin and writes one reply
  line per request on stdout. Each cell is its own file ``cell_<grade_id>.rs`` whose line
  1 is the cell's ``%%rust`` line, so rustc's messages point at the learner's cell and line.
- **Two builds** (:func:`autograder.rust_compile.build`): (a) the plain program (``-C
  opt-level=1``, statically linked where the C library allows it), which the behaviour
  tests call; (b) the same crate with ``#![forbid(unsafe_code)]`` at its root, checked only
  (``--emit=metadata``): it decides the rule test (no ``unsafe`` block, function, impl or
  trait, no ``#[no_mangle]``, ``#[export_name]`` or ``#[link_section]``; an inner
  ``#[allow(unsafe_code)]`` cannot lift a ``forbid``). Both run rustc inside a bubblewrap
  sandbox (:mod:`autograder.rust_toolchain`) that shows only ``/usr`` (the C linker and
  libraries), the toolchain's own folder (its sysroot), the crate's source folder
  (read-only) and an output folder, with no network and a private ``/tmp``: an
  ``include_str!("/etc/passwd")``, or of any file of the course, the workspace or the home
  folder, finds nothing. Builds are cached by a hash of everything that goes into them, in
  a folder of the grader's own (:func:`autograder.rust_toolchain.cache_dir`, mode 0700,
  never one a kernel sees).
- **Its own sandboxed process** (:class:`autograder.rust_program.RustProgram`): the
  program runs under bubblewrap with nothing mounted but itself (and, when it could not
  be linked statically, the shared libraries it needs, read-only), every namespace
  unshared (no network), a new session, killed with its parent, and resource limits (CPU
  seconds about the cell time limit, :data:`autograder.rust_toolchain.RUN_ADDRESS_SPACE`
  of address space, no core file). So ``std::fs``, ``std::net`` and ``std::process`` find
  nothing at run time: a file, a socket or a program to start does not exist there. The
  process is started at the first call, serves every call of one notebook and is killed
  when the notebook's checker session closes; a call that does not answer within the time
  limit is a failure (:class:`autograder.rust_protocol.RustTimeout`) and its process is
  killed (the next call starts a new one).

The lines exchanged, one each way per call, are :mod:`autograder.rust_protocol`'s.

Without bubblewrap (``grade --no-sandbox``) rustc and the program run unsandboxed, with the
same limits and a cleared environment, as the rest of such a grading run does.
"""

from __future__ import annotations

import re

from autograder.rust_source import SIGNATURES, RustSource, defined_names
from autograder.rust_program import RustProgram


# --------------------------------------------------------------------- the notebook

def _is_rust_cell(source: str) -> bool:
    return source.lstrip().split("\n", 1)[0].split()[:1] == ["%%rust"]


def rust_cells(nb) -> list[RustSource]:
    """The crate's files from notebook ``nb``: each code cell with nbgrader's
    ``solution: true`` whose first line is ``%%rust``, in order, as
    ``cell_<grade_id>.rs`` (line 1 is the ``%%rust`` line, blank in the file). A cell that
    defines a top-level name an earlier cell defined replaces that cell (what the
    ``%%rust`` magic does in the kernel)."""
    cells = nb.cells if nb is not None else []
    kept: list[RustSource] = []
    for i, c in enumerate(cells):
        meta = c.get("metadata", {}).get("nbgrader", {})
        if c.get("cell_type") != "code" or not meta.get("solution") or not _is_rust_cell(
                c.source):
            continue
        lines = c.source.split("\n")
        at = next(n for n, ln in enumerate(lines) if ln.strip())  # the %%rust line
        text = "\n" * (at + 1) + "\n".join(lines[at + 1:])
        gid = re.sub(r"\W", "_", str(meta.get("grade_id") or ""))[:60] or f"{i + 1}"
        name = f"cell_{gid}.rs"
        names = defined_names(text)
        kept = [f for f in kept if not (defined_names(f.text) & names) and f.name != name]
        kept.append(RustSource(name, text))
    return kept


# ----------------------------------------------------------------- what the checker calls

class BuiltRust:
    """One of the learner's Rust functions as the grader built it: called with ex01's
    convention (``softmax(row)``, ``scaled_dot_product_attention(Q, K, V)``: lists of
    floats, lists of lists, or NumPy arrays, in; lists of Python floats out). Raises what
    :meth:`RustProgram.call` raises: ValueError for the function's ``Err``, RuntimeError
    (:class:`~autograder.rust_source.RustPanic`) for a panic, NotImplementedError for ``todo!()``,
    TypeError for arguments that are not numbers.

    Attributes: ``__name__``, ``signature`` (the Rust signature called), ``program``
    (its :class:`RustProgram`) and ``rust_sources`` (the crate's files)."""

    def __init__(self, name: str, program: RustProgram):
        if name not in SIGNATURES:
            raise ValueError(f"no Rust function {name!r} is graded (known: "
                             f"{', '.join(SIGNATURES)})")
        self.__name__ = self.__qualname__ = name
        self.signature = SIGNATURES[name]
        self.program = program
        self.rust_sources = program.build.sources
        self.__doc__ = f"Rust `{self.signature}`, built by the grader, run in its sandbox."

    def __call__(self, *args):
        return self.program.call(self.__name__, args)

    def __repr__(self) -> str:
        return f"<Rust function {self.signature}, built by the grader>"


def built_functions(session) -> dict[str, BuiltRust]:
    """The checker's ``softmax`` and ``scaled_dot_product_attention`` for one notebook
    (:data:`autograder.checker.BUILT`): the ``%%rust`` solution cells of
    ``session.notebook`` built into one program (:func:`build`), whose process is started
    at the first call, limited to ``session.timeout`` seconds a call, and killed when the
    session closes (``session.on_close``). A function the cells do not define, or cells
    that do not compile, give a callable that raises the reason at each call."""
    timeout = float(getattr(session, "timeout", 60) or 60)
    program = RustProgram.from_cells(rust_cells(getattr(session, "notebook", None)), timeout)
    hooks = getattr(session, "on_close", None)
    if isinstance(hooks, list):
        hooks.append(program.close)
    return {name: BuiltRust(name, program) for name in SIGNATURES}
