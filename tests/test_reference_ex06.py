"""The tiled-attention reference against dense attention, and the measurement helpers."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from autograder.measure import attention_flops, best_time, matmul_gflops, peak_traced_memory
from autograder.reference.tiled_attention import tiled_attention


def oracle(Q, K, V, is_causal=False):
    """A float64 loop over queries: softmax over the visible keys (top-left causal)."""
    out = np.zeros((Q.shape[0], V.shape[1]))
    for i, q in enumerate(Q):
        n = min(i + 1, K.shape[0]) if is_causal else K.shape[0]
        if n == 0:
            continue
        s = K[:n] @ q / np.sqrt(Q.shape[1])
        w = np.exp(s - s.max())
        out[i] = w @ V[:n] / w.sum()
    return out


@pytest.mark.parametrize("T_q,T_k,block_size", [(1, 1, 1), (7, 7, 3), (5, 12, 4), (12, 5, 4),
                                                (33, 33, 64), (20, 64, 16), (9, 4, 1)])
@pytest.mark.parametrize("is_causal", [False, True])
def test_matches_oracle(T_q, T_k, block_size, is_causal):
    rng = np.random.default_rng(T_q * 1000 + T_k)
    Q, K, V = rng.normal(size=(T_q, 8)) * 3, rng.normal(size=(T_k, 8)), rng.normal(size=(T_k, 3))
    out = tiled_attention(Q, K, V, block_size, is_causal)
    assert out.dtype == np.float64 and out.shape == (T_q, 3)
    np.testing.assert_allclose(out, oracle(Q, K, V, is_causal), rtol=1e-12, atol=1e-13)


def test_extreme_scores_and_no_keys():
    Q = np.array([[1.0]])
    out = tiled_attention(Q, np.array([[-2e4], [-2e4 - 1]]), np.array([[1.0], [0.0]]), 1)
    assert out[0, 0] == pytest.approx(1 / (1 + np.exp(-1)), rel=1e-12)
    assert np.array_equal(tiled_attention(np.ones((3, 2)), np.zeros((0, 2)), np.zeros((0, 4))),
                          np.zeros((3, 4)))


def test_dtypes():
    rng = np.random.default_rng(0)
    Q, K, V = (rng.normal(size=(6, 4)).astype(np.float32) for _ in range(3))
    assert tiled_attention(Q, K, V, 4).dtype == np.float32
    ints = tiled_attention(np.ones((2, 2), dtype=int), np.ones((3, 2), dtype=int),
                           np.arange(6).reshape(3, 2), 2)
    assert ints.dtype == np.float64 and np.allclose(ints, [[2.0, 3.0], [2.0, 3.0]])


@pytest.mark.parametrize("is_causal", [False, True])
def test_memory_stays_linear(is_causal):
    rng = np.random.default_rng(1)
    Q, K, V = (rng.normal(size=(4096, 64)) for _ in range(3))
    _, peak = peak_traced_memory(tiled_attention, Q, K, V, 64, is_causal)
    assert peak < 16 * 2**20


@pytest.mark.parametrize("args,fragment", [
    ((np.ones((3, 4)), np.ones((5, 3)), np.ones((5, 2))), r"Q has d_k = 4 \(shape \(3, 4\)\)"),
    ((np.ones((3, 4)), np.ones((5, 4)), np.ones((6, 2))), r"K has T_k = 5 rows"),
    ((np.ones(4), np.ones((5, 4)), np.ones((5, 2))), r"Q must be a matrix \(2-D\), got shape"),
    ((np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 2)), 0), r"must be an integer >= 1, got 0"),
    ((np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 2)), 2.5), r"got 2.5"),
    ((np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 2)), 2, "yes"), r"is_causal must be True"),
    ((np.ones((3, 0)), np.ones((5, 0)), np.ones((5, 2))), r"d_k must be at least 1"),
    ((np.array([["a"]]), np.ones((1, 1)), np.ones((1, 1))), r"Q must hold real numbers"),
])
def test_errors_name_the_offending_value(args, fragment):
    with pytest.raises(ValueError, match=fragment):
        tiled_attention(*args)


def test_measure_helpers():
    assert attention_flops(4, 8, 1024, 1024, 64) == 4 * 4 * 8 * 1024 * 1024 * 64
    assert attention_flops(1, 1, 3, 5, 2, 7) == 2 * 3 * 5 * (2 + 7)
    calls = []
    assert best_time(calls.append, 1, number=3, repeat=2, warmup=1) >= 0
    assert len(calls) == 1 + 3 * 2
    calls.clear()
    best_time(calls.append, 1, repeat=1, warmup=0, min_time=0.0)  # autorange stops at once
    assert len(calls) == 2
    with pytest.raises(ValueError):
        best_time(print, repeat=0)
    result, peak = peak_traced_memory(np.zeros, 2**20)  # 8 MiB of float64
    assert result.shape == (2**20,) and 8 * 2**20 <= peak < 9 * 2**20
    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError, match="already tracing"):
            peak_traced_memory(np.zeros, 3)
    finally:
        tracemalloc.stop()
    assert matmul_gflops(64, "numpy", repeat=1) > 0
    with pytest.raises(ValueError):
        matmul_gflops(64, "jax")
