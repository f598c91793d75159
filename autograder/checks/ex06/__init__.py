"""Checks for ``ex06_tiled_attention`` (attention over key blocks with the online softmax).

The oracle is dense attention,
:func:`autograder.reference.numpy_attention.scaled_dot_product_attention`, which holds the
whole T_q x T_k matrix; the learner's ``tiled_attention(Q, K, V, block_size, is_causal)``
must agree with it to 1e-10 in float64 and never hold such a matrix itself.

Each check exercises one behaviour on inputs chosen so that the others are not involved:
unless a check is about them, key counts are multiples of the block size (no partial last
block) and inputs are not causal.

Graded by the trusted checker (``tiled`` an :class:`autograder.remote.Remote`), the
behaviour checks call the learner's function in the kernel on plain data, and the peak
memory is measured by the grader from outside, in a fresh sandboxed probe in its own
memory cgroup (:mod:`autograder.peak_probe`). Called with a function itself (the course's
own tests), the peak is measured in this process (:func:`autograder.memory.peak_call_memory`).

Split by kind: :mod:`.behaviour` (the values), :mod:`.memory` (the peak memory) and
:mod:`._common` (the oracle, the comparison, the inputs). The released notebooks' hidden
tests call ``ex06.<check>``: every check is importable from here.
"""

from autograder.checks import knowledge as _knowledge  # bound now: private in the kernel
from autograder.checks.ex06._common import ASSIGNMENT, ATOL, RTOL, dense_attention
from autograder.checks.ex06.behaviour import (any_block_size, causal, causal_rectangular,
                                              matches_dense, no_keys_zero_output, rectangular,
                                              rejects_bad_input, stable_large_scores)
from autograder.checks.ex06.memory import WARMUP, peak_memory

__all__ = ["ASSIGNMENT", "ATOL", "RTOL", "WARMUP", "any_block_size", "causal",
           "causal_rectangular", "dense_attention", "knowledge_check", "matches_dense",
           "no_keys_zero_output", "peak_memory", "rectangular", "rejects_bad_input",
           "stable_large_scores"]

knowledge_check = _knowledge.check_for("ex06_tiled_attention", __name__)
