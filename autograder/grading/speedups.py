"""Work nbgrader redoes on every call, done once per process (issue 16).

:func:`apply` is called by every grading process (the grader, its workers) before it uses
nbgrader. Each change keeps nbgrader's result and only skips a repetition:

- the check of nbgrader's cell-metadata schema against JSON Schema's meta-schema, which
  ``jsonschema.validate`` repeats for every cell: the validator is built once per schema;
- nbformat's validation of one part of a notebook (an output nbclient makes of each kernel
  message, a cell: about 36 an ex01 notebook, 0.2 ms each), which its fastjsonschema
  validator hands to jsonschema: that part is compiled once by fastjsonschema, as nbformat
  compiles whole notebooks, and a node it refuses is validated by jsonschema as before
  (the same error);
- the compilation of the feedback's Jinja templates, kept as bytecode while the template's
  source is unchanged (Jinja checks the source's checksum itself);
- nbconvert's accessibility pass over the feedback page (``HTMLExporter`` parses the whole
  page with BeautifulSoup to give an image with no ``alt`` a text and the cells of the
  JupyterLab template a tab stop: about 50 ms of a 125 ms page): skipped when the page has
  no ``<img`` and neither class the pass looks for, where it would change nothing (nbgrader's
  feedback template has neither class; an ex01 page has no image);
- the feedback's rendering of each cell's source (pygments for code, mistune for Markdown):
  :mod:`autograder.grading.feedback_render` keeps it per source, so a locked cell, the same
  in every submission of an assignment, is rendered once per worker;
- the alembic revision a new gradebook is stamped with, which nbgrader reads by running
  ``alembic heads`` in a subprocess (about 2.8 s on a 2-core machine): read in this process
  from nbgrader's own migration scripts, with alembic's API;
- the database engine of a gradebook: nbgrader's ``Gradebook`` creates an engine, inspects
  the database and runs ``create_all`` each time it is opened (about eleven times per graded
  notebook), and a fresh engine compiles every SQL statement again. An open gradebook on a
  database this process has opened before reuses its engine; a SQLite file is recognised by
  its device and inode, so a database deleted and made again gets a new engine. Closing
  such a gradebook ends its session but keeps the engine's connections, which nbgrader's
  ``close`` throws away (``engine.dispose()``: a new connection and pool at every open,
  about 2.5 ms of each); only the engine of the database opened last keeps them (a process
  that opens many databases, as the tests do, holds one database's connections);
- the gradebook lookups (and, in autograde and release, the commits) of nbgrader's
  preprocessors, one per cell: :mod:`autograder.grading.notebook_grades` and
  :mod:`autograder.grading.notebook_cells` do them once per notebook.
"""

from __future__ import annotations

import atexit
import os
import threading

from autograder.grading import feedback_render, notebook_cells, notebook_grades

_applied = False
_lock = threading.Lock()


def apply() -> None:
    """Apply every change once in this process (later calls do nothing)."""
    global _applied
    with _lock:
        if _applied:
            return
        _cache_schema_validators()
        _compile_schema_parts()
        notebook_cells.apply()
        _cache_template_bytecode()
        _soup_only_where_it_changes_something()
        feedback_render.apply()
        _alembic_head_in_process()
        _reuse_engines()
        notebook_grades.apply()
        _applied = True


def _cache_schema_validators() -> None:
    import types

    import jsonschema
    import nbgrader.nbgraderformat.common as nbgrader_format

    validators: dict[int, tuple] = {}

    def validate(instance, schema):
        """jsonschema.validate, the schema known valid (it is nbgrader's own)."""
        cached = validators.get(id(schema))
        if cached is None or cached[0] is not schema:
            cached = validators[id(schema)] = (
                schema, jsonschema.validators.validator_for(schema)(schema))
        error = jsonschema.exceptions.best_match(cached[1].iter_errors(instance))
        if error is not None:
            raise error

    nbgrader_format.jsonschema = types.SimpleNamespace(
        validate=validate, ValidationError=jsonschema.ValidationError)


def _compile_schema_parts() -> None:
    from fastjsonschema import JsonSchemaDefinitionException, compile
    from nbformat.json_compat import FastJsonSchemaValidator

    own = FastJsonSchemaValidator.iter_errors

    def iter_errors(self, data, schema=None):
        ref = schema.get("$ref") if type(schema) is dict and len(schema) == 1 else None
        if type(ref) is not str or "definitions" not in self._schema:
            return own(self, data, schema)
        parts = self.__dict__.setdefault("_compiled_parts", {})  # this schema's, once
        if ref not in parts:
            try:
                parts[ref] = compile({"$ref": ref, "definitions": self._schema["definitions"]})
            except JsonSchemaDefinitionException:  # no such part: nbformat's own error
                parts[ref] = None
        try:
            if parts[ref] is None:
                return own(self, data, schema)
            parts[ref](data)
        except Exception:  # noqa: BLE001 - refused (or unreadable): jsonschema's own errors
            return own(self, data, schema)
        return []

    FastJsonSchemaValidator.iter_errors = iter_errors


def _cache_template_bytecode() -> None:
    import jinja2
    from nbconvert.exporters.templateexporter import TemplateExporter

    class MemoryBytecodeCache(jinja2.BytecodeCache):
        def __init__(self):
            self.store: dict[str, bytes] = {}

        def load_bytecode(self, bucket):
            if bucket.key in self.store:  # jinja checks the source's checksum itself
                bucket.bytecode_from_string(self.store[bucket.key])

        def dump_bytecode(self, bucket):
            self.store[bucket.key] = bucket.bytecode_to_string()

    cache = MemoryBytecodeCache()
    create = TemplateExporter._create_environment

    def _create_environment(self):
        env = create(self)
        env.bytecode_cache = cache
        return env

    TemplateExporter._create_environment = _create_environment


# What nbconvert's HTMLExporter.from_notebook_node selects in its BeautifulSoup pass
# ("img:not([alt])", ".jp-Notebook div.jp-Cell-inputWrapper", ".jp-Notebook
# div.jp-OutputArea-output"): a page without these texts has no element it changes.
SOUP_NEEDED = ("<img", "jp-Cell-inputWrapper", "jp-OutputArea-output")


class UnchangedPage(str):
    """What :func:`soup_if_needed` gives for a page the pass would not change: the page
    itself, whose ``select`` finds nothing."""

    def select(self, selector: str) -> list:
        return []


def soup_if_needed(html: str, features: str | None = None):
    """BeautifulSoup(html) where nbconvert's accessibility pass can change something (see
    :data:`SOUP_NEEDED`, matched case-insensitively); else the page unchanged."""
    from bs4 import BeautifulSoup

    lowered = html.lower()
    if any(text.lower() in lowered for text in SOUP_NEEDED):
        return BeautifulSoup(html, features=features)
    return UnchangedPage(html)


def _soup_only_where_it_changes_something() -> None:
    import nbconvert.exporters.html as nbconvert_html

    nbconvert_html.BeautifulSoup = soup_if_needed


def alembic_head() -> str:
    """The newest revision of nbgrader's gradebook schema (what ``alembic heads`` prints
    for nbgrader's migration scripts, ``nbgrader/alembic``)."""
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    return ScriptDirectory(ALEMBIC_DIR).get_current_head()


def _alembic_head_in_process() -> None:
    import nbgrader.api

    nbgrader.api.get_alembic_version = alembic_head


def _engine_key(db_url: str) -> tuple | None:
    """What identifies the database behind ``db_url``: the URL, and for a SQLite file its
    device and inode (None while the file does not exist: nbgrader creates it)."""
    from sqlalchemy.engine import make_url

    url = make_url(db_url)
    if not url.get_backend_name() == "sqlite":
        return (db_url,)
    path = url.database
    if not path or path == ":memory:":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (db_url, st.st_dev, st.st_ino)


_ENGINES: dict[tuple, object] = {}  # _engine_key -> the engine of that database
_HOT: list = []  # the engine of the database opened last: the one whose connections are kept


def forget_engines(close: bool = False) -> None:
    """In a forked process: make new engines; the parent's stay the parent's (their pooled
    connections are not closed here, as SQLAlchemy advises for a fork). ``close``: at the
    process's exit, the pooled connections closed."""
    for engine in _ENGINES.values():
        engine.dispose(close=close)
    _ENGINES.clear()
    _HOT.clear()


def _reuse_engines() -> None:
    from nbgrader.api import Gradebook
    from sqlalchemy.orm import scoped_session, sessionmaker

    original, close = Gradebook.__init__, Gradebook.close
    engines = _ENGINES
    lock = threading.Lock()

    def __init__(self, db_url: str, course_id: str = "default_course", authenticator=None):
        key = _engine_key(db_url)
        with lock:
            engine = engines.get(key) if key is not None else None
        if engine is None:  # nbgrader's own: creates the tables and stamps the revision
            original(self, db_url, course_id=course_id, authenticator=authenticator)
            key = _engine_key(db_url)
            if key is not None:
                with lock:
                    engines.setdefault(key, self.engine)
            return
        _heat(engine, lock)
        # What nbgrader's __init__ does once the tables exist (they do: this engine's
        # first gradebook created them).
        self.engine = engine
        self.db = scoped_session(sessionmaker(autoflush=True, bind=engine, future=True))
        self.check_course(course_id=course_id)
        self.course_id = course_id
        self.authenticator = authenticator

    def close_keeping_connections(self) -> None:
        if self.engine in _HOT:
            self.db.remove()  # the session ends; the engine's pooled connections stay
        else:
            close(self)

    __init__.__doc__ = original.__doc__
    close_keeping_connections.__doc__ = close.__doc__
    Gradebook.__init__, Gradebook.close = __init__, close_keeping_connections
    # The commands end without the interpreter's teardown (cli.exit_without_teardown):
    # the kept connections are closed here, so a PostgreSQL server sees each one end.
    atexit.register(forget_engines, close=True)


def _heat(engine, lock: threading.Lock) -> None:
    """Make ``engine`` the one whose connections closing a gradebook keeps; the previous
    one's are closed (those in use are closed when they are given back)."""
    with lock:
        if _HOT and _HOT[0] is engine:
            return
        cold = _HOT[:]
        _HOT[:] = [engine]
    for previous in cold:
        previous.dispose()
