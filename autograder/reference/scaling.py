"""Why attention scores are divided by sqrt(d_k) (reference for ``ex03_scaling``).

Vaswani et al. (2017), section 3.2.1, footnote 4: if the components of q and k are
independent random variables with mean 0 and variance 1, then their dot product
q . k = sum_i q_i k_i has mean 0 and variance d_k. This module estimates that variance by
Monte Carlo, and gives the exact spread of the estimate, which the grading checks use as
their tolerance.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

# Draw the samples in chunks of at most this many numbers per matrix, so that a large
# n_samples * d_k never needs gigabytes of memory.
_CHUNK = 1 << 20


def _positive_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {name} = {value}")
    return int(value)


def dot_product_variance(d_k: int, n_samples: int, seed: int = 0) -> float:
    """Sample variance of q . k for q, k with i.i.d. standard normal components.

    Draws ``n_samples`` independent pairs (q, k) of vectors in R^{d_k} whose 2 d_k
    components are independent N(0, 1), forms X = q . k for each pair and returns the
    unbiased sample variance (1 / (n_samples - 1)) sum_n (X_n - mean(X))^2. Its expectation
    is Var(q . k) = d_k (Vaswani et al. 2017, section 3.2.1, footnote 4).

    Args:
        d_k: the dimension of q and k, an integer >= 1.
        n_samples: the number of pairs, an integer >= 2 (a sample variance needs two).
        seed: seeds ``numpy.random.default_rng``; the same seed gives the same value.

    Returns:
        The sample variance, a Python float.

    Raises:
        ValueError: if ``d_k`` < 1, ``n_samples`` < 2, or either is not an integer.
    """
    d_k = _positive_int("d_k", d_k, 1)
    n_samples = _positive_int("n_samples", n_samples, 2)
    rng = np.random.default_rng(seed)
    x = np.empty(n_samples)
    rows = max(1, _CHUNK // d_k)
    for start in range(0, n_samples, rows):
        stop = min(start + rows, n_samples)
        q = rng.standard_normal((stop - start, d_k))
        k = rng.standard_normal((stop - start, d_k))
        x[start:stop] = np.einsum("nd,nd->n", q, k)  # one dot product q . k per row
    return float(np.var(x, ddof=1))


def dot_product_fourth_moment(d_k: int) -> float:
    """E[(q . k)^4] = 3 d_k (d_k + 2) for i.i.d. standard normal components.

    With Y_i = q_i k_i: E[Y_i^2] = 1, E[Y_i^4] = E[q_i^4] E[k_i^4] = 3 * 3 = 9, and in the
    expansion of (sum_i Y_i)^4 only the terms Y_i^4 (d_k of them) and Y_i^2 Y_j^2 with
    i != j (3 d_k (d_k - 1) of them) have a non-zero mean: 9 d_k + 3 d_k (d_k - 1).
    """
    d_k = _positive_int("d_k", d_k, 1)
    return 3.0 * d_k * (d_k + 2)


def sample_variance_std(d_k: int, n_samples: int) -> float:
    """Standard deviation of the sample variance returned by :func:`dot_product_variance`.

    For n i.i.d. draws of X with variance s2 and fourth central moment m4, the unbiased
    sample variance has variance (m4 - s2^2 (n - 3) / (n - 1)) / n. Here s2 = d_k and
    m4 = E[X^4] = 3 d_k (d_k + 2) (the mean of X is 0), so for large n this is about
    sqrt((2 d_k^2 + 6 d_k) / n).
    """
    d_k = _positive_int("d_k", d_k, 1)
    n = _positive_int("n_samples", n_samples, 2)
    m4, s2 = dot_product_fourth_moment(d_k), float(d_k)
    return math.sqrt((m4 - s2 * s2 * (n - 3) / (n - 1)) / n)
