"""One grading run's state (:class:`ClassRun`; :mod:`~autograder.grading.grade` runs it):
resume (skip rows that are final and whose inputs are unchanged: the notebook, its
timestamp, due date, extension, late-penalty option, source notebook and check code, see
:mod:`~autograder.grading.keys`), hand the rest out to the worker pool, save the side table
after every submission; and :func:`mark`, the run's phases for the profile."""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from pathlib import Path

from autograder import env_vars
from autograder.grading import gradebook, keys
from autograder.grading.pool import Worker
from autograder.grading.release import ensure_released, source_notebook
from autograder.grading.record import add_note, derive_rows
from autograder.grading.results import (FINAL, Row, Status, load_state, save_rows,
                                        state_line, write_state)
from autograder.grading.submission import Submission


CSV_INTERVAL = 1.0  # seconds between two rewrites of grades.csv while a class is graded


def mark_phase(phase: str) -> None:
    """With ``$AUTOGRADER_PROFILE`` set (benchmarks/bench_grading.py --profile), note when
    ``phase`` of the run began (the profile prints the time between marks) and this
    process's peak resident memory so far (KiB; benchmarks/bench_scaling.py)."""
    path = env_vars.PROFILE.get()
    if path:
        try:
            import resource

            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB (macOS: bytes)
            peak = peak // 1024 if sys.platform == "darwin" else peak
        except ImportError:  # Windows
            peak = None
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"phase": phase, "at": time.time(), "maxrss_kb": peak}) + "\n")


class ClassRun:
    """The state of one grading run: the rows so far and the submissions left to grade."""

    def __init__(self, workspace: Path, subs: list[Submission], *, cell_timeout: int,
                 memory_mb: int, late_penalty: str, force: bool = False,
                 regrade: frozenset[str] = frozenset()):
        self.workspace = workspace
        self.subs = subs
        self.cell_timeout, self.memory_mb, self.late_penalty = cell_timeout, memory_mb, late_penalty
        self.rows = derive_rows(workspace, load_state(workspace))
        self.notes = {(s.student_id, s.assignment): s.note for s in subs if s.note}
        present = {(s.student_id, s.assignment) for s in subs}
        for key in [k for k, r in self.rows.items()  # a refused folder since renamed
                    if r.status == Status.INVALID_STUDENT_ID and k not in present]:
            del self.rows[key]
        self.unknown = sorted({s.assignment for s in subs
                               if not source_notebook(s.assignment).is_file()})
        self.inputs = self._inputs([s for s in subs if not s.refused])
        self.todo: list[Submission] = []
        self.reasons: dict[str, int] = {}  # input name -> rows regraded because it changed
        for s in subs:
            old = self.rows.get((s.student_id, s.assignment))
            if s.refused:  # at the door (submission.discover): nothing to grade
                self.rows[(s.student_id, s.assignment)] = Row(
                    s.student_id, s.assignment, status=s.refused[0], detail=s.refused[1],
                    submission_sha256=s.sha256)
                continue
            if s.assignment in self.unknown:
                self.rows[(s.student_id, s.assignment)] = Row(
                    s.student_id, s.assignment, status=Status.UNKNOWN_ASSIGNMENT,
                    detail=f"no assignment {s.assignment!r} in solutions/",
                    submission_sha256=s.sha256)
                continue
            new = self.inputs[(s.student_id, s.assignment)]
            if force or s.student_id in regrade:
                why = ["--force" if force else "--regrade"]
            elif old is None or old.status not in FINAL:
                why = []
            elif old.inputs_sha256 == keys.digest(new):
                continue  # graded before, nothing it depends on changed
            else:
                why = keys.changed(json.loads(old.inputs or "{}"), new)
            for name in why:
                self.reasons[name] = self.reasons.get(name, 0) + 1
            self.todo.append(s)
        self.workers: list[Worker] = []
        self._lock = threading.Lock()
        self._csv_saved = 0.0  # when grades.csv was last written (time.monotonic)
        self._csv_interval = CSV_INTERVAL  # and the seconds until the next write
        self._state: dict[tuple[str, str], str] | None = None  # each row's side table line

    def _inputs(self, subs: list[Submission]) -> dict[tuple[str, str], dict[str, str]]:
        """The inputs of each submission's grade (:func:`autograder.grading.keys.inputs`)."""
        check_code = keys.check_code_digest()
        out = {}
        with gradebook.open_gradebook(self.workspace) as gb:
            for s in subs:
                due, extension = keys.schedule(gb, s.assignment, s.student_id)
                out[(s.student_id, s.assignment)] = keys.inputs(
                    s, due=due, extension=extension, late_penalty=self.late_penalty,
                    source=source_notebook(s.assignment), check_code=check_code)
        return out

    def save(self) -> None:
        """The side table first (the durable record), then grades.csv and tests.csv."""
        self._state = {key: state_line(row) for key, row in self.rows.items()}
        write_state(self.workspace, self._state)
        save_rows(self.workspace, self.rows)

    def record(self, row: Row) -> None:
        """Keep a finished row: rewrite the side table, and grades.csv and tests.csv at most
        every :data:`CSV_INTERVAL` seconds, or twenty times as long as their last write took
        (called from worker threads; the class's end writes them from the gradebook, and a
        rerun resumes from the side table)."""
        with self._lock:
            if not row.max_score:  # a worker that died or hung did not read the gradebook
                row.max_score = gradebook.max_score(self.workspace, row.assignment)
            values = self.inputs.get(row.key, {})
            row.inputs, row.inputs_sha256 = json.dumps(values), keys.digest(values)
            row.sandbox = "none" if env_vars.SANDBOX.get() == "0" else "bubblewrap"
            add_note(row, self.notes.get(row.key, ""))
            self.rows[row.key] = row
            start = time.perf_counter()
            if self._state is None:  # not saved yet: every row formatted once
                self._state = {key: state_line(r) for key, r in self.rows.items()}
            self._state[row.key] = state_line(row)  # then only the row recorded
            write_state(self.workspace, self._state)  # the durable record: after every row
            if time.monotonic() - self._csv_saved >= self._csv_interval:
                began = time.monotonic()
                save_rows(self.workspace, self.rows)
                self._csv_saved = time.monotonic()
                # A large class's files take longer to write: at most a 20th of the time.
                self._csv_interval = max(CSV_INTERVAL, 20 * (self._csv_saved - began))
            if env_vars.PROFILE.get():  # benchmarks/bench_grading.py --profile
                with open(env_vars.PROFILE.get(), "a", encoding="utf-8") as f:
                    f.write(json.dumps({"student_id": row.student_id, "csv writes":
                                        time.perf_counter() - start}) + "\n")

    def grade(self, progress: bool) -> None:
        """Grade ``todo`` with one worker per job; each worker takes the next submission."""
        from tqdm import tqdm

        bar = tqdm(total=len(self.todo), desc=f"grading with {len(self.workers)} worker(s)",
                   unit="nb", disable=not progress, file=sys.stderr)
        pending: queue.Queue = queue.Queue()
        for s in self.todo:
            pending.put(s)

        def work(worker: Worker) -> None:
            try:
                while True:
                    try:
                        s = pending.get_nowait()
                    except queue.Empty:
                        return
                    limit = 120 + self.cell_timeout * (s.cell_count() + 2)
                    row = worker.grade(s, limit=limit)
                    self.record(row)
                    with self._lock:
                        bar.set_postfix_str(f"{s.student_id}: {row.status}")
                        bar.update()
            finally:
                worker.finish()  # it exits while the grades are derived (stop() waits)

        threads = [threading.Thread(target=work, args=(w,)) for w in self.workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        bar.close()

    def use_workers(self, workers: list[Worker]) -> None:
        """Grade with ``workers`` (started by :func:`start_workers` before the submissions
        to grade were known): as many as there are submissions to grade; the others stop."""
        self.workers, extra = workers[:len(self.todo)], workers[len(self.todo):]
        for w in extra:  # told first, waited for after: they exit (and remove their warm
            w.finish()  # sandboxes' files) together
        for w in extra:
            w.stop()

    def release(self) -> None:
        """Record each assignment and each student of the class in the workspace's gradebook
        (two workers grading one student's two assignments would both create the student)."""
        try:
            for assignment in sorted({s.assignment for s in self.subs} - set(self.unknown)):
                ensure_released(self.workspace, assignment, cell_timeout=self.cell_timeout,
                                late_penalty=self.late_penalty)
            with gradebook.open_gradebook(self.workspace) as gb:
                for student in sorted({s.student_id for s in self.todo}):
                    gb.update_or_create_student(student)
        except BaseException:
            for w in self.workers:
                w.kill()
            raise
