"""Correct alternative, unusual on purpose (issue 23): the attention is computed with
``torch.einsum`` in a worker thread (a thread pool the function keeps), with a finite fill
of the dtype's minimum and the rows without a key zeroed; MultiHeadAttention keeps its
scale in a persistent buffer (a parameter the checker does not load), counts its calls in
a forward pre-hook it registers on itself, wraps ``__call__`` and ``train`` with
overrides that call torch's, and merges the heads with ``einsum`` too. Built, loaded,
run and probed by command, and run again where torch's attention is switched off, it keeps
full marks.

fails: none
"""
# %% scaled_dot_product_attention
import concurrent.futures
import math

import torch

_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=2)


def _attend(query, key, value, attn_mask, is_causal):
    L, E = query.shape[-2:]
    S = key.shape[-2]
    scores = torch.einsum("...le,...se->...ls", query, key) / math.sqrt(E)
    allowed = None
    if is_causal:
        allowed = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
    elif attn_mask is not None and attn_mask.dtype == torch.bool:
        allowed = attn_mask
    elif attn_mask is not None:
        scores = scores + attn_mask.to(scores.dtype)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if allowed is not None:
        weights = weights * allowed
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        weights = torch.nan_to_num(weights, nan=0.0)
    return torch.einsum("...ls,...sv->...lv", weights, value)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False):
    E, S = query.shape[-1], key.shape[-2]
    if key.shape[-1] != E:
        raise ValueError(f"query has E = {E} but key has E = {key.shape[-1]}")
    if value.shape[-2] != S:
        raise ValueError(f"key has S = {S} but value has S = {value.shape[-2]}")
    if attn_mask is not None:
        scores_shape = (*torch.broadcast_shapes(query.shape[:-2], key.shape[:-2]),
                        query.shape[-2], S)
        try:
            torch.broadcast_shapes(attn_mask.shape, scores_shape)
        except RuntimeError:
            raise ValueError(f"attn_mask of shape {tuple(attn_mask.shape)} does not broadcast "
                             f"to {scores_shape}") from None
    dtype = query.dtype
    low = dtype in (torch.float16, torch.bfloat16)
    q, k, v = (t.float() if low else t for t in (query, key, value))
    grad = torch.is_grad_enabled()

    def work():
        with torch.set_grad_enabled(grad):
            return _attend(q, k, v, attn_mask, is_causal)

    return _POOL.submit(work).result().to(dtype)
# %% MultiHeadAttention
class MultiHeadAttention(nn.Module):
    """Multi-head attention with a scale buffer, a call counter and einsum head merging."""

    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model = {d_model} must be divisible by num_heads = {num_heads}")
        self.num_heads, self.d_k = num_heads, d_model // num_heads
        self.register_buffer("one", torch.ones(()))  # persistent: a key the checker never sends
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.calls = 0
        self.register_forward_pre_hook(MultiHeadAttention._count)

    @staticmethod
    def _count(module, args):
        module.calls += 1

    def __call__(self, *args, **kwargs):
        return super().__call__(*args, **kwargs)

    def train(self, mode: bool = True):
        self.mode_changes = getattr(self, "mode_changes", 0) + 1
        return super().train(mode)

    def forward(self, query, key=None, value=None, attn_mask=None, is_causal=False):
        key = query if key is None else key
        value = key if value is None else value
        B, L, _ = query.shape
        heads = [p(x).unflatten(-1, (self.num_heads, self.d_k)).transpose(1, 2)
                 for p, x in ((self.q_proj, query), (self.k_proj, key), (self.v_proj, value))]
        out = scaled_dot_product_attention(*heads, attn_mask=attn_mask, is_causal=is_causal)
        merged = torch.einsum("bhld->blhd", out).reshape(B, L, -1) * self.one
        return self.out_proj(merged)
