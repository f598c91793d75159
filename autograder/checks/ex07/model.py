"""ex07's checks of ``TinyTransformer``: shapes, parameter count, causality, where the
positional encoding goes, the reference's outputs, eval and training modes."""

from __future__ import annotations

import math

import torch

from autograder.checks.ex07._common import (
    BLOCK_CONFIGS,
    MODEL_CONFIGS,
    ATOL,
    _call,
    _tensor,
    _seeded,
    submodules,
    make_block,
    make_model,
    _perturb_norms,
    _load_into,
    _MODEL_NAMES,
    _matches_one,
    _model_mistakes,
    _matching_mistake,
)
from autograder.reference import transformer as ref
from autograder.testing import assert_close, fail, raised


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


def _with_dropout(TransformerBlock, TinyTransformer, seed: int) -> list[tuple]:
    """(module, input, name) for a block and a model built with dropout=0.5, inputs drawn
    from ``seed``: what the two dropout checks run."""
    gen = torch.Generator().manual_seed(seed)
    d_model, num_heads, d_ff = BLOCK_CONFIGS[0]
    block = make_block(TransformerBlock, d_model, num_heads, d_ff, dropout=0.5)
    model = make_model(TinyTransformer, MODEL_CONFIGS[0], dropout=0.5)
    x = torch.randn(2, 6, d_model, generator=gen)
    tokens = _tokens(gen, MODEL_CONFIGS[0][0], 2, MODEL_CONFIGS[0][-1])
    return [(block, x, "TransformerBlock"), (model, tokens, "TinyTransformer")]


def eval_mode_is_deterministic(TransformerBlock, TinyTransformer) -> None:
    """In eval mode, dropout is off: the same input gives the same output every time."""
    for module, inp, name in _with_dropout(TransformerBlock, TinyTransformer, seed=77):
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
    for module, inp, name in _with_dropout(TransformerBlock, TinyTransformer, seed=78):
        what = f"a {name} with dropout=0.5 in train mode"
        module.train()
        outs = [_seeded(module, inp, seed, what) for seed in (1, 2)]
        if not isinstance(outs[0], torch.Tensor) or torch.equal(outs[0], outs[1]):
            fail(f"{what}: two calls gave identical outputs; dropout should act in training "
                 "(in the block: on each sub-layer's output)")
