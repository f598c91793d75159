"""Checks for ``ex05_torch_attention`` (scaled_dot_product_attention and MultiHeadAttention).

Graded by the trusted checker (:mod:`autograder.checker`), the learner's function and class
are proxies: inputs cross to the kernel as tensors (data, dtype, device), outputs come
back as plain tensors built from the data, and every verdict is reached here from them.
``MultiHeadAttention`` is built by command, given the weights of the checker's own
``nn.MultiheadAttention`` with ``load_state_dict``, run on the checker's inputs and probed
for its submodules (:func:`autograder.kernel_modules.describe_modules`). "Compute attention
yourself" is judged by construction: every test first requires the graded part to return,
in a fresh sandboxed Python where torch's attention operators are switched off in the
dispatcher, what it returns in the kernel (:mod:`._probe`), so code that delegates to
``F.scaled_dot_product_attention``, ``torch.ops.aten``'s attention kernels or
``nn.MultiheadAttention``, under any name, earns no points. Called with the learner's
objects themselves (the course's tests), each call runs with torch's attention functions
replaced by ones that raise (:func:`forbid_torch_attention`). The oracles are torch's own
functions, called outside that guard, and the reference in
:mod:`autograder.reference.torch_attention`. Checks run on the CPU and, when one is
present, on a CUDA device too. Values are compared in float64 after the type, shape and
device checks; dtypes are checked only where they are the behaviour under test.

Split by graded part: :mod:`.sdpa` (scaled_dot_product_attention), :mod:`.mha`
(MultiHeadAttention; :mod:`._mha_pairs` builds it beside torch's), :mod:`._common` (the
guard, the reference scan, helpers) and :mod:`._probe` (the run without torch's attention;
:mod:`autograder.torch_probe` its process, :mod:`._probe_calls` the calls made there). The
released notebooks' hidden tests call ``ex05.<check>``: every check is importable from here.
"""

from autograder.checks.ex05._common import (
    DEVICES,
    _forbidden_references,
    forbid_torch_attention,
    knowledge_check,
    prefetch,
)
from autograder.checks.ex05.mha import (
    mha_does_not_call_torch_attention,
    mha_fully_masked_rows,
    mha_hint,
    mha_is_causal,
    mha_key_value_default,
    mha_masks,
    mha_matches_torch,
    mha_permutation_equivariant,
    mha_rejects_indivisible,
    mha_submodules,
)
from autograder.checks.ex05.sdpa import (
    sdpa_bool_mask,
    sdpa_does_not_call_torch_attention,
    sdpa_dtype_and_device,
    sdpa_float_mask,
    sdpa_fully_masked_rows,
    sdpa_half_precision,
    sdpa_is_causal,
    sdpa_masked_far_scores,
    sdpa_matches_torch,
    sdpa_rejects_bad_input,
)

__all__ = [
    "DEVICES",
    "forbid_torch_attention",
    "_forbidden_references",
    "knowledge_check",
    "prefetch",
    "sdpa_bool_mask",
    "sdpa_does_not_call_torch_attention",
    "sdpa_dtype_and_device",
    "sdpa_float_mask",
    "sdpa_fully_masked_rows",
    "sdpa_half_precision",
    "sdpa_is_causal",
    "sdpa_masked_far_scores",
    "sdpa_matches_torch",
    "sdpa_rejects_bad_input",
    "mha_does_not_call_torch_attention",
    "mha_fully_masked_rows",
    "mha_hint",
    "mha_is_causal",
    "mha_key_value_default",
    "mha_masks",
    "mha_matches_torch",
    "mha_permutation_equivariant",
    "mha_rejects_indivisible",
    "mha_submodules",
]
