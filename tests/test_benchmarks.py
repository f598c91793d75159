"""Smoke test of benchmarks/bench_attention.py: --quick runs and writes its JSON lines.

No time is asserted (machines differ); only that each comparison ran and reported a ratio.
"""

from __future__ import annotations

import json
import math
import sys

import pytest
from conftest import REPO, run

SCRIPT = REPO / "benchmarks" / "bench_attention.py"
pytestmark = pytest.mark.slow  # runs the benchmark scripts
KEYS = {"benchmark", "metric", "ratio", "baseline", "candidate", "baseline_value",
        "candidate_value", "unit", "params", "quick", "run", "timestamp", "machine"}


def _quick(script, out, *extra):
    proc = run([sys.executable, str(script), "--quick", "--output", str(out), *extra],
               timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_quick_run_writes_json_lines(tmp_path):
    out = tmp_path / "sub" / "bench.jsonl"  # the folder is created if missing
    _proc, records = _quick(SCRIPT, out)
    assert records, "no results written"
    for r in records:
        assert KEYS <= set(r), f"missing keys {KEYS - set(r)} in {r}"
        assert r["quick"] is True
        assert math.isfinite(r["ratio"]) and r["ratio"] > 0, r
        assert r["baseline_value"] > 0 and r["candidate_value"] > 0, r
    assert len({r["run"] for r in records}) == 1  # one run id for the whole invocation


def test_attention_benchmark_reports_every_comparison(tmp_path):
    """All three comparisons, appended to earlier results, with BLAS pinned to one thread."""
    out = tmp_path / "bench.jsonl"
    out.write_text('{"benchmark": "earlier run"}\n', encoding="utf-8")
    proc, records = _quick(SCRIPT, out, "--threads", "1")
    assert records[0] == {"benchmark": "earlier run"}  # results are appended, not replaced
    got = {(r["benchmark"], r["metric"]) for r in records[1:]}
    assert got == {("numpy_vs_python", "speedup"), ("torch_vs_builtin", "time_ratio"),
                   ("tiled_vs_dense", "time_ratio"), ("tiled_vs_dense", "peak_memory_ratio")}
    for name in ("numpy_vs_python", "torch_vs_builtin", "tiled_vs_dense"):
        assert name in proc.stdout  # one printed line per comparison
    assert all(r["machine"]["OPENBLAS_NUM_THREADS"] == "1" and r["machine"]["torch_threads"] == 1
               for r in records[1:])
    memory = next(r for r in records[1:] if r["metric"] == "peak_memory_ratio")
    assert memory["unit"] == "bytes" and memory["ratio"] < 1  # tiled holds less than dense
