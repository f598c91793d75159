"""Grading cost as the class grows (issue 25): the same per submission at 40, 400 and 2,000.

For each class size N an ex01 class is generated (benchmarks/bench_grading.py's mix: a correct,
an untouched and each wrong variant of tests/implementations/ in turn) and graded with
``python -m autograder grade`` (default --jobs) in a fresh workspace; nbgrader alone is not
run. Class generation is not timed. Measured, from the grader's own phase marks
(``$AUTOGRADER_PROFILE``, autograder.grading.run.mark_phase):

- s/sub: seconds of the grading phase (the first submission handed out to the last one
  recorded) divided by N; ``wall/sub``: the whole command's wall seconds divided by N
  (start-up, release and end-of-run included: fixed costs shrink per submission);
- grader MiB: the peak resident memory of the grading process itself (the parent that holds
  the rows and writes the CSV files; its workers and their kernels are not counted), its
  own ``ru_maxrss`` at its last mark; tree MiB: the largest single process of its tree
  (the grader, its workers, the kernels and sandboxes they waited for: ``wait4``'s rusage);
- CPU/sub: CPU seconds (user + system) of the command and the processes of its tree it
  waited for, divided by N: less sensitive than wall seconds to other work on the machine;
- end s: the end-of-run work, after the last submission is recorded: grades.csv,
  tests.csv and the summary derived from the gradebook, the class reports, the workers
  stopped (the marks "grades.csv and summary" to "end").

Prints a table with each size's numbers and their ratios to the first (smallest) size,
appends one JSON line to _build/bench.jsonl, and exits 1 when s/sub at the largest size is
over 15 % above the first's. Wall-clock times on a loaded machine (other work on its cores)
can fail this without any change to the grader; no test asserts it.

Usage: python benchmarks/bench_scaling.py [--class-size 40,400,2000 (default 40,400)] [--jobs J] [--keep DIR]
(40, 400 and 2,000 ex01 submissions took 0.5, 3.5 and 14 minutes on 2 cores, stop 47.)
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_grading import REPO, env, make_class  # noqa: E402

LIMIT = 1.15  # s/sub at the largest size over the first's


def grade(root: Path, n: int, jobs: int | None) -> dict:
    """Generate a class of ``n``, grade it in a fresh workspace; return its measurements."""
    make_class(root / "class", n)
    ws, prof = root / "ws", root / "profile.jsonl"
    cmd = [sys.executable, "-m", "autograder", "grade", str(root / "class"), "--workspace",
           str(ws), "--no-progress"] + (["--jobs", str(jobs)] if jobs else [])
    with (root / "out.log").open("w") as out:
        began = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=REPO, env=env(prof), stdout=out,
                                stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's tree's rusage, alone
        wall = time.perf_counter() - began
    proc.returncode = os.waitstatus_to_exitcode(status)
    log = (root / "out.log").read_text()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{log[-3000:]}")
    marks, peak = {}, 0
    for line in prof.read_text().splitlines():
        entry = json.loads(line)
        if "phase" in entry:
            marks[entry["phase"]] = entry["at"]
            peak = max(peak, entry.get("maxrss_kb") or 0)
    with (ws / "grades.csv").open() as f:
        statuses = Counter(r["status"] for r in csv.DictReader(f))
    if sum(statuses.values()) != n:
        raise SystemExit(f"class of {n}: grades.csv has {sum(statuses.values())} rows")
    grading = marks["grades.csv and summary"] - marks["grading"]
    return {"submissions": n, "s_per_sub": grading / n, "grading_s": grading,
            "wall_s": wall, "wall_per_sub": wall / n,
            "end_s": marks["end"] - marks["grades.csv and summary"],
            "grader_mib": peak / 1024, "tree_mib": usage.ru_maxrss / 1024,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "cpu_per_sub": (usage.ru_utime + usage.ru_stime) / n, "statuses": dict(statuses),
            "summary": [ln for ln in log.splitlines() if ln.startswith(("graded ", "ex01"))]}


def table(results: list[dict]) -> list[str]:
    """The printed table: absolute numbers, then ratios to the first size."""
    base = results[0]
    head = (f"{'N':>6} {'s/sub':>7} {'x':>6} {'wall/sub':>8} {'x':>6} {'CPU/sub':>7} {'x':>6} "
            f"{'grader MiB':>10} "
            f"{'x':>6} {'tree MiB':>8} {'x':>6} {'end s':>7} {'x':>6} {'end/sub x':>9}")
    lines = [head]
    for r in results:
        def ratio(key, per=False):
            a, b = r[key], base[key]
            if per:
                a, b = a / r["submissions"], b / base["submissions"]
            return a / b if b else float("nan")
        r["ratios"] = {"s_per_sub": ratio("s_per_sub"), "wall_per_sub": ratio("wall_per_sub"),
                       "cpu_per_sub": ratio("cpu_per_sub"),
                       "grader_mib": ratio("grader_mib"), "tree_mib": ratio("tree_mib"),
                       "end_s": ratio("end_s"), "end_per_sub": ratio("end_s", per=True)}
        x = r["ratios"]
        lines.append(f"{r['submissions']:>6} {r['s_per_sub']:7.3f} {x['s_per_sub']:6.2f} "
                     f"{r['wall_per_sub']:8.3f} {x['wall_per_sub']:6.2f} "
                     f"{r['cpu_per_sub']:7.3f} {x['cpu_per_sub']:6.2f} "
                     f"{r['grader_mib']:10.0f} {x['grader_mib']:6.2f} "
                     f"{r['tree_mib']:8.0f} {x['tree_mib']:6.2f} "
                     f"{r['end_s']:7.2f} {x['end_s']:6.2f} {x['end_per_sub']:9.2f}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--class-size", default="40,400",
                        help="comma-separated class sizes; ratios are to the first")
    parser.add_argument("--jobs", type=int, default=None,
                        help="autograder grade --jobs (default: grade's own default)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep each size's class, workspace and profile under this folder")
    args = parser.parse_args()
    sizes = [int(s) for s in args.class_size.split(",")]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            root = (args.keep or Path(tmp)) / f"class-{n}"
            if root.exists():
                shutil.rmtree(root)
            r = grade(root, n, args.jobs)
            results.append(r)
            print(f"class of {n}: grading {r['grading_s']:.1f} s, whole command "
                  f"{r['wall_s']:.1f} s, {r['cpu_s']:.0f} CPU s; {r['statuses']}", flush=True)
            if args.keep is None:
                shutil.rmtree(root)  # 2,000 feedback pages: leave the disk as it was
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"\ngrading ex01 classes, --jobs {args.jobs or 'default'}, {cores} cores; "
          f"x: ratio to the class of {sizes[0]}")
    print("\n".join(table(results)))
    print("s/sub: grading phase / N; wall/sub: the whole command / N; CPU/sub: CPU seconds of "
          "the command's process tree / N (less sensitive to other work on the machine); "
          "grader MiB: the grading process's own peak RSS; tree MiB: the largest process of "
          "its tree; end s: grades.csv, summary, reports and worker stop after the last "
          "submission")
    worst = results[-1]["ratios"]["s_per_sub"]
    ok = worst <= LIMIT
    print(f"s/sub at {sizes[-1]}: {worst:.2f}x the class of {sizes[0]} "
          f"({'within' if ok else 'OVER'} the {LIMIT - 1:.0%} allowed; wall-clock times on a "
          "loaded machine can fail this with no change to the grader)")
    out = REPO / "_build" / "bench.jsonl"
    out.parent.mkdir(exist_ok=True)
    record = {"benchmark": "grading_scaling", "assignment": "ex01_python_attention",
              "sizes": sizes, "jobs": args.jobs or "default", "cores": cores,
              "machine": platform.node(), "timestamp": time.time(), "limit": LIMIT,
              "within_limit": ok, "results": [{k: (round(v, 4) if isinstance(v, float) else v)
                                               for k, v in r.items()} for r in results]}
    with out.open("a") as f:
        f.write(json.dumps(record) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
