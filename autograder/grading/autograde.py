"""Grading one submission, inside a worker: copy it into the workspace's private staging
area (the input is only ever read), pre-validate, ``nbgrader autograde``, the integrity
checks, ``nbgrader generate_feedback``, and its :class:`Row` with a status that says why."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import nbformat

from autograder import env_vars, kernel_memory, phase_times
from autograder.grading import gradebook, integrity
from autograder.grading.record import NOTE, combine, score_from_gradebook  # noqa: F401 - combine re-exported
from autograder.grading.results import Row, Status
from autograder.grading.prevalidate import prevalidate
from autograder.grading.submission import Submission, read_timestamp
from autograder.grading.times import for_nbgrader, submission_time
from autograder.trusted_tests import stopped_in
from autograder.notebook import nbgrader_meta

# nbgrader's submitted_directory for the grader's workers, relative to the workspace: a
# copy of each submission goes there, so the submissions themselves (which may lie in the
# workspace's own submitted/, where nbgrader zip_collect puts them) are never written to.
STAGED = ".staged/submitted"


def stage(sub: Submission, nb: nbformat.NotebookNode, workspace: Path) -> Path:
    """Write ``nb`` (the pre-validated submission) and its ``timestamp.txt`` into the
    staging area; return the staged notebook's path."""
    dest = workspace / STAGED / sub.student_id / sub.assignment
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    nbformat.write(nb, dest / f"{sub.assignment}.ipynb")
    # nbgrader reads the submission time (late penalties) from timestamp.txt beside it.
    # prevalidate read it (a plain file of its own, or none) and checked that it reads
    # exactly; nbgrader gets it in the one form its own parser reads right.
    text = read_timestamp(sub.path.parent / "timestamp.txt")
    if text is not None:
        (dest / "timestamp.txt").write_text(for_nbgrader(submission_time(text)) + "\n")
    return dest / f"{sub.assignment}.ipynb"


def classify_failure(log: str) -> tuple[Status, str]:
    """(status, detail) of a run of nbgrader autograde that failed, from its log."""
    if "DeadKernelError" in log or "Kernel died" in log or "kernel died" in log:
        return Status.KERNEL_DIED, "the notebook's kernel died (crash, os._exit or out of memory)"
    if "Timeout waiting for IOPub output" in log:  # the cell had ended: no time limit
        return Status.ERROR, ("grader error: a cell's output was still arriving after the cell "
                              "ended (nbclient's IOPub timeout); not a time limit")
    if "CellTimeoutError" in log or "Timeout waiting for execute reply" in log:
        return Status.TIMEOUT, "a cell ran longer than the time limit"
    tail = [ln for ln in log.strip().splitlines() if ln.strip()][-1:] or ["no output"]
    return Status.ERROR, f"nbgrader failed: {tail[0][:300]}"


def read_autograded(autograded: Path) -> nbformat.NotebookNode:
    """The autograded notebook (an empty one where nbgrader wrote none)."""
    if not autograded.is_file():
        return nbformat.v4.new_notebook()
    return nbformat.read(autograded, as_version=4)


def output_events(nb: nbformat.NotebookNode) -> dict[str, list[str]]:
    """Error names in an autograded notebook's outputs -> the cells they occurred in."""
    events: dict[str, list[str]] = {}
    for c in nb.cells:
        for out in c.get("outputs", []):
            if out.get("output_type") == "error":
                where = nbgrader_meta(c).get("grade_id", "a cell of your own")
                events.setdefault(out.get("ename", ""), []).append(where)
    return events


def tampering_found(nb: nbformat.NotebookNode) -> tuple[str, int]:
    """What the checker saw break its protocol (the first ``TamperingDetected`` error's
    text), and the number of test cells that have such an error."""
    said, tests = "", 0
    for c in nb.cells:
        errors = [o for o in c.get("outputs", []) if o.get("ename") == "TamperingDetected"]
        said = said or (str(errors[0].get("evalue", "")) if errors else "")
        meta = nbgrader_meta(c)
        tests += bool(errors and meta.get("grade") and not meta.get("solution"))
    return said, tests


def grade_one(api, sub: Submission, workspace: Path) -> Row:
    """Autograde one submission and generate its feedback in this process; return its row.

    ``api`` is an ``nbgrader.apps.NbGraderAPI`` on ``workspace`` whose submitted_directory
    is :data:`STAGED`. Called inside a grading worker (:mod:`autograder.grading.pool`).
    With ``$AUTOGRADER_PROFILE`` set (a file), appends the seconds of each phase to it as a
    JSON line (``benchmarks/bench_grading.py --profile``).
    """
    path = env_vars.PROFILE.get()
    if not path:
        return _grade_one(api, sub, workspace)

    phase_times.take()  # anything noted before this submission is not its own
    start, began = time.perf_counter(), time.time()
    try:
        return _grade_one(api, sub, workspace)
    finally:
        times = phase_times.take()
        times["total"] = time.perf_counter() - start
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"student_id": sub.student_id, **times,
                                "began": began, "ended": time.time()}) + "\n")


def _phase(what: str, start: float) -> float:
    """Add the seconds since ``start`` to the profile's ``what``; return the time now."""
    now = time.perf_counter()
    phase_times.add(what, now - start)
    return now


def events_of(autograded: nbformat.NotebookNode, restored: list[str]) -> dict[Status, str]:
    """What happened to a submission while it was graded, by status, in words: test cells
    ``restored`` from the source, a dead kernel, the memory cap, the checker's protocol
    broken, cells stopped after the time limit."""
    events: dict[Status, str] = {}
    if restored:
        events[Status.RESTORED_TESTS] = "restored from the source: " + ", ".join(restored)
    errors = output_events(autograded)
    # A dead kernel and a cell past the time limit as the grader saw them (an output's error
    # name is the learner's to choose: a raised class named DeadKernelError is not a death).
    stopped = stopped_in(autograded)
    for ename in ("DeadKernelError", "CellTimeoutError", "KernelOutOfMemory"):
        errors[ename] = [where for e, where in stopped if e == ename]
        if not errors[ename]:
            del errors[ename]
    if "DeadKernelError" in errors:
        events[Status.KERNEL_DIED] = (f"the kernel died in {errors['DeadKernelError'][0]}; "
                                      "later tests scored 0")
    oom = errors.pop("KernelOutOfMemory", [])
    if oom:  # the memory cap's cgroup or watchdog stopped the kernel (kernel_memory)
        events.pop(Status.KERNEL_DIED, None)
        events[Status.OUT_OF_MEMORY] = _out_of_memory(oom, "DeadKernelError" in errors)
        errors.pop("MemoryError", None)
    if "MemoryError" in errors:
        events[Status.OUT_OF_MEMORY] = f"MemoryError in {', '.join(errors['MemoryError'])}"
    if "TamperingDetected" in errors:  # the checker's protocol broken (autograder.checker)
        said, tests = tampering_found(autograded)
        events[Status.TAMPERING] = f"{said}: {tests} test(s) from there on scored 0"
    if "CellTimeoutError" in errors:
        events[Status.TIMEOUT] = (f"cells stopped after the time limit: "
                                  f"{', '.join(errors['CellTimeoutError'])}")
    return events


def _out_of_memory(where: list[str], kernel_died: bool) -> str:
    counted = (f"the memory cap ({kernel_memory.cap() // 2**20} MiB, shared memory and the "
               "files in /tmp, /dev/shm and the working folder included)")
    if kernel_died:
        return (f"the kernel used more than {counted} and was stopped in {', '.join(where)}; "
                "later tests scored 0")
    return (f"a process the kernel started used more than {counted} and was stopped; the "
            "kernel went on")


def _grade_one(api, sub: Submission, workspace: Path) -> Row:
    t = time.perf_counter()
    row = Row(sub.student_id, sub.assignment, submission_sha256=sub.sha256,
              max_score=gradebook.max_score(workspace, sub.assignment))
    nb, bad = prevalidate(sub)
    if bad:
        row.status, row.detail = bad
        return row
    t = _phase("own checks", t)
    relabelled = integrity.restore_metadata(nb, sub.assignment)  # before nbgrader sees it
    stage(sub, nb, workspace)
    restored = relabelled + integrity.restored_cells(nb, sub.assignment)
    anchor, cheats = integrity.learner_tampering(nb, sub.assignment)
    log_dir = workspace / "logs" / sub.student_id
    log_dir.mkdir(parents=True, exist_ok=True)
    t = _phase("own checks", t)
    done = api.autograde(sub.assignment, sub.student_id, force=True, create=True)
    t = _phase("autograde", t)
    log = (done.get("log") or "") + (done.get("error") or "")
    (log_dir / f"{sub.assignment}.autograde.log").write_text(log, encoding="utf-8")
    if not done.get("success"):
        row.status, row.detail = classify_failure(log)
        return row
    note = []
    if cheats:  # the kernel holds nothing to reach: a note for the instructor
        note.append("the static scan noted (no points lost): " + "; ".join(cheats))
    name = f"{sub.assignment}.ipynb"
    autograded = read_autograded(workspace / "autograded" / sub.student_id / sub.assignment / name)
    events = events_of(autograded, restored)
    t = _phase("own checks", t)
    fb = api.generate_feedback(sub.assignment, sub.student_id, force=True)
    t = _phase("feedback", t)
    (log_dir / f"{sub.assignment}.feedback.log").write_text(
        (fb.get("log") or "") + (fb.get("error") or ""), encoding="utf-8")
    html = workspace / "feedback" / sub.student_id / sub.assignment / f"{sub.assignment}.html"
    row.feedback = str(html.relative_to(workspace)) if html.is_file() else ""
    # The scores, the late penalty and the manual answers are the gradebook's: the row keeps
    # only what the gradebook cannot hold, and is derived from it (grading.record.score_from_gradebook).
    saved = {str(k): v for k, v in events.items()}
    if sub.converted:
        note.append("converted from nbformat 3")
    if note:
        saved[NOTE] = "; ".join(note)
    row.events, row.scored = json.dumps(saved), True
    with gradebook.open_gradebook(workspace) as gb:
        score_from_gradebook(row, gb)
    _phase("own checks", t)
    return row
