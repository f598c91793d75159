"""Grade a class with nbgrader: ``python -m autograder grade`` (SPEC section 5).

nbgrader is the engine: the gradebook, the restoring of locked cells, the execution and
the feedback are nbgrader's own (``nbgrader autograde`` and ``generate_feedback``). This
module adds what a class needs around it:

- every submission gets a row in ``grades.csv``, whatever it contains: unreadable or
  empty files, notebooks of another assignment, kernels that hang or die are scored and
  given a ``status`` that says why, and never stop the rest of the class;
- ``--jobs N`` worker processes (:mod:`autograder.grade_worker`) each import nbgrader once
  and grade one submission at a time in a fresh kernel; a worker that hangs is killed
  with its kernel and replaced;
- ``grades.csv`` is rewritten atomically after every submission, so killing the grader
  loses nothing and running it again grades only what is missing or has changed.
"""

from __future__ import annotations

import csv
import fcntl
import functools
import hashlib
import json
import os
import queue
import signal
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.config import SOLUTIONS
from autograder.notebook import nbgrader_meta

GRADES_CSV = "grades.csv"
TESTS_CSV = "tests.csv"
FIELDS = ["student_id", "assignment", "score", "max_score", "status", "detail",
          "submission_sha256", "feedback"]
# Statuses whose rows are final for an unchanged file; anything else is retried.
FINAL = {"graded", "needs-manual-grading", "invalid-notebook", "wrong-assignment",
         "missing-notebook", "timeout", "kernel-died", "out-of-memory", "restored-tests",
         "tampering", "late"}


@dataclass
class Submission:
    student_id: str
    assignment: str
    path: Path | None  # the submitted notebook, None when the folder has none
    sha256: str = ""
    converted: bool = False  # an nbformat 3 notebook, upgraded before grading


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONUTF8"] = "1"  # locked cells hold dₖ, √, ωᵢ: never depend on the locale
    env["PYTHONIOENCODING"] = "utf-8"
    env.setdefault("MPLBACKEND", "Agg")
    # One thread per grading kernel: --jobs gives the parallelism, and BLAS thread pools
    # would otherwise oversubscribe the cores and allocate outside the memory cap.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    return env


def _write_config(workspace: Path, cell_timeout: int, late_penalty: str) -> None:
    text = (
        "# Written by python -m autograder grade; nbgrader's own commands run in this folder\n"
        "# (nbgrader autograde, generate_feedback, export, formgrader) read it.\n"
        "from autograder.config import apply\n\n"
        f"apply(get_config(), {str(workspace)!r}, release_directory={str(workspace / 'release')!r},"
        f" cell_timeout={cell_timeout}, late_penalty={late_penalty!r})\n"
    )
    (workspace / "nbgrader_config.py").write_text(text, encoding="utf-8")


def _nbgrader(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          encoding="utf-8", errors="replace")


def _count_cells(sub: Submission) -> int:
    try:
        return len(json.loads(sub.path.read_bytes()).get("cells", [])) if sub.path else 0
    except Exception:  # noqa: BLE001 - unreadable files are reported by the worker
        return 0


def release(assignment: str, to: Path, workspace: Path | None = None) -> Path:
    """Generate the learner notebook of ``assignment`` from solutions/ into ``to``.

    Runs ``nbgrader generate_assignment`` with the course's config; the gradebook it
    records the assignment in is ``workspace/gradebook.db`` (a temporary folder by default).
    """
    import tempfile

    if not (SOLUTIONS / assignment).is_dir():
        raise ValueError(f"no source for assignment {assignment!r} in {SOLUTIONS}")
    to = Path(to).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(workspace) if workspace else Path(tmp)
        ws.mkdir(parents=True, exist_ok=True)
        (ws / "nbgrader_config.py").write_text(
            "from autograder.config import apply\n"
            f"apply(get_config(), {str(ws)!r}, release_directory={str(to)!r})\n",
            encoding="utf-8")
        done = _nbgrader(["generate_assignment", assignment, "--force"], cwd=ws)
        if done.returncode != 0:
            raise RuntimeError(f"nbgrader generate_assignment {assignment} failed:\n{done.stdout}")
    return to / assignment / f"{assignment}.ipynb"


def _source_notebook(assignment: str) -> Path:
    return SOLUTIONS / assignment / f"{assignment}.ipynb"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def discover(submissions: Path) -> list[Submission]:
    """Submissions laid out as nbgrader's ``<student_id>/<assignment_id>/<assignment_id>.ipynb``."""
    found = []
    for student in sorted(p for p in submissions.iterdir() if p.is_dir()):
        for folder in sorted(p for p in student.iterdir() if p.is_dir()):
            nb = folder / f"{folder.name}.ipynb"
            if not nb.is_file():
                others = sorted(folder.glob("*.ipynb"))
                nb = others[0] if len(others) == 1 else None
            sub = Submission(student.name, folder.name, nb)
            sub.sha256 = _sha256(nb) if nb else ""
            found.append(sub)
    return found


def _grade_ids(nb) -> set[str]:
    return {nbgrader_meta(c).get("grade_id") for c in nb.cells if nbgrader_meta(c)} - {None}


def _prevalidate(sub: Submission, dest: Path) -> tuple[str, str] | None:
    """Copy a readable submission to ``dest`` as nbformat 4; else return (status, detail)."""
    if sub.path is None:
        return "missing-notebook", f"no {sub.assignment}.ipynb in the submission folder"
    raw = sub.path.read_bytes()
    if not raw.strip():
        return "invalid-notebook", "the file is empty"
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return "invalid-notebook", f"not valid JSON ({exc})"
    try:
        sub.converted = int(data.get("nbformat", 4)) < 4
        nb = nbformat.reads(json.dumps(data), as_version=4)
        if sub.converted:
            nbformat.validator.normalize(nb)
            for c in nb.cells:  # nbformat 3 has no cell ids
                c.setdefault("id", nbformat.corpus.words.generate_corpus_id())
            nb.nbformat_minor = max(nb.nbformat_minor, 5)
        nbformat.validate(nb)
    except Exception as exc:  # noqa: BLE001 - nbformat raises several kinds
        return "invalid-notebook", f"not a valid Jupyter notebook ({str(exc).splitlines()[0]})"
    if not (_grade_ids(nb) & set(_released_cells(sub.assignment))):
        return "wrong-assignment", f"no cell of {sub.assignment} found in the notebook"
    dest.parent.mkdir(parents=True, exist_ok=True)
    if sub.converted or sub.path.resolve() != dest.resolve():
        nbformat.write(nb, dest)
    return None


def _tampered(sub, assignment: str) -> list[str]:
    """What the learner changed in the notebook's structure: locked cells edited, removed,
    turned into another cell type or duplicated, and cells moved out of order."""
    released = _released_cells(assignment)
    theirs: dict[str, list] = {}
    order = []
    for c in sub.cells:
        gid = nbgrader_meta(c).get("grade_id")
        if gid:
            theirs.setdefault(gid, []).append(c)
            order.append(gid)
    changes = []
    for gid, cell in released.items():
        meta = nbgrader_meta(cell)
        mine = theirs.get(gid, [])
        if len(mine) > 1:
            changes.append(f"{gid} appears {len(mine)} times")
        if not meta.get("locked") or meta.get("solution"):
            continue
        if not mine:
            changes.append(f"{gid} deleted")
        elif mine[0].cell_type != cell.cell_type:
            changes.append(f"{gid} turned into {mine[0].cell_type}")
        elif mine[0].source.strip() != cell.source.strip():
            changes.append(f"{gid} edited")
    rank = {gid: i for i, gid in enumerate(released)}
    known = [rank[g] for g in dict.fromkeys(order) if g in rank]
    if known != sorted(known):
        changes.append("cells reordered")
    return changes


_released: dict[str, dict] = {}


def _released_cells(assignment: str) -> dict:
    """grade_id -> cell of the learner version, in notebook order."""
    if assignment not in _released:
        from autograder.config import EXERCISES

        nb = nbformat.read(EXERCISES / assignment / f"{assignment}.ipynb", as_version=4)
        _released[assignment] = {nbgrader_meta(c)["grade_id"]: c for c in nb.cells
                                 if nbgrader_meta(c).get("grade_id")}
    return _released[assignment]


def _learner_tampering(nb, assignment: str) -> tuple[str | None, list[str]]:
    """(grade_id of the first cell that modifies a module or the shell, what it does)."""
    from autograder.tampering import suspicious

    released = _released_cells(assignment)
    anchor = None
    for c in nb.cells:
        meta = nbgrader_meta(c)
        gid = meta.get("grade_id")
        if gid in released:
            anchor = gid
        editable = meta.get("solution") or gid not in released
        if c.cell_type == "code" and editable and not nbgrader_meta(released.get(gid, c)).get(
                "locked"):
            found = suspicious(c.source)
            if found:
                return anchor, found
    return None, []


def _zero_tests_after(workspace: Path, sub: Submission, anchor: str | None) -> list[str]:
    """Set a manual score of 0 on every autograded test after ``anchor`` (all if None)."""
    from nbgrader.api import Gradebook

    names = list(_released_cells(sub.assignment))
    start = names.index(anchor) if anchor in names else -1
    after = set(names[start + 1:])
    zeroed = []
    url = f"sqlite:///{workspace / 'gradebook.db'}?timeout=120"
    with Gradebook(url) as gb:
        s = gb.find_submission(sub.assignment, sub.student_id)
        for nb in s.notebooks:
            for g in nb.grades:
                if g.name in after and g.cell.cell_type == "code" and g.max_score > 0:
                    g.manual_score = 0.0
                    zeroed.append(g.name)
        gb.db.commit()
    return zeroed


def _output_events(workspace: Path, sub: Submission) -> dict[str, list[str]]:
    """Error names in the autograded notebook's outputs -> the cells they occurred in."""
    path = workspace / "autograded" / sub.student_id / sub.assignment / f"{sub.assignment}.ipynb"
    events: dict[str, list[str]] = {}
    if not path.is_file():
        return events
    for c in nbformat.read(path, as_version=4).cells:
        for out in c.get("outputs", []):
            if out.get("output_type") == "error":
                where = nbgrader_meta(c).get("grade_id", "a cell of your own")
                events.setdefault(out.get("ename", ""), []).append(where)
    return events


# Most notable first: the status column names the most serious thing that happened.
PRIORITY = ["out-of-memory", "kernel-died", "timeout", "tampering", "restored-tests", "late",
            "needs-manual-grading", "graded"]


def _classify_failure(log: str) -> tuple[str, str]:
    if "DeadKernelError" in log or "Kernel died" in log or "kernel died" in log:
        return "kernel-died", "the notebook's kernel died (crash, os._exit or out of memory)"
    if "CellTimeoutError" in log or "Timeout waiting for execute reply" in log:
        return "timeout", "a cell ran longer than the time limit"
    tail = [ln for ln in log.strip().splitlines() if ln.strip()][-1:] or ["no output"]
    return "error", f"nbgrader failed: {tail[0][:300]}"


def _read_scores(workspace: Path, sub: Submission
                 ) -> tuple[float, float, bool, list[dict], float]:
    from nbgrader.api import Gradebook

    url = f"sqlite:///{workspace / 'gradebook.db'}?timeout=120"
    with Gradebook(url) as gb:
        s = gb.find_submission(sub.assignment, sub.student_id)
        tests = []
        for nb in s.notebooks:
            for g in nb.grades:
                tests.append({"student_id": sub.student_id, "assignment": sub.assignment,
                              "test": g.name, "score": g.score, "max_score": g.max_score,
                              "needs_manual_grade": g.needs_manual_grade})
        # nbgrader keeps the late penalty apart from the score (its export does the same).
        penalty = float(s.late_submission_penalty or 0.0)
        return (max(0.0, float(s.score) - penalty), float(s.max_score),
                bool(s.needs_manual_grade), tests, float(s.total_seconds_late or 0.0))


@functools.lru_cache(maxsize=None)
def _max_score(workspace: Path, assignment: str) -> float:
    from nbgrader.api import Gradebook

    url = f"sqlite:///{workspace / 'gradebook.db'}?timeout=120"
    with Gradebook(url) as gb:
        return float(gb.find_assignment(assignment).max_score)


def grade_one(api, sub: Submission, workspace: Path) -> dict:
    """Autograde one submission and generate its feedback in this process; returns its row.

    ``api`` is an ``nbgrader.apps.NbGraderAPI`` on ``workspace``. Called inside a grading
    worker (:mod:`autograder.grade_worker`), whose process group is killed if it hangs.
    """
    row = {"student_id": sub.student_id, "assignment": sub.assignment,
           "submission_sha256": sub.sha256, "score": 0.0, "detail": "", "feedback": ""}
    row["max_score"] = _max_score(workspace, sub.assignment)
    dest = workspace / "submitted" / sub.student_id / sub.assignment / f"{sub.assignment}.ipynb"
    in_place = sub.path is not None and sub.path.resolve() == dest.resolve()
    if dest.parent.exists() and not in_place:  # SUBMISSIONS may be the workspace's own
        shutil.rmtree(dest.parent)
    bad = _prevalidate(sub, dest)
    if bad:
        row["status"], row["detail"] = bad
        return row
    submitted = nbformat.read(dest, as_version=4)
    restored = _tampered(submitted, sub.assignment)
    anchor, cheats = _learner_tampering(submitted, sub.assignment)
    _copy_timestamp(sub, dest.parent)
    log_dir = workspace / "logs" / sub.student_id
    log_dir.mkdir(parents=True, exist_ok=True)
    done = api.autograde(sub.assignment, sub.student_id, force=True, create=True)
    log = (done.get("log") or "") + (done.get("error") or "")
    (log_dir / f"{sub.assignment}.autograde.log").write_text(log, encoding="utf-8")
    if not done.get("success"):
        row["status"], row["detail"] = _classify_failure(log)
        return row
    events = {}
    if cheats:
        zeroed = _zero_tests_after(workspace, sub, anchor)
        events["tampering"] = (f"{'; '.join(cheats)}: {len(zeroed)} test(s) after it scored 0 "
                               "(manual override in the gradebook)")
    if restored:
        events["restored-tests"] = "restored from the source: " + ", ".join(restored)
    errors = _output_events(workspace, sub)
    if "DeadKernelError" in errors:
        events["kernel-died"] = (f"the kernel died in {errors['DeadKernelError'][0]}; "
                                 "later tests scored 0")
    if "MemoryError" in errors:
        events["out-of-memory"] = f"MemoryError in {', '.join(errors['MemoryError'])}"
    if "CellTimeoutError" in errors:
        events["timeout"] = (f"cells stopped after the time limit: "
                             f"{', '.join(errors['CellTimeoutError'])}")
    fb = api.generate_feedback(sub.assignment, sub.student_id, force=True)
    (log_dir / f"{sub.assignment}.feedback.log").write_text(
        (fb.get("log") or "") + (fb.get("error") or ""), encoding="utf-8")
    html = workspace / "feedback" / sub.student_id / sub.assignment / f"{sub.assignment}.html"
    row["feedback"] = str(html.relative_to(workspace)) if html.is_file() else ""
    score, max_score, manual, tests, late = _read_scores(workspace, sub)
    row.update(score=score, max_score=max_score, tests=tests)
    if late > 0:
        raw = sum(float(t["score"] or 0) for t in tests)
        events["late"] = (f"submitted {late / 3600:.1f} h after the due date; "
                          f"{raw:g} points before nbgrader's late penalty")
    if manual:
        events["needs-manual-grading"] = "written answers wait for formgrader"
    status = next((p for p in PRIORITY if p in events), "graded")
    row["status"] = status
    row["detail"] = "; ".join(f"{k}: {v}" if k != status else v for k, v in
                              sorted(events.items(), key=lambda kv: PRIORITY.index(kv[0])))
    if sub.converted:
        row["detail"] = "converted from nbformat 3; " + row["detail"]
    return row


def _copy_timestamp(sub: Submission, dest: Path) -> None:
    """Keep nbgrader's timestamp.txt (late penalties) beside the copied notebook."""
    if sub.path is not None and (sub.path.parent / "timestamp.txt").is_file() and \
            sub.path.parent.resolve() != dest.resolve():
        shutil.copy(sub.path.parent / "timestamp.txt", dest / "timestamp.txt")


class Worker:
    """A grading process (``python -m autograder.grade_worker``) that grades one at a time.

    It imports nbgrader once and grades many submissions. Its process group (it and the
    kernels it starts) is killed when a submission takes longer than allowed or when the
    worker dies, and a fresh worker takes its place.
    """

    def __init__(self, workspace: Path, index: int, cell_timeout: int, memory_mb: int,
                 late_penalty: str = "none"):
        self.args = [sys.executable, "-m", "autograder.grade_worker", str(workspace),
                     "--cell-timeout", str(cell_timeout), "--memory-mb", str(memory_mb),
                     "--late-penalty", late_penalty]
        self.log = workspace / "logs" / f"worker-{index}.log"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.proc = None
        self.lines: queue.Queue = queue.Queue()

    def start(self) -> None:
        """Start the worker process (it imports nbgrader, then waits for tasks)."""
        err = self.log.open("a", encoding="utf-8")
        self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=err, text=True, encoding="utf-8", env=_env(),
                                     cwd=Path(self.args[3]), start_new_session=True)
        err.close()
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True).start()

    @staticmethod
    def _read(proc, lines) -> None:
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)  # EOF: the worker exited

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.proc = None

    def grade(self, sub: Submission, limit: float) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        task = {"student_id": sub.student_id, "assignment": sub.assignment,
                "path": str(sub.path) if sub.path else None, "sha256": sub.sha256}
        base = {"student_id": sub.student_id, "assignment": sub.assignment, "score": 0.0,
                "submission_sha256": sub.sha256, "feedback": ""}
        try:
            self.proc.stdin.write(json.dumps(task) + "\n")
            self.proc.stdin.flush()
            line = self.lines.get(timeout=limit)
        except queue.Empty:
            self.kill()
            return {**base, "status": "timeout",
                    "detail": f"grading took longer than {limit:.0f} s and was stopped"}
        except (BrokenPipeError, OSError):
            line = None
        if line is None:
            self.kill()
            return {**base, "status": "error",
                    "detail": f"the grading worker died; see {self.log.name}"}
        return json.loads(line)


def _load_rows(path: Path) -> dict[tuple[str, str], dict]:
    if not path.is_file():
        return {}
    with path.open(newline="", encoding="utf-8") as f:
        return {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}


def _write_csv(path: Path, fields: list[str], rows: list[dict]) -> None:
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _ensure_released(workspace: Path, assignment: str) -> None:
    """Record the assignment in the workspace gradebook (nbgrader generate_assignment)."""
    stamp = workspace / "release" / f".{assignment}.sha256"
    digest = _sha256(_source_notebook(assignment))
    if stamp.is_file() and stamp.read_text() == digest:
        return
    release(assignment, workspace / "release", workspace=workspace)
    stamp.write_text(digest)


def grade_class(submissions: Path, workspace: Path, *, jobs: int = 1, cell_timeout: int = 60,
                memory_mb: int = 4096, progress: bool = True, late_penalty: str = "none") -> int:
    """Grade every submission under ``submissions``; write ``workspace/grades.csv``.

    Returns 0 when every submission has a row, 1 otherwise, 2 for a bad command line.
    """
    from tqdm import tqdm

    if not submissions.is_dir():
        print(f"error: {submissions} is not a folder of submissions", file=sys.stderr)
        return 2
    workspace = workspace.resolve()
    workspace.mkdir(parents=True, exist_ok=True)
    lock_file = (workspace / ".lock").open("w")
    try:
        fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"error: another grading run is using {workspace}", file=sys.stderr)
        return 2
    _write_config(workspace, cell_timeout, late_penalty)
    subs = discover(submissions.resolve())
    unknown = sorted({s.assignment for s in subs if not _source_notebook(s.assignment).is_file()})
    rows = _load_rows(workspace / GRADES_CSV)
    tests = {}
    if (workspace / TESTS_CSV).is_file():
        with (workspace / TESTS_CSV).open(newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                tests.setdefault((r["student_id"], r["assignment"]), []).append(r)
    todo = []
    for s in subs:
        key = (s.student_id, s.assignment)
        old = rows.get(key)
        if s.assignment in unknown:
            rows[key] = {"student_id": s.student_id, "assignment": s.assignment, "score": 0.0,
                         "max_score": 0.0, "status": "unknown-assignment",
                         "detail": f"no assignment {s.assignment!r} in solutions/",
                         "submission_sha256": s.sha256, "feedback": ""}
        elif old and old.get("submission_sha256") == s.sha256 and old.get("status") in FINAL:
            continue  # graded before and unchanged
        else:
            todo.append(s)
    # Start the workers first: their nbgrader import overlaps with the release below.
    workers = [Worker(workspace, i, cell_timeout, memory_mb, late_penalty)
               for i in range(max(1, min(jobs, len(todo)))) if todo]
    for w in workers:
        w.start()
    try:
        for assignment in sorted({s.assignment for s in subs} - set(unknown)):
            _ensure_released(workspace, assignment)
    except BaseException:
        for w in workers:
            w.kill()
        raise
    lock = threading.Lock()

    def save() -> None:
        ordered = sorted(rows.values(), key=lambda r: (r["assignment"], r["student_id"]))
        _write_csv(workspace / GRADES_CSV, FIELDS, ordered)
        flat = [t for k in sorted(tests) for t in tests[k]]
        _write_csv(workspace / TESTS_CSV, ["student_id", "assignment", "test", "score",
                                           "max_score", "needs_manual_grade"], flat)

    save()
    start = time.monotonic()
    bar = tqdm(total=len(todo), desc="grading", unit="nb", disable=not progress, file=sys.stderr)
    pending: queue.Queue = queue.Queue()
    for s in todo:
        pending.put(s)

    def work(worker: Worker) -> None:
        try:
            while True:
                try:
                    s = pending.get_nowait()
                except queue.Empty:
                    return
                n_cells = _count_cells(s)
                row = worker.grade(s, limit=120 + cell_timeout * (n_cells + 2))
                with lock:
                    tests[(s.student_id, s.assignment)] = row.pop("tests", [])
                    row.setdefault("max_score", _max_score(workspace, s.assignment))
                    rows[(s.student_id, s.assignment)] = row
                    save()
                    bar.set_postfix_str(f"{s.student_id}: {row['status']}")
                    bar.update()
        finally:
            worker.kill()

    threads = [threading.Thread(target=work, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bar.close()
    from autograder.summary import write_summary

    for line in write_summary(workspace, list(rows.values()), [t for v in tests.values() for t in v]):
        print(line)
    n = len(rows)
    print(f"graded {len(todo)} submission(s) in {time.monotonic() - start:.1f} s; "
          f"{n} row(s) in {workspace / GRADES_CSV}")
    expected = {(s.student_id, s.assignment) for s in subs}
    return 0 if expected <= set(rows) else 1
