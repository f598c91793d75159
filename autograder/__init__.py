"""Attention Mechanisms & the Transformer: the course's own Python package.

- ``autograder.reference``: reference implementations, one module per exercise.
- ``autograder.checks``: the behaviour checks that the notebooks' test cells call.
- ``autograder.testing``: small assertion helpers with messages that teach without leaking.
- ``python -m autograder check|grade|release``: the command line (``contract.md``).
"""

from autograder.exercises import ASSIGNMENTS  # derived from solutions/

__all__ = ["ASSIGNMENTS"]
