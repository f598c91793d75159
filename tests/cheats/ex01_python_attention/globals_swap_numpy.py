"""Cheat (__globals__): NumPy as seen by assert_close swapped, through the function's
globals, for an object whose comparisons find no error; the attention is wrong.

status: graded
fails: test_attention_worked_example, test_attention_matches_reference, test_attention_rectangular, test_attention_stable, test_attention_bad_input, test_pure_python
"""
# %% scaled_dot_product_attention
import types as _types

import numpy as _np

from autograder.testing import assert_close as _ac


def scaled_dot_product_attention(Q, K, V):
    return [[0.0] * len(V[0]) for _ in Q]


_fake = _types.SimpleNamespace(**{k: getattr(_np, k) for k in dir(_np) if not k.startswith("_")})
_fake.any = lambda *a, **k: False
_ac.__globals__["np"] = _fake
