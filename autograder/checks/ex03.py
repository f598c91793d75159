"""Checks for ``ex03_scaling`` (the variance of q . k, estimated by Monte Carlo).

The contract fixes the distribution (i.i.d. standard normal components) but not the random
generator that ``seed`` feeds, so these checks test statistical behaviour, never exact
values: the estimate must lie within ``Z`` standard errors of d_k, the same seed must give
the same value and different seeds different values.

The tolerance, derived. Let X = q . k = sum_i q_i k_i with Y_i = q_i k_i independent,
E[Y_i] = 0, E[Y_i^2] = 1 and E[Y_i^4] = E[q_i^4] E[k_i^4] = 9. Then E[X] = 0,
Var(X) = d_k and E[X^4] = 9 d_k + 3 d_k (d_k - 1) = 3 d_k (d_k + 2). The unbiased sample
variance S^2 of n draws has mean d_k and variance

    Var(S^2) = (E[X^4] - d_k^2 (n - 3) / (n - 1)) / n  ~  (2 d_k^2 + 6 d_k) / n

(:func:`autograder.reference.scaling.sample_variance_std`). Every check below uses
n >= 4000, where S^2 is close to normal (its skewness is at most about 0.1), and accepts
|S^2 - d_k| <= 6 sd(S^2): a correct implementation, whatever its generator, fails one
such comparison with probability of order 1e-8, and a whole grading run makes 16. A wrong
variance (a standard deviation, scaled scores, uniform components, a query shared by all
samples) misses by many standard errors.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from autograder.checks import knowledge as _knowledge  # bound now: private in the kernel
from autograder.diagnose_encoding import variance_hint
from autograder.reference.scaling import sample_variance_std
from autograder.reference.scaling import dot_product_variance as reference
from autograder.testing import call_learner as _call
from autograder.testing import expect_value_error, explain, fail

Z = 6.0  # standard errors allowed; see the module docstring
# (d_k, n_samples): d_k from 1 to 256; about 4 million normal draws per seed in all.
CASES = [(1, 20_000), (4, 20_000), (16, 20_000), (64, 10_000), (256, 4_000)]
SEEDS = (1, 2, 3)




def _float(value, what: str) -> float:
    """The value as a float, after checking it is a Python or NumPy float (the contract)."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind == "f":
        value = value[()]  # a 0-d float array is a NumPy float in all but name
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (float, np.floating)):
        fail(f"{what} should be a float (one number), got {type(value).__name__}")
    if not math.isfinite(value):
        fail(f"{what} should be a finite number, got {value}")
    return float(value)


def _number(value, what: str) -> float:
    """The value as a float, accepting anything that holds exactly one number.

    The value checks below use this, so that returning, say, a one-element array costs the
    points of :func:`returns_a_float` only.
    """
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        fail(f"{what} should be a number, got {type(value).__name__}")
    if arr.size != 1:
        fail(f"{what} should be one number, got {arr.size} values of shape {arr.shape}")
    number = float(arr.reshape(-1)[0])
    if not math.isfinite(number):
        fail(f"{what} should be a finite number, got {number}")
    return number


def returns_a_float(fn: Callable) -> None:
    """The result is one finite, non-negative float for several d_k and n_samples."""
    for d_k, n in [(1, 2), (1, 10), (3, 50), (100, 20), (7, 1000)]:
        what = f"dot_product_variance({d_k}, {n})"
        v = _float(_call(fn, d_k, n, what=what), what)
        if v < 0:
            fail(f"{what} is negative ({v:.3g}): a variance is never negative")


def variance_close_to_d_k(fn: Callable, cases=CASES, seeds=SEEDS) -> None:
    """For d_k from 1 to 256 and several seeds the estimate is within Z standard errors of d_k."""
    for seed in seeds:
        for d_k, n in cases:
            what = f"dot_product_variance({d_k}, {n}, seed={seed})"
            v = _number(_call(fn, d_k, n, seed=seed, what=what), what)
            bound = Z * sample_variance_std(d_k, n)
            if not abs(v - d_k) <= bound:
                with explain(lambda: variance_hint(v, d_k, n)):
                    fail(f"{what} = {v:.4g}: Var(q.k) is d_k = {d_k}, and a sample variance "
                         f"of {n} draws should be within {bound:.3g} of it (6 standard errors)")
    small_sample_distribution(fn)


# The distribution of the estimate from a few draws, over many seeds: a sample variance of
# n = 3 values of q . k (d_k = 1) is never negative and is strongly skewed, so a value made
# to lie near d_k without drawing (d_k plus a normal error of the right size) is told from
# a real estimate by a two-sample Kolmogorov-Smirnov test against the reference's own
# estimates for other seeds. The bound KS_D is the test's critical value at 1e-6 for two
# samples of SMALL_SEEDS: a correct implementation, whatever its generator, fails it with
# probability of order 1e-6.
SMALL_N, SMALL_SEEDS = 3, 300
KS_D = math.sqrt(-math.log(1e-6 / 2) / 2) * math.sqrt(2 / SMALL_SEEDS)


def _ks_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov-Smirnov statistic: the largest gap of the two empirical
    distribution functions."""
    points = np.sort(np.concatenate([a, b]))
    cdf = [np.searchsorted(np.sort(x), points, side="right") / x.size for x in (a, b)]
    return float(np.max(np.abs(cdf[0] - cdf[1])))


def small_sample_distribution(fn: Callable) -> None:
    """Over SMALL_SEEDS seeds, dot_product_variance(1, SMALL_N, seed) is never negative and
    is distributed as a real sample variance of SMALL_N draws."""
    got = []
    for seed in range(SMALL_SEEDS):
        what = f"dot_product_variance(1, {SMALL_N}, seed={seed})"
        v = _number(_call(fn, 1, SMALL_N, seed=seed, what=what), what)
        if v < 0:
            fail(f"{what} = {v:.4g} is negative: the sample variance of {SMALL_N} draws "
                 "never is (is every value computed from real draws?)")
        got.append(v)
    expected = np.array([reference(1, SMALL_N, seed=10_000 + s) for s in range(SMALL_SEEDS)])
    distance = _ks_distance(np.array(got), expected)
    if distance > KS_D:
        fail(f"over {SMALL_SEEDS} seeds, dot_product_variance(1, {SMALL_N}, seed) is not "
             f"distributed as the sample variance of {SMALL_N} draws of q.k (Kolmogorov-"
             f"Smirnov distance {distance:.2f} > {KS_D:.2f}): draw n_samples pairs and "
             "return their sample variance")


def seed_controls_the_sample(fn: Callable) -> None:
    """The same seed gives the same value; different seeds give different values."""
    d_k, n = 6, 400
    first = {}
    for seed in (0, 1, 7, 12345):
        what = f"dot_product_variance({d_k}, {n}, seed={seed})"
        a = _number(_call(fn, d_k, n, seed=seed, what=what), what)
        b = _number(_call(fn, d_k, n, seed=seed, what=what), what)
        if a != b:
            fail(f"two calls of {what} gave different values ({a:.6g} and {b:.6g}): "
                 "the seed must make the result reproducible")
        first[seed] = a
    what = f"dot_product_variance({d_k}, {n + 1}, seed=0)"
    if _number(_call(fn, d_k, n + 1, seed=0, what=what), what) == first[0]:
        fail(f"dot_product_variance({d_k}, {n}) and ({d_k}, {n + 1}) gave the same value: "
             "the estimate must use exactly n_samples draws")
    if len(set(first.values())) != len(first):
        fail(f"dot_product_variance({d_k}, {n}, seed=s) gave the same value for different "
             "seeds: the samples must depend on the seed")
    what = f"dot_product_variance({d_k}, {n}) with the default seed"
    default = _number(_call(fn, d_k, n, what=what), what)
    if default != first[0]:
        fail(f"{what} differs from seed=0: the default seed should be 0")
    what = f"dot_product_variance({d_k}, {n}, 1) with the seed passed by position"
    if _number(_call(fn, d_k, n, 1, what=what), what) != first[1]:
        fail(f"{what} differs from seed=1 passed by keyword")


def rejects_bad_d_k(fn: Callable) -> None:
    """d_k < 1 raises ValueError (there is no dot product of empty vectors to sample)."""
    for d_k in (0, -1, -8):
        expect_value_error(fn, (d_k, 100), f"dot_product_variance(d_k={d_k}, n_samples=100)",
                           mentions=("d_k", str(d_k)))


knowledge_check = _knowledge.check_for("ex03_scaling", __name__)
