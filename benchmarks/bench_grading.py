"""Grading a class: `python -m autograder grade` against plain sequential nbgrader.

A generated class of 40 ex01 submissions (correct, untouched and wrong ones mixed) is
graded twice in the same run, each in a fresh workspace with the course's nbgrader config:

- plain: `nbgrader generate_assignment`, `nbgrader autograde` (all students, one process,
  one after another) and `nbgrader generate_feedback`;
- ours:  `python -m autograder grade` (release, autograde and feedback).

Prints both times and their ratio, the CPU floor (the plain run's CPU seconds divided by
the cores: no grading of this class can take less time), checks that every student got the
same score, and appends a JSON line to _build/bench.jsonl. ``--profile`` prints where
grading's time goes (kernel start, imports, cells, nbgrader, feedback, our own checks),
summed over the class; ``--mixed 20`` also grades a class of 20 ex01 + 20 ex02 + 20 ex05.
Usage: python benchmarks/bench_grading.py [--n 40] [--profile] [--mixed 20] [--jobs J]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from submissions import filled_notebook, parse_variant, variants, write_submission  # noqa: E402

from autograder.config import EXERCISES  # noqa: E402

A = "ex01_python_attention"


def make_class(root: Path, n: int, assignment: str = A, offset: int = 0) -> None:
    """``n`` submissions of ``assignment`` (correct, untouched and wrong ones in turn)."""
    import nbformat

    kinds = [("correct", filled_notebook(assignment))]
    kinds.append(("stub", nbformat.read(EXERCISES / assignment / f"{assignment}.ipynb",
                                        as_version=4)))
    for name, path in variants(assignment).items():
        kinds.append((name, filled_notebook(assignment, parse_variant(path)[0])))
    for i in range(n):
        kind, nb = kinds[i % len(kinds)]
        write_submission(root, f"student{offset + i:03d}-{kind}", assignment, nb)


def env(profile: Path | None = None, warm: bool = True) -> dict:
    e = dict(os.environ)
    e["PATH"] = os.path.dirname(sys.executable) + os.pathsep + e.get("PATH", "")
    if not warm:  # plain nbgrader: the course's sandboxed kernel, a new one per notebook
        e["AUTOGRADER_WARM_KERNELS"] = "0"
    if profile is not None:
        e["AUTOGRADER_PROFILE"] = str(profile)
    return e


class CpuMeter:
    """CPU seconds of the commands run through :func:`timed`, every process they start
    included (a cgroup v1 ``cpuacct`` group, where this machine lets us make one, since a
    process killed before its parent waits for it is missing from ``RUSAGE_CHILDREN``)."""

    def __init__(self, name: str):
        self.group = Path("/sys/fs/cgroup/cpuacct") / f"bench-grading-{os.getpid()}-{name}"
        try:
            self.group.mkdir()
        except OSError:
            self.group = None
        self.rusage = children_cpu()

    def join(self) -> None:  # in the child, before exec
        if self.group is not None:
            (self.group / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float:
        if self.group is None:
            return children_cpu() - self.rusage
        used = int((self.group / "cpuacct.usage").read_text()) / 1e9
        try:
            self.group.rmdir()
        except OSError:
            pass
        return used


def timed(cmd: list[str], cwd: Path, profile: Path | None = None,
          meter: CpuMeter | None = None, warm: bool = True) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env(profile, warm), capture_output=True, text=True,
                          preexec_fn=meter.join if meter else None)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return time.perf_counter() - start


def children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes and their children."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


# The profile's rows: (label, keys of the workers' JSON lines summed into it).
PHASES = [("kernel start (bwrap, Python, ipykernel)", ["kernel start", "-guard imports"]),
          ("imports (the guard: checks, numpy...)", ["guard imports"]),
          ("setup cells (the notebook's imports)", ["setup cells"]),
          ("learner cells", ["learner cells"]),
          ("test cells", ["test cells"]),
          ("the guard's look after each cell", ["the guard's look after each cell"]),
          ("kernel shutdown", ["execute", "-kernel start", "-setup cells", "-learner cells",
                               "-test cells", "-the guard's look after each cell"]),
          ("nbgrader bookkeeping", ["autograde", "-execute"]),
          ("feedback", ["feedback"]),
          ("own checks (prevalidation, integrity, scans)", ["own checks"]),
          ("side table and CSV writes", ["csv writes"])]


def profile_table(path: Path, began: float | None = None,
                  ended: float | None = None) -> list[str]:
    """The profile's lines: seconds per phase summed over the class; with ``began`` and
    ``ended`` (the run's start and end, ``time.time()``), the seconds before the first
    submission's grading began and after the last one's ended (start-up, release, summary)."""
    sums: dict[str, float] = {}
    first, last = float("inf"), 0.0
    marks: list[tuple[float, str]] = []  # the grader's phases (autograder.grading.run.mark_phase)
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if "phase" in entry:
            marks.append((entry["at"], entry["phase"]))
            continue
        for k, v in entry.items():
            if k == "began":
                first = min(first, v)
            elif k == "ended":
                last = max(last, v)
            elif isinstance(v, (int, float)):
                sums[k] = sums.get(k, 0.0) + v
    lines = []
    for label, keys in PHASES:
        secs = sum(-sums.get(k[1:], 0.0) if k.startswith("-") else sums.get(k, 0.0)
                   for k in keys)
        lines.append(f"    {label:<46} {secs:8.1f} s")
    lines.append(f"    {'total in workers':<46} {sums.get('total', 0.0):8.1f} s")
    if began is not None and ended is not None and last:
        lines.append(f"    {'wall: before the first submission':<46} {first - began:8.1f} s")
        lines.append(f"    {'wall: after the last submission':<46} {ended - last:8.1f} s")
        marks = sorted(marks + [(began, "Python start-up and imports"), (ended, "")])
        lines.append("  the grader's phases, wall seconds:")
        for (at, phase), (after, _) in zip(marks, marks[1:]):
            lines.append(f"    {phase:<46} {after - at:8.1f} s")
    return lines


def grade_plain(root: Path, name: str, counts: dict[str, int]) -> tuple[float, float, Path]:
    """Grade ``root/class`` with plain nbgrader: the same config, nbgrader's own commands,
    sequential. Returns its wall seconds, CPU seconds and workspace."""
    plain_ws = root / "plain"
    (root / "empty-class").mkdir()  # grading no one writes the workspace's config
    subprocess.run([sys.executable, "-m", "autograder", "grade", str(root / "empty-class"),
                    "--workspace", str(plain_ws), "--no-progress"], env=env(),
                   capture_output=True, check=True)
    shutil.copytree(root / "class", plain_ws / "submitted")
    nbg = [sys.executable, "-m", "nbgrader"]
    meter = CpuMeter(f"{name}-plain")
    t_plain = 0.0
    for assignment in counts:
        for step in ("generate_assignment", "autograde", "generate_feedback"):
            t_plain += timed(nbg + [step, assignment, "--force"], plain_ws, meter=meter,
                             warm=False)
    return t_plain, meter.seconds(), plain_ws


def scores(plain_ws: Path, ours_ws: Path, counts: dict[str, int]) -> tuple[dict, dict]:
    """Each submission's score, (student, assignment) -> points: plain nbgrader's from its
    gradebook, ours from grades.csv."""
    from nbgrader.api import Gradebook

    plain = {}
    with Gradebook(f"sqlite:///{plain_ws / 'gradebook.db'}") as gb:
        for assignment in counts:
            plain.update({(s.student.id, assignment): s.score
                          for s in gb.find_assignment(assignment).submissions})
    with (ours_ws / "grades.csv").open() as f:
        ours = {(r["student_id"], r["assignment"]): float(r["score"])
                for r in csv.DictReader(f)}
    return plain, ours


def bench(tmp: Path, name: str, counts: dict[str, int], jobs: int | None,
          profile: bool) -> dict:
    """Grade one class both ways; return the result (times, ratio, CPU floor, profile)."""
    root = tmp / name
    offset = 0
    for assignment, n in counts.items():
        make_class(root / "class", n, assignment, offset)
        offset += n
    t_plain, cpu_plain, plain_ws = grade_plain(root, name, counts)
    # ours
    ours_ws = root / "ours"
    prof = root / "profile.jsonl" if profile else None
    cmd = [sys.executable, "-m", "autograder", "grade", str(root / "class"), "--workspace",
           str(ours_ws), "--no-progress"] + (["--jobs", str(jobs)] if jobs else [])
    meter = CpuMeter(f"{name}-ours")
    began = time.time()
    t_ours = timed(cmd, REPO, prof, meter)
    ended = time.time()
    time.sleep(0.5)  # the warm sandboxes die with their workers
    cpu_ours = meter.seconds()
    plain, ours = scores(plain_ws, ours_ws, counts)
    cores = os.cpu_count() or 1
    result = {"benchmark": "grading_class", "class": name, "submissions": sum(counts.values()),
              "assignments": list(counts), "jobs": jobs or "default",
              "plain_nbgrader_s": round(t_plain, 2), "autograder_s": round(t_ours, 2),
              "speedup": round(t_plain / t_ours, 3), "identical_scores": plain == ours,
              "plain_cpu_s": round(cpu_plain, 1), "autograder_cpu_s": round(cpu_ours, 1),
              "cores": cores, "cpu_floor_s": round(cpu_plain / cores, 2)}
    print(f"class {name}: {sum(counts.values())} submissions "
          f"({', '.join(f'{n} {a}' for a, n in counts.items())}), {cores} cores")
    subs = sum(counts.values())
    print(f"  plain nbgrader (sequential): {t_plain:7.1f} s  ({cpu_plain:.1f} CPU s, "
          f"{cpu_plain / subs:.2f} a notebook)")
    print(f"  autograder --jobs {jobs or 'default'}:  {t_ours:7.1f} s  ({cpu_ours:.1f} CPU s, "
          f"{cpu_ours / subs:.2f} a notebook)")
    print(f"  speed-up: {t_plain / t_ours:.2f}x; identical scores: {plain == ours}")
    print(f"  CPU floor (plain run's CPU seconds / {cores} cores): {cpu_plain / cores:.1f} s; "
          f"grading took {t_ours / (cpu_plain / cores):.2f}x the floor")
    if prof is not None and prof.is_file():
        print("  profile of autograder grade, seconds summed over the class:")
        print("\n".join(profile_table(prof, began, ended)))
    if plain != ours:
        result["differences"] = {f"{k[0]}/{k[1]}": (plain.get(k), ours.get(k))
                                 for k in set(plain) | set(ours) if plain.get(k) != ours.get(k)}
        print(f"  scores differ: {result['differences']}")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="submissions in the ex01 class")
    parser.add_argument("--jobs", type=int, default=None,
                        help="autograder grade --jobs (default: grade's own default)")
    parser.add_argument("--profile", action="store_true",
                        help="print where grading's time goes, summed over the class")
    parser.add_argument("--mixed", type=int, default=0, metavar="N",
                        help="also grade a class of N ex01 + N ex02 + N ex05 submissions")
    parser.add_argument("--only-mixed", action="store_true", help="skip the ex01 class")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if not args.only_mixed:
            results.append(bench(tmp, "ex01", {A: args.n}, args.jobs, args.profile))
        if args.mixed:
            results.append(bench(tmp, "mixed", {A: args.mixed, "ex02_numpy_attention":
                                                args.mixed, "ex05_torch_attention": args.mixed},
                                 args.jobs, args.profile))
    out = REPO / "_build" / "bench.jsonl"
    out.parent.mkdir(exist_ok=True)
    with out.open("a") as f:
        for result in results:
            f.write(json.dumps(result) + "\n")
    return 0 if all(r["identical_scores"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
