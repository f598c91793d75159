"""ex07's checks of ``TransformerBlock``: shapes, parameter count, the reference's outputs
(post-norm or pre-norm), causality."""

from __future__ import annotations

import torch

from autograder.checks.ex07._common import (
    BLOCK_CONFIGS,
    ATOL,
    _call,
    _tensor,
    parameter_count,
    make_block,
    _perturb_norms,
    _load_into,
    _BLOCK_NAMES,
    _matches_one,
    _block_mistakes,
    _matching_mistake,
)
from autograder.reference import transformer as ref
from autograder.testing import fail


def block_shapes(TransformerBlock) -> None:
    """(B, T, d_model) in, (B, T, d_model) float32 out, with and without is_causal."""
    gen = torch.Generator().manual_seed(70)
    for (d_model, num_heads, d_ff), (B, T) in zip(BLOCK_CONFIGS, [(2, 5), (1, 1), (3, 7), (4, 2)]):
        block = make_block(TransformerBlock, d_model, num_heads, d_ff, dropout=0.0)
        block.eval()
        x = torch.randn(B, T, d_model, generator=gen)
        for is_causal in (False, True):
            what = f"the output of a block (d_model={d_model}) on x of shape {(B, T, d_model)}" + (
                " with is_causal=True" if is_causal else "")
            _tensor(_call(block, x, what=what, is_causal=is_causal), (B, T, d_model), what)


def block_parameter_count(TransformerBlock) -> None:
    """The block has exactly the parameters of attention, a 2-layer FFN and two LayerNorms."""
    for d_model, num_heads, d_ff in BLOCK_CONFIGS:
        block = make_block(TransformerBlock, d_model, num_heads, d_ff, dropout=0.1)
        got = parameter_count(block)
        if got != ref.block_parameter_count(d_model, d_ff):
            fail(f"TransformerBlock(d_model={d_model}, num_heads={num_heads}, d_ff={d_ff}) has "
                 f"{got} parameters; count those of one multi-head attention (four projections "
                 "with biases), the two linear layers of the feed-forward network and two "
                 "LayerNorms")


def block_matches_reference(TransformerBlock) -> None:
    """With the reference's weights loaded, the block computes the post-norm or the
    pre-norm block."""
    gen = torch.Generator().manual_seed(71)
    for i, (d_model, num_heads, d_ff) in enumerate(BLOCK_CONFIGS):
        block = make_block(TransformerBlock, d_model, num_heads, d_ff, dropout=0.0, seed=i)
        what = f"TransformerBlock(d_model={d_model}, num_heads={num_heads}, d_ff={d_ff})"
        torch.manual_seed(100 + i)
        references = {norm_first: ref.EncoderBlock(d_model, num_heads, d_ff, dropout=0.0,
                                                   norm_first=norm_first).eval()
                      for norm_first in (False, True)}
        _perturb_norms(references[False], seed=i)
        references[True].load_state_dict(references[False].state_dict())
        _load_into(block, references[False], what, _BLOCK_NAMES)
        block.eval()
        x = 2 * torch.randn(3, 6, d_model, generator=gen)
        out = _tensor(_call(block, x, what=f"{what} on x of shape (3, 6, {d_model})"),
                      (3, 6, d_model), f"the output of {what}")
        with torch.no_grad():
            expected = {n: r(x) for n, r in references.items()}
        if not _matches_one(out, expected):
            fail(f"{what}: the output is neither the post-norm block LN(x + Sublayer(x)) nor the "
                 "pre-norm block x + Sublayer(LN(x)) of the same weights (check the residual "
                 "connections, the LayerNorms over the last axis and the ReLU feed-forward "
                 "network)." + _matching_mistake(out, _block_mistakes(references[False],
                                                                      x).items()))


def block_is_causal(TransformerBlock) -> None:
    """With is_causal=True, changing x at positions >= t leaves the outputs before t unchanged."""
    gen = torch.Generator().manual_seed(72)
    for i, (d_model, num_heads, d_ff) in enumerate(BLOCK_CONFIGS):
        block = make_block(TransformerBlock, d_model, num_heads, d_ff, dropout=0.0, seed=i)
        block.eval()
        T = 7
        x = torch.randn(2, T, d_model, generator=gen)
        what = f"a block (d_model={d_model}) with is_causal=True"
        out = _tensor(_call(block, x, what=what, is_causal=True), (2, T, d_model), what)
        for t in (1, 3, 6):
            changed = x.clone()
            changed[:, t:] = 3 * torch.randn(2, T - t, d_model, generator=gen)
            again = _call(block, changed, what=what, is_causal=True)
            if not torch.allclose(out[:, :t], again[:, :t], atol=ATOL, rtol=1e-5):
                fail(f"{what}: changing the input at positions {t}..{T - 1} changed the output at "
                     f"an earlier position: the block looks into the future")
