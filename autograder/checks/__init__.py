"""Behaviour checks called by the notebooks' test cells, one module per exercise.

Each check exercises one behaviour of the learner's function against the reference in
:mod:`autograder.reference` on random and edge-case inputs, and raises
:class:`autograder.testing.CheckFailed` with a message that names the behaviour.
"""
