"""Scaled dot-product and multi-head attention in PyTorch (reference for ``ex05_torch_attention``).

Implements equation (1) and section 3.2.2 of Vaswani et al. (2017), "Attention Is All You
Need":

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,
        head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

with the course's conventions (the grading contract, `contract.md` in the book):

- a boolean ``attn_mask`` means **True = may attend** (as in
  :func:`torch.nn.functional.scaled_dot_product_attention`); a float mask is added to the
  scores;
- ``is_causal=True`` lets query ``i`` see keys ``0..i`` (top-left aligned, the lower
  triangle of a (T_q, T_k) matrix of ones, as torch does when T_q != T_k);
- a query row with no key to attend to gets zero weights and a zero output, never NaN
  (as :func:`torch.nn.functional.scaled_dot_product_attention` does in the pinned torch,
  2.13; :class:`torch.nn.MultiheadAttention` and a plain masked softmax return NaN there);
- the scale is 1/sqrt(d_k);
- float16 and bfloat16 inputs are computed in float32 and returned in the input dtype.

Neither function calls torch's own attention functions or modules; everything runs on the
device its inputs are on.
"""

import math

import torch
from torch import nn

_HALF_DTYPES = (torch.float16, torch.bfloat16)


def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
) -> torch.Tensor:
    """Scaled dot-product attention (Vaswani et al. 2017, eq. 1), as torch's F.sdpa without dropout.

    Args:
        query: (..., T_q, d_k) floating tensor of queries.
        key: (..., T_k, d_k) keys, same dtype and device as ``query``.
        value: (..., T_k, d_v) values, same dtype and device as ``query``.
            The leading batch dimensions of the three tensors broadcast.
        attn_mask: optional mask broadcastable to (..., T_q, T_k): boolean (True = may attend)
            or floating (added to the scores; use ``-inf`` to forbid a key).
        is_causal: if True, query ``i`` may attend to keys ``0..i`` only (top-left aligned:
            the lower triangle of a (T_q, T_k) matrix of ones). Cannot be combined with
            ``attn_mask``.

    Returns:
        The output (..., T_q, d_v) in the dtype of ``query`` on its device. Rows whose query
        may attend to no key are zero. Half-precision inputs are computed in float32.

    Raises:
        ValueError: if an input is not a floating tensor with at least 2 dimensions, if dtypes
            or devices differ, if ``query`` and ``key`` have different d_k, if ``key`` and
            ``value`` have different T_k, if the batch dimensions do not broadcast, if
            ``attn_mask`` is not boolean or floating or does not broadcast to (..., T_q, T_k),
            or if both ``attn_mask`` and ``is_causal`` are given.
    """
    attn_mask = _checked_inputs(query, key, value, attn_mask, is_causal)
    T_q, d_k = query.shape[-2:]
    T_k = key.shape[-2]
    dtype = query.dtype
    compute = torch.float32 if dtype in _HALF_DTYPES else dtype
    q, k, v = query.to(compute), key.to(compute), value.to(compute)

    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d_k))  # (..., T_q, T_k)
    if is_causal:
        attn_mask = torch.ones(T_q, T_k, dtype=torch.bool, device=query.device).tril()
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask.to(compute)

    # Softmax that gives zeros (not NaN) on rows where every score is -inf.
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    exp = torch.exp(scores - row_max)
    total = exp.sum(dim=-1, keepdim=True)
    weights = exp / torch.where(total > 0, total, torch.ones_like(total))
    return (weights @ v).to(dtype)


def _checked_inputs(query, key, value, attn_mask, is_causal: bool) -> torch.Tensor | None:
    """The checks of :func:`scaled_dot_product_attention`'s arguments (its Raises says which);
    returns ``attn_mask`` on ``query``'s device, or None."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if not t.is_floating_point():
            raise ValueError(f"{name} must be a floating tensor, got dtype {t.dtype}")
        if t.dim() < 2:
            raise ValueError(f"{name} must have shape (..., T, d), got {tuple(t.shape)}")
    if key.dtype != query.dtype or value.dtype != query.dtype:
        raise ValueError(
            f"query, key and value must share a dtype, got {query.dtype}, {key.dtype}, "
            f"{value.dtype}"
        )
    if key.device != query.device or value.device != query.device:
        raise ValueError(
            f"query, key and value must be on one device, got {query.device}, {key.device}, "
            f"{value.device}"
        )
    T_q, d_k = query.shape[-2:]
    T_k = key.shape[-2]
    if key.shape[-1] != d_k:
        raise ValueError(
            f"query has d_k = {d_k} (shape {tuple(query.shape)}) but key has d_k = "
            f"{key.shape[-1]} (shape {tuple(key.shape)})"
        )
    if value.shape[-2] != T_k:  # "S": T_k's name in ex05_torch_attention and PyTorch's docs
        raise ValueError(
            f"key has S = {T_k} positions (shape {tuple(key.shape)}) but value has "
            f"{value.shape[-2]} (shape {tuple(value.shape)})"
        )
    try:
        batch = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"batch dimensions do not broadcast: query {tuple(query.shape)}, key "
            f"{tuple(key.shape)}, value {tuple(value.shape)}"
        ) from None
    return _checked_mask(attn_mask, is_causal, (*batch, T_q, T_k), query.device)


def _checked_mask(attn_mask, is_causal: bool, scores_shape: tuple[int, ...],
                  device: torch.device) -> torch.Tensor | None:
    """``attn_mask`` on ``device`` when it fits scores of shape ``scores_shape`` (it
    broadcasts to it without enlarging it) and ``is_causal`` is False; None for no mask."""
    if attn_mask is None:
        return None
    if is_causal:
        raise ValueError("give either attn_mask or is_causal=True, not both")
    if not isinstance(attn_mask, torch.Tensor):
        raise ValueError(f"attn_mask must be a torch.Tensor, got {type(attn_mask).__name__}")
    if attn_mask.dtype != torch.bool and not attn_mask.is_floating_point():
        raise ValueError(f"attn_mask must be boolean or floating, got dtype {attn_mask.dtype}")
    try:
        full = torch.broadcast_shapes(attn_mask.shape, scores_shape)
    except RuntimeError:
        raise ValueError(
            f"attn_mask of shape {tuple(attn_mask.shape)} does not broadcast to the "
            f"scores' shape {scores_shape}"
        ) from None
    if full != scores_shape:
        raise ValueError(
            f"attn_mask of shape {tuple(attn_mask.shape)} would enlarge the scores' shape "
            f"{scores_shape}"
        )
    return attn_mask.to(device)


class MultiHeadAttention(nn.Module):
    """Multi-head attention (Vaswani et al. 2017, section 3.2.2), batch first.

    Each of the ``num_heads`` heads attends in a subspace of size d_k = d_model / num_heads,
    so the cost equals that of one head of size d_model. The layout of the projections is
    that of :class:`torch.nn.MultiheadAttention`: the head numbered
    ``i`` from 0 uses rows ``i * d_k : (i + 1) * d_k`` of each projection's output.

    Args:
        d_model: model width (embedding size) of queries, keys and values.
        num_heads: number of heads; must divide ``d_model``.
        bias: whether the four projections have a bias.

    Attributes:
        q_proj, k_proj, v_proj, out_proj: ``nn.Linear(d_model, d_model, bias=bias)``.

    Raises:
        ValueError: if ``d_model`` or ``num_heads`` is not a positive integer or
            ``num_heads`` does not divide ``d_model``.
    """

    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        if not isinstance(d_model, int) or d_model <= 0:
            raise ValueError(f"d_model must be a positive integer, got {d_model!r}")
        if not isinstance(num_heads, int) or num_heads <= 0:
            raise ValueError(f"num_heads must be a positive integer, got {num_heads!r}")
        if d_model % num_heads != 0:
            raise ValueError(
                f"d_model = {d_model} is not divisible by num_heads = {num_heads}"
            )
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, d_model) -> (B, num_heads, T, d_k)."""
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.d_k).transpose(1, 2)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        is_causal: bool = False,
    ) -> torch.Tensor:
        """Attend from ``query`` to ``key``/``value`` with ``num_heads`` heads.

        Args:
            query: (B, T_q, d_model).
            key: (B, T_k, d_model); defaults to ``query`` (self-attention).
            value: (B, T_k, d_model); defaults to ``key`` when given, else ``query``.
            attn_mask: boolean (True = may attend) or float (added to the scores) mask of
                shape (T_q, T_k), (B, 1, T_q, T_k) or (B, num_heads, T_q, T_k).
            is_causal: if True, query ``i`` attends to keys ``0..i`` (top-left aligned).

        Returns:
            (B, T_q, d_model), in the dtype and on the device of ``query``; query rows that
            may attend to no key get the output projection of a zero vector (its bias).

        Raises:
            ValueError: if a tensor is not (B, T, d_model), if the batch sizes differ, if key
                and value lengths differ, if ``attn_mask`` has none of the shapes above, or if
                both ``attn_mask`` and ``is_causal`` are given.
        """
        if key is None:
            key = query
        if value is None:
            value = key
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, torch.Tensor) or t.dim() != 3 or t.shape[-1] != self.d_model:
                shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
                raise ValueError(f"{name} must have shape (B, T, {self.d_model}), got {shape}")
        B, T_q, _ = query.shape
        T_k = key.shape[1]
        if key.shape[0] != B or value.shape[0] != B:
            raise ValueError(
                f"batch sizes differ: query {tuple(query.shape)}, key {tuple(key.shape)}, "
                f"value {tuple(value.shape)}"
            )
        if value.shape[1] != T_k:  # "S": T_k's name in ex05_torch_attention and PyTorch's docs
            raise ValueError(f"key has S = {T_k} positions but value has {value.shape[1]}")
        if attn_mask is not None:
            allowed = [(T_q, T_k), (B, 1, T_q, T_k), (B, self.num_heads, T_q, T_k)]
            if not isinstance(attn_mask, torch.Tensor) or tuple(attn_mask.shape) not in allowed:
                shape = (
                    tuple(attn_mask.shape)
                    if isinstance(attn_mask, torch.Tensor)
                    else type(attn_mask).__name__
                )
                raise ValueError(
                    f"attn_mask must have shape {' or '.join(map(str, allowed))}, got {shape}"
                )

        Q = self._split_heads(self.q_proj(query))  # (B, num_heads, T_q, d_k)
        K = self._split_heads(self.k_proj(key))  # (B, num_heads, T_k, d_k)
        V = self._split_heads(self.v_proj(value))  # (B, num_heads, T_k, d_k)
        heads = scaled_dot_product_attention(Q, K, V, attn_mask=attn_mask, is_causal=is_causal)
        merged = heads.transpose(1, 2).reshape(B, T_q, self.d_model)  # (B, T_q, d_model)
        return self.out_proj(merged)


def copy_weights_from_torch(module: nn.Module, builtin: nn.MultiheadAttention) -> nn.Module:
    """Copy the weights of ``nn.MultiheadAttention`` into ``module`` and return ``module``.

    ``builtin.in_proj_weight`` stacks W_Q, W_K and W_V as a (3 d_model, d_model) matrix (and
    ``in_proj_bias`` their biases); they go to ``q_proj``, ``k_proj`` and ``v_proj``, and
    ``builtin.out_proj`` to ``out_proj``. ``module`` is moved to the device and dtype of
    ``builtin``. With the boolean mask inverted, the two then compute the same function.

    Raises:
        ValueError: if ``builtin`` has separate projection weights (kdim or vdim differ from
            embed_dim), extra key/value biases, or its bias setting differs from ``module``'s.
    """
    d_model = builtin.embed_dim
    if builtin.in_proj_weight is None or builtin.bias_k is not None:
        raise ValueError("only nn.MultiheadAttention with kdim = vdim = embed_dim and "
                         "add_bias_kv=False can be copied")
    if (builtin.in_proj_bias is None) != (module.q_proj.bias is None):
        raise ValueError("nn.MultiheadAttention and the module differ in bias=")
    module.to(builtin.in_proj_weight.device, builtin.in_proj_weight.dtype)
    with torch.no_grad():
        for i, name in enumerate(("q_proj", "k_proj", "v_proj")):
            rows = slice(i * d_model, (i + 1) * d_model)
            getattr(module, name).weight.copy_(builtin.in_proj_weight[rows])
            if builtin.in_proj_bias is not None:
                getattr(module, name).bias.copy_(builtin.in_proj_bias[rows])
        module.out_proj.weight.copy_(builtin.out_proj.weight)
        if builtin.out_proj.bias is not None:
            module.out_proj.bias.copy_(builtin.out_proj.bias)
    return module
