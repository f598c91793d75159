"""Reference implementations, one module per exercise.

=========================  =====================================
exercise                   module
=========================  =====================================
ex01_python_attention      :mod:`autograder.reference.python_attention`
=========================  =====================================
"""
