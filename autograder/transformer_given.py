"""What ``ex07_transformer``'s learners are given: the toy task, positional encodings and an
attention layer.

The released notebook's setup cell imports these names, so the learner's kernel (and the
grading kernel's sandbox) holds this module and nothing of the reference: the blocks and
models the exercise asks for live in :mod:`autograder.reference.transformer`, which only the
trusted checker imports.

- The task: reverse ``N_DIGITS`` digits. :func:`reversal_sequences` writes the digits, the
  separator ``SEP`` and the reversed digits one after the other, so a decoder-only model
  that predicts the next token learns to reverse; :func:`reversal_accuracy` scores greedy
  decoding (:func:`generate_reversal`) by exact match.
- :func:`positional_encoding`: the sinusoidal encodings of Vaswani et al. (2017),
  section 3.5.
- :class:`MultiHeadAttention`: multi-head attention (section 3.2.2) with the projections'
  layout of :class:`torch.nn.MultiheadAttention`, computed by torch's own
  :func:`torch.nn.functional.scaled_dot_product_attention` (it is not the answer to
  ``ex05_torch_attention``, whose rule is attention of one's own).
"""

from __future__ import annotations

import math

import torch
from torch import nn

SEP = 10  # the separator (and start-of-output) token; digits are the tokens 0..9
VOCAB_SIZE = 11
N_DIGITS = 8  # digits per sequence to reverse: 10^8 sequences, so held-out ones are unseen
TIME_BUDGET_S = 40.0  # the exercise's training budget in seconds on a CPU
ACCURACY_THRESHOLD = 0.9  # exact-match accuracy the trained model must reach on held-out data


def positional_encoding(T: int, d_model: int) -> torch.Tensor:
    """The sinusoidal positional encodings of positions 0..T-1, float32 (T, d_model).

    PE[pos, 2i] = sin(pos w_i), PE[pos, 2i + 1] = cos(pos w_i), w_i = 10000^(-2i / d_model)
    (Vaswani et al. 2017, section 3.5), computed in float64.

    Raises:
        ValueError: if ``T`` is negative or ``d_model`` is not a positive even integer.
    """
    if isinstance(T, bool) or not isinstance(T, int) or T < 0:
        raise ValueError(f"T must be a non-negative integer, got T = {T!r}")
    if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model <= 0 or d_model % 2:
        raise ValueError(f"d_model must be even (and positive), got d_model = {d_model!r}")
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    w = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64)
                  / d_model)
    pe = torch.empty(T, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * w)
    pe[:, 1::2] = torch.cos(pos * w)
    return pe.float()


class MultiHeadAttention(nn.Module):
    """Multi-head attention (Vaswani et al. 2017, section 3.2.2), batch first.

    Each of ``num_heads`` heads attends in a subspace of size d_k = d_model / num_heads;
    head ``h`` uses rows ``h * d_k : (h + 1) * d_k`` of each projection's output, as
    :class:`torch.nn.MultiheadAttention` does.

    Args:
        d_model: model width of queries, keys and values.
        num_heads: number of heads; must divide ``d_model``.
        bias: whether the four projections have a bias.

    Attributes:
        q_proj, k_proj, v_proj, out_proj: ``nn.Linear(d_model, d_model, bias=bias)``.

    Raises:
        ValueError: if ``d_model`` or ``num_heads`` is not a positive integer, or
            ``num_heads`` does not divide ``d_model``.
    """

    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__()
        for name, value in (("d_model", d_model), ("num_heads", num_heads)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if d_model % num_heads:
            raise ValueError(f"d_model = {d_model} is not divisible by num_heads = {num_heads}")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query: torch.Tensor, key: torch.Tensor | None = None,
                value: torch.Tensor | None = None, attn_mask: torch.Tensor | None = None,
                is_causal: bool = False) -> torch.Tensor:
        """Attend from ``query`` (B, L, d_model) to ``key``/``value`` (B, S, d_model).

        ``key`` defaults to ``query`` and ``value`` to ``key``. ``attn_mask``: boolean
        (True = may attend) or float (added to the scores), broadcastable to
        (B, num_heads, L, S); ``is_causal``: query ``i`` attends to keys ``0..i``.
        Returns (B, L, d_model) in the dtype and on the device of ``query``.

        Raises:
            ValueError: if a tensor is not (B, T, d_model), or both ``attn_mask`` and
                ``is_causal`` are given.
        """
        key = query if key is None else key
        value = key if value is None else value
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, torch.Tensor) or t.dim() != 3 or t.shape[-1] != self.d_model:
                shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
                raise ValueError(f"{name} must have shape (B, T, {self.d_model}), got {shape}")
        if attn_mask is not None and is_causal:
            raise ValueError("give attn_mask or is_causal=True, not both")
        B, L, _ = query.shape

        def heads(x):  # (B, T, d_model) -> (B, num_heads, T, d_k)
            return x.view(B, x.shape[1], self.num_heads, self.d_k).transpose(1, 2)

        out = nn.functional.scaled_dot_product_attention(
            heads(self.q_proj(query)), heads(self.k_proj(key)), heads(self.v_proj(value)),
            attn_mask=attn_mask, is_causal=is_causal)
        return self.out_proj(out.transpose(1, 2).reshape(B, L, self.d_model))


def random_digits(num_sequences: int, n_digits: int, generator: torch.Generator) -> torch.Tensor:
    """Uniformly random digits, an int64 tensor (num_sequences, n_digits) with values 0..9."""
    return torch.randint(0, 10, (num_sequences, n_digits), generator=generator)


def reversal_sequences(digits: torch.Tensor) -> torch.Tensor:
    """digits (N, n) -> (N, 2n + 1): the digits, SEP, the digits reversed.

    A decoder-only model reads a sequence up to position t and predicts token t + 1; its
    inputs are ``seq[:, :-1]``, its targets ``seq[:, 1:]``, and only the last n targets
    (the reversed digits) are scored.
    """
    sep = torch.full((digits.shape[0], 1), SEP, dtype=digits.dtype, device=digits.device)
    return torch.cat([digits, sep, digits.flip(1)], dim=1)


@torch.no_grad()
def generate_reversal(model: nn.Module, digits: torch.Tensor) -> torch.Tensor:
    """Greedy decoding: the n tokens ``model`` writes after ``digits, SEP``, int64 (N, n).

    ``model`` maps tokens (B, T) to logits (B, T, vocab); it is called n times, each time
    on the prompt and the tokens generated so far, and the most likely next token is kept.
    The caller sets eval mode.
    """
    n = digits.shape[1]
    seq = reversal_sequences(digits)[:, : n + 1]
    for _ in range(n):
        next_token = model(seq)[:, -1].argmax(-1, keepdim=True)
        seq = torch.cat([seq, next_token], dim=1)
    return seq[:, n + 1:]


def reversal_accuracy(model: nn.Module, digits: torch.Tensor) -> float:
    """Fraction of the sequences in ``digits`` (N, n) that ``model`` reverses exactly.

    The model is put in eval mode; greedy decoding as in :func:`generate_reversal`.
    """
    model.eval()
    return (generate_reversal(model, digits) == digits.flip(1)).all(dim=1).float().mean().item()
