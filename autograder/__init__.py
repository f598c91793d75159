"""Attention Mechanisms & the Transformer: the course's own Python package.

``python -m autograder check|grade|release|...`` is its command line (``contract.md``).
The modules, grouped by where they run, each with its size in lines
(``tests/test_module_map.py`` fails on a module missing here or listed but gone, and on a
size more than 20 % off; ``tests/test_imports.py`` fails on an import circle among them
and on a course module imported inside a function). :mod:`autograder.grading`'s own
docstring maps its modules.

The course's facts (imported by everything, copied into the learner's kernel):

- :mod:`~autograder.config` (42 lines): the course's folders (solutions/,
  exercises/, the workspace), course id and the stubs of a released solution.
- :mod:`~autograder.exercises` (46 lines): the registry of exercises,
  derived from solutions/; which assignment a file's name says it is.
- :mod:`~autograder.env_vars` (79 lines): every environment variable the course
  reads, declared once with its help (instructors.md lists the ones a person sets).
- :mod:`~autograder.verdicts` (278 lines): a notebook's test cells once run:
  one row per graded cell and its verdict (stdlib only); :mod:`~autograder.check_report`
  (58 lines): the report ``check`` prints from those rows.
- :mod:`~autograder.wire` (212 lines): plain data across the grading boundary
  (the learner's kernel and the trusted checker): values encoded and decoded, checked.
  Its parts: :mod:`~autograder.wire_folder` (158 lines): the exchange folder, its
  sockets and the ``.npy`` files of a message; :mod:`~autograder.wire_tensor` (125
  lines): torch tensors, dtypes and devices across.
- :mod:`~autograder.limits` (59 lines): how long the processes the checker
  starts for a learner's code may run.
- :mod:`~autograder.brief_tracebacks` (61 lines): how a failed
  check looks in a learner's notebook.
- :mod:`~autograder.testing` (241 lines): assertion helpers for the test
  cells, with messages that teach without leaking (where test cells, checks and the
  checker import them all from). Its parts: :mod:`~autograder.check_failure` (105
  lines): ``CheckFailed``, ``fail``, hidden cases and parts, how a learner's exception is
  named; :mod:`~autograder.closeness` (152 lines): ``assert_close``, in plain Python or
  NumPy; :mod:`~autograder.python_only` (73 lines): ex01's no-array-library rule.

In the learner's kernel (:data:`autograder.sandbox.KERNEL_FILES` lists what it gets):

- :mod:`~autograder.kernel_client` (273 lines): the thin client that
  runs what the trusted checker asks, nothing more; :mod:`~autograder.kernel_modules`
  (161 lines): its commands on a learner's torch module (facts, parameters, hooks).
- :mod:`~autograder.kernel_launch` (32 lines): starts a grading kernel
  in the sandbox.
- :mod:`~autograder.kernel_zygote` (298 lines): a warm source of
  grading kernels, forked one per notebook (and of ex05's probes).
- :mod:`~autograder.rust` (131 lines): ``%%rust`` cells: safe Rust compiled with
  rustc and called from Python (the magic, ``compile_rust``, ``load``). Its parts:
  :mod:`~autograder.rust_source` (172 lines): the signatures, a crate's files and their
  names, rustc found, its messages, the errors (the grader's build shares them);
  :mod:`~autograder.rust_glue` (215 lines): the ``extern "C"`` glue and the cached
  ``cdylib`` build; :mod:`~autograder.rust_ffi` (151 lines): a compiled function called
  through ctypes.
- :mod:`~autograder.in_notebook` (244 lines): ``%check``: ``check`` run
  from inside the notebook, on the code as run.
- :mod:`~autograder.transformer_given` (161 lines): what ex07's
  learners are given (the toy task, positional encodings, a training loop).

Answers, and how they are judged:

- :mod:`autograder.reference` (14 lines): reference implementations, one
  module per exercise:
  :mod:`~autograder.reference.python_attention` (90),
  :mod:`~autograder.reference.numpy_attention` (163),
  :mod:`~autograder.reference.scaling` (84),
  :mod:`~autograder.reference.positional_encoding`
  (155),
  :mod:`~autograder.reference.torch_attention` (296),
  :mod:`~autograder.reference.tiled_attention` (129),
  :mod:`~autograder.reference.transformer` (425) lines.
- :mod:`~autograder.diagnose` (215 lines),
  :mod:`~autograder.diagnose_encoding` (97 lines: positional encodings, variance),
  :mod:`~autograder.diagnose_heads` (144 lines: multi-head attention) and
  :mod:`~autograder.diagnose_python` (102 lines): the common mistake
  behind a wrong answer, named in the failure message (NumPy and torch; pure Python).
- :mod:`~autograder.memory` (186 lines): the peak memory one call allocates,
  measured where it is allocated (the in-process estimate).
- :mod:`~autograder.measure` (136 lines): time, memory and arithmetic rate,
  for chapter 6 and ``benchmarks/``.
- :mod:`~autograder.checker` (258 lines): the trusted checker: hidden tests
  run in the grader, the learner's names are proxies served by the kernel (stdlib only at
  import, as are its parts: the website's in-page checker too). Its parts:
  :mod:`~autograder.session` (248 lines): the session with one learner kernel, requests
  and replies as plain data; :mod:`~autograder.serving_run` (87 lines): a run of tests
  served over one kernel cell, the checker's thread beside it;
  :mod:`~autograder.kernel_line` (127 lines): the socket a test is served over, the
  kernel's time on it and what the test came to; :mod:`~autograder.session_errors` (46 lines): how a session ends
  early (a broken protocol, a stopped kernel, the time limit) and the learner's
  exception's stand-in; :mod:`~autograder.remote` (209 lines): the learner's names as
  proxies (functions, classes, torch modules); :mod:`~autograder.remote_torch` (95 lines):
  their torch side (stand-in classes, tensors a module holds, the autograd mode).
- :mod:`autograder.checks` (6 lines): the checks the test cells call, one
  module per exercise:
  :mod:`~autograder.checks.ex01` (185),
  :mod:`~autograder.checks.ex02` (296),
  :mod:`~autograder.checks.ex03` (171),
  :mod:`~autograder.checks.ex04` (170),
  :mod:`autograder.checks.ex05` (83: its checks, importable from
  here) with :mod:`~autograder.checks.ex05.sdpa` (225),
  :mod:`~autograder.checks.ex05.mha` (196),
  :mod:`~autograder.checks.ex05._mha_pairs` (120: the learner's module beside torch's),
  :mod:`~autograder.checks.ex05._common` (223: the guard against
  torch's attention), :mod:`~autograder.checks.ex05._probe` (222:
  the run without torch's attention, judged),
  :mod:`~autograder.checks.ex05._probe_calls` (77: the calls made there and in the kernel),
  :mod:`autograder.checks.ex06` (31: its checks, importable from here) with
  :mod:`~autograder.checks.ex06.behaviour` (130), :mod:`~autograder.checks.ex06.memory` (191:
  the peak memory) and :mod:`~autograder.checks.ex06._common` (78: the oracle, inputs),
  :mod:`autograder.checks.ex07` (77: its checks, importable from here) with
  :mod:`~autograder.checks.ex07.block` (95), :mod:`~autograder.checks.ex07.model` (188),
  :mod:`~autograder.checks.ex07.training` (101) and
  :mod:`~autograder.checks.ex07._common` (203: what they share),
  :mod:`~autograder.checks.ex08` (102) lines;
  :mod:`~autograder.checks.knowledge` (260 lines): the knowledge
  checks' expected answers and why.

The grader's machinery (never in the learner's kernel):

- :mod:`~autograder.cgroups` (221 lines): the peak probe's memory cgroups, and a
  writable hierarchy made sure of; :mod:`~autograder.cgroup_hierarchy` (99 lines): where
  this process may make memory cgroups, read from /proc.
- :mod:`~autograder.kernel_memory` (248 lines): the memory cap of a
  grading kernel (a cgroup of its own, or a watchdog), and its limit of processes.
- :mod:`~autograder.kernel_messages` (110 lines): the grader's reading of a kernel's
  Jupyter messages: one it cannot read is a broken protocol, not the grader's failure;
  outputs no notebook may hold are repaired; the largest message it takes.
- :mod:`~autograder.bwrap_box` (127 lines): the one place a bubblewrap command line
  is built: a sandbox described as data (mounts, working folder, environment) and the
  isolation every sandbox gets (pure; tested as data); how a sandbox is killed (its
  whole process group).
- :mod:`~autograder.sandbox` (242 lines): the bubblewrap sandbox of grading
  kernels: its rules (system binds, a kernel's box and environment, the course files a
  kernel gets), what managers share.
- :mod:`~autograder.scratch` (106 lines): scratch folders named after their process;
  a killed grader's are removed by the next one; a kernel's in ``/dev/shm`` (memory).
- :mod:`~autograder.wipe` (191 lines): empties a folder a learner's code wrote,
  whatever it made there (a tree too deep for ``rmtree``, folders without permissions),
  and gives the folders kept their permissions back.
- :mod:`~autograder.warm_sandbox` (260 lines): the warm sandbox that forks one
  kernel per notebook (``Zygote``); :mod:`~autograder.warm_zygotes` (75 lines): this
  process's warm sandboxes, the kernels' and ex05's probes'.
- :mod:`~autograder.sandboxed_kernel` (300 lines): the kernel manager nbclient
  uses: a kernel started in the sandbox or forked warm, its memory capped.
- :mod:`~autograder.torch_probe` (219 lines): ex05's probe: torch with its
  attention switched off, then the learner's cells (the script; its sandbox);
  :mod:`~autograder.torch_probe_process` (194 lines): its process started (ahead, for
  ``check``; forked warm, in grading) and its answer read.
- :mod:`~autograder.probe` (181 lines): a learner's cells run again in a Python
  with the standard library only; a run started ahead (``check``) taken by its test.
- :mod:`~autograder.peak_probe` (264 lines): ex06's peak memory of one
  call, measured from outside in a memory cgroup (the run of the probe). Its parts:
  :mod:`~autograder.peak_probe_program` (190 lines): what the probe runs (its program,
  the cells, its sandboxed command); :mod:`~autograder.peak_probe_answer` (101 lines):
  its answer read and checked, what was measured (pure).
- :mod:`~autograder.rust_build` (125 lines): ex08's Rust, built and run by
  the grader itself: what the checker calls (the learner's cells, their functions). Its
  parts: :mod:`~autograder.rust_main` (258 lines): the crate's root and the course-written
  ``main`` (Rust source); :mod:`~autograder.rust_toolchain` (243 lines): rustc found, and
  the sandboxes rustc and the programs run in; :mod:`~autograder.rust_compile` (194
  lines): the two builds, cached, and rustc's messages; :mod:`~autograder.rust_protocol`
  (168 lines): the request and reply lines, and a call's failures (pure);
  :mod:`~autograder.rust_program` (295 lines): the program's sandboxed process, one per
  notebook.
- :mod:`~autograder.notebook` (145 lines): reading nbgrader notebooks:
  test cells, which assignment, changed read-only cells.
- :mod:`~autograder.nbgrader_plugins` (145 lines): the nbgrader
  preprocessors the course adds (feedback without hidden tests, cells in their order,
  stubs by cell language); :mod:`~autograder.nbgrader_execute` (192 lines): its execution
  of a submission (resilient, output capped, sandboxed and profiled).
- :mod:`~autograder.phase_times` (34 lines): seconds per grading phase in a worker,
  for ``bench_grading.py --profile`` (add, timed, take).
- :mod:`~autograder.trusted_tests` (269 lines): a notebook's test cells handed to the
  trusted checker, one serving kernel cell per run of consecutive test cells (grading's
  executor and ``check``'s cell loop use it; it needs no part of nbgrader); what stopped
  the cells, kept in the autograded notebook's metadata.
  :mod:`~autograder.serving_outputs` (55 lines): each test's display, split from the
  serving cell's outputs at the checker's markers.
- :mod:`~autograder.check_early` (155 lines): ``check``'s kernel started before the
  command imports anything else (the standard library only).
- :mod:`~autograder.check_kernel` (161 lines): the kernel ``check`` starts (or adopts)
  first, before it imports the rest (jupyter_client only), on Unix sockets; replaced when it
  dies before it answers; stopped promptly. :mod:`~autograder.kernel_ready` (46 lines): a
  kernel client ready as soon as the kernel answers (``check``'s and grading's).
- :mod:`~autograder.check_warm` (204 lines): ``check --warm``, the command's side (the
  standard library only): the host's socket, the fingerprint it must share, the check
  handed over with the terminal's descriptors; :mod:`~autograder.check_host` (233 lines):
  the host, a trusted process that keeps the checker loaded and the next check's kernel
  (and ex05's probe) started, and runs each check it is handed;
  :mod:`~autograder.kernel_output` (81 lines): what that kernel writes to its own
  standard output and error, relayed to the check that takes it.
- :mod:`~autograder.notebook_run` (157 lines): ``check``'s run of a
  notebook, cell by cell, the tests by the trusted checker.
- :mod:`~autograder.nbgrader_settings` (139 lines): the course's
  nbgrader settings (``nbgrader_config.py`` and ``grade``).
- :mod:`autograder.grading`: grading a class (``grade``, ``release``, ``export``,
  ``manual``, ``similarity``); its docstring maps its modules.

The website and the command line:

- :mod:`~autograder.inpage` (162 lines): code run in the website's own
  Python (Pyodide, in the reader's browser).
- :mod:`~autograder.cli` (273 lines): ``python -m autograder``'s commands, and their
  exit without the interpreter's teardown; :mod:`~autograder.__main__` (24 lines) runs
  it; :mod:`~autograder.check_command` (215 lines): the ``check`` command.
"""

from autograder.exercises import ASSIGNMENTS  # derived from solutions/

__all__ = ["ASSIGNMENTS"]
