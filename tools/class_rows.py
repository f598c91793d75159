"""The test classes' rows, to show that a restructuring changed no grade (issue 24).

For every exercise (or those named), grade its test class as ``tests/test_grading_contract.py``
builds it (the reference solution, the untouched stub and every implementation under
``tests/implementations/<assignment>/``) with ``python -m autograder grade``, and write every
row of ``grades.csv`` and ``tests.csv`` to one JSON file. Run it before and after a change,
then compare::

    python tools/class_rows.py --output before.json          # on the old commit
    python tools/class_rows.py --output after.json           # on the new one
    python tools/class_rows.py --compare before.json after.json

``--compare`` prints each row that differs (student, assignment, test, column: old -> new)
and exits 1 when any does, 0 with the number of identical rows when none does.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
import nbformat  # noqa: E402
from conftest import grade  # noqa: E402
from submissions import filled_notebook, parse_variant, variants, write_submission  # noqa: E402

import autograder  # noqa: E402
from autograder.config import EXERCISES  # noqa: E402


def class_rows(assignment: str, root: Path, jobs: int) -> dict:
    """Grade ``assignment``'s test class under ``root``; its rows keyed by student (and test)."""
    subs, ws = root / "submitted", root / "workspace"
    write_submission(subs, "reference", assignment, filled_notebook(assignment))
    stub = nbformat.read(EXERCISES / assignment / f"{assignment}.ipynb", as_version=4)
    write_submission(subs, "stub", assignment, stub)
    for name, path in variants(assignment).items():
        cells, _ = parse_variant(path)
        write_submission(subs, name, assignment, filled_notebook(assignment, cells))
    proc, rows, tests = grade(subs, ws, jobs=jobs, env={"LANG": "C", "LC_ALL": "C",
                                                        "PYTHONUTF8": "0"})
    if not rows:
        raise SystemExit(f"{assignment}: no grades.csv (exit {proc.returncode}):\n"
                         f"{proc.stderr[-2000:]}")
    return {"grades": rows, "tests": tests}


def differences(old: dict, new: dict, where: str = "") -> list[str]:
    """Every leaf that differs between two nested dicts of strings, as ``where: a -> b``."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b, here = old.get(key), new.get(key), f"{where}/{key}"
        if isinstance(a, dict) and isinstance(b, dict):
            out += differences(a, b, here)
        elif a != b:
            out.append(f"{here}: {a!r} -> {b!r}")
    return out


def count_rows(data: dict) -> int:
    """How many grades.csv and tests.csv rows the dump holds."""
    return sum(len(c["grades"]) + sum(len(t) for t in c["tests"].values())
               for c in data.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignments", nargs="*", help="default: every exercise")
    parser.add_argument("--output", type=Path, help="write the rows here (JSON)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"))
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    if args.compare:
        old, new = (json.loads(p.read_text(encoding="utf-8")) for p in args.compare)
        diff = differences(old, new)
        print("\n".join(diff) if diff else
              f"identical: {count_rows(old)} rows over {len(old)} classes")
        return 1 if diff else 0
    if not args.output:
        parser.error("--output or --compare is needed")
    out = {}
    with tempfile.TemporaryDirectory(prefix="class-rows-") as tmp:
        for assignment in args.assignments or list(autograder.ASSIGNMENTS):
            out[assignment] = class_rows(assignment, Path(tmp, assignment), args.jobs)
            print(f"{assignment}: {len(out[assignment]['grades'])} submissions", flush=True)
    args.output.write_text(json.dumps(out, indent=1, sort_keys=True), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
