"""ex07's checks of ``train_tiny_transformer``: a trained model of the course's shape that
reverses held-out digit sequences."""

from __future__ import annotations

import torch
from torch import nn

from autograder.checks.ex07._common import (
    ATOL,
    HELD_OUT_SEED,
    _call,
    _tensor,
    _seeded,
    make_model,
    _MODEL_NAMES,
)
from autograder.reference import transformer as ref
from autograder.testing import fail, raised


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

