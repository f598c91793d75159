"""Escapes: a correct submission whose last answer cell tries to write into the course
home folder, the workspace, the other submissions and the submission's own folder's parent,
and to reach the network; every attempt must fail or stay in the sandbox.
The test replaces {REFERENCE} (the reference answer), {REPO}, {WORKSPACE}, {SUBMISSIONS}
and {STUDENT} before grading.

status: graded
fails: 
"""
# %% kc3
{REFERENCE}
import os as _os
import socket as _socket

_marker = "ESCAPED-{STUDENT}"
_targets = [_os.path.expanduser("~/" + _marker), "/root/" + _marker, "{WORKSPACE}/" + _marker,
            "{WORKSPACE}/gradebook.db", "{SUBMISSIONS}/" + _marker,
            "{SUBMISSIONS}/correct/ex01_python_attention/ex01_python_attention.ipynb",
            "../" + _marker, "../../" + _marker, "/tmp/" + _marker]
for _t in _targets:
    try:
        with open(_t, "a") as _f:
            _f.write("escaped\n")
    except OSError:
        pass
for _host in [("1.1.1.1", 80), ("127.0.0.1", 22), ("pypi.org", 443)]:
    try:
        _socket.create_connection(_host, timeout=2).close()
        print("NETWORK-REACHED", _host)
    except OSError:
        pass
