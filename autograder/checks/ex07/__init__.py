"""Checks for ``ex07_transformer`` (TransformerBlock, TinyTransformer, train_tiny_transformer).

The learner's block may be post-norm (Vaswani et al. 2017) or pre-norm (Xiong et al.
2020): value checks load the parameters of a reference
(:mod:`autograder.reference.transformer`) into the learner's module and accept the outputs
of either kind of reference. Submodule names follow :class:`torch.nn.TransformerEncoderLayer`
(``self_attn``, ``linear1``, ``linear2``, ``norm1``, ``norm2``) and the model has
``embedding``, ``blocks``, ``norm`` and ``out_proj``, as the notebook states. Each check
tests one behaviour; all run on the CPU in float32 with fixed seeds.

Graded by the trusted checker, the learner's classes are :class:`autograder.remote.Remote`
proxies and their modules :class:`autograder.remote.RemoteModule`: built in the kernel
(with a seed sent along), loaded with the checker's parameters, run on the checker's inputs
and probed by command (parameter shapes, submodules, the input of ``blocks[0]``); every
verdict is decided here from the data that comes back. Called with the learner's own
classes (the course's tests), the same checks run on the objects themselves.

Split by graded part: :mod:`.block` (TransformerBlock), :mod:`.model` (TinyTransformer),
:mod:`.training` (train_tiny_transformer) and :mod:`._common` (what they share). The
released notebooks' hidden tests call ``ex07.<check>``: every check is importable from here.
"""

from autograder.checks import knowledge as _knowledge  # bound now: private in the kernel
from autograder.checks.ex07._common import (
    BLOCK_CONFIGS,
    MODEL_CONFIGS,
    make_block,
    make_model,
    parameter_count,
    submodules,
)
from autograder.checks.ex07.block import (
    block_shapes,
    block_parameter_count,
    block_matches_reference,
    block_is_causal,
)
from autograder.checks.ex07.model import (
    model_shapes,
    model_parameter_count,
    model_is_causal,
    positional_encoding_before_first_block,
    model_matches_reference,
    eval_mode_is_deterministic,
    dropout_acts_in_training,
)
from autograder.checks.ex07.training import (
    held_out_digits,
    trained_is_a_tiny_transformer,
    trained_model_reverses,
)

__all__ = [
    "BLOCK_CONFIGS",
    "MODEL_CONFIGS",
    "make_block",
    "make_model",
    "parameter_count",
    "submodules",
    "block_shapes",
    "block_parameter_count",
    "block_matches_reference",
    "block_is_causal",
    "model_shapes",
    "model_parameter_count",
    "model_is_causal",
    "positional_encoding_before_first_block",
    "model_matches_reference",
    "eval_mode_is_deterministic",
    "dropout_acts_in_training",
    "held_out_digits",
    "trained_is_a_tiny_transformer",
    "trained_model_reverses",
    "knowledge_check",
]

knowledge_check = _knowledge.check_for("ex07_transformer", __name__)
