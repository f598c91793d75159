"""Not a cheat, a wrong answer: zeros of the right shape, which use no memory. The peak
memory tests check the values of the measured call too and give it no points.

status: graded
fails: test_any_block_size, test_causal, test_causal_rectangular, test_matches_dense, test_peak_memory, test_peak_memory_causal, test_rectangular, test_stable_large_scores, test_worked_example
"""
# %% tiled_attention
import numpy as np


def tiled_attention(Q, K, V, block_size=64, is_causal=False):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    if Q.ndim != 2 or K.ndim != 2 or V.ndim != 2:
        raise ValueError(f"need 2-D arrays, got {Q.shape} {K.shape} {V.shape}")
    if Q.shape[1] != K.shape[1] or K.shape[0] != V.shape[0]:
        raise ValueError(f"shapes {Q.shape} {K.shape} {V.shape}")
    if not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size {block_size}")
    return np.zeros((Q.shape[0], V.shape[1]))
