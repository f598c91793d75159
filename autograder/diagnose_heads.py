"""Name the common mistake behind a wrong multi-head attention output (ex05), for failure
messages that teach: the usual mistakes (scale, head split, mask convention...) tried in
NumPy float64 (:func:`multi_head_attention`), as :mod:`autograder.diagnose` does for
single-head attention. Nothing here reveals an expected value."""

from __future__ import annotations

import numpy as np

from autograder.diagnose import _matches, _softmax


def _linear(x: np.ndarray, weight: np.ndarray, bias) -> np.ndarray:
    """x @ weight.T + bias, with torch's (out_features, in_features) weight layout."""
    out = x @ weight.T
    return out if bias is None else out + bias


def multi_head_attention(query, key, value, params: dict, num_heads: int, mask=None, *,
                         scale: str = "d_k", split_transposed: bool = True,
                         merge_transposed: bool = True, mask_inverted: bool = False,
                         softmax_axis: int = -1, out_proj: bool = True) -> np.ndarray:
    """Multi-head attention (Vaswani et al. 2017, section 3.2.2) in NumPy float64, with the
    option of one of the usual mistakes, for :func:`multi_head_attention_hint`.

    query (B, L, d_model), key and value (B, S, d_model); ``params`` maps ``q``, ``k``, ``v``,
    ``o`` to (weight (d_model, d_model), bias (d_model,) or None) in torch's layout.
    ``mask``: boolean (True = may attend) or float (added to the scores), broadcastable to
    (B, num_heads, L, S); a query with no key gets a zero output before the out projection.
    ``scale``: "d_k" (right), "d_model", "none" or "d_k_unrooted" (1/d_k).
    """
    query, key, value = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    B, L, d_model = query.shape
    S = key.shape[1]
    d_k = d_model // num_heads

    def split(x, n):
        if split_transposed:
            return x.reshape(B, n, num_heads, d_k).transpose(0, 2, 1, 3)
        return x.reshape(B, num_heads, n, d_k)  # heads cut across positions

    q = split(_linear(query, *params["q"]), L)
    k = split(_linear(key, *params["k"]), S)
    v = split(_linear(value, *params["v"]), S)
    factor = {"d_k": 1 / np.sqrt(d_k), "d_model": 1 / np.sqrt(d_model), "none": 1.0,
              "d_k_unrooted": 1 / d_k}[scale]
    scores = (q @ np.swapaxes(k, -1, -2)) * factor
    allowed = np.ones(scores.shape, dtype=bool)
    if mask is not None:
        m = np.asarray(mask)
        if m.dtype == bool:
            allowed = np.broadcast_to(~m if mask_inverted else m, scores.shape)
            scores = np.where(allowed, scores, -np.inf)
        else:
            scores = scores + m.astype(np.float64)
            allowed = np.broadcast_to(np.isfinite(scores), scores.shape)
    weights = _softmax(scores, axis=softmax_axis)
    weights = np.where(allowed.any(axis=-1, keepdims=True), weights, 0.0)
    heads = weights @ v  # (B, h, L, d_v)
    if merge_transposed:
        merged = heads.transpose(0, 2, 1, 3).reshape(B, L, d_model)
    else:
        merged = heads.reshape(B, L, d_model)  # heads and positions mixed up
    return _linear(merged, *params["o"]) if out_proj else merged


_MHA_MISTAKES = [
    (dict(scale="d_model"), "the scores scaled by 1/sqrt(d_model) instead of 1/sqrt(d_k) "
     "(d_k = d_model / num_heads is the size of one head; dividing the queries by "
     "sqrt(num_heads) before attending does the same)"),
    (dict(scale="none"), "no 1/sqrt(d_k) scale"),
    (dict(scale="d_k_unrooted"), "the scores divided by d_k instead of sqrt(d_k)"),
    (dict(split_transposed=False), "the heads split by reshaping (B, T, d_model) straight to "
     "(B, num_heads, T, d_k): reshape to (B, T, num_heads, d_k), then swap the T and head axes"),
    (dict(merge_transposed=False), "the heads merged by reshaping (B, num_heads, T, d_k) straight "
     "to (B, T, d_model): swap the head and T axes back first"),
    (dict(split_transposed=False, merge_transposed=False), "the heads split and merged by "
     "reshaping without swapping the T and head axes"),
    (dict(mask_inverted=True), "the mask's meaning inverted: True means the query MAY attend "
     "to the key"),
    (dict(softmax_axis=-2), "the softmax taken over the queries (axis -2) instead of the keys "
     "(axis -1)"),
    (dict(out_proj=False), "no output projection out_proj after merging the heads"),
]


def multi_head_attention_hint(got, query, key, value, params: dict, num_heads: int,
                              mask=None, rtol: float = 1e-6, atol: float = 1e-8) -> str:
    """Which usual mistake a multi-head attention output ``got`` (B, L, d_model) matches,
    for the module's own weights ``params`` (see :func:`multi_head_attention`): the scale,
    the head split or merge without the transpose, the mask convention, the softmax axis,
    a missing output projection. '' when none matches."""
    boolean = mask is not None and np.asarray(mask).dtype == bool
    for options, words in _MHA_MISTAKES:
        if "mask_inverted" in options and not boolean:
            continue
        try:
            candidate = multi_head_attention(query, key, value, params, num_heads, mask,
                                             **options)
        except (ValueError, FloatingPointError):
            continue
        if _matches(got, candidate, rtol=rtol, atol=atol):
            return f"your output matches multi-head attention with {words}"
    return ""


def multi_head_hint(module, out, query, key=None, value=None, attn_mask=None,
                    is_causal: bool = False, num_heads: int | None = None) -> str:
    """:func:`multi_head_attention_hint` for a torch multi-head attention ``module`` (with
    ``q_proj``, ``k_proj``, ``v_proj`` and ``out_proj``, as the course's exercises ask;
    ``num_heads`` defaults to the module's attribute of that name) and its output ``out``
    for ``module(query, key, value, attn_mask=..., is_causal=...)``. Tensors may be on any
    device and of any float dtype; the comparison allows float32 rounding when ``out`` is
    not float64. '' when no usual mistake matches
    (or the module lacks those attributes)."""
    def arr(t):
        return np.asarray(t.detach().cpu().double().numpy() if hasattr(t, "detach") else t,
                          dtype=np.float64)

    key = query if key is None else key
    value = key if value is None else value
    num_heads = getattr(module, "num_heads", None) if num_heads is None else num_heads
    try:
        params = {}
        for short, name in (("q", "q_proj"), ("k", "k_proj"), ("v", "v_proj"), ("o", "out_proj")):
            layer = getattr(module, name)
            params[short] = (arr(layer.weight),
                             None if getattr(layer, "bias", None) is None else arr(layer.bias))
    except AttributeError:
        return ""
    if not isinstance(num_heads, int) or num_heads <= 0:
        return ""
    mask = None
    if attn_mask is not None:
        mask = attn_mask.detach().cpu().numpy() if hasattr(attn_mask, "detach") else \
            np.asarray(attn_mask)
        if mask.dtype != bool:
            mask = mask.astype(np.float64)
    if is_causal:
        mask = np.tril(np.ones((np.shape(query)[-2], np.shape(key)[-2]), dtype=bool))
    precise = str(getattr(out, "dtype", "float64")).endswith("float64")
    return multi_head_attention_hint(arr(out), arr(query), arr(key), arr(value), params,
                                     num_heads, mask, rtol=1e-6 if precise else 1e-3,
                                     atol=1e-8 if precise else 1e-4)
