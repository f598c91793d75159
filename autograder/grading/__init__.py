"""Grading a class with nbgrader: ``python -m autograder grade`` and ``release``.

nbgrader is the engine: the gradebook, the restoring of locked cells, the execution and the
feedback are nbgrader's own. This package adds what a class needs around it: a row with a
status for every submission whatever it contains, parallel workers that survive hanging
and dying kernels, resumable runs, and input folders that are only ever read.

One job per module (the grading contract page of the book, ``contract.md``, says what the
command does and what each status means):

- :mod:`~autograder.grading.run`: running a class: lock, discover, resume, hand out, save.
- :mod:`~autograder.grading.pool`: the worker pool, both ends (``Worker`` and its process).
- :mod:`~autograder.grading.cluster`: grading on a Dask cluster (``--scheduler``).
- :mod:`~autograder.grading.autograde`: grading one submission: stage, autograde, its row.
- :mod:`~autograder.grading.submission`: the submission model, discovery (which notebook
  of a folder is graded), pre-validation.
- :mod:`~autograder.grading.ids`: which folder names can be student ids (checked at the door).
- :mod:`~autograder.grading.times`: submission times, every platform's form read exactly or
  refused (nbgrader is handed the one form its parser reads right).
- :mod:`~autograder.grading.integrity`: restored cells and tampering, against the release.
- :mod:`~autograder.grading.tampering`: static reading of a learner cell for tampering.
- :mod:`~autograder.grading.gradebook`: nbgrader's gradebook (SQLite or PostgreSQL): its
  one URL, its queries.
- :mod:`~autograder.grading.results`: the typed ``Row``, the ``Status`` enum, the CSV files.
- :mod:`~autograder.grading.environment`: the environment of the processes grading starts.
- :mod:`~autograder.grading.release`: generate_assignment; the only writer of the
  workspace's ``nbgrader_config.py``.
- :mod:`~autograder.grading.summary`: the summary printed and plotted after a run.
- :mod:`~autograder.grading.class_report`: the class report, one HTML page per assignment.
- :mod:`~autograder.grading.keys`: what a grade depends on, its digest (when to regrade).
- :mod:`~autograder.grading.record`: one record: the CSV files derived from the gradebook.
- :mod:`~autograder.grading.export`: the file to upload to a learning platform.
- :mod:`~autograder.grading.canvas`: a Canvas gradebook export, its assignment cells filled.
- :mod:`~autograder.grading.moodle`: Moodle's grade-import CSV.
- :mod:`~autograder.grading.manual`: manual grading without a browser.
- :mod:`~autograder.grading.similarity`: similar submissions: every pair compared with
  copydetect, the release discounted (``python -m autograder similarity``); no grade changes.
- :mod:`~autograder.grading.similarity_report`: its HTML report, matches side by side.
- :mod:`~autograder.grading.html`: what the workspace's HTML reports share (inline CSS and
  SVG, nothing loaded from another host).
- :mod:`~autograder.grading.speedups`: work nbgrader repeats on every call, done once per
  process (schema validators, template bytecode, the gradebook's engine).
"""
