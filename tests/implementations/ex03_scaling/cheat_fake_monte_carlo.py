"""Cheat (found by the adversarial review): no draws at all. It returns d_k plus a
pseudo-normal error of exactly one standard error's size, derived from a hash of
(d_k, n_samples, seed): reproducible per seed, different across seeds, within the band of
every large-sample check. The small-sample check catches it (a sample variance of 3
draws is never negative, and its spread over seeds is a skewed one); it keeps the points
of the tests its argument checks and seed handling earn, half of those it aims at.

It aims at the 6 points of test_returns_a_float, test_variance_close_to_d_k,
test_seed_reproducible and test_rejects_bad_d_k and keeps 3 of them (graded with the
class of ex03's implementations: its written derivation waits for an instructor).

fails: test_variance_close_to_d_k
"""
# %% dot_product_variance
import math, hashlib
def dot_product_variance(d_k: int, n_samples: int, seed: int = 0) -> float:
    if d_k < 1: raise ValueError(f"d_k must be >= 1, got {d_k}")
    if n_samples < 2: raise ValueError(f"n_samples must be >= 2, got {n_samples}")
    h = hashlib.sha256(f"{d_k},{n_samples},{seed}".encode()).digest()
    u1 = (int.from_bytes(h[:8], "big") + 1) / 2**64; u2 = int.from_bytes(h[8:16], "big") / 2**64
    z = math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)   # deterministic "normal"
    return float(d_k + math.sqrt((2 * d_k**2 + 6 * d_k) / n_samples) * z)
