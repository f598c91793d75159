"""A test cell's display, read from the outputs of the kernel cell that served it
(:meth:`autograder.session.Session.serving_run`): those outputs split test by test at each
test's first marker (:func:`split_by_test`), and of each part what the learner may see
(:func:`shown`): nothing of the hidden parts, nothing at all where the markers are not the
checker's. The markers are display outputs the kernel sends when the checker asks
(:func:`autograder.kernel_client._mark`), each with a fresh token."""

from __future__ import annotations

from autograder.kernel_client import SERVING


def marker(output):
    """(phase, token) of a serving cell's marker output (:func:`autograder.kernel_client._mark`),
    None for a marker the kernel sent malformed, False for any other output."""
    if output.get("output_type") != "display_data" or SERVING not in output.get("metadata", {}):
        return False
    mark = output["metadata"][SERVING]
    return (mark.get("phase"), mark.get("token")) if isinstance(mark, dict) else None


def split_by_test(outputs, marks: list[list[tuple[str, str]]]) -> list[list]:
    """The serving cell's ``outputs``, one part per test of its run: each test but the
    first begins at its first marker (``marks``: each test's, from
    :attr:`autograder.kernel_line.Served.marks`; a test stopped before it asked for one has
    none, and no output). Where those markers are not each found once, in order (the
    learner's code suppressed, replayed or moved one), no test gets any output."""
    seen = [marker(o) for o in outputs]
    starts = [0] + [seen.index(m[0]) if m and seen.count(m[0]) == 1 else -1 if m else None
                    for m in marks[1:]]
    found = [at for at in starts if at is not None]
    if -1 in found or found != sorted(set(found)):
        return [[] for _ in marks]
    ends = [next((later for later in starts[n + 1:] if later is not None), len(outputs))
            for n in range(len(starts))]
    return [[] if at is None else outputs[at:end] for at, end in zip(starts, ends)]


def shown(outputs, marks: list[tuple[str, str]]) -> list:
    """A test cell's display: the stdout and displays of its part of the serving cell
    outside the hidden parts (:func:`autograder.kernel_client._mark`): what the visible
    code printed and what the learner's code printed when it called it. Errors and results
    are not the verdict. The markers must be the checker's ``marks``, in order: otherwise
    (a marker forged, replayed or suppressed by the learner's code) nothing is shown."""
    kept, hidden, seen = [], False, []
    for o in outputs:
        mark = marker(o)
        if mark is not False:
            seen.append(mark)
            hidden = mark is None or mark[0] != "visible"
            continue
        if not hidden and (o.get("output_type") == "display_data" or (
                o.get("output_type") == "stream" and o.get("name") == "stdout")):
            kept.append(o)
    return kept if seen == list(marks) else []
