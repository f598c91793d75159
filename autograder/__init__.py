"""Attention Mechanisms & the Transformer: the course's own Python package.

- ``autograder.reference``: reference implementations, one module per exercise.
- ``autograder.checks``: the behaviour checks that the notebooks' test cells call.
- ``autograder.testing``: small assertion helpers with messages that teach without leaking.
- ``python -m autograder check|grade|release``: the command line (SPEC section 5).
"""

ASSIGNMENTS = (
    "ex01_python_attention",
    "ex02_numpy_attention",
    "ex03_scaling",
    "ex04_positional_encoding",
    "ex05_torch_attention",
    "ex06_tiled_attention",
    "ex07_transformer",
)
