"""The gradebook: nbgrader's ``gradebook.db`` in the workspace (or the PostgreSQL database
``grade --db-url`` named for it), its one URL, and the queries grading needs (scores and tests
of a submission, an assignment's maximum, manual zeros for tests after a tampering cell)."""

from __future__ import annotations

import functools
from pathlib import Path

from autograder.grading import speedups
from autograder.grading.results import STATE_CSV


# The database URL ``grade --db-url`` gave the workspace (owner-only: it may hold a password).
DB_URL_FILE = ".autograder/db_url"


def db_url(workspace: Path | str) -> str:
    """The SQLAlchemy URL of the workspace's gradebook (one place; nbgrader's config, and so
    nbgrader's own commands and formgrader, use it too).

    The URL kept in ``WORKSPACE/.autograder/db_url`` when ``grade --db-url`` set one (a
    PostgreSQL database through psycopg 3), else the workspace's SQLite ``gradebook.db``;
    ``timeout=120``: parallel workers write to one SQLite file and wait for its lock.
    """
    stored = Path(workspace) / DB_URL_FILE
    if stored.is_file():
        return stored.read_text(encoding="utf-8").strip()
    return f"sqlite:///{Path(workspace) / 'gradebook.db'}?timeout=120"


def normalise_url(url: str) -> str:
    """``url`` as SQLAlchemy opens it: ``postgresql://`` and ``postgres://`` get the psycopg 3
    driver (``postgresql+psycopg://``, the one the course installs); ``sqlite:///`` stays.

    Raises:
        ValueError: another database or driver, or a URL SQLAlchemy cannot parse.
    """
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ValueError(f"--db-url {url!r} is not a database URL (postgresql://USER@HOST/DB)") \
            from None
    if parsed.drivername in ("postgresql", "postgres", "postgresql+psycopg"):
        return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    if parsed.drivername == "sqlite":
        return url
    raise ValueError(f"--db-url {shown(url)!r}: the gradebook is PostgreSQL "
                     f"(postgresql://USER@HOST:PORT/DATABASE) or SQLite, not {parsed.drivername}")


def shown(url: str) -> str:
    """``url`` with its password masked, for messages."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - a message must not fail
        return "(unparsable URL)"


def set_db_url(workspace: Path, url: str) -> str:
    """Make ``url`` (normalised) the workspace's gradebook; return it.

    Raises:
        ValueError: the URL is not PostgreSQL or SQLite, or the workspace already holds graded
            rows whose gradebook is another one (they would be orphaned).
    """
    url = normalise_url(url)
    current = db_url(workspace)
    if url == current:
        return url
    if (Path(workspace) / STATE_CSV).is_file():
        raise ValueError(f"{workspace} already holds grades whose gradebook is "
                         f"{shown(current)}; grade into a new workspace to use {shown(url)}")
    path = Path(workspace) / DB_URL_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(url + "\n", encoding="utf-8")
    return url


def exists(workspace: Path) -> bool:
    """Whether the workspace has a gradebook yet (the SQLite file, or a database URL)."""
    return (Path(workspace) / DB_URL_FILE).is_file() or (Path(workspace) / "gradebook.db").is_file()


def open_gradebook(workspace: Path):
    """``nbgrader.api.Gradebook`` on the workspace (a context manager)."""
    from nbgrader.api import Gradebook

    speedups.apply()  # one engine per database in this process, no alembic subprocess

    return Gradebook(db_url(workspace))


@functools.lru_cache(maxsize=None)
def max_score(workspace: Path, assignment: str) -> float:
    """The assignment's total points, as recorded at release."""
    with open_gradebook(workspace) as gb:
        return float(gb.find_assignment(assignment).max_score)
