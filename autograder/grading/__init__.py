"""Grading a class with nbgrader: ``python -m autograder grade`` and ``release``.

nbgrader is the engine: the gradebook, the restoring of locked cells, the execution and the
feedback are nbgrader's own. This package adds what a class needs around it: a row with a
status for every submission whatever it contains, parallel workers that survive hanging
and dying kernels, resumable runs, and input folders that are only ever read.

One job per module, with its size in lines (the grading contract page of the book,
``contract.md``, says what the command does and what each status means;
``tests/test_module_map.py`` keeps this list whole and its sizes within 20 %):

- :mod:`~autograder.grading.grade` (236 lines): ``grade``: refuse, lock, connect, start
  the workers, grade, derive the records, summarise.
- :mod:`~autograder.grading.run` (199 lines): one run's state: resume, hand out, save.
- :mod:`~autograder.grading.pool` (251 lines): the worker pool, the grader's end
  (``Worker``: start, fork, hand out, read rows, stop).
- :mod:`~autograder.grading.worker` (102 lines): a grading worker process (memory cap,
  warm sandbox, then one task per line).
- :mod:`~autograder.grading.cluster` (229 lines): grading on a Dask cluster
  (``--scheduler``).
- :mod:`~autograder.grading.autograde` (194 lines): grading one submission: stage,
  autograde, its row.
- :mod:`~autograder.grading.submission` (240 lines): the submission model, discovery (which
  notebook of a folder is graded), what a submitted file may hold.
- :mod:`~autograder.grading.prevalidate` (89 lines): a submission checked before nbgrader
  sees it (a notebook, of this assignment, a readable timestamp).
- :mod:`~autograder.grading.ids` (99 lines): which folder names can be student ids (checked
  at the door).
- :mod:`~autograder.grading.times` (117 lines): submission times, every platform's form read
  exactly or refused (nbgrader is handed the one form its parser reads right).
- :mod:`~autograder.grading.integrity` (104 lines): restored cells and tampering, against
  the release.
- :mod:`~autograder.grading.tampering` (64 lines): static reading of a learner cell for
  tampering.
- :mod:`~autograder.grading.gradebook` (104 lines): nbgrader's gradebook (SQLite or
  PostgreSQL): its one URL, its queries.
- :mod:`~autograder.grading.results` (193 lines): the typed ``Row``, the ``Status`` enum,
  the CSV files.
- :mod:`~autograder.grading.environment` (22 lines): the environment of the processes
  grading starts.
- :mod:`~autograder.grading.release` (97 lines): generate_assignment; the only writer of the
  workspace's ``nbgrader_config.py``.
- :mod:`~autograder.grading.summary` (63 lines): the summary printed and plotted after a
  run.
- :mod:`~autograder.grading.class_report` (170 lines): the class report, one HTML page per
  assignment.
- :mod:`~autograder.grading.keys` (89 lines): what a grade depends on, its digest (when to
  regrade).
- :mod:`~autograder.grading.record` (152 lines): one record: the CSV files derived from the
  gradebook.
- :mod:`~autograder.grading.export` (184 lines): the file to upload to a learning platform.
- :mod:`~autograder.grading.canvas` (245 lines): a Canvas gradebook export, its assignment
  cells filled.
- :mod:`~autograder.grading.moodle` (142 lines): Moodle's grade-import CSV.
- :mod:`~autograder.grading.manual` (274 lines): manual grading without a browser.
- :mod:`~autograder.grading.similarity` (298 lines): similar submissions: every pair
  compared with copydetect, the release discounted (``python -m autograder similarity``); no
  grade changes.
- :mod:`~autograder.grading.similarity_report` (91 lines): its HTML report, matches side by
  side.
- :mod:`~autograder.grading.html` (71 lines): what the workspace's HTML reports share
  (inline CSS and SVG, nothing loaded from another host).
- :mod:`~autograder.grading.speedups` (269 lines): work nbgrader repeats on every call, done
  once per process (schema validators, the parts of nbformat's schema compiled, template
  bytecode, the gradebook's engine and its pooled connection), or skipped where it changes
  nothing (the feedback page's accessibility pass).
- :mod:`~autograder.grading.feedback_render` (94 lines): the feedback's HTML of each cell
  source (highlighted code, Markdown), rendered once per worker and kept, bounded.
- :mod:`~autograder.grading.notebook_grades` (142 lines): nbgrader's feedback and autograde
  read a notebook's grades and comments at once, and autograde commits them once.
- :mod:`~autograder.grading.notebook_cells` (110 lines): nbgrader's autograde reads a
  notebook's released cells at once, and its release records them in one transaction.
"""
