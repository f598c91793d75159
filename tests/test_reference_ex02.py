"""The NumPy reference (ex02) against a float64 loop and torch's built-in attention."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from autograder.checks import ex02
from autograder.reference.numpy_attention import causal_mask, scaled_dot_product_attention, softmax


def _loop(Q, K, V, mask=None):
    """Unbatched attention, one query at a time, in float64."""
    out = np.zeros((Q.shape[0], V.shape[1]))
    for i, q in enumerate(Q.astype(np.float64)):
        s = K @ q / np.sqrt(Q.shape[1])
        allowed = np.ones(len(s), bool) if mask is None else mask[i]
        if allowed.any():
            w = np.exp(s[allowed] - s[allowed].max())
            out[i] = (w / w.sum()) @ V[allowed]
    return out


@pytest.mark.parametrize("T_q,T_k,d_k,d_v", [(1, 1, 1, 1), (4, 6, 8, 3), (6, 2, 4, 5)])
def test_matches_loop_and_torch(T_q, T_k, d_k, d_v):
    rng = np.random.default_rng(T_q + 10 * T_k)
    Q, K, V = rng.normal(size=(T_q, d_k)), rng.normal(size=(T_k, d_k)), rng.normal(size=(T_k, d_v))
    mask = rng.random((T_q, T_k)) < 0.6
    mask[:, 0] = True
    for m in (None, mask):
        out, w = scaled_dot_product_attention(Q, K, V, m)
        np.testing.assert_allclose(out, _loop(Q, K, V, m), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)
        t = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (Q, K, V)),
                                           attn_mask=None if m is None else torch.from_numpy(m))
        np.testing.assert_allclose(out, t.numpy(), rtol=1e-10, atol=1e-12)


def test_batch_dimensions_broadcast():
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(2, 3, 4, 5)), rng.normal(size=(3, 6, 5)), rng.normal(size=(1, 6, 2))
    out, w = scaled_dot_product_attention(Q, K, V, causal_mask(6)[:4])
    assert out.shape == (2, 3, 4, 2) and w.shape == (2, 3, 4, 6)
    for b in range(2):
        for h in range(3):
            np.testing.assert_allclose(out[b, h], _loop(Q[b, h], K[h], V[0], causal_mask(6)[:4]),
                                       rtol=1e-12, atol=1e-14)


def test_fully_masked_rows_and_dtypes():
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64):
        Q, K, V = (rng.normal(size=s).astype(dtype) for s in ((3, 4), (5, 4), (5, 2)))
        mask = np.ones((3, 5), bool)
        mask[1] = False
        out, w = scaled_dot_product_attention(Q, K, V, mask)
        assert out.dtype == dtype and w.dtype == dtype and softmax(Q).dtype == dtype
        assert np.all(out[1] == 0) and np.all(w[1] == 0) and np.isfinite(out).all()


def test_softmax_stable_and_axis():
    np.testing.assert_allclose(softmax(np.array([1000.0, 1001.0])), [0.2689414213699951, 0.7310585786300049])
    x = np.random.default_rng(2).normal(size=(3, 4))
    np.testing.assert_allclose(softmax(x, axis=0), softmax(x.T).T, rtol=1e-15)
    assert np.all(softmax(np.full(3, -np.inf)) == 0)


@pytest.mark.parametrize("call,fragment", [
    (lambda: causal_mask(0), "T must be a positive integer, got 0"),
    (lambda: softmax(np.ones(3), axis=2), r"axis = 2 is out of range for an array of shape \(3,\)"),
    (lambda: scaled_dot_product_attention(np.ones((2, 4)), np.ones((3, 5)), np.ones((3, 1))),
     r"Q has d_k = 4 \(shape \(2, 4\)\) but K has d_k = 5"),
    (lambda: scaled_dot_product_attention(np.ones((2, 4)), np.ones((3, 4)), np.ones((2, 1))),
     r"K has T_k = 3 rows"),
    (lambda: scaled_dot_product_attention(np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 1)),
                                          np.ones((3, 3), bool)), r"mask of shape \(3, 3\)"),
    (lambda: scaled_dot_product_attention(np.ones(4), np.ones((3, 4)), np.ones((3, 1))),
     r"Q must have shape \(\.\.\., T, d\)"),
])
def test_errors_name_the_offending_shape(call, fragment):
    with pytest.raises(ValueError, match=fragment):
        call()


@pytest.mark.parametrize("name", sorted(n for n in dir(ex02) if n.startswith(("softmax_", "causal_mask_",
                                                                               "attention_"))))
def test_every_check_passes_on_the_reference(name):
    from autograder.reference import numpy_attention as ref
    target = {"softmax": ref.softmax, "causal": ref.causal_mask}.get(name.split("_")[0],
                                                                     ref.scaled_dot_product_attention)
    getattr(ex02, name)(target)
