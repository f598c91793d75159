"""What ex07's checks share: the configurations, the learner's code called and built
(a proxy or the object itself), the reference's parameters loaded into a learner's module,
and the mistakes a wrong output matches."""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn

from autograder import kernel_modules
from autograder.remote import Remote, RemoteModule
from autograder.testing import call_learner, check_tensor, fail, raised


# (d_model, num_heads, d_ff) of the blocks the checks build.
BLOCK_CONFIGS = [(16, 4, 32), (8, 2, 16), (12, 3, 20), (32, 4, 64)]
# (vocab_size, d_model, num_heads, num_layers, d_ff, max_len) of the models.
MODEL_CONFIGS = [(11, 32, 4, 2, 64, 13), (7, 16, 2, 1, 24, 9), (13, 24, 3, 3, 48, 20)]
ATOL = 2e-5  # float32 sums of a few hundred products, through LayerNorms
HELD_OUT_SEED = 20170612  # the held-out sequences of the accuracy check (not trained on)


def _call(fn: Callable, *args, what: str, grad: bool = False, **kwargs):
    """The learner's code, with autograd on only when ``grad``."""
    return call_learner(fn, *args, what=what, within=torch.set_grad_enabled(grad), **kwargs)


def _tensor(out, shape: tuple, what: str) -> torch.Tensor:
    """A finite float32 tensor of ``shape`` (the models' weights are float32)."""
    return check_tensor(out, shape, what, dtype=torch.float32, finite=True)


def _build(cls, kwargs: dict, seed: int, what: str):
    """``cls(**kwargs)`` after ``torch.manual_seed(seed)`` (in the kernel for a Remote)."""
    if isinstance(cls, Remote):
        return call_learner(cls.call, (), kwargs, seed=seed, what=what,
                            within=torch.set_grad_enabled(False))
    torch.manual_seed(seed)
    return _call(cls, what=what, **kwargs)


def _seeded(module, inp, seed: int, what: str):
    """``module(inp)`` after ``torch.manual_seed(seed)`` (in the kernel for a Remote)."""
    if isinstance(module, Remote):
        return call_learner(module.call, (inp,), {}, seed=seed, what=what,
                            within=torch.set_grad_enabled(False))
    torch.manual_seed(seed)
    return _call(module, inp, what=what)


def submodules(module) -> dict[str, dict]:
    """name -> facts of ``module`` and every submodule
    (:func:`autograder.kernel_modules.describe_modules`), asked of the kernel for a
    :class:`RemoteModule`."""
    if isinstance(module, RemoteModule):
        return dict(module.describe_modules())
    return dict(kernel_modules.describe_modules(module))


def parameter_count(module) -> int:
    """The number of parameters of ``module`` (from their shapes, for a RemoteModule)."""
    if isinstance(module, RemoteModule):
        return sum(math.prod(shape) for _, _, shape in module.parameter_shapes())
    return sum(p.numel() for p in module.parameters())


def make_block(TransformerBlock, d_model: int, num_heads: int, d_ff: int, dropout: float,
               seed: int = 0) -> nn.Module:
    """The learner's block with the given sizes, built after ``torch.manual_seed(seed)``."""
    what = (f"TransformerBlock(d_model={d_model}, num_heads={num_heads}, d_ff={d_ff}, "
            f"dropout={dropout})")
    block = _build(TransformerBlock, dict(d_model=d_model, num_heads=num_heads, d_ff=d_ff,
                                          dropout=dropout), seed, what)
    if not isinstance(block, nn.Module):
        fail(f"{what} should be a torch.nn.Module, got {type(block).__name__}")
    return block


def make_model(TinyTransformer, config: tuple, dropout: float, seed: int = 0) -> nn.Module:
    """The learner's model with the sizes of ``config`` (see MODEL_CONFIGS)."""
    vocab_size, d_model, num_heads, num_layers, d_ff, max_len = config
    what = (f"TinyTransformer(vocab_size={vocab_size}, d_model={d_model}, num_heads={num_heads}, "
            f"num_layers={num_layers}, d_ff={d_ff}, max_len={max_len}, dropout={dropout})")
    model = _build(TinyTransformer, dict(vocab_size=vocab_size, d_model=d_model,
                                         num_heads=num_heads, num_layers=num_layers, d_ff=d_ff,
                                         max_len=max_len, dropout=dropout), seed, what)
    if not isinstance(model, nn.Module):
        fail(f"{what} should be a torch.nn.Module, got {type(model).__name__}")
    return model


def _perturb_norms(module: nn.Module, seed: int) -> None:
    """Give every LayerNorm a random gain and bias, so that using them is visible."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.LayerNorm) and m.elementwise_affine:
                m.weight.copy_(1 + 0.2 * torch.randn(m.weight.shape, generator=gen))
                m.bias.copy_(0.2 * torch.randn(m.bias.shape, generator=gen))


def _load_into(learner, reference: nn.Module, what: str, names: str) -> None:
    """The reference's parameters loaded into the learner's module (``load_state_dict``,
    by command for a RemoteModule): fail when the learner's lacks one of them."""
    state = {n: p.detach() for n, p in reference.named_parameters()}
    try:
        keys = learner.load_state_dict(state, strict=False)
    except Exception as exc:  # noqa: BLE001 - a learner's module may refuse anything
        fail(f"{what}: loading parameters of the shapes given in the notebook raised "
             f"{raised(exc)[:300]} (it should have the submodules {names})")
    if keys.unexpected_keys:
        missing = list(keys.unexpected_keys)
        fail(f"{what} lacks the parameters {', '.join(missing[:4])}"
             f"{' ...' if len(missing) > 4 else ''}: it should have the submodules {names}")


_BLOCK_NAMES = ("self_attn (a MultiHeadAttention), linear1, linear2, norm1 and norm2 "
                "with the shapes given in the notebook")
_MODEL_NAMES = ("embedding, blocks (an nn.ModuleList of TransformerBlock), norm and "
                "out_proj with the shapes given in the notebook")


def _matches_one(out: torch.Tensor, candidates: dict) -> bool:
    return any(torch.allclose(out, c, atol=ATOL, rtol=1e-4) for c in candidates.values())


def _block_mistakes(r: nn.Module, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """The usual residual and LayerNorm placement mistakes of a block, computed with the
    reference block ``r`` (holding the learner's weights) on ``x``: words -> output."""
    def attn(h):
        return r.self_attn(h)

    def ffn(h, act=torch.relu):
        return r.linear2(act(r.linear1(h)))

    n1, n2 = r.norm1, r.norm2
    out = {}
    with torch.no_grad():
        h = n1(attn(x))
        out["no residual connections: LN(Sublayer(x)) instead of LN(x + Sublayer(x))"] = n2(ffn(h))
        h = attn(n1(x))
        out["no residual connections (pre-norm): Sublayer(LN(x)) instead of x + "
            "Sublayer(LN(x))"] = ffn(n2(h))
        h = x + n1(attn(x))
        out["the LayerNorm inside the residual branch: x + LN(Sublayer(x)) is neither "
            "post-norm LN(x + Sublayer(x)) nor pre-norm x + Sublayer(LN(x))"] = h + n2(ffn(h))
        h = n1(x)
        h = h + attn(h)
        g = n2(h)
        out["the pre-norm residual taken from the normalised input: LN(x) + Sublayer(LN(x)) "
            "instead of x + Sublayer(LN(x))"] = g + ffn(g)
        h = n1(x + attn(x))
        out["no residual connection around the feed-forward network"] = n2(ffn(h))
        h = x + attn(n1(x))
        out["no residual connection around the feed-forward network (pre-norm)"] = h + ffn(n2(h))
        h = n2(x + attn(x))
        out["norm1 and norm2 swapped: norm1 belongs to the attention sublayer, norm2 to the "
            "feed-forward network"] = n1(h + ffn(h))
        h = x + attn(n2(x))
        out["norm1 and norm2 swapped: norm1 belongs to the attention sublayer, norm2 to the "
            "feed-forward network (pre-norm)"] = h + ffn(n1(h))
        gelu = torch.nn.functional.gelu
        h = n1(x + attn(x))
        out["an activation other than ReLU in the feed-forward network (the notebook asks for "
            "ReLU)"] = n2(h + ffn(h, gelu))
        h = x + attn(n1(x))
        out["an activation other than ReLU in the feed-forward network (the notebook asks for "
            "ReLU, pre-norm)"] = h + ffn(n2(h), gelu)
    return out


def _model_mistakes(r: nn.Module, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
    """The usual mistakes of the model around its blocks, with the reference model ``r``
    (holding the learner's weights): words -> logits."""
    d_model, T = r.d_model, tokens.shape[1]

    def run(scale=True, pe=True, causal=True, final_norm=True):
        x = r.embedding(tokens) * (math.sqrt(d_model) if scale else 1.0)
        if pe:
            x = x + r.pe[:T]
        for block in r.blocks:
            x = block(x, is_causal=causal)
        return r.out_proj(r.norm(x) if final_norm else x)

    with torch.no_grad():
        return {
            "the token embeddings not multiplied by sqrt(d_model)": run(scale=False),
            "no positional encoding added to the embeddings": run(pe=False),
            "blocks called without is_causal=True": run(causal=False),
            "no final LayerNorm before out_proj": run(final_norm=False),
        }


def _matching_mistake(out: torch.Tensor, candidates) -> str:
    """The words of the first (words, output) pair that ``out`` matches, as a hint ('' when
    none does)."""
    for words, c in candidates:
        if c.shape == out.shape and torch.allclose(out, c, atol=ATOL, rtol=1e-4):
            return f" Hint: your output matches {words}."
    return ""
