"""nbgrader configuration: run nbgrader's own commands from the repository root.

`nbgrader generate_assignment ex01_python_attention` releases solutions/ into exercises/;
autograde, generate_feedback, export and formgrader use the workspace .grading/ (ignored
by git). The settings themselves live in autograder/nbgrader_settings.py, shared with
`python -m autograder grade`.
"""

from autograder.nbgrader_settings import apply

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file
apply(c)
