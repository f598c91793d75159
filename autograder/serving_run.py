"""A run of test cells served over one kernel cell (:meth:`autograder.session.Session.serving_run`):
the checker's thread runs each test in turn while the grading thread has the kernel run
the one cell that serves them all (:func:`autograder.kernel_client.serve_tests`), each test
over its own line (:class:`autograder.kernel_line.KernelLine`), within the kernel's time
(stdlib only: the website's in-page checker imports the session too)."""

from __future__ import annotations

import threading
from typing import Any, Callable

from autograder import kernel_line
from autograder.kernel_line import Served
from autograder.session_errors import CheckStopped, TimeLimit


def serve(session, tests: list[Callable[[], Any]]) -> list[Served]:
    """``tests`` served by one kernel cell of ``session``'s kernel: one :class:`Served`
    per test begun (:meth:`autograder.session.Session.serving_run` says what it holds)."""
    lines = [kernel_line.KernelLine(session.folder, session.timeout) for _ in tests]
    session.waiting = {line.name for line in lines}  # sockets the kernel will connect to
    served: list[Served] = []
    worker = threading.Thread(target=_checker_thread, args=(session, tests, lines, served),
                              name="checker", daemon=True)
    worker.start()
    stopped = None
    try:
        session.execute('__import__("autograder.kernel_client", fromlist=["serve_tests"])'
                        f'.serve_tests(globals(), {str(session.folder.path)!r}, '
                        f'{tuple(line.name for line in lines)!r})')
    except CheckStopped as exc:
        stopped = exc
    finally:
        for line in lines:
            line.kernel_done()
        worker.join()
        for line in lines:
            if line.conn is not None:
                line.conn.close()
            line.listener.close()
        session.line, session.waiting = None, set()
    last = served[-1]
    if lines[len(served) - 1].overran:
        last.raised = TimeLimit(f"the test ran longer than the time limit "
                                f"({session.timeout:g} s of your code's time)")
    elif stopped is not None:
        last.raised = stopped
    return served


def _checker_thread(session, tests: list, lines: list, served: list[Served]) -> None:
    """Each test in turn on its line, until one raises or runs past the time limit
    (:class:`Served` appended to ``served``); then the kernel's cell must end within the
    time limit, or it is interrupted, and killed :data:`~autograder.kernel_line.GRACE`
    seconds later (a learner's code that keeps it busy once the checker is done: the
    verdicts stay)."""
    try:
        _each_test(session, tests, lines, served)
    finally:
        ended, limit = lines[-1].cell_ended, session.timeout
        if not ended.wait(limit if limit and limit > 0 else None):
            session.interrupt()
            if not ended.wait(kernel_line.GRACE):
                session.kill()


def _each_test(session, tests: list, lines: list, served: list[Served]) -> None:
    for i, (test, line) in enumerate(zip(tests, lines)):
        session.line, session.marks = line, []
        served.append(Served(marks=session.marks))
        try:
            line.accept()
            session.waiting.discard(line.name)
            if i:
                session.phase(False)  # where this test's outputs begin
            served[-1].value = test()
        except BaseException as exc:  # noqa: BLE001 - handed to the grading thread
            served[-1].raised = exc
        finally:
            stop = served[-1].raised is not None or line.overran
            if line.overran:
                session.interrupt()
            line.finish(go_on=not stop)
            if line.overran and not line.cell_ended.wait(kernel_line.GRACE):
                session.kill()  # it ignored the interrupt (a handler, a loop in C)
        if stop:
            return
