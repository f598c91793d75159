"""The pure-Python reference against an independent float64 NumPy oracle."""

from __future__ import annotations

import numpy as np
import pytest

from autograder.reference.python_attention import scaled_dot_product_attention, softmax


def oracle(Q, K, V):
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    s = Q @ K.T / np.sqrt(Q.shape[1])
    w = np.exp(s - s.max(axis=1, keepdims=True))
    return (w / w.sum(axis=1, keepdims=True)) @ V


@pytest.mark.parametrize("T_q,T_k,d_k,d_v", [(1, 1, 1, 1), (3, 5, 4, 2), (6, 2, 8, 3)])
def test_matches_numpy(T_q, T_k, d_k, d_v):
    rng = np.random.default_rng(T_q * 100 + T_k)
    Q, K, V = rng.normal(size=(T_q, d_k)), rng.normal(size=(T_k, d_k)), rng.normal(size=(T_k, d_v))
    out = scaled_dot_product_attention(Q.tolist(), K.tolist(), V.tolist())
    np.testing.assert_allclose(out, oracle(Q, K, V), rtol=1e-12)
    assert all(type(x) is float for row in out for x in row)


def test_worked_example():
    Q = [[0.0, 0.0, 0.0, 0.0], [0.3, 0.3, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0]]
    K = [[-1.0, -1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
    V = [[10.0, 1.0], [20.0, 2.0], [30.0, 3.0]]
    out = np.round(scaled_dot_product_attention(Q, K, V), 4).tolist()
    assert out == [[20.0, 2.0], [21.9706, 2.1971], [23.2016, 2.3202]]


def test_softmax_stable_and_exact():
    assert softmax([1000.0, 1001.0]) == pytest.approx([0.2689414213699951, 0.7310585786300049])
    assert softmax([5]) == [1.0]


@pytest.mark.parametrize("args,fragment", [
    (([], [[1.0]], [[1.0]]), "Q must be a non-empty"),
    (([[1.0, 2.0], [1.0]], [[1.0, 2.0]], [[1.0]]), "Q is ragged: row 0 has 2 entries but row 1 has 1"),
    (([[1.0, 2.0]], [[1.0]], [[1.0]]), "Q has d_k = 2 columns but K has 1"),
    (([[1.0]], [[1.0], [2.0]], [[1.0]]), "K has T_k = 2 rows but V has 1"),
])
def test_errors_name_the_offending_shape(args, fragment):
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(")):
        scaled_dot_product_attention(*args)


@pytest.mark.parametrize("row,fragment", [([], "empty row"), ([1.0, float("nan")], "row\\[1\\]")])
def test_softmax_errors(row, fragment):
    with pytest.raises(ValueError, match=fragment):
        softmax(row)
