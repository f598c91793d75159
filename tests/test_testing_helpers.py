"""The assertion helpers: they fail when they should, with messages that do not leak."""

from __future__ import annotations

import numpy as np
import pytest

from autograder.testing import (
    CheckFailed,
    assert_close,
    call_learner,
    check_answer,
    check_array,
    check_pure_python,
    check_tensor,
    expect_value_error,
    referenced_values,
    some_true_per_row,
)


def test_assert_close_hides_expected_values_unless_asked():
    with pytest.raises(CheckFailed) as info:
        assert_close([1.0, 2.5], [1.0, 2.0], "x")
    assert "2.0" not in str(info.value) and "largest error 0.5" in str(info.value)
    with pytest.raises(CheckFailed, match="expected"):
        assert_close([1.0, 2.5], [1.0, 2.0], "x", show_expected=True)


def test_assert_close_checks_shape_and_nan():
    with pytest.raises(CheckFailed, match="shape should be"):
        assert_close(np.zeros(3), np.zeros(4), "x")
    with pytest.raises(CheckFailed, match="finite number was expected"):
        assert_close([np.nan], [0.0], "x")
    assert_close([1.0 + 1e-9], [1.0], "x", rtol=1e-8)


def test_check_answer_rejects_always_equal_objects():
    class Anything(str):
        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    with pytest.raises(CheckFailed, match="not the right answer"):
        check_answer(Anything("z"), "b", "Q")  # compared by its plain value, "z"
    with pytest.raises(CheckFailed, match="should be a str"):
        check_answer(3, "b", "Q")
    import numpy as np

    check_answer(np.float64(0.75), 0.75, "Q")  # a NumPy number is a number
    with pytest.raises(CheckFailed, match="no answer"):
        check_answer(None, "b", "Q")
    with pytest.raises(CheckFailed, match="not the right answer"):
        check_answer("a", "b", "Q")
    check_answer(" B ", "b", "Q")
    check_answer(0.7501, 0.75, "Q")
    with pytest.raises(CheckFailed):
        check_answer(True, 1, "Q")


def test_check_answer_compares_counts_exactly():
    """ex07's parameter count: the counts without the LayerNorms (3,150,336) or without the
    biases (3,149,824) are within 1e-3 of 3,152,384 and must still be wrong."""
    import numpy as np

    check_answer(3152384, 3152384, "Q")
    check_answer(3152384.0, 3152384, "Q")
    check_answer(np.int64(3152384), 3152384, "Q")
    for near in (3150336, 3149824, 3152385):
        with pytest.raises(CheckFailed, match="not the right answer"):
            check_answer(near, 3152384, "Q")
    with pytest.raises(CheckFailed, match="whole number"):
        check_answer(3152384.5, 3152384, "Q")
    with pytest.raises(CheckFailed, match="whole number"):
        check_answer(float("nan"), 10, "Q")


def test_expect_value_error():
    expect_value_error(int, ("x",), "int('x')")

    def bare(x):
        raise ValueError()

    with pytest.raises(CheckFailed, match="no message"):
        expect_value_error(bare, (1,), "bare")
    with pytest.raises(CheckFailed, match="raised TypeError"):
        expect_value_error(len, (5,), "len(5)")
    with pytest.raises(CheckFailed, match="returned a result"):
        expect_value_error(abs, (5,), "abs(5)")


def test_check_pure_python_follows_helpers():
    import math

    def helper(x):
        return np.exp(x)

    def uses_helper(x):
        return helper(x)

    def clean(x):
        return math.exp(x)

    check_pure_python(clean)
    # A notebook where another cell imported numpy's sqrt: math.sqrt is still pure Python.
    g = {"math": math, "sqrt": np.sqrt}
    exec("def uses_math_sqrt(x):\n    return math.sqrt(x)\n", g)
    check_pure_python(g["uses_math_sqrt"])
    exec("def uses_numpy_sqrt(x):\n    return sqrt(x)\n", g)
    with pytest.raises(CheckFailed, match="numpy"):
        check_pure_python(g["uses_numpy_sqrt"])
    with pytest.raises(CheckFailed, match="numpy"):
        check_pure_python(uses_helper)

    def imports_inside(x):
        import torch  # noqa: F401

        return x

    with pytest.raises(CheckFailed, match="torch"):
        check_pure_python(imports_inside)


def test_call_learner_names_the_stub_and_runs_within_a_context():
    def stub():
        raise NotImplementedError()

    with pytest.raises(CheckFailed, match="f\\(\\): not implemented yet"):
        call_learner(stub, what="f()")
    with pytest.raises(CheckFailed, match="raised ZeroDivisionError"):
        call_learner(lambda: 1 / 0, what="g()")
    with np.errstate(all="raise"):  # the learner's overflow warning is not an error in it
        assert call_learner(lambda: np.exp(np.float64(1000)), what="h()",
                            within=np.errstate(all="ignore")) == np.inf


def test_check_array_and_check_tensor():
    assert check_array(np.zeros((2, 3)), (2, 3), "x").shape == (2, 3)
    with pytest.raises(CheckFailed, match="should be a numpy.ndarray, got list"):
        check_array([[0.0]], (1, 1), "x")
    with pytest.raises(CheckFailed, match=r"shape should be \(2, 3\), got \(3, 2\)"):
        check_array(np.zeros((3, 2)), (2, 3), "x")
    torch = pytest.importorskip("torch")
    t = torch.zeros(2, 3)
    assert check_tensor(t, (2, 3), "t", device="cpu", dtype=torch.float32, finite=True) is t
    with pytest.raises(CheckFailed, match="dtype should be torch.float64"):
        check_tensor(t, (2, 3), "t", dtype=torch.float64)
    with pytest.raises(CheckFailed, match="NaN or infinity"):
        check_tensor(torch.tensor([float("nan")]), (1,), "t", finite=True)
    with pytest.raises(CheckFailed, match="should be a torch.Tensor"):
        check_tensor(np.zeros(1), (1,), "t")


def test_some_true_per_row_leaves_no_row_fully_masked():
    m = some_true_per_row(np.random.default_rng(0), (50, 7), p=0.01)
    assert m.dtype == bool and m.shape == (50, 7) and m.any(axis=-1).all() and not m.all()
    torch = pytest.importorskip("torch")
    t = some_true_per_row(torch.Generator().manual_seed(0), (4, 50, 7), p=0.01)
    assert t.dtype == torch.bool and t.any(dim=-1).all()


def test_referenced_values_sees_globals_and_closures():
    import math

    def outer():
        helper = math.sqrt

        def inner(x):
            return helper(x) + np.pi

        return inner

    found = referenced_values(outer(), {"np", "unbound_name"})
    assert found == [("np", np), (None, math.sqrt)]


def _verdict(check, actual, expected, **kw) -> str | None:
    try:
        check(actual, expected, "x", kw.get("rtol", 1e-7), kw.get("atol", 0.0),
              kw.get("show_expected", False))
    except CheckFailed as exc:
        return str(exc)
    return None


def _random_case(rng):
    """A random (actual, expected, options) of plain Python values: shapes (), (n,) and
    (n, m), entries near each other, with infinities, NaN, -0.0 and halfway roundings."""
    import random as _random

    assert isinstance(rng, _random.Random)
    specials = [float("inf"), -float("inf"), float("nan"), -0.0, 0.0, 2.5e-7, -2.5e-7,
                1e300, 0.1234565, -0.1234565]

    def entry():
        return rng.choice(specials) if rng.random() < 0.15 else rng.uniform(-3, 3)

    shape = rng.choice([(), (rng.randint(0, 4),), (rng.randint(1, 3), rng.randint(0, 3))])

    def build(f, shape):
        if not shape:
            return f()
        return [build(f, shape[1:]) for _ in range(shape[0])]

    expected = build(entry, shape)

    def perturb(x):
        roll = rng.random()
        if roll < 0.1:
            return entry()
        return x + (rng.uniform(-1, 1) * 10 ** rng.randint(-12, 0) if roll < 0.7 else 0.0)

    def walk(v):
        return [walk(x) for x in v] if isinstance(v, list) else perturb(v)

    actual = walk(expected)
    if rng.random() < 0.1:  # another shape
        actual = [actual] if rng.random() < 0.5 else build(entry, (2,))
    return actual, expected, {"rtol": rng.choice([0.0, 1e-9, 1e-3]),
                              "atol": rng.choice([0.0, 1e-6]),
                              "show_expected": rng.random() < 0.5}


def test_assert_close_in_plain_python_gives_numpys_verdict_and_message():
    """The in-page tier (no NumPy) compares lists in Python: 3,000 random cases give the
    same verdict and the same message as the NumPy comparison."""
    import random

    from autograder.closeness import _assert_close_array, _assert_close_plain

    rng = random.Random(2026)
    failed = 0
    for _ in range(3000):
        actual, expected, kw = _random_case(rng)
        plain = _verdict(_assert_close_plain, actual, expected, **kw)
        array = _verdict(_assert_close_array, actual, expected, **kw)
        assert plain == array, (actual, expected, kw)
        failed += plain is not None
    assert 500 < failed < 2500  # both verdicts occur often


def test_assert_close_in_plain_python_catches_what_numpy_catches():
    from autograder.closeness import _assert_close_plain, _round6

    def wrong(actual, expected):
        return _verdict(_assert_close_plain, actual, expected, show_expected=True)

    assert wrong([1.0, 2.0], [1.0, 2.0]) is None
    assert wrong([[1.0], [2.0]], [1.0, 2.0]) == "x: shape should be (2,), got (2, 1)"
    assert "could not read" in wrong([[1.0], [2.0, 3.0]], [[1.0], [2.0]])
    assert "could not read" in wrong(["a"], [1.0])
    assert wrong([float("nan")], [0.0]) == ("x: got nan at index (0,) where a finite number "
                                            "was expected")
    assert wrong(1.5, 1.0).startswith("x: values differ (largest error 0.5, allowed 1e-07)")
    assert [_round6(x) for x in (-0.0000004, 0.0000025, 0.1234565)] == \
        [float(np.round(x, 6)) for x in (-0.0000004, 0.0000025, 0.1234565)]


def test_a_hidden_part_shows_no_value_and_no_learner_message():
    """In a hidden part of a test (the checker's :func:`testing.hidden_part`) a learner's
    exception is named by its built-in kind only (its message and its class's name can
    carry the hidden inputs), and a comparison shows how far off, never a value."""
    from autograder import testing

    Leaky = type("Row4387", (ValueError,), {})

    def leaky(row):
        raise Leaky(f"HIDDEN-ROW={row!r}")

    with testing.hidden_part():
        with pytest.raises(testing.CheckFailed) as hidden:
            testing.call_learner(leaky, [0.25], what="softmax of a random row")
        with pytest.raises(testing.CheckFailed) as raised_other:
            testing.expect_value_error(lambda r: 1 / 0, ([0.25],), "softmax([])")
        with pytest.raises(testing.CheckFailed) as far:
            testing.assert_close([0.123456, 1.0], [0.5, 1.0], "w", show_expected=True)
        with pytest.raises(testing.CheckFailed) as nonfinite:
            testing.assert_close([float("nan")], [0.5], "w")
    assert str(hidden.value) == ("softmax of a random row: raised ValueError (a hidden "
                                 "case: its message is not shown)")
    assert str(raised_other.value) == ("softmax([]): should raise ValueError, raised "
                                       "ZeroDivisionError (a hidden case: its message is "
                                       "not shown)")
    assert str(far.value) == "w: values differ (largest error 0.377, allowed 5e-08)"
    assert str(nonfinite.value) == ("w: got a non-finite value at index (0,) where a finite "
                                    "number was expected")
    with pytest.raises(testing.CheckFailed) as visible:
        testing.call_learner(leaky, [0.25], what="softmax([0.25])")
    assert str(visible.value) == "softmax([0.25]): raised Row4387: HIDDEN-ROW=[0.25]"


def test_a_check_of_the_trusted_side_shows_no_learner_message_even_from_a_visible_part():
    """A check of ``autograder.checks`` makes inputs no learner sees, even where a visible
    part of a test calls it: the learner's exception is named by its kind there too."""
    from autograder import testing

    def leaky(row):
        raise ValueError(f"HIDDEN-ROW={row!r}")

    check = {"__name__": "autograder.checks.fake", "call_learner": testing.call_learner}
    exec("def judge(fn):\n    call_learner(fn, [0.25], what='softmax of a row of 1')\n", check)
    with pytest.raises(testing.CheckFailed) as failed:
        check["judge"](leaky)
    assert str(failed.value) == ("softmax of a row of 1: raised ValueError (a hidden case: "
                                 "its message is not shown)")


def test_a_hidden_case_names_the_built_in_class_not_one_bearing_its_name():
    """A learner's class named after another built-in (``OverflowError`` deriving from
    ValueError, as the checker's stand-in for it is) is named by the built-in it is."""
    from autograder import testing
    from autograder.session_errors import learner_exception as _learner_exception

    posing = _learner_exception({"type": "OverflowError", "kinds": ["ValueError"],
                                 "message": "HIDDEN"})
    assert type(posing).__name__ == "OverflowError"
    assert testing.error_kind(posing) == "ValueError"
    with testing.hidden_part():
        assert testing.raised(posing) == ("ValueError (a hidden case: its message is not "
                                          "shown)")
