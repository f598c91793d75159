"""The course's nbgrader settings, shared by ``nbgrader_config.py`` (the repository's and
each workspace's, which :mod:`autograder.grading.release` writes) and
``python -m autograder grade``: :func:`apply`."""

from __future__ import annotations

from pathlib import Path

from autograder import env_vars
from autograder.config import (
    CODE_STUB,
    COURSE_ID,
    DEFAULT_WORKSPACE,
    EXERCISES,
    RUST_STUB,
    SOLUTIONS,
)
from autograder.grading.gradebook import db_url
from autograder.nbgrader_plugins import ClearSolutionsByCellLanguage
from autograder.sandbox import sandbox_error
from autograder.verdicts import TEXT_STUB


def apply(
    c,
    workspace: Path | str = DEFAULT_WORKSPACE,
    *,
    release_directory: Path | str = EXERCISES,
    cell_timeout: int = 60,
    late_penalty: str = "none",
    submitted_directory: str = "submitted",
    sandbox: bool | None = None,
) -> None:
    """Fill nbgrader's traitlets config ``c`` for grading in ``workspace``.

    Args:
        c: the config object (``get_config()`` in ``nbgrader_config.py``).
        workspace: folder for submitted/, autograded/, feedback/ and gradebook.db.
        release_directory: where generate_assignment writes learner notebooks.
        cell_timeout: seconds one cell may run before nbgrader interrupts it.
        late_penalty: nbgrader's LateSubmissionPlugin method for submissions whose
            timestamp.txt is after the assignment's due date: "none" or "zero".
        submitted_directory: where nbgrader autograde reads submissions, relative to the
            workspace (``python -m autograder grade`` grades copies in a staging folder).
        sandbox: run each kernel in bubblewrap (:mod:`autograder.sandbox`);
            None: as ``$AUTOGRADER_SANDBOX`` says ("1"/"0", set by ``grade``), else
            whenever a sandbox can start here.
    """
    ws = Path(workspace).resolve()
    ws.mkdir(parents=True, exist_ok=True)  # nbgrader chdirs into its root
    release = Path(release_directory).resolve()
    _folders(c, ws, release, submitted_directory)
    _release(c)
    _autograde(c, release, cell_timeout, late_penalty, sandbox)
    _feedback(c)
    # nbconvert validates the whole notebook against its JSON schema after each of a
    # conversion's preprocessors (18 validations a graded notebook, 30 ms); once, after the
    # last, is enough: a submission is validated at the door (grading.prevalidate), outputs
    # the schema refuses never enter it (nbgrader_execute), an invalid result is still
    # refused at the end of each conversion, and before its scores are saved
    # (nbgrader_plugins.ValidateBeforeSaving).
    c.Exporter.optimistic_validation = True


def _folders(c, ws: Path, release: Path, submitted_directory: str) -> None:
    """The course, its workspace, its folders and its gradebook."""
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.root = str(ws)
    # Absolute paths: os.path.join(root, absolute) keeps the absolute one.
    c.CourseDirectory.source_directory = str(SOLUTIONS)
    c.CourseDirectory.release_directory = str(release)
    c.CourseDirectory.submitted_directory = submitted_directory
    c.CourseDirectory.db_url = db_url(ws)
    # nbgrader zip_collect: files from a learning platform named <student_id>_<anything>.ipynb
    # (override on the command line for another platform's naming).
    c.FileNameCollectorPlugin.named_regexp = (
        r".*/(?P<student_id>[A-Za-z0-9.-]+)_(?P<file_id>[^/]+)\.ipynb$")


def _release(c) -> None:
    """generate_assignment as nbgrader's, except that %%rust cells get a Rust stub."""
    from nbgrader.converters import GenerateAssignment
    from nbgrader.preprocessors import ClearSolutions

    c.ClearSolutions.code_stub = {"python": CODE_STUB, "rust": RUST_STUB}
    c.GenerateAssignment.preprocessors = [
        ClearSolutionsByCellLanguage if p is ClearSolutions else p
        for p in GenerateAssignment.class_traits()["preprocessors"].default()]
    c.ClearSolutions.text_stub = TEXT_STUB


def _autograde(c, release: Path, cell_timeout: int, late_penalty: str,
               sandbox: bool | None) -> None:
    """autograde: the sanitising, the sandboxed execution, the scoring."""
    c.Execute.timeout = cell_timeout
    # Sanitising: restore the released cell order, then nbgrader restores locked cells'
    # content from the gradebook, re-adds deleted test cells and fixes changed cell types.
    c.Autograde.sanitize_preprocessors = [
        "nbgrader.preprocessors.ClearOutput",
        "autograder.nbgrader_plugins.DeduplicateGradeIds",
        "nbgrader.preprocessors.OverwriteKernelspec",
        "autograder.nbgrader_plugins.RestoreOrder",
        "nbgrader.preprocessors.OverwriteCells",
        "nbgrader.preprocessors.CheckCellMetadata",
    ]
    c.RestoreOrder.release_directory = str(release)
    c.OverwriteCells.add_missing_cells = True
    c.LateSubmissionPlugin.penalty_method = late_penalty
    # A kernel that dies (os._exit, segfault, memory cap) keeps the points earned before.
    # In the sandbox (issue 13); the trusted checker grades the test cells (issue 23).
    if sandbox is None:
        env = env_vars.SANDBOX.get()
        sandbox = env == "1" if env in ("0", "1") else sandbox_error() is None
    c.Autograde.autograde_preprocessors = [
        "autograder.nbgrader_execute.SandboxedExecute" if sandbox
        else "autograder.nbgrader_execute.ResilientExecute",
        "nbgrader.preprocessors.IgnorePattern",
        "nbconvert.preprocessors.ClearMetadataPreprocessor",
        "nbgrader.preprocessors.LimitOutput",
        "autograder.nbgrader_plugins.ValidateBeforeSaving",
        "nbgrader.preprocessors.SaveAutoGrades",
        "nbgrader.preprocessors.AssignLatePenalties",
        "nbgrader.preprocessors.CheckCellMetadata",
    ]
    # Warnings a correct solution prints on stderr must not cost points: nbgrader scores a
    # test cell with any stderr output as 0. Errors are 'error' outputs and still count.
    c.IgnorePattern.enabled = True
    c.IgnorePattern.pattern = r"(?s).*"


def _feedback(c) -> None:
    """Feedback shows each test's docstring, points and the failure's one-line message;
    hidden test source and tracebacks into the course's checks never reach a learner."""
    c.GenerateFeedback.preprocessors = [
        "nbgrader.preprocessors.GetGrades",
        "autograder.nbgrader_plugins.HideTestSource",
        "autograder.nbgrader_plugins.InertLearnerContent",
        "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    ]
