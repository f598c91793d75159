"""The references of ex03 (scaling) and ex04 (positional encoding) against independent oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autograder.reference.positional_encoding import (
    apply_rotary,
    frequencies,
    relative_shift_matrix,
    sinusoidal_positional_encoding,
)
from autograder.reference.scaling import (
    dot_product_fourth_moment,
    dot_product_variance,
    sample_variance_std,
)

# --- ex03 ----------------------------------------------------------------------------------


@pytest.mark.parametrize("d_k,n", [(1, 50_000), (16, 20_000), (300, 3_000)])
def test_variance_is_d_k_within_six_standard_errors(d_k, n):
    v = dot_product_variance(d_k, n, seed=11)
    assert type(v) is float
    assert abs(v - d_k) < 6 * sample_variance_std(d_k, n)


def test_variance_equals_a_direct_computation_with_the_same_generator():
    rng = np.random.default_rng(5)
    q, k = rng.standard_normal((1000, 7)), rng.standard_normal((1000, 7))
    assert dot_product_variance(7, 1000, seed=5) == pytest.approx(
        np.var((q * k).sum(axis=1), ddof=1), rel=1e-12)


def test_chunking_does_not_change_the_result():
    """n_samples * d_k above the chunk size: same draws, in the same order, as one block."""
    d_k, n = 3000, 700  # 2.1 million numbers per matrix, more than one chunk
    rng = np.random.default_rng(2)
    xs = []
    rows = (1 << 20) // d_k
    for start in range(0, n, rows):
        m = min(rows, n - start)
        xs.append((rng.standard_normal((m, d_k)) * rng.standard_normal((m, d_k))).sum(axis=1))
    assert dot_product_variance(d_k, n, seed=2) == pytest.approx(
        np.var(np.concatenate(xs), ddof=1), rel=1e-12)


def test_seeds():
    assert dot_product_variance(4, 100) == dot_product_variance(4, 100, seed=0)
    assert dot_product_variance(4, 100, seed=1) != dot_product_variance(4, 100, seed=2)


def test_fourth_moment_and_standard_error_by_simulation():
    rng = np.random.default_rng(3)
    d_k, n = 5, 400_000
    x = (rng.standard_normal((n, d_k)) * rng.standard_normal((n, d_k))).sum(axis=1)
    assert dot_product_fourth_moment(d_k) == 3 * d_k * (d_k + 2)
    assert abs(np.mean(x**4) - 105) < 6 * np.std(x**4) / math.sqrt(n)
    # the spread of 400 sample variances of 500 draws each matches sample_variance_std
    estimates = np.var(x[:200_000].reshape(400, 500), axis=1, ddof=1)
    assert np.std(estimates, ddof=1) == pytest.approx(sample_variance_std(d_k, 500), rel=0.15)


@pytest.mark.parametrize("args,fragment", [((0, 10), "d_k = 0"), ((-3, 10), "d_k = -3"),
                                            ((4, 1), "n_samples = 1"), ((2.5, 10), "integer")])
def test_variance_errors_name_the_value(args, fragment):
    with pytest.raises(ValueError, match=fragment):
        dot_product_variance(*args)


# --- ex04 ----------------------------------------------------------------------------------


def _pe_loops(T, d_model, base=10000.0):
    return np.array([[math.sin(p / base ** (c / d_model)) if c % 2 == 0
                      else math.cos(p / base ** ((c - 1) / d_model)) for c in range(d_model)]
                     for p in range(T)])


@pytest.mark.parametrize("T,d_model,base", [(1, 2, 10000.0), (17, 6, 10000.0), (50, 32, 100.0),
                                            (9, 8, 2.0)])
def test_encoding_matches_the_formula(T, d_model, base):
    pe = sinusoidal_positional_encoding(T, d_model, base)
    assert pe.shape == (T, d_model) and pe.dtype == np.float64
    np.testing.assert_allclose(pe, _pe_loops(T, d_model, base), atol=1e-12)


def test_frequencies():
    np.testing.assert_allclose(frequencies(8), [1.0, 0.1, 0.01, 0.001], rtol=1e-12)


@pytest.mark.parametrize("k", [-300, -5, -1, 0, 1, 7, 1000])
@pytest.mark.parametrize("d_model,base", [(2, 10000.0), (16, 10000.0), (12, 50.0)])
def test_shift_matrix_moves_every_position(k, d_model, base):
    M = relative_shift_matrix(k, d_model, base)
    pe = sinusoidal_positional_encoding(600 + max(k, 0), d_model, base)
    pos = np.arange(300, 600)
    np.testing.assert_allclose(pe[pos] @ M.T, pe[pos + k], atol=1e-10)
    np.testing.assert_allclose(M @ relative_shift_matrix(-k, d_model, base), np.eye(d_model),
                               atol=1e-12)


def test_rotary_scores_depend_on_the_offset_only():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=16), rng.normal(size=16)
    score = lambda m, n: apply_rotary(q[None], [m]) @ apply_rotary(k[None], [n]).T  # noqa: E731
    assert score(3, 8).item() == pytest.approx(score(103, 108).item(), abs=1e-10)
    assert score(3, 8).item() != pytest.approx(score(8, 3).item(), abs=1e-6)


@pytest.mark.parametrize("call,fragment", [
    (lambda: sinusoidal_positional_encoding(4, 5), "d_model = 5"),
    (lambda: sinusoidal_positional_encoding(-1, 4), "T = -1"),
    (lambda: sinusoidal_positional_encoding(4, 4, base=0), "base = 0"),
    (lambda: relative_shift_matrix(1, 7), "d_model = 7"),
    (lambda: relative_shift_matrix(0.5, 4), "integer"),
    (lambda: apply_rotary(np.ones((3, 4)), np.arange(2)), "positions"),
])
def test_encoding_errors_name_the_value(call, fragment):
    with pytest.raises(ValueError, match=fragment):
        call()
