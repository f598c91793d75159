import sys

# jsonschema imports its optional "iri" format checker, rfc3987_syntax, when installed
# (jupyter-events pulls it in); building its grammar costs ~1.2 s of CPU at every start of
# this command. Neither the notebook format's schema nor nbgrader's uses that format.
sys.modules.setdefault("rfc3987_syntax", None)

# check --warm: a host kept ready by the last check runs it (autograder.check_warm).
from autograder.check_warm import served  # noqa: E402

served_code = served(sys.argv[1:])
if served_code is not None:
    raise SystemExit(served_code)

# check's kernel boots while the command imports the rest (autograder.check_early).
from autograder.check_early import start  # noqa: E402

early_kernel = start(sys.argv[1:])

from autograder.cli import exit_without_teardown, main  # noqa: E402

code = main(early_kernel=early_kernel)
exit_without_teardown(code)  # the command's work is done: no interpreter teardown to wait for
raise SystemExit(code)
