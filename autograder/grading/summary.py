"""The summary an instructor reads after grading: score histograms and per-test pass rates."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path


def write_summary(workspace: Path, rows: list[dict], tests: list[dict]) -> list[str]:
    """Write ``summary-<assignment>.png`` (a histogram of the scores) and
    ``test_pass_rates.csv``; return printable lines.

    The pass rate of an autograded test is the share of graded submissions that got all
    its points; it shows which behaviours the class got wrong. Written answers graded by
    hand have none.
    """
    # matplotlib's Figure with its Agg canvas, not pyplot (no backend machinery to import).
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    lines = []
    by_assignment: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_assignment[r["assignment"]].append(r)
    rates = []
    for assignment, group in sorted(by_assignment.items()):
        scores = [float(r["score"] or 0) for r in group]
        max_score = max((float(r["max_score"] or 0) for r in group), default=0.0)
        statuses: dict[str, int] = defaultdict(int)
        for r in group:
            statuses[r["status"]] += 1
        mean = sum(scores) / len(scores) if scores else 0.0
        lines.append(f"{assignment}: {len(group)} submission(s), mean {mean:.1f} / {max_score:g}; "
                     + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
        fig = Figure(figsize=(6, 3.5))
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        ax.hist(scores, bins=min(20, max(5, int(max_score) + 1)), range=(0, max(max_score, 1)),
                color="#3465a4", edgecolor="white")
        ax.set_xlabel("score")
        ax.set_ylabel("submissions")
        ax.set_title(f"{assignment}: {len(group)} submissions, mean {mean:.1f} of {max_score:g}")
        fig.tight_layout()
        fig.savefig(workspace / f"summary-{assignment}.png", dpi=100)
        per_test: dict[str, list[bool]] = defaultdict(list)
        for t in tests:
            # Autograded tests only: a written answer has no pass rate (graded by hand).
            if t["assignment"] == assignment and t.get("kind") != "manual" and str(
                    t["needs_manual_grade"]) != "True":
                per_test[t["test"]].append(float(t["score"] or 0) >= float(t["max_score"]))
        for name, passed in per_test.items():
            rate = sum(passed) / len(passed)
            rates.append({"assignment": assignment, "test": name, "submissions": len(passed),
                          "pass_rate": f"{rate:.3f}"})
        worst = sorted(((sum(p) / len(p), n) for n, p in per_test.items()))[:3]
        if worst:
            lines.append("  hardest tests: " + ", ".join(f"{n} ({r:.0%} passed)" for r, n in worst))
    with (workspace / "test_pass_rates.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["assignment", "test", "submissions", "pass_rate"])
        w.writeheader()
        w.writerows(rates)
    return lines
