"""Attention benchmarks: each result is a ratio against a baseline measured in the same run.

    python benchmarks/bench_attention.py [--quick] [--output _build/bench.jsonl]

Comparisons (the course's reference implementations, ``autograder/reference/``):

1. ``numpy_vs_python``: NumPy attention against pure-Python attention at T = 128, d_k = 64
   (speed-up of NumPy);
2. ``torch_vs_builtin``: the course's torch attention against
   ``torch.nn.functional.scaled_dot_product_attention`` at B = 4, num_heads = 8, T = 1024,
   d_k = 64, float32 on the CPU (time ratio, course / built-in);
3. ``tiled_vs_dense``: tiled against dense NumPy attention at T = 4096, d_k = 64, float64,
   blocks of 64 (time ratio and peak-memory ratio, tiled / dense).

Each comparison prints one line and appends one JSON object per metric to the output file
(keys: ``benchmark, metric, ratio, baseline, candidate, baseline_value, candidate_value,
unit, params, quick, run, timestamp, machine``). ``--quick`` uses tiny sizes (a smoke test,
not a measurement). ``--threads N`` pins the BLAS and torch thread pools to N threads: on a
machine whose cores are busy with other work, multithreaded BLAS can wait for descheduled
threads on every small product, and one thread gives steadier numbers. Nothing here asserts
a time: machines differ; the ratios are the result.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import uuid
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run as a script from anywhere: `autograder` is importable

from autograder.measure import attention_flops, best_time, peak_traced_memory  # noqa: E402
from autograder.reference import numpy_attention, python_attention  # noqa: E402
from autograder.reference.tiled_attention import tiled_attention  # noqa: E402

DEFAULT_OUTPUT = REPO / "_build" / "bench.jsonl"
# Read by OpenBLAS, MKL and OpenMP when they are loaded, hence set before Python starts.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
FULL = {
    "numpy_vs_python": {"T": 128, "d_k": 64},
    "torch_vs_builtin": {"B": 4, "num_heads": 8, "T": 1024, "d_k": 64},
    "tiled_vs_dense": {"T": 4096, "d_k": 64, "block_size": 64},
}
QUICK = {
    "numpy_vs_python": {"T": 8, "d_k": 4},
    "torch_vs_builtin": {"B": 1, "num_heads": 2, "T": 16, "d_k": 8},
    "tiled_vs_dense": {"T": 64, "d_k": 8, "block_size": 16},
}


def machine() -> dict:
    import torch

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        **{name: os.environ.get(name) for name in THREAD_VARIABLES},
    }


def numpy_vs_python(T: int, d_k: int, repeat: int) -> list[dict]:
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((T, d_k)) for _ in range(3))
    lists = [x.tolist() for x in (Q, K, V)]
    t_python = best_time(python_attention.scaled_dot_product_attention, *lists,
                         number=1, repeat=1, warmup=0)
    t_numpy = best_time(numpy_attention.scaled_dot_product_attention, Q, K, V, repeat=repeat)
    flops = attention_flops(1, 1, T, T, d_k)
    print(f"numpy_vs_python   T={T}, d_k={d_k}: pure Python {t_python:.4g} s, "
          f"NumPy {t_numpy:.4g} s -> NumPy is {t_python / t_numpy:,.0f}x faster "
          f"({flops / t_python / 1e9:.3g} vs {flops / t_numpy / 1e9:.3g} GFLOP/s)")
    return [{"metric": "speedup", "ratio": t_python / t_numpy,
             "baseline": "python_attention.scaled_dot_product_attention",
             "candidate": "numpy_attention.scaled_dot_product_attention",
             "baseline_value": t_python, "candidate_value": t_numpy, "unit": "s",
             "flops": flops}]


def torch_vs_builtin(B: int, num_heads: int, T: int, d_k: int, repeat: int) -> list[dict]:
    import torch
    import torch.nn.functional as F

    from autograder.reference import torch_attention

    gen = torch.Generator().manual_seed(0)
    Q, K, V = (torch.randn(B, num_heads, T, d_k, generator=gen) for _ in range(3))
    with torch.inference_mode():
        ours = torch_attention.scaled_dot_product_attention(Q, K, V)
        builtin = F.scaled_dot_product_attention(Q, K, V)
        torch.testing.assert_close(ours, builtin, rtol=1e-4, atol=1e-5)  # same computation
        t_ours = best_time(torch_attention.scaled_dot_product_attention, Q, K, V,
                           repeat=repeat)
        t_builtin = best_time(F.scaled_dot_product_attention, Q, K, V, repeat=repeat)
    flops = attention_flops(B, num_heads, T, T, d_k)
    print(f"torch_vs_builtin  B={B}, num_heads={num_heads}, T={T}, d_k={d_k}, float32 CPU: "
          f"course {t_ours:.4g} s, F.scaled_dot_product_attention {t_builtin:.4g} s -> "
          f"time ratio {t_ours / t_builtin:.2f} "
          f"({flops / t_ours / 1e9:.3g} vs {flops / t_builtin / 1e9:.3g} GFLOP/s)")
    return [{"metric": "time_ratio", "ratio": t_ours / t_builtin,
             "baseline": "torch.nn.functional.scaled_dot_product_attention",
             "candidate": "torch_attention.scaled_dot_product_attention",
             "baseline_value": t_builtin, "candidate_value": t_ours, "unit": "s",
             "flops": flops}]


def tiled_vs_dense(T: int, d_k: int, block_size: int, repeat: int) -> list[dict]:
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((T, d_k)) for _ in range(3))

    def dense(Q, K, V):
        return numpy_attention.scaled_dot_product_attention(Q, K, V)[0]

    out_dense, mem_dense = peak_traced_memory(dense, Q, K, V)
    out_tiled, mem_tiled = peak_traced_memory(tiled_attention, Q, K, V, block_size=block_size)
    np.testing.assert_allclose(out_tiled, out_dense, rtol=1e-10, atol=1e-10)  # same output
    del out_dense, out_tiled
    t_dense = best_time(dense, Q, K, V, repeat=repeat)
    t_tiled = best_time(tiled_attention, Q, K, V, block_size=block_size, repeat=repeat)
    print(f"tiled_vs_dense    T={T}, d_k={d_k}, block_size={block_size}, float64: "
          f"dense {t_dense:.4g} s and {mem_dense / 2**20:.1f} MiB, tiled {t_tiled:.4g} s and "
          f"{mem_tiled / 2**20:.1f} MiB -> time ratio {t_tiled / t_dense:.2f}, "
          f"peak-memory ratio {mem_tiled / mem_dense:.3f}")
    common = {"baseline": "numpy_attention.scaled_dot_product_attention",
              "candidate": "tiled_attention.tiled_attention"}
    return [
        {"metric": "time_ratio", "ratio": t_tiled / t_dense, **common,
         "baseline_value": t_dense, "candidate_value": t_tiled, "unit": "s",
         "flops": attention_flops(1, 1, T, T, d_k)},
        {"metric": "peak_memory_ratio", "ratio": mem_tiled / mem_dense, **common,
         "baseline_value": mem_dense, "candidate_value": mem_tiled, "unit": "bytes"},
    ]


BENCHMARKS = {"numpy_vs_python": numpy_vs_python, "torch_vs_builtin": torch_vs_builtin,
              "tiled_vs_dense": tiled_vs_dense}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes: checks that everything runs, measures nothing")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT,
                        help=f"JSON lines file to append to (default {DEFAULT_OUTPUT})")
    parser.add_argument("--only", choices=sorted(BENCHMARKS), action="append",
                        help="run only this comparison (repeatable)")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="pin BLAS and torch to N threads (default: the libraries' own)")
    args = parser.parse_args(argv)
    if args.threads is not None:
        if args.threads < 1:
            parser.error(f"--threads must be at least 1, got {args.threads}")
        wanted = str(args.threads)
        if any(os.environ.get(name) != wanted for name in THREAD_VARIABLES):
            # BLAS has already read its thread count: start again with the variables set.
            env = {**os.environ, **{name: wanted for name in THREAD_VARIABLES}}
            script = str(Path(__file__).resolve())
            argv = sys.argv[1:] if argv is None else argv
            os.execve(sys.executable, [sys.executable, script, *argv], env)
        import torch

        torch.set_num_threads(args.threads)

    sizes = QUICK if args.quick else FULL
    repeat = 1 if args.quick else 3
    run = {"quick": args.quick, "run": uuid.uuid4().hex[:12],
           "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "machine": machine()}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with args.output.open("a", encoding="utf-8") as out:
        for name in args.only or BENCHMARKS:
            for record in BENCHMARKS[name](**sizes[name], repeat=repeat):
                line = {"benchmark": name, **record, "params": sizes[name], **run}
                out.write(json.dumps(line) + "\n")
    print(f"results appended to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
