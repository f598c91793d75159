"""The trusted checker: hidden tests run here, in the grader, never in the learner's kernel.

For the exercises in :data:`autograder.exercises.TRUSTED`, a test cell (visible and hidden
parts, in their order) runs in the grading worker's own process, the checker, in a
namespace where each name the learner defined is a proxy (:mod:`autograder.remote`), while
the learner's kernel serves it in one cell (:mod:`autograder.session`); the learner's code
runs only when the checker calls it, and the cell's display is what the visible parts
printed. Calling a proxy sends the inputs to the kernel as plain data
(:mod:`autograder.wire`), the kernel's thin client
(:mod:`autograder.kernel_client`) calls the learner's function, and the outputs come back
as plain data, which the checks judge here with the references and the expected answers,
which never enter the kernel. A test cell's points follow the checker's verdict: the
cell gets an error output when, and only when, the checker's run of it failed.

What the learner's kernel sends is the learner's answer and nothing more: a malformed
reply (not plain data, too large, another request's) is a broken protocol
(:class:`~autograder.session_errors.ProtocolError`, status ``tampering``), which no check
can catch.

This module holds what runs one test cell here: its source cut into visible and hidden
parts (:func:`segments`), the namespace it runs in (the setup cells' names, the learner's
as proxies), :func:`run_test`, and the exchange folder a session uses.
"""

from __future__ import annotations

import builtins
import os
import secrets
import tempfile
from pathlib import Path
from typing import Callable

from autograder import testing, wipe, wire
from autograder.remote import Remote
from autograder.session import Session
from autograder.session_errors import CheckStopped, ProtocolError, learner_exception


def visible_part(source: str) -> str:
    """A test cell's source without its hidden part: what the learner's released notebook
    holds (nbgrader's own ClearHiddenTests, as ``release`` runs it)."""
    import nbformat  # here, so the website's in-page Python (no nbformat) imports this module
    from nbgrader.preprocessors import ClearHiddenTests

    cell = nbformat.v4.new_code_cell(source)
    ClearHiddenTests()._remove_hidden_test_region(cell)
    return cell.source


def setup_and_solution_cells(nb) -> list[str]:
    """The setup cells (locked instructor code) and solution cells of ``nb``, in order:
    what defines the graded functions (contract: each in its own solution cell)."""
    cells = nb.cells if nb is not None else []
    return [c.source for c in cells if c.cell_type == "code" and (
        (meta := c.get("metadata", {}).get("nbgrader", {})).get("solution")
        or (meta.get("locked") and not meta.get("grade")))]


def without_libraries(session: Session, calls: list[tuple[str, tuple]]) -> tuple[list, list[str]]:
    """``session``'s setup and solution cells run again in a fresh Python with the standard
    library only (:mod:`autograder.probe`), and ``calls`` (name, args) made there: each result, or
    the exception raised as a stand-in; and the array libraries the cells tried to
    import there (:data:`autograder.testing.BANNED_MODULES`)."""
    if session.run_without_libraries is None:
        raise RuntimeError("this session has no standard-library probe")
    replies, tried = session.run_without_libraries(
        setup_and_solution_cells(session.notebook), calls, testing.BANNED_MODULES,
        session.timeout)
    out = []
    for reply in replies:
        if type(reply) is not dict:
            raise ProtocolError("a malformed reply from the standard-library probe")
        if "raised" in reply:
            out.append(learner_exception(reply["raised"]))
        elif "value" in reply:
            try:
                out.append(wire.decode(reply["value"], wire.Arrays(session.folder, "none")))
            except wire.WireError as exc:
                raise ProtocolError(f"the probe's reply: {exc}") from None
        else:
            raise ProtocolError("a malformed reply from the standard-library probe")
    return out, [str(t)[:100] for t in tried]


class SetupNamespace(dict):
    """The setup cells' names, run here: a function they define (ex05's ``make_pair``)
    finds a learner's name (the class it builds) in the kernel when a test calls it, each
    time anew; outside a test, as before the learner's cells ran, there is none."""

    session: Session | None = None

    def __missing__(self, name: str):
        session = self.session
        if name.startswith("__") or hasattr(builtins, name) or session is None or \
                session.line is None:
            raise KeyError(name)
        value = session.resolve(name)
        if isinstance(value, Remote):
            value.bound_as = name
        return value


class LearnerNamespace(dict):
    """The checker's namespace for one test cell: the setup cells' names (run here, from
    the source notebook), the names earlier test cells defined (as in the notebook, where
    a test cell's ``trained_model`` is there for the next: :meth:`keep`), and each other
    name looked up in the learner's kernel when the test first uses it."""

    def __init__(self, session: Session, base: dict):
        super().__init__(base)
        self._session = session
        self._base = set(base)
        self._resolved: set[str] = set()
        if isinstance(base, SetupNamespace):
            base.session = session

    def __missing__(self, name: str):
        if name.startswith("__") or hasattr(builtins, name):
            raise KeyError(name)
        if name in self._session.test_names:
            value = self[name] = self._session.test_names[name]
            return value
        value = self._session.resolve(name)
        if isinstance(value, Remote):
            value.bound_as = name
        self[name] = value
        self._resolved.add(name)
        return value

    def keep(self) -> None:
        """Keep the names this test cell defined for the later ones (never a name found in
        the kernel: that is looked up anew in each test)."""
        for name, value in self.items():
            if name not in self._base and name not in self._resolved and \
                    not name.startswith("__") and name != "print":
                self._session.test_names[name] = value


# Per exercise, "module:function" of a builder ``f(session) -> {name: callable}``: learner
# functions the grader builds itself from the submitted notebook (``session.notebook``),
# which the checker calls in place of the kernel's objects of those names (ex08: the Rust
# cells, compiled and run by the grader, so no Python object can pose as them).
BUILT: dict[str, str] = {"ex08_rust_attention": "autograder.rust_build:built_functions"}


def built_functions(assignment: str, session: Session) -> dict:
    """The names :data:`BUILT` gives ``assignment``'s tests (none for most exercises)."""
    import importlib

    spec = BUILT.get(assignment)
    if not spec:
        return {}
    module, _, function = spec.partition(":")
    return getattr(importlib.import_module(module), function)(session)


def setup_namespace(sources: list[str]) -> dict:
    """The names of the notebook's setup cells (locked instructor code), run here."""
    ns: dict = SetupNamespace({"__name__": "__main__"})
    for source in sources:
        code = "\n".join(ln for ln in source.splitlines()
                         if not ln.lstrip().startswith(("%", "!")))
        try:
            exec(compile(code, "<setup cell>", "exec"), ns)
        except Exception:  # noqa: BLE001 - the kernel shows the same error to the learner
            pass
    return ns


# nbgrader's hidden-test delimiters (ClearHiddenTests' defaults, which the course keeps),
# found as nbgrader finds them: anywhere in a line.
HIDDEN_TESTS_BEGIN, HIDDEN_TESTS_END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"


def segments(source: str) -> list[tuple[bool, str]]:
    """A test cell's source cut at nbgrader's hidden-test delimiters: (hidden, code) in
    order, each code padded with blank lines so its line numbers are the cell's."""
    out, hidden, code, first = [], False, [], 0
    for n, line in enumerate(source.splitlines(keepends=True)):
        delimiter = HIDDEN_TESTS_END if hidden else HIDDEN_TESTS_BEGIN
        if delimiter in line:
            if code:
                out.append((hidden, "\n" * first + "".join(code)))
            hidden, code, first = not hidden, [], n + 1
        else:
            code.append(line)
    if code:
        out.append((hidden, "\n" * first + "".join(code)))
    return out


def run_test(session: Session, source: str, setup: dict, where: str) -> tuple[str, str] | None:
    """Run a test cell's whole source here in the checker while one kernel cell serves it
    (:meth:`Session.serving`): None when it passed, else (error name, message).
    ProtocolError and CheckStopped propagate."""
    return session.serving(test_of(session, source, setup, where))


def test_of(session: Session, source: str, setup: dict,
            where: str) -> Callable[[], tuple[str, str] | None]:
    """A test cell's whole source, visible and hidden parts in their order, as the function
    the checker runs while a kernel cell serves it (:meth:`Session.serving_run`): it
    returns None when the test passed, else (error name, message). The visible parts'
    prints are shown in the kernel's cell; the learner's output during the hidden parts is
    not. ProtocolError and CheckStopped propagate."""
    parts = segments(source)
    state = {"hidden": False}

    def shown_print(*values, sep=" ", end="\n", file=None, flush=False):
        if not state["hidden"]:
            session.show(str(sep).join(map(str, values)) + str(end))

    def test():
        ns = LearnerNamespace(session, setup)
        ns["print"] = shown_print
        try:
            for hidden, code in parts:
                if hidden != state["hidden"]:
                    state["hidden"] = hidden
                    session.phase(hidden)
                with testing.hidden_part(hidden):
                    exec(compile(code, f"<test {where}>", "exec"), ns)
        except (ProtocolError, CheckStopped):
            raise
        except BaseException as exc:  # noqa: BLE001 - the verdict of a failing check
            if state["hidden"] and not (isinstance(exc, AssertionError)
                                        and type(exc).__module__ != "learner") \
                    and not testing.course_raised(exc):
                # Not a check's verdict (CheckFailed, whose messages show no hidden value)
                # but an exception out of the learner's code or of comparing its result: its
                # message and class name can carry the hidden inputs. A Rust compile error
                # (rustc on the learner's own cells, raised by the grader) keeps both.
                return testing.error_kind(exc), ("raised in a hidden part of the test (its "
                                                 "message is not shown)")
            message = str(exc)[:4000]
            return type(exc).__name__, (testing.mark_hidden_case(message) if state["hidden"]
                                        else message)
        finally:
            ns.keep()
        return None

    return test


def exchange_folder(km) -> tuple[Path, bool]:
    """(folder, made here) for the requests of kernel manager ``km``'s kernel: a new folder
    with an unpredictable name in its connection folder when that is the sandbox's (bound
    at its own path), else a new private one."""
    run = getattr(km, "connection_folder", None)
    if callable(run):
        folder = run() / f"exchange-{secrets.token_hex(8)}"
        try:
            os.mkdir(folder, 0o755)  # fails if anything is there already
        except OSError as exc:
            raise ProtocolError(f"the exchange folder could not be made: {exc}") from None
        return folder, False
    return Path(tempfile.mkdtemp(prefix="autograder-exchange-")), True


def remove_folder(folder: Path) -> None:
    wipe.remove(folder)


def new_cell_like(cell, code: str):
    """A code cell holding ``code`` with ``cell``'s metadata (so a time-out names it)."""
    import nbformat  # see visible_part

    new = nbformat.v4.new_code_cell(code)
    new.metadata = cell.metadata
    return new
