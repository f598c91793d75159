"""What ex06's checks share: the oracle (dense attention), the output's type and shape
check, the comparison with its diagnosis, and the inputs they draw."""

from __future__ import annotations

from typing import Callable

import numpy as np

from autograder import diagnose
from autograder.reference import numpy_attention
from autograder.testing import assert_close, explain, fail
from autograder.testing import call_learner as _call

ASSIGNMENT = "ex06_tiled_attention"
# float64 tiled and dense attention differ only by the order of a few sums.
RTOL, ATOL = 1e-10, 1e-10


def dense_attention(Q, K, V, is_causal: bool = False) -> np.ndarray:
    """The oracle: dense attention with a top-left causal mask (query i sees keys j <= i)."""
    T_q, T_k = Q.shape[0], K.shape[0]
    if T_k == 0:
        return np.zeros((T_q, V.shape[1]))
    mask = np.tri(T_q, T_k, dtype=bool) if is_causal else None
    out, _weights = numpy_attention.scaled_dot_product_attention(Q, K, V, mask=mask)
    return out


def _check_output(got, shape: tuple[int, int], what: str) -> None:
    if not isinstance(got, np.ndarray):
        fail(f"{what}: should return a numpy.ndarray, got {type(got).__name__}")
    if got.shape != shape:
        fail(f"{what}: output shape should be {shape}, got {got.shape}")
    if got.dtype != np.float64:
        fail(f"{what}: float64 inputs should give a float64 output, got {got.dtype}")


def _compare(tiled: Callable, Q, K, V, block_size: int, is_causal: bool, what: str) -> None:
    what = (f"{what} (T_q = {Q.shape[0]}, T_k = {K.shape[0]}, d_k = {Q.shape[1]}, "
            f"d_v = {V.shape[1]}, block_size = {block_size}, is_causal = {is_causal})")
    args = (Q.copy(), K.copy(), V.copy())
    got = _call(tiled, *args, block_size=block_size, is_causal=is_causal, what=what)
    _check_output(got, (Q.shape[0], V.shape[1]), what)
    with explain(lambda: diagnose.tiled_attention_hint(got, Q, K, V, block_size, is_causal)):
        assert_close(got, dense_attention(Q, K, V, is_causal), what, rtol=RTOL, atol=ATOL)


def _qkv(rng: np.random.Generator, T_q: int, T_k: int, d_k: int, d_v: int, spread: float = 3.0):
    """Random inputs whose scores spread over several units, so block maxima differ."""
    Q = rng.normal(size=(T_q, d_k)) * spread
    K = rng.normal(size=(T_k, d_k))
    V = rng.normal(size=(T_k, d_v))
    return Q, K, V


def _rising_keys(rng: np.random.Generator, T: int, d_k: int, d_v: int):
    """Inputs whose scores grow along the keys, so the running maximum changes in every block."""
    Q = np.abs(rng.normal(size=(T, d_k))) + 0.5
    K = np.linspace(0.0, 4.0, T)[:, None] * np.ones((T, d_k)) + 0.1 * rng.normal(size=(T, d_k))
    V = rng.normal(size=(T, d_v))
    return Q, K, V


def _offset_inputs(rng: np.random.Generator, T_q: int, T_k: int, d_k: int, offset: float,
                   block_offsets: list[float] | None = None):
    """Scores near ``offset`` (or, per key block of 4, near the given offsets) plus O(1)."""
    Q = rng.normal(size=(T_q, d_k))
    K = rng.normal(size=(T_k, d_k))
    V = rng.normal(size=(T_k, 3))
    Q[:, 0] = np.sqrt(d_k)  # q_0 k_0 / sqrt(d_k) = k_0: the first coordinate sets the offset
    if block_offsets is None:
        K[:, 0] = offset
    else:
        K[:, 0] = np.repeat(block_offsets, 4)[:T_k]
    return Q, K, V
