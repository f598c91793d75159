"""Escapes into the course folder: a correct submission whose last answer cell tries to
write next to the course's package (found from ``autograder.__file__``), into the
repository, into ``solutions/`` and over ``autograder/testing.py``. Nothing may be written;
touching the course's files is also reported (the last test scores 0).

status: graded
fails: 
"""
# %% kc3
{REFERENCE}
import os as _os

import autograder as _a

_marker = "ESCAPED-{STUDENT}"
_targets = [_os.path.join(_os.path.dirname(_a.__file__), _marker),
            _os.path.join(_os.path.dirname(_a.__file__), "testing.py"),
            "{REPO}/" + _marker, "{REPO}/autograder/testing.py", "{REPO}/solutions/" + _marker]
for _t in _targets:
    try:
        with open(_t, "a") as _f:
            _f.write("# escaped\n")
    except OSError:
        pass
