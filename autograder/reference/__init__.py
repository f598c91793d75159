"""Reference implementations, one module per exercise.

=========================  =====================================
exercise                   module
=========================  =====================================
ex01_python_attention      :mod:`autograder.reference.python_attention`
ex02_numpy_attention       :mod:`autograder.reference.numpy_attention`
ex03_scaling               :mod:`autograder.reference.scaling`
ex04_positional_encoding   :mod:`autograder.reference.positional_encoding`
ex05_torch_attention       :mod:`autograder.reference.torch_attention`
ex06_tiled_attention       :mod:`autograder.reference.tiled_attention`
ex07_transformer           :mod:`autograder.reference.transformer`
=========================  =====================================
"""
