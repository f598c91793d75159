"""Name the common mistake behind a wrong answer, for failure messages that teach.

Each function takes the learner's result and the inputs that produced it, tries the
usual mistakes with NumPy in float64, and returns a sentence naming the one the result
matches ('' when none does). Nothing here reveals an expected value.
"""

from __future__ import annotations

import numpy as np


def _softmax(s: np.ndarray, axis: int = -1) -> np.ndarray:
    m = np.max(s, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    z = e.sum(axis=axis, keepdims=True)
    return np.divide(e, z, out=np.zeros_like(e), where=z > 0)


def _matches(got, candidate, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
    try:
        g = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    c = np.asarray(candidate, dtype=np.float64)
    return g.shape == c.shape and bool(np.allclose(g, c, rtol=rtol, atol=atol, equal_nan=True))


def weights_hint(weights) -> str:
    """Why attention weights of shape (..., T_q, T_k) are wrong, if a common reason shows."""
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        return ""
    if w.ndim < 2:
        return ""
    if np.isnan(w).any():
        return ("some weights are NaN: a row whose keys are all masked gives 0/0; the course's "
                "convention is zero weights and a zero output for such a row")
    rows = w.sum(axis=-1)
    cols = w.sum(axis=-2)
    if not np.allclose(rows[rows > 0], 1.0, atol=1e-5):
        if np.allclose(cols, 1.0, atol=1e-5):
            return ("the weights sum to 1 over the queries, not over the keys: normalise each "
                    "row (axis=-1) of the score matrix")
        return "the weights of a query do not sum to 1 over the keys"
    return ""


MASK_INVERTED = ("the mask's meaning inverted: True means the query MAY attend to the key, "
                 "so the score becomes -inf where the mask is False")


def mask_hint(weights, mask) -> str:
    """Whether attention weights (..., T_q, T_k) look as if the boolean ``mask`` (True = may
    attend, broadcastable to them) were read the other way round: in every query row with a
    False entry, the weights are 0 where the mask is True and sum to 1 where it is False
    (rows whose keys are all allowed are not looked at: their inverted weights may be 0 or
    NaN). '' otherwise, or when the mask has no False entry."""
    try:
        w = np.asarray(weights, dtype=np.float64)
        m = np.broadcast_to(np.asarray(mask, dtype=bool), w.shape)
    except (TypeError, ValueError):
        return ""
    if w.ndim < 2 or w.size == 0:
        return ""
    rows = (~m).any(axis=-1)
    if not rows.any():
        return ""
    w, m = w[rows], m[rows]
    if not np.isfinite(w).all():
        return ""
    on_true = np.where(m, w, 0.0)
    on_false = np.where(m, 0.0, w).sum(axis=-1)
    if np.all(on_true == 0.0) and np.allclose(on_false, 1.0, atol=1e-5):
        return f"your weights match attention with {MASK_INVERTED}"
    return ""


def attention_hint(got, Q, K, V, mask=None, d_model: int | None = None) -> str:
    """Which common mistake the attention output ``got`` matches, for inputs Q, K, V.

    Q: (..., T_q, d_k), K: (..., T_k, d_k), V: (..., T_k, d_v); ``mask`` boolean,
    True = may attend. Tries: no scale, 1/d_k, 1/sqrt(d_model), an inverted mask, the
    softmax over the query axis, and the output transposed.
    """
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2)

    def attend(scale, m=mask, axis=-1):
        s = scores * scale
        if m is not None:
            s = np.where(np.asarray(m, dtype=bool), s, -np.inf)
        return _softmax(s, axis=axis) @ V

    candidates = [
        (lambda: attend(1.0), "without the 1/sqrt(d_k) scale"),
        (lambda: attend(1.0 / d_k), "with the scores divided by d_k instead of sqrt(d_k)"),
    ]
    if d_model and d_model != d_k:
        candidates.append((lambda: attend(1.0 / np.sqrt(d_model)),
                           "with the scale 1/sqrt(d_model) instead of 1/sqrt(d_k), where "
                           "d_k = d_model / num_heads is the size of one head"))
    if mask is not None:
        candidates.append((lambda: attend(1.0 / np.sqrt(d_k), ~np.asarray(mask, dtype=bool)),
                           "with the mask's meaning inverted: True means the query MAY attend "
                           "to the key"))
    if scores.shape[-1] == scores.shape[-2] or scores.shape[-2] > 1:
        candidates.append((lambda: attend(1.0 / np.sqrt(d_k), axis=-2),
                           "with the softmax taken over the queries (axis -2) instead of the "
                           "keys (axis -1)"))
    for make, words in candidates:
        try:
            if _matches(got, make()):
                return f"your output matches attention {words}"
        except (ValueError, FloatingPointError):
            continue
    try:
        g = np.asarray(got, dtype=np.float64)
        if np.isnan(g).any():
            return ("the output has NaN: a row whose keys are all masked must give a zero "
                    "output, and exp of a huge score overflows unless the row maximum is "
                    "subtracted first")
    except (TypeError, ValueError):
        pass
    return ""


def _online(Q, K, V, block_size: int, is_causal: bool, rescale_acc: bool = True,
            start: float = -np.inf, rescale_l: bool = True) -> np.ndarray:
    """Tiled attention with the online softmax (top-left causal mask); without
    ``rescale_acc`` the accumulator, without ``rescale_l`` the running sum l, is not
    rescaled when the running maximum grows; ``start``: the running maximum's first value."""
    T_q, T_k, d_v = Q.shape[0], K.shape[0], V.shape[1]
    m, l, acc = np.full(T_q, start), np.zeros(T_q), np.zeros((T_q, d_v))
    with np.errstate(all="ignore"):
        for start in range(0, T_k, block_size):
            stop = min(start + block_size, T_k)
            S = Q @ K[start:stop].T / np.sqrt(Q.shape[1])
            if is_causal:
                S = np.where(np.arange(T_q)[:, None] >= np.arange(start, stop), S, -np.inf)
            m_new = np.maximum(m, S.max(axis=1))
            safe = np.where(np.isfinite(m_new), m_new, 0.0)
            alpha = np.exp(m - safe)
            P = np.exp(S - safe[:, None])
            l = (alpha * l if rescale_l else l) + P.sum(axis=1)
            acc = (alpha[:, None] * acc if rescale_acc else acc) + P @ V[start:stop]
            m = m_new
    out = np.zeros((T_q, d_v))
    np.divide(acc, l[:, None], out=out, where=l[:, None] > 0)
    return out


def tiled_attention_hint(got, Q, K, V, block_size: int, is_causal: bool) -> str:
    """Which usual mistake of tiled attention (ex06) the output ``got`` matches, for Q
    (T_q, d_k), K (T_k, d_k), V (T_k, d_v) in float64, key blocks of ``block_size``.

    Tries, where the inputs can show them: the accumulator, the running sum l, or both not
    rescaled by exp(m_old - m_new) when the running maximum grows; the last partial key
    block skipped; a causal mask comparing the query
    with the key's index inside its block, or aligned bottom-right; then names NaN."""
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    T_q, T_k = Q.shape[0], K.shape[0]
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    i, j = np.arange(T_q)[:, None], np.arange(T_k)[None, :]

    def dense(allowed, keys=T_k):
        s = np.where(allowed, scores, -np.inf)[:, :keys]
        w = np.where(np.isfinite(s).any(axis=1, keepdims=True), _softmax(s), 0.0)
        return w @ V[:keys]

    top_left = (j <= i) if is_causal else np.ones((T_q, T_k), dtype=bool)
    candidates = [(lambda: _online(Q, K, V, block_size, is_causal, start=0.0),
                   "the running maximum started at 0: scores far below 0 then underflow; "
                   "start it at -inf")]
    if T_k > block_size:
        candidates.append((lambda: _online(Q, K, V, block_size, is_causal, rescale_acc=False),
                           "the accumulator not rescaled when the running maximum grows: "
                           "acc must be multiplied by exp(m_old - m_new), as the normaliser is"))
        candidates.append((lambda: _online(Q, K, V, block_size, is_causal, rescale_l=False),
                           "the running sum l (the normaliser) not rescaled when the running "
                           "maximum grows: l must be multiplied by exp(m_old - m_new), as the "
                           "accumulator is"))
        candidates.append((lambda: _online(Q, K, V, block_size, is_causal, rescale_acc=False,
                                           rescale_l=False),
                           "neither the accumulator nor the running sum l rescaled when the "
                           "running maximum grows: multiply both by exp(m_old - m_new) before "
                           "adding the new block"))
    if T_k % block_size and T_k > block_size:
        candidates.append((lambda: dense(top_left, T_k - T_k % block_size),
                           f"the last partial block of keys skipped: T_k = {T_k} keys in "
                           f"blocks of {block_size} leave {T_k % block_size} in a last, "
                           "shorter block"))
    if is_causal and T_k > block_size:
        candidates.append((lambda: dense(j % block_size <= i),
                           "a causal mask that compares the query's position with the key's "
                           "index inside its block: use the key's position, block start + index"))
    if is_causal and T_q != T_k:
        candidates.append((lambda: dense(j <= i + T_k - T_q),
                           "a bottom-right aligned causal mask: query i sees keys j <= i "
                           "(top-left), as in exercise 6"))
    for make, words in candidates:
        try:
            if _matches(got, make()):
                return f"your output matches tiled attention with {words}"
        except (ValueError, FloatingPointError):
            continue
    g = np.asarray(got, dtype=np.float64) if isinstance(got, np.ndarray) else None
    if g is not None and not np.isfinite(g).all():
        return ("the output has NaN or infinity: start the running maximum at -inf (not 0), "
                "take each block's exponentials relative to the running maximum, and give a "
                "query with no key (a normaliser of 0) a zero row, not 0/0")
    return ""


def positional_encoding_hint(got, T: int, d_model: int, base: float = 10000.0) -> str:
    """Which common layout or exponent mistake a (T, d_model) encoding matches."""
    pos = np.arange(T)[:, None]
    i = np.arange(d_model // 2)[None, :]
    angle = pos * base ** (-2 * i / d_model)
    sin, cos = np.sin(angle), np.cos(angle)

    def interleave(a, b):
        out = np.empty((T, d_model))
        out[:, 0::2], out[:, 1::2] = a, b
        return out

    candidates = [
        (np.concatenate([sin, cos], axis=1),
         "sin and cos are concatenated ([sin..., cos...]) instead of interleaved (sin on even "
         "channels 2i, cos on odd channels 2i+1)"),
        (interleave(cos, sin), "sin and cos are swapped: sin goes on the even channels"),
        (interleave(np.sin(pos * base ** (-i / d_model)), np.cos(pos * base ** (-i / d_model))),
         "the exponent is i/d_model instead of 2i/d_model"),
        (interleave(np.sin(pos * 10000.0 ** (-2 * i / d_model)),
                    np.cos(pos * 10000.0 ** (-2 * i / d_model))),
         "the base argument is ignored (10000 is used whatever base is)"),
    ]
    for candidate, words in candidates:
        if base == 10000.0 and "base argument" in words:
            continue
        if _matches(got, candidate, rtol=1e-9, atol=1e-9):
            return f"your encoding looks as if {words}"
    return ""


def shift_matrix_hint(got, k: int, d_model: int, base: float = 10000.0) -> str:
    """Which common mistake a (d_model, d_model) shift matrix M_k matches.

    Tries: the rotation blocks transposed (that is M_{-k}), |k| for a negative k, and the
    blocks written for the concatenated [sin..., cos...] layout.
    """
    w = base ** (-2 * np.arange(d_model // 2) / d_model)

    def interleaved(theta):
        M = np.zeros((d_model, d_model))
        for i, t in enumerate(theta):
            M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]]
        return M

    def concatenated(theta):
        h = d_model // 2
        M, idx = np.zeros((d_model, d_model)), np.arange(h)
        M[idx, idx] = M[idx + h, idx + h] = np.cos(theta)
        M[idx, idx + h], M[idx + h, idx] = np.sin(theta), -np.sin(theta)
        return M

    candidates = []
    if k > 0:
        candidates.append((interleaved(-k * w), "the rotation blocks are transposed: for the "
                           "pair (sin, cos) the block is [[cos, sin], [-sin, cos]]"))
    if k < 0:  # M_{|k|}: the same matrix as transposed blocks, for a negative k
        candidates.append((interleaved(-k * w), "a negative k moves forward as if it were |k| "
                           "(or the rotation blocks are transposed): M_k must move back"))
    if d_model > 2 and k != 0:
        candidates.append((concatenated(k * w), "the blocks pair channel i with channel "
                           "i + d_model/2 ([sin..., cos...] layout) instead of 2i with 2i + 1"))
    for candidate, words in candidates:
        if _matches(got, candidate, rtol=1e-9, atol=1e-9):
            return f"your matrix looks as if {words}"
    return ""


def variance_hint(got, d_k: int, n_samples: int) -> str:
    """Which common mistake an estimate of Var(q . k) = d_k matches (statistically).

    Tries: the standard deviation sqrt(d_k) instead of the variance, and a variance near 1
    (the scaled score q.k / sqrt(d_k), or single products q_i k_i instead of their sum).
    """
    try:
        v = float(np.asarray(got, dtype=np.float64).reshape(-1)[0])
    except (TypeError, ValueError, IndexError):
        return ""
    sd = np.sqrt((2.0 * d_k**2 + 6.0 * d_k) / n_samples)  # sd of the estimate of d_k
    if d_k >= 4 and abs(v - np.sqrt(d_k)) < 6 * sd / (2 * np.sqrt(d_k)) + 1e-12:
        return ("your value is close to sqrt(d_k): it looks like the standard deviation of "
                "q . k, not its variance")
    if d_k >= 4 and abs(v - 1.0) < 6 * np.sqrt(8.0 / n_samples):
        return ("your value is close to 1, not d_k: it looks like the variance of the scaled "
                "score q . k / sqrt(d_k), or of single products q_i k_i instead of their sum")
    return ""


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
