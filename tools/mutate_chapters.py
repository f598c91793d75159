"""Mutation run of the chapters' claims: does a false claim break the build?

For every claim of ``chapters/claims.yml`` and every mutation listed with it (a constant,
a factor, a sign or an inequality of the claim changed so that the claim becomes false),
this script makes a copy of the chapter with that one change in the named cell, executes the
copy cell by cell in a fresh kernel, as the book build does (working directory
``chapters/``), and records the first cell that fails:

- ``killed``: a cell raised ``AssertionError`` (``assert``, ``np.testing``,
  ``torch.testing``): the chapter's checks caught the false claim;
- ``error``: a cell raised another exception (the mutation broke the code rather than the
  claim; it would fail the build too, but is not counted as a kill);
- ``survived``: every cell ran: the false claim would have been published.

The kill rate of a chapter is killed / mutations. Each chapter is first executed unchanged
(the control); a chapter whose control fails is reported and its mutations are skipped.

Usage (from the course folder, with the course's virtual environment)::

    python tools/mutate_chapters.py                      # every chapter, one kernel at a time
    python tools/mutate_chapters.py 03_why_sqrt_dk -j 2  # one chapter, two kernels at once
    python tools/mutate_chapters.py --dry-run            # only check that every mutation applies
    python tools/mutate_chapters.py --keep DIR           # also write each mutated chapter (.md)

The results are printed (one line per mutation, then a table per chapter) and written to
``_build/mutations.json`` (``--output``); each result is also appended, as it comes, to
``_build/mutations.json.partial.jsonl``, and ``--resume`` skips the mutations recorded there
(a run cut short loses nothing). It takes about an hour on two shared cores; it is not part
of ``make test``.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import jupytext
import yaml

REPO = Path(__file__).resolve().parent.parent
CLAIMS = REPO / "chapters" / "claims.yml"
CHAPTERS = REPO / "chapters"


def load_claims(path: Path = CLAIMS) -> dict:
    """The claims table: {chapter name: {"checked": [...], "unchecked": [...], ...}}."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))["chapters"]


def named_cells(notebook) -> dict[str, int]:
    """{cell name: index} for the cells that carry a ``name`` in their metadata."""
    return {cell.metadata["name"]: i for i, cell in enumerate(notebook.cells)
            if cell.cell_type == "code" and "name" in cell.metadata}


@dataclass
class Mutation:
    chapter: str
    claim: str
    cell: str
    find: str
    replace: str

    @property
    def label(self) -> str:
        return f"{self.cell}: {self.find!r} -> {self.replace!r}"


def mutations_of(chapter: str, entry: dict) -> list[Mutation]:
    """The chapter's mutations, in the order of the table."""
    out = []
    for claim in entry.get("checked", []):
        for m in claim.get("mutations", []):
            if isinstance(m, dict):
                out.append(Mutation(chapter, claim["claim"], m.get("cell", claim["cell"]),
                                    m["find"], m["replace"]))
            else:
                find, replace = m
                out.append(Mutation(chapter, claim["claim"], claim["cell"], find, replace))
    return out


def read_chapter(chapter: str, chapters_dir: Path = CHAPTERS):
    return jupytext.read(chapters_dir / f"{chapter}.md")


def apply(notebook, mutation: Mutation):
    """A copy of the notebook with the mutation applied; ValueError if it does not apply
    (no such cell, or ``find`` not exactly once in it, or nothing changes)."""
    cells = named_cells(notebook)
    if mutation.cell not in cells:
        raise ValueError(f"no cell named {mutation.cell!r}")
    source = notebook.cells[cells[mutation.cell]].source
    count = source.count(mutation.find)
    if count != 1:
        raise ValueError(f"{mutation.label}: found {count} times in the cell, not once")
    if mutation.find == mutation.replace:
        raise ValueError(f"{mutation.label}: the replacement changes nothing")
    mutated = copy.deepcopy(notebook)
    mutated.cells[cells[mutation.cell]].source = source.replace(mutation.find, mutation.replace)
    return mutated


@dataclass
class Outcome:
    status: str            # "pass" (the control), "killed", "error", "survived", "timeout"
    cell: str | None       # the name (or index) of the first failing cell
    error: str | None      # its exception name and message, shortened
    seconds: float


def execute(notebook, workdir: Path, timeout: int = 600) -> Outcome:
    """Run the cells in order in a fresh kernel; stop at the first failure."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    start = time.perf_counter()
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(workdir)}})
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type != "code":
                continue
            name = cell.metadata.get("name", f"cell {index}")
            try:
                client.execute_cell(cell, index)
            except CellTimeoutError as err:
                return Outcome("timeout", name, str(err)[:200], time.perf_counter() - start)
            except CellExecutionError as err:
                status = "killed" if err.ename == "AssertionError" else "error"
                message = " ".join(f"{err.ename}: {err.evalue or ''}".split())[:200]
                return Outcome(status, name, message, time.perf_counter() - start)
    return Outcome("pass", None, None, time.perf_counter() - start)


def _key(chapter: str, label: str) -> str:
    return f"{chapter} {label}"


def run_chapter(chapter: str, entry: dict, jobs: int = 1, keep: Path | None = None,
                chapters_dir: Path = CHAPTERS, log=print, journal: Path | None = None,
                done: dict | None = None) -> dict:
    """Control run, then every mutation of one chapter; returns the chapter's record.

    ``journal``: a JSON-lines file each result is appended to as it comes; ``done``: results
    of an earlier run (by chapter and label) that are reused instead of run again.
    """
    notebook = read_chapter(chapter, chapters_dir)
    mutations = mutations_of(chapter, entry)
    done = done or {}
    if _key(chapter, "control") in done:
        control = Outcome(**done[_key(chapter, "control")])
    else:
        control = execute(read_chapter(chapter, chapters_dir), chapters_dir)
        if control.status != "pass":
            control.status = "fail"
        _append(journal, {"key": _key(chapter, "control"), **asdict(control)})
    log(f"[{chapter}] control: {control.status} ({control.seconds:.0f} s)"
        + (f" at {control.cell}: {control.error}" if control.error else ""))
    record = {"chapter": chapter, "control": asdict(control), "mutations": []}
    if control.status != "pass":
        return record

    def one(mutation: Mutation) -> dict:
        key = _key(chapter, mutation.label)
        if key in done:
            return {**asdict(mutation), **done[key]}
        mutated = apply(notebook, mutation)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            n = mutations.index(mutation)
            jupytext.write(mutated, keep / f"{chapter}.mutation{n:03d}.md", fmt="md:myst")
        outcome = execute(mutated, chapters_dir)
        if outcome.status == "pass":
            outcome.status = "survived"
        log(f"[{chapter}] {outcome.status:8s} {mutation.label}"
            + (f"  <- {outcome.cell}: {outcome.error}" if outcome.cell else ""))
        _append(journal, {"key": key, **asdict(outcome)})
        return {**asdict(mutation), **asdict(outcome)}

    if jobs <= 1:
        record["mutations"] = [one(m) for m in mutations]
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            record["mutations"] = list(pool.map(one, mutations))
    return record


def _append(journal: Path | None, row: dict) -> None:
    if journal is not None:
        with journal.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")


def _read_journal(journal: Path) -> dict:
    done = {}
    if journal.is_file():
        for line in journal.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                done[row.pop("key")] = row
    return done


def summary(records: list[dict]) -> list[dict]:
    rows = []
    for r in records:
        statuses = [m["status"] for m in r["mutations"]]
        n = len(statuses)
        rows.append({"chapter": r["chapter"], "control": r["control"]["status"],
                     "mutations": n, "killed": statuses.count("killed"),
                     "error": statuses.count("error") + statuses.count("timeout"),
                     "survived": statuses.count("survived"),
                     "kill_rate": statuses.count("killed") / n if n else None})
    return rows


def print_table(rows: list[dict], out=sys.stdout) -> None:
    print("\n| chapter | control | mutations | killed | error | survived | kill rate |", file=out)
    print("|---|---|---|---|---|---|---|", file=out)
    for r in rows:
        rate = "-" if r["kill_rate"] is None else f"{r['kill_rate']:.0%}"
        print(f"| {r['chapter']} | {r['control']} | {r['mutations']} | {r['killed']} | "
              f"{r['error']} | {r['survived']} | {rate} |", file=out)
    total = sum(r["mutations"] for r in rows)
    killed = sum(r["killed"] for r in rows)
    if total:
        print(f"| all | | {total} | {killed} | {sum(r['error'] for r in rows)} | "
              f"{sum(r['survived'] for r in rows)} | {killed / total:.0%} |", file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter names (default: every chapter)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="kernels at once (default 1)")
    parser.add_argument("--claims", type=Path, default=CLAIMS)
    parser.add_argument("--output", type=Path, default=REPO / "_build" / "mutations.json")
    parser.add_argument("--keep", type=Path, help="write each mutated chapter to this folder")
    parser.add_argument("--resume", action="store_true",
                        help="reuse the results recorded in OUTPUT.partial.jsonl by a run cut short")
    parser.add_argument("--dry-run", action="store_true",
                        help="only check that every mutation applies; execute nothing")
    args = parser.parse_args(argv)

    table = load_claims(args.claims)
    names = args.chapters or list(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        parser.error(f"not in {args.claims}: {', '.join(unknown)}")
    problems = []
    for name in names:
        notebook = read_chapter(name)
        for mutation in mutations_of(name, table[name]):
            try:
                apply(notebook, mutation)
            except ValueError as err:
                problems.append(f"{name}: {err}")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    if args.dry_run:
        print(f"{sum(len(mutations_of(n, table[n])) for n in names)} mutations apply")
        return 0

    args.output.parent.mkdir(parents=True, exist_ok=True)
    journal = args.output.with_name(args.output.name + ".partial.jsonl")
    done = _read_journal(journal) if args.resume else {}
    if not args.resume:
        journal.unlink(missing_ok=True)
    records = [run_chapter(name, table[name], args.jobs, args.keep, journal=journal, done=done)
               for name in names]
    rows = summary(records)
    print_table(rows)
    args.output.write_text(json.dumps({"summary": rows, "chapters": records}, indent=1),
                           encoding="utf-8")
    journal.unlink(missing_ok=True)
    print(f"\nwritten to {args.output}")
    return 0 if all(r["control"] == "pass" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
