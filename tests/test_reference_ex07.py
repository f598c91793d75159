"""The Transformer reference (ex07) against torch's own layers, and its contracts."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from autograder.reference import transformer as tr


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_block_matches_torch(norm_first):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True,
                                       norm_first=norm_first).eval()
    block = tr.copy_layer_from_torch(tr.EncoderBlock(16, 4, 32, 0.0, norm_first), layer).eval()
    x = torch.randn(3, 7, 16)
    with torch.no_grad():
        torch.testing.assert_close(block(x), layer(x))
        mask = nn.Transformer.generate_square_subsequent_mask(7)
        torch.testing.assert_close(block(x, is_causal=True),
                                   layer(x, src_mask=mask, is_causal=True))


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_block_matches_torch(norm_first):
    torch.manual_seed(1)
    layer = nn.TransformerDecoderLayer(16, 4, 32, dropout=0.0, batch_first=True,
                                       norm_first=norm_first).eval()
    block = tr.copy_layer_from_torch(tr.DecoderBlock(16, 4, 32, 0.0, norm_first), layer).eval()
    tgt, memory = torch.randn(2, 6, 16), torch.randn(2, 9, 16)
    mask = nn.Transformer.generate_square_subsequent_mask(6)
    with torch.no_grad():
        torch.testing.assert_close(block(tgt, memory),
                                   layer(tgt, memory, tgt_mask=mask, tgt_is_causal=True))


@pytest.mark.parametrize("d_model,d_ff", [(16, 32), (512, 2048), (12, 7)])
def test_parameter_counts(d_model, d_ff):
    def count(m):
        return sum(p.numel() for p in m.parameters())

    num_heads = 4
    assert count(tr.EncoderBlock(d_model, num_heads, d_ff)) == tr.block_parameter_count(
        d_model, d_ff) == count(nn.TransformerEncoderLayer(d_model, num_heads, d_ff))
    assert count(tr.DecoderBlock(d_model, num_heads, d_ff)) == tr.block_parameter_count(
        d_model, d_ff, decoder=True) == count(nn.TransformerDecoderLayer(d_model, num_heads, d_ff))


@pytest.mark.parametrize("norm_first", [False, True])
def test_models_are_causal_and_shaped(norm_first):
    torch.manual_seed(2)
    gpt = tr.DecoderOnlyTransformer(11, 16, 2, 2, 32, max_len=10, norm_first=norm_first).eval()
    seq2seq = tr.Transformer(10, 11, 16, 2, 2, 32, max_len=10, norm_first=norm_first).eval()
    tokens, src = torch.randint(0, 11, (2, 10)), torch.randint(0, 10, (2, 7))
    changed = tokens.clone()
    changed[:, 6:] = (changed[:, 6:] + 1) % 10
    with torch.no_grad():
        assert gpt(tokens).shape == (2, 10, 11)
        torch.testing.assert_close(gpt(tokens)[:, :6], gpt(changed)[:, :6])
        assert seq2seq(src, tokens).shape == (2, 10, 11)
        torch.testing.assert_close(seq2seq(src, tokens)[:, :6], seq2seq(src, changed)[:, :6])


def test_reference_passes_every_check():
    """The checks accept the reference (exercise names mapped onto the reference classes)."""
    from autograder.checks import ex07

    def block(d_model, num_heads, d_ff, dropout=0.1):
        return tr.EncoderBlock(d_model, num_heads, d_ff, dropout, norm_first=False)

    def model(vocab_size, d_model, num_heads, num_layers, d_ff, max_len, dropout=0.1):
        return tr.DecoderOnlyTransformer(vocab_size, d_model, num_heads, num_layers, d_ff,
                                         max_len, dropout, norm_first=True)

    for check in (ex07.block_shapes, ex07.block_parameter_count, ex07.block_matches_reference,
                  ex07.block_is_causal):
        check(block)
    for check in (ex07.model_shapes, ex07.model_parameter_count, ex07.model_is_causal,
                  ex07.positional_encoding_before_first_block, ex07.model_matches_reference):
        check(model)
    ex07.eval_mode_is_deterministic(block, model)
    ex07.dropout_acts_in_training(block, model)


@pytest.mark.parametrize("make,fragment", [
    (lambda: tr.EncoderBlock(10, 3, 16), "not divisible"),
    (lambda: tr.EncoderBlock(8, 2, 0), "d_ff must be a positive integer"),
    (lambda: tr.EncoderBlock(8, 2, 16, dropout=1.0), "dropout must be a probability"),
    (lambda: tr.DecoderOnlyTransformer(11, 7, 1, 1, 8), "d_model must be even"),
    (lambda: tr.DecoderOnlyTransformer(11, 8, 2, 1, 8, max_len=4)(
        torch.zeros(1, 5, dtype=torch.long)), "exceeds max_len = 4"),
    (lambda: tr.DecoderOnlyTransformer(11, 8, 2, 1, 8)(torch.zeros(1, 5)), "integer tensor"),
])
def test_errors_name_the_offending_value(make, fragment):
    with pytest.raises(ValueError, match=fragment):
        make()


def test_reversal_sequences_and_greedy_generation():
    digits = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    assert tr.reversal_sequences(digits).tolist() == [[3, 1, 4, 1, 5, 9, 2, 6, 10,
                                                       6, 2, 9, 5, 1, 4, 1, 3]]

    class Oracle(nn.Module):  # logits that put the correct next token first at every position
        def forward(self, seq):
            out = torch.full((*seq.shape, 11), -1e9)
            full = tr.reversal_sequences(seq[:, :8])
            out.scatter_(2, full[:, 1:seq.shape[1] + 1, None], 0.0)
            return out

    assert tr.reversal_accuracy(Oracle(), digits) == 1.0
