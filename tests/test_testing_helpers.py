"""The assertion helpers: they fail when they should, with messages that do not leak."""

from __future__ import annotations

import numpy as np
import pytest

from autograder.testing import (
    CheckFailed,
    assert_close,
    check_answer,
    check_pure_python,
    expect_value_error,
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
