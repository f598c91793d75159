"""Grading a class: `python -m autograder grade --jobs 2` against plain sequential nbgrader.

A generated class of 40 ex01 submissions (correct, untouched and wrong ones mixed) is
graded twice in the same run, each in a fresh workspace with the course's nbgrader config:

- plain: `nbgrader generate_assignment`, `nbgrader autograde` (all students, one process,
  one after another) and `nbgrader generate_feedback`;
- ours:  `python -m autograder grade --jobs 2` (release, autograde and feedback).

Prints both times and their ratio, checks that every student got the same score, and
appends a JSON line to _build/bench.jsonl. Usage: python benchmarks/bench_grading.py [--n 40]
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


def make_class(root: Path, n: int) -> None:
    import nbformat

    kinds = [("correct", filled_notebook(A))]
    kinds.append(("stub", nbformat.read(EXERCISES / A / f"{A}.ipynb", as_version=4)))
    for name, path in variants(A).items():
        kinds.append((name, filled_notebook(A, parse_variant(path)[0])))
    for i in range(n):
        kind, nb = kinds[i % len(kinds)]
        write_submission(root, f"student{i:03d}-{kind}", A, nb)


def env() -> dict:
    e = dict(os.environ)
    e["PATH"] = os.path.dirname(sys.executable) + os.pathsep + e.get("PATH", "")
    return e


def timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env(), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="submissions in the class")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        make_class(tmp / "class", args.n)
        # plain nbgrader: the same config, nbgrader's own commands, sequential
        plain_ws = tmp / "plain"
        (tmp / "empty-class").mkdir()  # grading no one writes the workspace's config
        subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp / "empty-class"),
                        "--workspace", str(plain_ws), "--no-progress"], env=env(),
                       capture_output=True, check=True)
        shutil.copytree(tmp / "class", plain_ws / "submitted")
        nbg = [sys.executable, "-m", "nbgrader"]
        t_plain = timed(nbg + ["generate_assignment", A, "--force"], plain_ws)
        t_plain += timed(nbg + ["autograde", A, "--force"], plain_ws)
        t_plain += timed(nbg + ["generate_feedback", A, "--force"], plain_ws)
        # ours
        ours_ws = tmp / "ours"
        t_ours = timed([sys.executable, "-m", "autograder", "grade", str(tmp / "class"),
                        "--workspace", str(ours_ws), "--jobs", str(args.jobs), "--no-progress"],
                       REPO)
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{plain_ws / 'gradebook.db'}") as gb:
            plain = {s.student.id: s.score for s in gb.find_assignment(A).submissions}
        with (ours_ws / "grades.csv").open() as f:
            ours = {r["student_id"]: float(r["score"]) for r in csv.DictReader(f)}
        same = plain == ours
        result = {"benchmark": "grading_class", "submissions": args.n, "jobs": args.jobs,
                  "plain_nbgrader_s": round(t_plain, 2), "autograder_s": round(t_ours, 2),
                  "speedup": round(t_plain / t_ours, 3), "identical_scores": same}
    print(f"class of {args.n} ex01 submissions, {os.cpu_count()} cores")
    print(f"  plain nbgrader (sequential): {t_plain:7.1f} s")
    print(f"  autograder --jobs {args.jobs}:        {t_ours:7.1f} s")
    print(f"  speed-up: {t_plain / t_ours:.2f}x; identical scores: {same}")
    out = REPO / "_build" / "bench.jsonl"
    out.parent.mkdir(exist_ok=True)
    with out.open("a") as f:
        f.write(json.dumps(result) + "\n")
    if not same:
        diff = {k: (plain.get(k), ours.get(k)) for k in set(plain) | set(ours)
                if plain.get(k) != ours.get(k)}
        print(f"  scores differ: {diff}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
