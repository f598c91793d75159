"""Assertion helpers for the notebooks' test cells.

Every helper raises ``AssertionError`` with a message that names the behaviour that
failed and how far off the answer was, never the hidden expected value, so that feedback
teaches without giving the answer away.

Every helper the pure-Python exercise's tests call (exercise 1) needs the standard library
only: the website runs them in the browser's Python (``_ext/course_runner.py``), which has
no NumPy. Plain Python numbers and lists are compared in Python, arrays and tensors with
NumPy, with the same messages (``tests/test_testing_helpers.py`` compares the two).
"""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import dis
import math
import numbers
import sys
import types
from typing import Any, Callable

from autograder.brief_tracebacks import install as show_check_failures_briefly

try:
    import numpy as np
except ImportError:  # pragma: no cover - the website's in-page tier: plain Python values only
    np = None


class CheckFailed(AssertionError):
    """A graded behaviour is not met; the message says which one and why."""


HIDDEN_CASE = "in a hidden case of this test: "


def mark_hidden_case(message: str) -> str:
    """A failure message of a hidden case, said to be one: the row's sentence describes the
    visible example, not this case (its own sizes and values). A knowledge check's verdict
    is no case and keeps its text."""
    if message.startswith(("Knowledge check", HIDDEN_CASE)):
        return message
    return HIDDEN_CASE + message


def fail(message: str) -> None:
    """Raise :class:`CheckFailed` with ``message``."""
    raise CheckFailed(message)


# Whether the check running now is a hidden part of a test cell: the trusted checker sets
# it (autograder.checker.run_test). A hidden case's inputs (those of a hidden part, or made
# by a check of autograder.checks) reach no feedback, so there a learner's exception is
# shown by its kind only (the message can carry the inputs: ``raise ValueError(f"{row}")``,
# a Rust ``Err`` text) and no value of the learner's output or of the expected answer is
# shown, only how far they differ.
_HIDDEN = contextvars.ContextVar("autograder_hidden_part", default=False)


def in_hidden_part() -> bool:
    """Whether the case being judged now is a hidden one: a hidden part of a test (see
    :func:`hidden_part`), or a check of :mod:`autograder.checks` (the trusted side, whose
    inputs no learner sees, even where a visible part calls it)."""
    if _HIDDEN.get():
        return True
    frame = sys._getframe(1)
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith("autograder.checks."):
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def hidden_part(hidden: bool = True):
    """Run the block as a hidden part of a test (``hidden``) or a visible one: the failure
    messages of the helpers here then show no learner message and no value."""
    token = _HIDDEN.set(bool(hidden))
    try:
        yield
    finally:
        _HIDDEN.reset(token)


def error_kind(exc: BaseException | None = None, *, kinds: list | tuple = ()) -> str:
    """The name of the built-in exception class ``exc`` is (or, for an exception reported as
    data, the first built-in name of ``kinds``): ``ValueError`` for a learner's
    ``class Row1p25(ValueError)``, whose name could carry an input; ``Exception`` when none."""
    if exc is not None:  # a built-in class itself, never a class that only bears its name
        return next(k.__name__ for k in type(exc).__mro__
                    if getattr(builtins, k.__name__, None) is k)
    for k in kinds:
        cls = getattr(builtins, k, None) if type(k) is str else None
        if isinstance(cls, type) and issubclass(cls, BaseException):
            return k
    return "Exception"


def course_raised(exc: BaseException | None) -> bool:
    """Whether ``exc`` is an error the course's own glue raised about the learner's code,
    not one out of the learner's code: a Rust compile error
    (:class:`autograder.rust_source.RustCompileError`, the class itself, raised in this process:
    rustc's messages about the learner's own cells, which carry no hidden input). It keeps
    its name and message in a hidden case too, so that every test that needs the cells says
    they do not compile. A learner's exception that the checker stands in for is a class of
    the module ``learner``, never this one."""
    rust = sys.modules.get("autograder.rust_source")  # not loaded: nothing raised one
    compile_error = getattr(rust, "RustCompileError", None)
    return exc is not None and compile_error is not None and type(exc) is compile_error


def raised(exc: BaseException | None = None, *, name: str = "", message: str = "",
           kinds: list | tuple = ()) -> str:
    """How an exception of the learner's code is named in a failure: ``ValueError: its
    message`` in a visible case, ``ValueError`` alone in a hidden one (:func:`error_kind`;
    the message and the class's own name can carry hidden inputs). ``exc``, or one reported
    as data (``name``, ``message``, ``kinds``: a probe's report)."""
    if in_hidden_part() and not course_raised(exc):
        return f"{error_kind(exc, kinds=kinds)} (a hidden case: its message is not shown)"
    if exc is not None:
        name, message = type(exc).__name__, str(exc)
    return f"{name}: {message}" if str(message) else str(name)


def call_learner(fn: Callable, *args, what: str, within=None,
                 hint: Callable[[BaseException], str] | None = None, **kwargs):
    """Call a learner's function; turn the stub or any exception into a clear failure.

    ``within``: a context manager the call runs in, such as ``np.errstate(all="ignore")``
    or ``torch.no_grad()``. ``hint``: names the likely mistake behind an exception (such
    as :func:`autograder.diagnose_python.exception_hint`), appended when not ''.
    """
    try:
        with within if within is not None else contextlib.nullcontext():
            return fn(*args, **kwargs)
    except NotImplementedError as exc:
        # ex08's Rust stub is todo!(), which autograder.rust raises as RustNotImplemented
        stub = ("still reaches the stub's todo!()" if type(exc).__name__ == "RustNotImplemented"
                else "the stub raises NotImplementedError")
        fail(f"{what}: not implemented yet ({stub})")
    except Exception as exc:  # noqa: BLE001 - a learner's code may raise anything
        extra = hint(exc) if hint is not None else ""
        fail(f"{what}: raised {raised(exc)}" + (f". Hint: {extra}." if extra else ""))


def check_type(value: Any, expected: type | tuple[type, ...], what: str) -> None:
    """Check ``type(value)`` is exactly one of ``expected`` (no subclasses such as np.float64)."""
    types = expected if isinstance(expected, tuple) else (expected,)
    if type(value) not in types:
        names = " or ".join(t.__name__ for t in types)
        fail(f"{what} should be a {names}, got {type(value).__name__}")


def check_array(value: Any, shape: tuple, what: str) -> np.ndarray:
    """Check ``value`` is a ``numpy.ndarray`` of ``shape``; return it."""
    if not isinstance(value, np.ndarray):
        fail(f"{what} should be a numpy.ndarray, got {type(value).__name__}")
    if value.shape != tuple(shape):
        fail(f"{what}: shape should be {tuple(shape)}, got {value.shape}")
    return value


def check_tensor(value: Any, shape: tuple, what: str, *, device: str | None = None,
                 dtype=None, finite: bool = False):
    """Check ``value`` is a ``torch.Tensor`` of ``shape`` (on ``device``'s type, of
    ``dtype``, without NaN or infinity when ``finite``); return it."""
    import torch

    if not isinstance(value, torch.Tensor):
        fail(f"{what} should be a torch.Tensor, got {type(value).__name__}")
    if tuple(value.shape) != tuple(shape):
        fail(f"{what}: shape should be {tuple(shape)}, got {tuple(value.shape)}")
    if device is not None and value.device.type != torch.device(device).type:
        fail(f"{what}: should be on {device} like its inputs, got {value.device}")
    if dtype is not None and value.dtype != dtype:
        fail(f"{what}: dtype should be {dtype}, got {value.dtype}")
    if finite and not torch.isfinite(value).all():
        fail(f"{what} contains NaN or infinity")
    return value


def some_true_per_row(rng, shape: tuple, p: float = 0.6):
    """A random boolean mask of ``shape`` with at least one True in every row (no fully
    masked query): a NumPy array from a ``np.random.Generator``, a tensor from a
    ``torch.Generator``."""
    if isinstance(rng, np.random.Generator):
        m = rng.random(shape) < p
        idx = rng.integers(0, shape[-1], size=shape[:-1])
        np.put_along_axis(m, idx[..., None], True, axis=-1)
        return m
    import torch

    m = torch.rand(*shape, generator=rng) < p
    idx = torch.randint(0, shape[-1], shape[:-1], generator=rng)
    m.scatter_(-1, idx.unsqueeze(-1), True)
    return m


def check_matrix_of_floats(value: Any, rows: int, cols: int, what: str) -> None:
    """Check a pure-Python list of ``rows`` lists of ``cols`` Python floats."""
    check_type(value, list, what)
    if len(value) != rows:
        fail(f"{what} should have {rows} rows, got {len(value)}")
    for i, row in enumerate(value):
        check_type(row, list, f"{what}[{i}]")
        if len(row) != cols:
            fail(f"{what}[{i}] should have {cols} entries, got {len(row)}")
        for j, x in enumerate(row):
            check_type(x, float, f"{what}[{i}][{j}]")


def check_list_of_floats(value: Any, length: int, what: str) -> None:
    """Check a pure-Python list of ``length`` Python floats."""
    check_type(value, list, what)
    if len(value) != length:
        fail(f"{what} should have {length} entries, got {len(value)}")
    for j, x in enumerate(value):
        check_type(x, float, f"{what}[{j}]")


def assert_close(
    actual: Any,
    expected: Any,
    what: str,
    *,
    rtol: float = 1e-7,
    atol: float = 0.0,
    show_expected: bool = False,
) -> None:
    """Compare ``actual`` with ``expected`` elementwise, as arrays of float64.

    Checks shape first, then finiteness, then |actual - expected| <= atol + rtol |expected|.
    The message gives the largest error; it shows the expected values only when
    ``show_expected`` is True (visible tests with known values), and no value at all in a
    hidden part of a test (:func:`in_hidden_part`). Plain Python numbers and
    (nested) lists or tuples of them are compared in Python, anything else with NumPy
    (``np.asarray``); both give the same verdict and message.

    Raises:
        CheckFailed: a different shape, a missing or extra infinity or NaN, a value off by
            more than the tolerance, or a result that is not an array of numbers.
    """
    if np is None or (_plain(actual) and _plain(expected)):
        _assert_close_plain(actual, expected, what, rtol, atol, show_expected)
    else:
        _assert_close_array(actual, expected, what, rtol, atol, show_expected)


def _plain(value: Any) -> bool:
    """A Python number, or a list or tuple of plain values."""
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return type(value) in (int, float, bool)


def _flatten(value: Any) -> tuple[tuple[int, ...], list[float]]:
    """(shape, entries in row-major order) of nested lists of numbers, as NumPy reads them.
    Raises ValueError for rows of different lengths, TypeError or ValueError for an entry
    that is not a number."""
    if not isinstance(value, (list, tuple)):
        return (), [float(value)]
    parts = [_flatten(v) for v in value]
    shapes = {shape for shape, _ in parts}
    if len(shapes) > 1:
        raise ValueError(f"rows of different shapes {sorted(shapes)}")
    inner = parts[0][0] if parts else ()
    return (len(value), *inner), [x for _, flat in parts for x in flat]


def _nest(flat: list[float], shape: tuple[int, ...]) -> Any:
    """The inverse of :func:`_flatten`: nested lists of ``shape`` (a number for shape ())."""
    if not shape:
        return flat[0]
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _round6(x: float) -> float:
    """``np.round(x, 6)``: x scaled by 10^6, rounded half to even, scaled back (sign kept)."""
    if not math.isfinite(x):
        return x
    y = x * 1e6
    return math.copysign(round(y) / 1e6, y)


def _index(flat_index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The row-major multi-index of ``flat_index`` in ``shape``."""
    out = []
    for n in reversed(shape):
        flat_index, i = divmod(flat_index, n)
        out.append(i)
    return tuple(reversed(out))


def _value(x) -> str:
    """A value in a message: itself in a visible part, "a non-finite value" in a hidden one."""
    return "a non-finite value" if in_hidden_part() else str(x)


def _assert_close_plain(actual, expected, what, rtol, atol, show_expected) -> None:
    """:func:`assert_close` on plain Python values, without NumPy."""
    try:
        shape, a = _flatten(actual)
    except (TypeError, ValueError) as exc:
        fail(f"{what}: could not read the result as an array of numbers ({exc})")
    e_shape, e = _flatten(expected)
    if shape != e_shape:
        fail(f"{what}: shape should be {e_shape}, got {shape}")
    for k, (x, y) in enumerate(zip(a, e)):
        if math.isfinite(x) != math.isfinite(y):
            idx = _index(k, shape)
            if math.isfinite(y):
                fail(f"{what}: got {_value(x)} at index {idx} where a finite number was "
                     "expected")
            fail(f"{what}: got a finite number at index {idx} where {_value(y)} was expected")
    pairs = [(abs(x - y), atol + rtol * abs(y)) for x, y in zip(a, e) if math.isfinite(y)]
    if any(err > tol for err, tol in pairs):
        margins = [err - tol for err, tol in pairs]
        worst = margins.index(max(margins))
        msg = f"{what}: values differ (largest error {max(err for err, _ in pairs):.3g}"
        msg += f", allowed {pairs[worst][1]:.3g})"
        if show_expected and not in_hidden_part():
            msg += (f"; expected {_nest([_round6(y) for y in e], shape)}, "
                    f"got {_nest([_round6(x) for x in a], shape)}")
        fail(msg)


def _assert_close_array(actual, expected, what, rtol, atol, show_expected) -> None:
    """:func:`assert_close` with NumPy, for arrays, tensors and other array-likes."""
    try:
        a = np.asarray(actual, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        fail(f"{what}: could not read the result as an array of numbers ({exc})")
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        fail(f"{what}: shape should be {e.shape}, got {a.shape}")
    finite = np.isfinite(e)
    mismatch = np.isfinite(a) != finite
    if mismatch.any():
        idx = tuple(int(i) for i in np.argwhere(mismatch)[0])
        if finite[idx]:
            fail(f"{what}: got {_value(a[idx])} at index {idx} where a finite number was "
                 "expected")
        fail(f"{what}: got a finite number at index {idx} where {_value(e[idx])} was expected")
    with np.errstate(invalid="ignore"):  # inf - inf where both are infinite: masked out
        err = np.abs(a - e)[finite]
        tol = (atol + rtol * np.abs(e))[finite]
    if err.size and np.any(err > tol):
        worst = int(np.argmax(err - tol))
        msg = f"{what}: values differ (largest error {err.max():.3g}"
        msg += f", allowed {tol.flat[worst]:.3g})"
        if show_expected and not in_hidden_part():
            msg += f"; expected {np.round(e, 6).tolist()}, got {np.round(a, 6).tolist()}"
        fail(msg)


@contextlib.contextmanager
def explain(hint: Callable[[], str]):
    """Append ``hint()`` (a diagnosis of the mistake, see :mod:`autograder.diagnose`) to a
    failure raised inside the block."""
    try:
        yield
    except CheckFailed as exc:
        try:
            extra = hint()
        except Exception:  # noqa: BLE001 - a diagnosis must never hide the failure
            extra = ""
        if extra:
            text = str(exc).rstrip()
            raise CheckFailed(f"{text}{'' if text.endswith('.') else '.'} Hint: {extra}.") \
                from None
        raise


def expect_value_error(fn: Callable, args: tuple, what: str,
                       mentions: tuple[str, ...] = ()) -> None:
    """Check that ``fn(*args)`` raises ValueError with a message (not another error, not a
    result, not a bare ``ValueError()``). With ``mentions``, the message must contain at
    least one of those texts (the offending argument's name or value)."""
    try:
        fn(*args)
    except ValueError as exc:
        if not str(exc).strip():
            fail(f"{what}: raises ValueError with no message; say which shape or value is "
                 "wrong")
        if mentions and not any(m in str(exc) for m in mentions):
            fail(f"{what}: the ValueError's message should name the offending argument "
                 f"({' or '.join(repr(m) for m in mentions)})"
                 + ("" if in_hidden_part() else f", got: {exc}"))
        return
    except Exception as exc:  # noqa: BLE001 - a learner's code may raise anything
        fail(f"{what}: should raise ValueError, raised {raised(exc)}")
    fail(f"{what}: should raise ValueError, but returned a result")


def traced_peak(fn: Callable, *args, **kwargs) -> tuple[Any, int]:
    """``(fn(*args, **kwargs), the peak bytes tracemalloc traced during the call)``: the
    visible memory tests' self-check, in the learner's own kernel (NumPy's allocations).

    A learner's function that the trusted checker calls in the kernel
    (:class:`autograder.checker.Remote`) does not allocate in the checker's process, so
    there is nothing here to trace: its peak is given as 0 and the hidden test measures
    the call from outside (:mod:`autograder.peak_probe`)."""
    import tracemalloc

    if type(fn).__module__ == "autograder.checker":
        return fn(*args, **kwargs), 0
    if tracemalloc.is_tracing():
        raise RuntimeError("tracemalloc is already tracing; measure one call at a time")
    tracemalloc.start()
    try:
        result = fn(*args, **kwargs)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def check_answer(answer: Any, expected: Any, question: str) -> None:
    """Check a knowledge-check answer.

    Strings compare case-insensitively after stripping spaces. An ``int`` expected answer
    (a count) is compared exactly: the answer must be a whole number (``3``, ``3.0`` or a
    NumPy integer) equal to it, so a parameter count that forgets 512 biases is wrong. A
    ``float`` expected answer is compared with a relative tolerance of 1e-3. Numbers may be
    Python or NumPy numbers, never bool. The comparison uses the answer's plain value
    (``str.__str__``, ``float()``, ``int()``), so an object whose ``__eq__`` always returns
    True gains nothing.
    """
    if answer is None or answer is Ellipsis:
        fail(f"{question}: no answer given yet")
    if isinstance(expected, str):
        if not isinstance(answer, str):
            fail(f"{question}: the answer should be a str, got {type(answer).__name__}")
        value = str.__str__(answer)
        ok = str.lower(str.strip(value)) == expected.strip().lower()
    elif isinstance(expected, (int, float)):
        if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
            fail(f"{question}: the answer should be a number, got {type(answer).__name__}")
        try:
            value = float(answer)
        except (TypeError, ValueError, OverflowError):
            fail(f"{question}: the answer should be a number, got {type(answer).__name__}")
        if isinstance(expected, int):
            if not math.isfinite(value) or value != int(value):
                fail(f"{question}: the answer should be a whole number, got {value!r}")
            value = int(value) if not isinstance(answer, numbers.Integral) else int(answer)
            ok = value == expected
        else:
            ok = math.isclose(value, float(expected), rel_tol=1e-3, abs_tol=1e-9)
    else:  # pragma: no cover - authors' mistake
        raise TypeError(f"unsupported expected answer type {type(expected).__name__}")
    if not ok:
        fail(f"{question}: {value!r} is not the right answer")


BANNED_MODULES = ("numpy", "torch", "scipy", "jax", "tensorflow", "pandas")


def _code_names(code: types.CodeType) -> set[str]:
    """Global names a function loads and modules it imports (not attribute names)."""
    names, stack = set(), [code]
    while stack:
        c = stack.pop()
        for ins in dis.get_instructions(c):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "IMPORT_NAME", "STORE_GLOBAL"):
                names.add(str(ins.argval).split(".")[0])
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return names


def referenced_values(fn: Callable, names) -> list[tuple[str | None, Any]]:
    """What a learner's function refers to: ``(name, value)`` for each of ``names`` bound in
    its globals, then ``(None, value)`` for each filled cell of its closure (the helpers and
    modules of an enclosing function). The checks that forbid libraries or functions walk
    the learner's helpers with it."""
    g = getattr(fn, "__globals__", {})
    found: list[tuple[str | None, Any]] = [(n, g[n]) for n in names if n in g]
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            found.append((None, cell.cell_contents))
        except ValueError:  # an empty cell
            continue
    return found


def check_pure_python(*functions: Callable, banned: tuple[str, ...] = BANNED_MODULES) -> None:
    """Check that the functions (and the helpers they call) use no array library.

    Looks at every global name the functions' code refers to, following the learner's own
    helper functions: a module from ``banned``, or a function or class defined in one, fails.
    So do ``import numpy`` inside a function and ``__import__`` or ``importlib``.
    """
    seen: set[int] = set()
    stack = list(functions)
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        code = getattr(fn, "__code__", None)
        if code is None:
            continue
        names = _code_names(code)
        for name in names & {"__import__", "importlib", "import_module", *banned}:
            fail(f"{fn.__name__} refers to {name!r}: this exercise is pure Python")
        for name, obj in referenced_values(fn, names):
            root = (getattr(obj, "__name__", "") if isinstance(obj, types.ModuleType)
                    else getattr(obj, "__module__", None) or "").split(".")[0]
            if root in banned:
                fail(f"{fn.__name__} uses {name!r} from {root}: this exercise is pure Python"
                     if name else f"{fn.__name__} uses {root}: this exercise is pure Python")
            if isinstance(obj, types.FunctionType):
                stack.append(obj)
            elif name and isinstance(obj, type):
                stack.extend(v for v in vars(obj).values() if isinstance(v, types.FunctionType))


# In a learner's notebook, a failed check shows the cell line and the message, not the
# frames of these helpers (autograder.brief_tracebacks).
show_check_failures_briefly(CheckFailed)
