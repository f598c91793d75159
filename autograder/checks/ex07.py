"""Checks for ``ex07_transformer`` (TransformerBlock, TinyTransformer, train_tiny_transformer).

The learner's block may be post-norm (Vaswani et al. 2017) or pre-norm (Xiong et al.
2020): value checks load the parameters of a reference
(:mod:`autograder.reference.transformer`) into the learner's module and accept the outputs
of either kind of reference. Submodule names follow :class:`torch.nn.TransformerEncoderLayer`
(``self_attn``, ``linear1``, ``linear2``, ``norm1``, ``norm2``) and the model has
``embedding``, ``blocks``, ``norm`` and ``out_proj``, as the notebook states. Each check
tests one behaviour; all run on the CPU in float32 with fixed seeds.

Graded by the trusted checker, the learner's classes are :class:`autograder.checker.Remote`
proxies and their modules :class:`autograder.checker.RemoteModule`: built in the kernel
(with a seed sent along), loaded with the checker's parameters, run on the checker's inputs
and probed by command (parameter shapes, submodules, the input of ``blocks[0]``); every
verdict is decided here from the data that comes back. Called with the learner's own
classes (the course's tests), the same checks run on the objects themselves.
"""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn

from autograder import kernel_client
from autograder.checker import Remote, RemoteModule
from autograder.checks import knowledge as _knowledge  # bound now: private in the kernel
from autograder.reference import transformer as ref
from autograder.testing import assert_close, call_learner, check_tensor, fail, raised

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
    (:func:`autograder.kernel_client.describe_modules`), asked of the kernel for a
    :class:`RemoteModule`."""
    if isinstance(module, RemoteModule):
        return dict(module.describe_modules())
    return dict(kernel_client.describe_modules(module))


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


# --- the block ------------------------------------------------------------------------------


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


# --- the model ------------------------------------------------------------------------------


def _tokens(gen: torch.Generator, vocab_size: int, B: int, T: int) -> torch.Tensor:
    return torch.randint(0, vocab_size, (B, T), generator=gen)


def model_shapes(TinyTransformer) -> None:
    """Tokens (B, T) with T <= max_len give float32 logits (B, T, vocab_size)."""
    gen = torch.Generator().manual_seed(73)
    for config in MODEL_CONFIGS:
        vocab_size, max_len = config[0], config[-1]
        model = make_model(TinyTransformer, config, dropout=0.0)
        model.eval()
        for B, T in [(2, max_len), (1, 1), (3, max_len // 2)]:
            what = f"the logits of a model (vocab_size={vocab_size}) for tokens of shape {(B, T)}"
            out = _call(model, _tokens(gen, vocab_size, B, T), what=what)
            _tensor(out, (B, T, vocab_size), what)


def model_parameter_count(TinyTransformer) -> None:
    """The model has the parameters of an embedding, its blocks, a final LayerNorm and out_proj."""
    for config in MODEL_CONFIGS:
        vocab_size, d_model, _, num_layers, d_ff, _ = config
        model = make_model(TinyTransformer, config, dropout=0.1)
        got = sum(p.numel() for p in model.parameters())
        expected = (vocab_size * d_model + num_layers * ref.block_parameter_count(d_model, d_ff)
                    + 2 * d_model + d_model * vocab_size + vocab_size)
        if got != expected:
            fail(f"a TinyTransformer with vocab_size={vocab_size}, d_model={d_model}, "
                 f"num_layers={num_layers}, d_ff={d_ff} has {got} parameters; count the token "
                 "embedding, the blocks, the final LayerNorm and the output projection (the "
                 "sinusoidal positional encoding has no parameters)")


def model_is_causal(TinyTransformer) -> None:
    """Changing the tokens at positions >= t leaves the logits before t unchanged."""
    gen = torch.Generator().manual_seed(74)
    for config in MODEL_CONFIGS:
        vocab_size, max_len = config[0], config[-1]
        model = make_model(TinyTransformer, config, dropout=0.0)
        model.eval()
        tokens = _tokens(gen, vocab_size, 3, max_len)
        what = f"a model (vocab_size={vocab_size}, max_len={max_len})"
        out = _tensor(_call(model, tokens, what=what), (3, max_len, vocab_size),
                      f"the logits of {what}")
        for t in (1, max_len // 2, max_len - 1):
            changed = tokens.clone()
            changed[:, t:] = (changed[:, t:] + 1 + _tokens(gen, vocab_size - 1, 3, max_len - t)) \
                % vocab_size  # every later token differs
            again = _call(model, changed, what=what)
            if not torch.allclose(out[:, :t], again[:, :t], atol=ATOL, rtol=1e-5):
                fail(f"{what}: changing the tokens at positions {t}..{max_len - 1} changed the "
                     "logits at an earlier position: the model looks into the future (is the "
                     "self-attention of every block causal?)")


def positional_encoding_before_first_block(TinyTransformer) -> None:
    """The first block receives embedding(tokens) * sqrt(d_model) + PE[:T]."""
    gen = torch.Generator().manual_seed(75)
    for config in MODEL_CONFIGS:
        vocab_size, d_model, max_len = config[0], config[1], config[-1]
        model = make_model(TinyTransformer, config, dropout=0.0)
        model.eval()
        layers = submodules(model)
        embedding, blocks = layers.get("embedding", {}), layers.get("blocks", {})
        if "embedding_dim" not in embedding or not blocks.get("torch_class", "").endswith(
                ".ModuleList") or "blocks.0" not in layers:
            fail("the model should have an nn.Embedding `embedding` and an nn.ModuleList "
                 "`blocks` of TransformerBlock")
        weight = torch.randn(vocab_size, d_model, generator=gen) / math.sqrt(d_model)
        try:
            keys = model.load_state_dict({"embedding.weight": weight}, strict=False)
        except Exception as exc:  # noqa: BLE001 - a learner's module may refuse anything
            fail(f"loading embedding.weight of shape ({vocab_size}, {d_model}) raised "
                 f"{raised(exc)[:300]}")
        if keys.unexpected_keys:
            fail("the model's embedding should be an nn.Embedding(vocab_size, d_model)")
        seen = []

        def record(module, args, kwargs):
            seen.append(args[0] if args else kwargs.get("x", next(iter(kwargs.values()), None)))

        tokens = _tokens(gen, vocab_size, 2, max_len)
        handle = model.blocks[0].register_forward_pre_hook(record, with_kwargs=True)
        try:
            _call(model, tokens, what=f"a model (d_model={d_model})")
        finally:
            handle.remove()
        if not seen or not isinstance(seen[0], torch.Tensor):
            fail("the model's forward should call its first block, blocks[0], on a tensor")
        expected = weight[tokens] * math.sqrt(d_model) + ref.positional_encoding(max_len, d_model)
        assert_close(seen[0], expected, f"the input of the first block (d_model={d_model}): it "
                     "should be the token embeddings times sqrt(d_model) plus the sinusoidal "
                     "positional encodings", rtol=1e-5, atol=1e-5)


def model_matches_reference(TinyTransformer) -> None:
    """With the reference's weights loaded, the logits are those of the reference
    decoder-only model."""
    gen = torch.Generator().manual_seed(76)
    for i, config in enumerate(MODEL_CONFIGS):
        vocab_size, d_model, num_heads, num_layers, d_ff, max_len = config
        model = make_model(TinyTransformer, config, dropout=0.0, seed=i)
        what = f"a model with vocab_size={vocab_size}, d_model={d_model}, num_layers={num_layers}"
        torch.manual_seed(200 + i)
        references = {norm_first: ref.DecoderOnlyTransformer(
            vocab_size, d_model, num_heads, num_layers, d_ff, max_len, dropout=0.0,
            norm_first=norm_first).eval() for norm_first in (False, True)}
        _perturb_norms(references[False], seed=i)
        references[True].load_state_dict(references[False].state_dict())
        _load_into(model, references[False], what, _MODEL_NAMES)
        model.eval()
        tokens = _tokens(gen, vocab_size, 3, max_len)
        out = _tensor(_call(model, tokens, what=what), (3, max_len, vocab_size),
                      f"the logits of {what}")
        expected, mistakes = {}, []
        for norm_first, reference in references.items():
            with torch.no_grad():
                expected[norm_first] = reference(tokens)
            mistakes += _model_mistakes(reference, tokens).items()
        if not _matches_one(out, expected):
            fail(f"{what}: with the same weights, the logits differ from those of embedding * "
                 "sqrt(d_model) + positional encoding, the blocks with is_causal=True, the final "
                 "LayerNorm and out_proj." + _matching_mistake(out, mistakes))


def eval_mode_is_deterministic(TransformerBlock, TinyTransformer) -> None:
    """In eval mode, dropout is off: the same input gives the same output every time."""
    gen = torch.Generator().manual_seed(77)
    d_model, num_heads, d_ff = BLOCK_CONFIGS[0]
    block = make_block(TransformerBlock, d_model, num_heads, d_ff, dropout=0.5)
    model = make_model(TinyTransformer, MODEL_CONFIGS[0], dropout=0.5)
    x = torch.randn(2, 6, d_model, generator=gen)
    tokens = _tokens(gen, MODEL_CONFIGS[0][0], 2, MODEL_CONFIGS[0][-1])
    for module, inp, name in ((block, x, "TransformerBlock"), (model, tokens, "TinyTransformer")):
        what = f"a {name} with dropout=0.5 in eval mode"
        module.train()
        module.eval()
        outs = [_seeded(module, inp, seed, what) for seed in (1, 2)]
        if not isinstance(outs[0], torch.Tensor) or not torch.equal(outs[0], outs[1]):
            fail(f"{what}: two calls on the same input gave different outputs; dropout must be "
                 "the identity in eval mode (use nn.Dropout modules, or pass "
                 "training=self.training)")


def dropout_acts_in_training(TransformerBlock, TinyTransformer) -> None:
    """In train mode with dropout=0.5, two calls on the same input differ (dropout is applied)."""
    gen = torch.Generator().manual_seed(78)
    d_model, num_heads, d_ff = BLOCK_CONFIGS[0]
    block = make_block(TransformerBlock, d_model, num_heads, d_ff, dropout=0.5)
    model = make_model(TinyTransformer, MODEL_CONFIGS[0], dropout=0.5)
    x = torch.randn(2, 6, d_model, generator=gen)
    tokens = _tokens(gen, MODEL_CONFIGS[0][0], 2, MODEL_CONFIGS[0][-1])
    for module, inp, name in ((block, x, "TransformerBlock"), (model, tokens, "TinyTransformer")):
        what = f"a {name} with dropout=0.5 in train mode"
        module.train()
        outs = [_seeded(module, inp, seed, what) for seed in (1, 2)]
        if not isinstance(outs[0], torch.Tensor) or torch.equal(outs[0], outs[1]):
            fail(f"{what}: two calls gave identical outputs; dropout should act in training "
                 "(in the block: on each sub-layer's output)")


# --- training -------------------------------------------------------------------------------


def held_out_digits(num_sequences: int = 1000) -> torch.Tensor:
    """Held-out test sequences for the accuracy check (a seed no training run uses)."""
    return ref.random_digits(num_sequences, ref.N_DIGITS,
                             torch.Generator().manual_seed(HELD_OUT_SEED))


def _sizes(state: dict) -> tuple[int, int, int, int] | None:
    """(vocab_size, d_model, num_layers, d_ff) read from a TinyTransformer's parameter
    names and shapes (the notebook's submodules), None when they are not there."""
    try:
        vocab_size, d_model = state["embedding.weight"].shape
        layers = {int(k.split(".")[1]) for k in state if k.startswith("blocks.")}
        d_ff = state["blocks.0.linear1.weight"].shape[0]
    except (KeyError, ValueError, IndexError, AttributeError):
        return None
    return int(vocab_size), int(d_model), len(layers), int(d_ff)


def trained_is_a_tiny_transformer(model, TinyTransformer) -> None:
    """The trained model computes what the learner's own TinyTransformer computes with its
    weights: a fresh TinyTransformer of its sizes (num_heads: a divisor of d_model), loaded
    with the trained model's parameters, gives the same logits. A model of another kind
    (one written to output the reversal) or a subclass with a forward of its own fails."""
    what = "the model train_tiny_transformer returned"
    try:
        state = model.state_dict()
    except Exception as exc:  # noqa: BLE001 - a learner's module may refuse anything
        fail(f"{what}: state_dict() raised {raised(exc)[:200]}")
    sizes = _sizes(state) if isinstance(state, dict) else None
    if sizes is None:
        fail(f"{what} should be a TinyTransformer (with the submodules {_MODEL_NAMES})")
    vocab_size, d_model, num_layers, d_ff = sizes
    tokens = ref.reversal_sequences(held_out_digits(16))[:, :-1]
    model.eval()
    out = _tensor(_seeded(model, tokens, 0, f"{what}, called on tokens {tuple(tokens.shape)}"),
                  (*tokens.shape, vocab_size), what)
    # max_len: the sequences' length, or a length a persistent buffer of the model has
    lengths = sorted({tokens.shape[1] + 1} | {int(n) for t in state.values()
                                               for n in getattr(t, "shape", ())
                                               if tokens.shape[1] < n <= 4096})[:4]
    for num_heads in [h for h in range(1, d_model + 1) if d_model % h == 0]:
        for max_len in lengths:
            config = (vocab_size, d_model, num_heads, num_layers, d_ff, max_len)
            try:
                fresh = make_model(TinyTransformer, config, dropout=0.0)
                keys = fresh.load_state_dict(state, strict=False)
            except Exception:  # noqa: BLE001 - sizes it refuses, a buffer of another
                continue  # max_len: the next
            if keys.missing_keys or keys.unexpected_keys:
                continue
            fresh.eval()
            again = _seeded(fresh, tokens, 0, f"TinyTransformer{config} with the trained "
                            "weights")
            if isinstance(again, torch.Tensor) and again.shape == out.shape and \
                    torch.allclose(again, out, atol=ATOL, rtol=1e-4):
                return
    fail(f"{what} is not a TinyTransformer of yours: a TinyTransformer of its sizes, loaded "
         "with its parameters, computes other logits (train_tiny_transformer should build a "
         "TinyTransformer and train it)")


def trained_model_reverses(model, threshold: float = ref.ACCURACY_THRESHOLD,
                           TinyTransformer=None) -> None:
    """The trained model reverses at least ``threshold`` of 1000 held-out sequences exactly.

    Greedy decoding runs here (:func:`autograder.reference.transformer.reversal_accuracy`):
    for a RemoteModule, each step sends the tokens so far to the kernel and judges the
    logits that come back. With ``TinyTransformer``, the model must be one of the
    learner's (:func:`trained_is_a_tiny_transformer`)."""
    if not isinstance(model, nn.Module):
        fail(f"train_tiny_transformer should return the trained model (an nn.Module), got "
             f"{type(model).__name__}")
    if TinyTransformer is not None:
        trained_is_a_tiny_transformer(model, TinyTransformer)
    acc = _call(ref.reversal_accuracy, model, held_out_digits(),
                what="greedy decoding with the trained model")
    if acc < threshold:
        fail(f"the trained model reverses {acc:.1%} of 1000 held-out sequences of "
             f"{ref.N_DIGITS} digits exactly; it should reach {threshold:.0%}")


knowledge_check = _knowledge.check_for("ex07_transformer", __name__)
