"""Every environment variable the course reads, declared once, with what it does.

Read one with :meth:`EnvVar.get` (``env_vars.SANDBOX.get()``); no other module names an
``AUTOGRADER_*`` variable (tests/test_env_vars.py keeps it so). The ones a person sets
(``set_by="user"``) are listed in instructors.md's table of environment variables, which the
same test keeps equal to this module; the others the course sets for its own processes.
A kernel file (:data:`autograder.sandbox.KERNEL_FILES`): it holds names and help texts only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class EnvVar:
    """One environment variable: its ``name``, what it does (``help``), and who sets it:
    ``"user"`` (an instructor, a developer, a learner's set-up) or ``"course"`` (the course,
    for a process it starts)."""

    name: str
    help: str
    set_by: str = "user"

    def get(self, default: str = "") -> str:
        """The variable's value in this process's environment, ``default`` when unset."""
        return os.environ.get(self.name, default)

    def __str__(self) -> str:
        return self.name


ASSIGNMENT = EnvVar(
    "AUTOGRADER_ASSIGNMENT",
    "The assignment a grading kernel runs, set in the sandboxed kernel's environment.",
    set_by="course")
BWRAP = EnvVar(
    "AUTOGRADER_BWRAP",
    "The bubblewrap executable to sandbox kernels with, when `bwrap` on PATH is not the one.")
CGROUP = EnvVar(
    "AUTOGRADER_CGROUP",
    "A delegated cgroup v2 folder the grader may write, for the kernels' memory limits and "
    "ex06's peak-memory probe, when the grader's own cgroup cannot be used.")
CHECK_IDLE = EnvVar(
    "AUTOGRADER_CHECK_IDLE",
    "Seconds the process `check --warm` keeps ready waits for the next check before it exits "
    "(default 900); 0 keeps none.")
IN_NOTEBOOK_CHECK = EnvVar(
    "AUTOGRADER_IN_NOTEBOOK_CHECK",
    "Set while a check started from inside a notebook runs, so that the notebook it runs "
    "does not start another.", set_by="course")
PROFILE = EnvVar(
    "AUTOGRADER_PROFILE",
    "A file grading appends the seconds of each phase to (benchmarks/bench_grading.py "
    "--profile sets it).")
RUST_CACHE = EnvVar(
    "AUTOGRADER_RUST_CACHE",
    "Where the learner's compiled Rust libraries are kept (default: the user's cache "
    "folder).")
RUST_GRADER_CACHE = EnvVar(
    "AUTOGRADER_RUST_GRADER_CACHE",
    "The grader's own folder for Rust builds, owned by the grader's user and writable by no "
    "one else (default: ~/.cache/attention-course/rust-grader).")
SANDBOX = EnvVar(
    "AUTOGRADER_SANDBOX",
    "Whether grading kernels run in bubblewrap (\"1\") or not (\"0\"): set by `grade` "
    "(--no-sandbox) for its workers.", set_by="course")
SANDBOX_RO = EnvVar(
    "AUTOGRADER_SANDBOX_RO",
    "More folders the sandboxed kernel may read (separated by the path separator), for a "
    "Python or toolchain installed outside the usual places.")
SOLUTIONS = EnvVar(
    "AUTOGRADER_SOLUTIONS",
    "Another folder of instructor sources (a course's own copy of solutions/); grading and "
    "release read the notebooks there.")
WARM_KERNELS = EnvVar(
    "AUTOGRADER_WARM_KERNELS",
    "\"0\" starts one new sandbox and interpreter per notebook (and per ex05 probe) instead "
    "of the warm kernels (and probes) forked from a prepared process.")

ALL = (ASSIGNMENT, BWRAP, CGROUP, CHECK_IDLE, IN_NOTEBOOK_CHECK, PROFILE, RUST_CACHE, RUST_GRADER_CACHE,
       SANDBOX, SANDBOX_RO, SOLUTIONS, WARM_KERNELS)
