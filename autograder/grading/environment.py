"""The environment of the processes grading starts: the grading workers
(:mod:`~autograder.grading.pool`), their kernels, and nbgrader's own commands
(:mod:`~autograder.grading.release`)."""

from __future__ import annotations

import os
import sys


def child_env() -> dict:
    """Environment of the processes grading starts (workers, kernels, nbgrader)."""
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
