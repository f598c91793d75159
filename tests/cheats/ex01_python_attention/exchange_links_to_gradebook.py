"""Escape (review of the trusted checker): the kernel's client is wrapped so that, after
each request, links are laid in the exchange folder for the names the checker may write
next (request and array files, the next ids it can guess, every id it has seen) pointing
at the grader's working folder's gradebook. The checker holds the folder by descriptor,
creates each file new (never through a link) under an unguessable id: nothing is written
outside, and the honest functions keep their points (all but the pure-Python one: the
softmax cell imports the course's client, which the standard-library probe lacks).

status: graded
fails: test_pure_python
"""
# %% softmax
import os as _os

import autograder.kernel_client as _kc

_serve = _kc.serve


def _lay(folder, rid):
    for name in (f"{rid}.request.json", f"{rid}.in-0.npy", f"{rid}.in-1.npy",
                 "r2.request.json", "r3.request.json"):
        try:
            _os.symlink("/proc/self/cwd/gradebook.db", _os.path.join(folder, name))
        except OSError:
            pass


def _wrapped(ns, folder, rid):
    try:
        return _serve(ns, folder, rid)
    finally:
        _lay(folder, rid)


_kc.serve = _wrapped


def softmax(row):
    if len(row) == 0:
        raise ValueError("softmax of an empty row is undefined")
    m = max(row)
    exps = [math.exp(x - m) for x in row]
    total = math.fsum(exps)
    return [e / total for e in exps]
