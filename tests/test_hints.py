"""The usual mistakes named on the rows that fail for them (the newcomer's walk of
issue 27), and a Rust compile error named as one in a hidden case.

Each test runs the check, or the visible part of a notebook's test cell, on a wrong
implementation of ``tests/implementations/`` and reads the failure the row prints."""

from __future__ import annotations

import pytest

from autograder import testing


# -- a Rust compile error in a hidden case ---------------------------------------------


def test_a_compile_error_of_the_course_keeps_its_name_and_rustc_message_in_a_hidden_case():
    """rustc's message about the learner's own cells, raised by the course's glue, carries
    no hidden input: a hidden case names it as the visible rows do, never as `Exception`."""
    from autograder.rust import RustCompileError

    error = RustCompileError("cell softmax, line 9: cannot add `usize` to `f64` (error[E0277])")

    def attention(Q, K, V):
        raise error

    with testing.hidden_part():
        with pytest.raises(testing.CheckFailed) as failed:
            testing.call_learner(attention, [[1.0]], [[1.0]], [[1.0]], what="attention of 1 x 1")
        assert testing.raised(error) == f"RustCompileError: {error}"
    assert str(failed.value) == f"attention of 1 x 1: raised RustCompileError: {error}"


def test_a_learners_exception_named_like_a_compile_error_stays_hidden():
    """Only the course's own class keeps its message: a learner's exception of that name
    (the checker's stand-in, of the module ``learner``) is its built-in kind."""
    from autograder.checker import _learner_exception

    posing = _learner_exception({"type": "RustCompileError", "kinds": ["Exception"],
                                 "message": "HIDDEN-ROW=[0.25]"})
    local = type("RustCompileError", (Exception,), {})("HIDDEN-ROW=[0.25]")
    with testing.hidden_part():
        for exc in (posing, local):
            assert not testing.course_raised(exc)
            assert testing.raised(exc) == "Exception (a hidden case: its message is not shown)"


def test_a_compile_error_out_of_a_hidden_part_keeps_its_message(tmp_path):
    """A hidden part that calls the Rust function itself: the row says the cells do not
    compile (the checker's run_test), where another exception is its kind only."""
    from autograder.checker import Session, run_test
    from autograder.rust import RustCompileError

    from test_wire import _kernel

    def softmax(row):
        raise RustCompileError("cell softmax, line 3: mismatched types (error[E0308])")

    def leaky(row):
        raise ValueError(f"HIDDEN-ROW={row!r}")

    session = Session(_kernel({}), tmp_path)
    code = "x = 1\n### BEGIN HIDDEN TESTS\nf([0.25])\n### END HIDDEN TESTS\n"
    assert run_test(session, code, {"f": softmax}, "t") == (
        "RustCompileError", "in a hidden case of this test: cell softmax, line 3: mismatched "
        "types (error[E0308])")
    kind, message = run_test(session, code, {"f": leaky}, "t")
    assert kind == "ValueError" and "HIDDEN" not in message
