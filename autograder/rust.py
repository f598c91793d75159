"""Rust in a Python notebook: compile safe Rust with ``rustc`` and call it from Python.

The learner (``ex08_rust_attention``) and the reader (chapter 2) write ordinary safe Rust
functions with these signatures, standard library only::

    fn softmax(row: &[f64]) -> Result<Vec<f64>, String>
    fn scaled_dot_product_attention(q: &[Vec<f64>], k: &[Vec<f64>], v: &[Vec<f64>])
        -> Result<Vec<Vec<f64>>, String>

This module adds the foreign-function glue itself (generated ``extern "C"`` wrappers with
``catch_unwind``; the learner never writes ``unsafe`` or ``extern``), compiles the crate
with ``rustc --crate-type cdylib -O`` into a shared library, cached by the hash of its
source, and returns Python callables (:class:`RustFunction`) through :mod:`ctypes`:

- arguments are lists of numbers, lists of lists, or NumPy arrays (passed without copying);
  results are lists of Python floats;
- ``Err(message)`` raises ``ValueError(message)``;
- a panic raises :class:`RustPanic` (a ``RuntimeError``) with the panic's message and the
  line of the Rust source; ``todo!()`` and ``unimplemented!()`` raise
  :class:`RustNotImplemented`, a ``NotImplementedError``, as a Python stub would;
- a call runs in a helper thread, so an interrupt (Ctrl-C, a cell timeout) stops the wait
  even when the Rust code loops forever; the loop itself runs on until the kernel exits;
- a compile error raises :class:`RustCompileError` with rustc's own message, pointing at
  the learner's file and line (each cell is its own file, line 1 being the ``%%rust``
  line, as the notebook numbers it).

In a notebook, ``%load_ext autograder.rust`` registers the cell magic ``%%rust``
(:func:`load_ipython_extension`): all Rust cells run so far form one crate, so a later cell
can call a function of an earlier one; a cell that defines a name again replaces the cell
that defined it before.
"""

from __future__ import annotations

import array
import ctypes
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REFERENCE = Path(__file__).resolve().parent / "reference" / "rust" / "attention.rs"
"""The course's reference ``softmax`` and ``scaled_dot_product_attention`` in Rust."""

INSTALL_HINT = (
    "rustc, the Rust compiler, was not found (not on PATH, not in ~/.cargo/bin, and RUSTC is "
    "not set). Install it with rustup (https://rustup.rs: `curl --proto '=https' --tlsv1.2 "
    "-sSf https://sh.rustup.rs | sh`) or your system's package manager (Debian and Ubuntu: "
    "`sudo apt-get install rustc`), then restart the kernel."
)

SIGNATURES = {
    "softmax": "fn softmax(row: &[f64]) -> Result<Vec<f64>, String>",
    "scaled_dot_product_attention": (
        "fn scaled_dot_product_attention(q: &[Vec<f64>], k: &[Vec<f64>], v: &[Vec<f64>]) "
        "-> Result<Vec<Vec<f64>>, String>"),
}
"""The functions the glue can call, with the signature it expects."""


class RustcNotFound(RuntimeError):
    """No Rust compiler on this machine; the message says how to install one."""

    def _render_traceback_(self) -> list[str]:  # IPython shows this instead of a traceback
        return [f"RustcNotFound: {self}"]


class RustCompileError(Exception):
    """rustc rejected the source; ``str(error)``: its first error in one line (the cell,
    the line, the message: :func:`headline`), then rustc's messages."""

    def _render_traceback_(self) -> list[str]:  # IPython shows this instead of a traceback
        return [f"RustCompileError: rustc could not compile the Rust code: {self}"]


class RustPanic(RuntimeError):
    """The Rust function panicked; the message is the panic's, with its file and line."""

    def _render_traceback_(self) -> list[str]:  # the panic's own line, not the glue's frames
        return [f"{type(self).__name__}: {self}"]


class RustNotImplemented(NotImplementedError, RustPanic):
    """The Rust function reached ``todo!()`` or ``unimplemented!()``."""


# ---------------------------------------------------------------------------- compiling

def find_rustc() -> str | None:
    """Path of rustc: $RUSTC, then PATH, then ~/.cargo/bin (rustup's folder); None if absent."""
    candidates = [os.environ.get("RUSTC"), shutil.which("rustc")]
    cargo_home = os.environ.get("CARGO_HOME") or str(Path.home() / ".cargo")
    candidates.append(str(Path(cargo_home) / "bin" / "rustc"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


_versions: dict[str, str] = {}


def rustc_version(rustc: str | None = None) -> str:
    """``rustc --version`` of the compiler in use; raises :class:`RustcNotFound`."""
    rustc = rustc or find_rustc()
    if rustc is None:
        raise RustcNotFound(INSTALL_HINT)
    if rustc not in _versions:
        done = subprocess.run([rustc, "--version"], capture_output=True, text=True)
        _versions[rustc] = done.stdout.strip() or done.stderr.strip()
    return _versions[rustc]


def cache_dir() -> Path:
    """Where compiled libraries are kept: $AUTOGRADER_RUST_CACHE, else the user's cache
    folder (``$XDG_CACHE_HOME`` or ``~/.cache``)/attention-course/rust, else a folder in
    the temporary directory when that one is not writable."""
    for base in (os.environ.get("AUTOGRADER_RUST_CACHE"),
                 str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                     / "attention-course" / "rust"),
                 str(Path(tempfile.gettempdir()) / f"attention-course-rust-{os.getuid()}")):
        if not base:
            continue
        try:
            Path(base).mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(base, os.W_OK):
            return Path(base)
    raise OSError("no writable folder for compiled Rust libraries; set AUTOGRADER_RUST_CACHE")


@dataclass(frozen=True)
class RustSource:
    """One file of the crate: its file name (shown in rustc's messages) and its text."""

    name: str
    text: str


_ITEM = re.compile(r"^(?:pub(?:\([^)]*\))?\s+)?(?:const\s+|unsafe\s+|extern\s+\"C\"\s+)*"
                   r"(fn|struct|enum|const|static|type|trait|mod|union)\s+([A-Za-z_]\w*)", re.M)


def defined_names(text: str) -> set[str]:
    """Names of the top-level items (not indented) that Rust source ``text`` defines."""
    return {m.group(2) for m in _ITEM.finditer(text)}


def _dedup_uses(files: list[RustSource]) -> list[RustSource]:
    """Blank top-level ``use`` lines already made by an earlier file (same line numbers):
    all files form one module, where importing a name twice is an error."""
    seen, out = set(), []
    for f in files:
        lines = f.text.split("\n")
        for i, line in enumerate(lines):
            if line.startswith("use ") and line.rstrip().endswith(";"):
                key = " ".join(line.split())
                if key in seen:
                    lines[i] = ""
                seen.add(key)
        out.append(RustSource(f.name, "\n".join(lines)))
    return out


_GLUE_HEAD = r'''
#[allow(unsafe_code, dead_code)]
mod __course_glue {
    use std::cell::RefCell;
    use std::panic;

    #[repr(C)]
    pub struct Out {
        pub status: u32,
        pub data: *mut f64,
        pub len: usize,
        pub rows: *mut usize,
        pub n_rows: usize,
        pub msg: *mut u8,
        pub msg_len: usize,
    }

    thread_local! { static PANIC: RefCell<String> = RefCell::new(String::new()); }
    static HOOK: std::sync::Once = std::sync::Once::new();

    fn install_hook() {
        HOOK.call_once(|| {
            panic::set_hook(Box::new(|info| {
                let p = info.payload();
                let msg = if let Some(s) = p.downcast_ref::<&str>() {
                    s.to_string()
                } else if let Some(s) = p.downcast_ref::<String>() {
                    s.clone()
                } else {
                    String::from("(a panic without a message)")
                };
                let place = match info.location() {
                    Some(l) => format!("{}:{}:{}", l.file(), l.line(), l.column()),
                    None => String::new(),
                };
                PANIC.with(|c| *c.borrow_mut() = format!("{}\u{0}{}", msg, place));
            }));
        });
    }

    fn slice<'a>(ptr: *const f64, len: usize) -> &'a [f64] {
        if len == 0 { &[] } else { unsafe { std::slice::from_raw_parts(ptr, len) } }
    }

    fn matrix(data: *const f64, lens: *const usize, n_rows: usize) -> Vec<Vec<f64>> {
        let lens: &[usize] =
            if n_rows == 0 { &[] } else { unsafe { std::slice::from_raw_parts(lens, n_rows) } };
        let mut at = 0usize;
        let mut out = Vec::with_capacity(n_rows);
        for &n in lens {
            out.push(if n == 0 { Vec::new() } else { slice(unsafe { data.add(at) }, n).to_vec() });
            at += n;
        }
        out
    }

    fn text(out: &mut Out, status: u32, s: String) {
        let b = s.into_bytes().into_boxed_slice();
        out.status = status;
        out.msg_len = b.len();
        out.msg = Box::into_raw(b) as *mut u8;
    }

    fn run<F>(out: *mut Out, f: F)
    where
        F: FnOnce() -> Result<Vec<Vec<f64>>, String>,
    {
        install_hook();
        let out = unsafe { &mut *out };
        match panic::catch_unwind(panic::AssertUnwindSafe(f)) {
            Ok(Ok(rows)) => {
                let lens: Vec<usize> = rows.iter().map(|r| r.len()).collect();
                let flat: Vec<f64> = rows.into_iter().flatten().collect();
                let flat = flat.into_boxed_slice();
                let lens = lens.into_boxed_slice();
                out.status = 0;
                out.len = flat.len();
                out.n_rows = lens.len();
                out.data = Box::into_raw(flat) as *mut f64;
                out.rows = Box::into_raw(lens) as *mut usize;
            }
            Ok(Err(msg)) => text(out, 1, msg),
            Err(_) => text(out, 2, PANIC.with(|c| c.borrow().clone())),
        }
    }

    #[no_mangle]
    pub extern "C" fn course_free(out: *mut Out) {
        let out = unsafe { &mut *out };
        unsafe {
            if !out.data.is_null() {
                drop(Box::from_raw(std::slice::from_raw_parts_mut(out.data, out.len)));
            }
            if !out.rows.is_null() {
                drop(Box::from_raw(std::slice::from_raw_parts_mut(out.rows, out.n_rows)));
            }
            if !out.msg.is_null() {
                drop(Box::from_raw(std::slice::from_raw_parts_mut(out.msg, out.msg_len)));
            }
        }
        out.data = std::ptr::null_mut();
        out.rows = std::ptr::null_mut();
        out.msg = std::ptr::null_mut();
    }
'''

_GLUE = {
    "softmax": r'''
    #[no_mangle]
    pub extern "C" fn course_softmax(x: *const f64, n: usize, out: *mut Out) {
        let row = slice(x, n);
        // The course calls `fn softmax(row: &[f64]) -> Result<Vec<f64>, String>`.
        let softmax: fn(&[f64]) -> Result<Vec<f64>, String> = super::softmax;
        run(out, move || softmax(row).map(|w| vec![w]))
    }
''',
    "scaled_dot_product_attention": r'''
    #[no_mangle]
    pub extern "C" fn course_scaled_dot_product_attention(
        q: *const f64, q_lens: *const usize, q_rows: usize,
        k: *const f64, k_lens: *const usize, k_rows: usize,
        v: *const f64, v_lens: *const usize, v_rows: usize,
        out: *mut Out,
    ) {
        let (q, k, v) = (matrix(q, q_lens, q_rows), matrix(k, k_lens, k_rows),
                         matrix(v, v_lens, v_rows));
        // The course calls `fn scaled_dot_product_attention(q: &[Vec<f64>], k: &[Vec<f64>],
        // v: &[Vec<f64>]) -> Result<Vec<Vec<f64>>, String>`.
        let attention: fn(&[Vec<f64>], &[Vec<f64>], &[Vec<f64>])
            -> Result<Vec<Vec<f64>>, String> = super::scaled_dot_product_attention;
        run(out, move || attention(&q, &k, &v))
    }
''',
}


def crate_source(files: list[RustSource], functions: list[str]) -> str:
    """The crate root: every file ``include!``d (so rustc names the file and its own line
    numbers), then the glue for ``functions`` (names from :data:`SIGNATURES`)."""
    head = "#![allow(unused)]\n" + "".join(f'include!("{f.name}");\n' for f in files)
    glue = _GLUE_HEAD + "".join(_GLUE[name] for name in functions) + "}\n"
    return head + glue


def _render(stderr: str, glue_file: str) -> str:
    """rustc's human-readable messages from its JSON diagnostics; a message about the
    generated glue (a changed signature) gets a note saying which signature is expected."""
    parts = []
    for line in stderr.splitlines():
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            if line.strip():
                parts.append(line)
            continue
        if d.get("$message_type", "diagnostic") != "diagnostic" or d.get("level") not in (
                "error", "warning"):
            continue
        text = d.get("rendered") or d.get("message", "")
        if any(s.get("file_name") == glue_file for s in d.get("spans", [])):
            wanted = [sig for name, sig in SIGNATURES.items() if name in text]
            wanted = wanted or list(SIGNATURES.values())
            text = ("error: the course calls your function with this signature; keep it "
                    "exactly (rustc reports the mismatch in the course's glue):\n    "
                    + "\n    ".join(wanted) + "\n\n" + text)
        parts.append(text.rstrip())
    return "\n\n".join(parts)


_MISSING_FN = "E0425"  # cannot find a function: in a later cell, the sign of an earlier failure


def headline(stderr: str, texts: dict[str, str] | None = None) -> str:
    """One line for rustc's first error in ``stderr`` (its JSON diagnostics): ``cell
    <id>, line N: <message> (error[E...])``, N as the notebook numbers the cell's lines
    (its ``%%rust`` line is line 1) and, from ``texts`` (file name -> text), the code on
    that line. An error that only misses a function (E0425, an earlier cell's failure
    showing again) is named only when no other error is. '' when there is no error."""
    errors = []
    for line in stderr.splitlines():
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(d, dict) and d.get("level") == "error" and d.get("message") and \
                not str(d["message"]).startswith("aborting due to"):
            errors.append(d)
    if not errors:
        return ""
    d = next((e for e in errors if (e.get("code") or {}).get("code") != _MISSING_FN), errors[0])
    code = (d.get("code") or {}).get("code")
    spans = [s for s in d.get("spans", []) if s.get("is_primary")] or d.get("spans", [])
    where = ""
    if spans and re.fullmatch(r"cell_\w+\.rs", str(spans[0].get("file_name", ""))):
        name, n = spans[0]["file_name"], int(spans[0].get("line_start", 0))
        lines = (texts or {}).get(name, "").split("\n")
        shown = lines[n - 1].strip() if 0 < n <= len(lines) else ""
        where = f"cell {name[5:-3]}, line {n}" + (f" ({shown[:80]})" if shown else "") + ": "
    return where + str(d["message"]).splitlines()[0] + (f" (error[{code}])" if code else "")


def _compile(files: list[RustSource], functions: list[str]) -> tuple[Path, str]:
    """Compile (or find in the cache) the crate; returns (library path, warnings)."""
    rustc = find_rustc()
    if rustc is None:
        raise RustcNotFound(INSTALL_HINT)
    files = _dedup_uses(files)
    lib_rs = crate_source(files, functions)
    flags = ["--edition", "2021", "--crate-type", "cdylib", "-O", "--crate-name",
             "course_rust", "--error-format", "json", "--color", "never"]
    h = hashlib.sha256()
    for part in [rustc_version(rustc), " ".join(flags), lib_rs,
                 *(f"{f.name}\0{f.text}" for f in files)]:
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    key = h.hexdigest()[:32]
    root = cache_dir()
    target = root / f"course_rust_{key}.so"
    if target.is_file():
        return target, ""
    with tempfile.TemporaryDirectory(dir=root, prefix="build-") as tmp:
        build = Path(tmp)
        for f in files:
            (build / f.name).write_text(f.text, encoding="utf-8")
        (build / "course_glue.rs").write_text(lib_rs, encoding="utf-8")
        done = subprocess.run([rustc, *flags, "course_glue.rs", "-o", "lib.so"], cwd=build,
                              capture_output=True, text=True, encoding="utf-8",
                              errors="replace")
        messages = _render(done.stderr, "course_glue.rs")
        if done.returncode != 0 or not (build / "lib.so").is_file():
            first = headline(done.stderr, {f.name: f.text for f in files})
            raise RustCompileError((f"{first}\n\n" if first else "") + (
                messages or f"rustc exited with status {done.returncode}"))
        os.replace(build / "lib.so", target)  # atomic: a concurrent build finds a whole file
    return target, messages


# ------------------------------------------------------------------------------ calling

class _Out(ctypes.Structure):
    _fields_ = [("status", ctypes.c_uint32), ("data", ctypes.POINTER(ctypes.c_double)),
                ("len", ctypes.c_size_t), ("rows", ctypes.POINTER(ctypes.c_size_t)),
                ("n_rows", ctypes.c_size_t), ("msg", ctypes.POINTER(ctypes.c_char)),
                ("msg_len", ctypes.c_size_t)]


_P_DOUBLE = ctypes.POINTER(ctypes.c_double)
_P_SIZE = ctypes.POINTER(ctypes.c_size_t)
_SIZE_T = next(c for c in "LQI" if array.array(c).itemsize == ctypes.sizeof(ctypes.c_size_t))


def _vector(x: Any, what: str) -> tuple[Any, Any, int]:
    """(keep-alive, pointer, length) of a sequence of numbers for the C side."""
    if type(x).__module__ == "numpy":
        import numpy as np

        a = np.ascontiguousarray(x, dtype=np.float64)
        if a.ndim != 1:
            raise ValueError(f"{what} must be one-dimensional, got shape {a.shape}")
        return a, a.ctypes.data_as(_P_DOUBLE), a.size
    try:
        a = array.array("d", x)
    except TypeError as exc:
        raise TypeError(f"{what} must be a sequence of numbers ({exc})") from None
    return a, ctypes.cast(a.buffer_info()[0], _P_DOUBLE), len(a)


def _matrix(m: Any, what: str) -> tuple[Any, Any, Any, int]:
    """(keep-alive, data pointer, row-lengths pointer, rows) of a list of rows; rows may
    differ in length (the Rust function decides what to do with ragged input)."""
    if type(m).__module__ == "numpy" and getattr(m, "ndim", 0) == 2:
        import numpy as np

        a = np.ascontiguousarray(m, dtype=np.float64)
        lens = array.array(_SIZE_T, [a.shape[1]] * a.shape[0])
        return (a, lens), a.ctypes.data_as(_P_DOUBLE), ctypes.cast(
            lens.buffer_info()[0], _P_SIZE), a.shape[0]
    data, lens = array.array("d"), array.array(_SIZE_T)
    try:
        rows = list(m)
    except TypeError:
        raise TypeError(f"{what} must be a list of rows, got {type(m).__name__}") from None
    for i, r in enumerate(rows):
        try:
            data.extend(r)
        except TypeError as exc:
            raise TypeError(f"{what}[{i}] must be a sequence of numbers ({exc})") from None
        lens.append(len(r))
    return ((data, lens), ctypes.cast(data.buffer_info()[0], _P_DOUBLE),
            ctypes.cast(lens.buffer_info()[0], _P_SIZE), len(rows))


_PANIC_AT = re.compile(r"^(.*?)\x00(.*)$", re.S)


class RustFunction:
    """A compiled Rust function, callable from Python (see the module's docstring).

    Attributes: ``__name__``, ``signature`` (the Rust signature the glue calls),
    ``rust_sources`` (the :class:`RustSource` files of the crate it was compiled from)
    and ``library`` (the shared library's path).
    """

    def __init__(self, name: str, lib: ctypes.CDLL, sources: tuple[RustSource, ...],
                 path: Path):
        self.__name__ = self.__qualname__ = name
        self.signature = SIGNATURES[name]
        self.rust_sources = sources
        self.library = path
        self._lib = lib
        self._fn = getattr(lib, f"course_{name}")
        self._fn.restype = None
        self._free = lib.course_free
        self._free.restype = None
        self.__doc__ = f"Rust `{self.signature}`, compiled with rustc, called through ctypes."

    def __repr__(self) -> str:
        return f"<Rust function {self.signature}>"

    def __call__(self, *args):
        if self.__name__ == "softmax":
            if len(args) != 1:
                raise TypeError(f"softmax takes 1 argument (row), got {len(args)}")
            keep, ptr, n = _vector(args[0], "row")
            c_args = [ptr, ctypes.c_size_t(n)]
        else:
            if len(args) != 3:
                raise TypeError(f"scaled_dot_product_attention takes 3 arguments (Q, K, V), "
                                f"got {len(args)}")
            keep, c_args = [], []
            for name, m in zip("QKV", args):
                alive, data, lens, rows = _matrix(m, name)
                keep.append(alive)
                c_args += [data, lens, ctypes.c_size_t(rows)]
        out = _Out()
        c_args.append(ctypes.byref(out))
        _run_interruptibly(self._fn, c_args, keep, out)
        try:
            if out.status == 0:
                flat = out.data[:out.len] if out.len else []
                lens = out.rows[:out.n_rows] if out.n_rows else []
                rows, at = [], 0
                for n in lens:
                    rows.append(flat[at:at + n])
                    at += n
                return rows[0] if self.__name__ == "softmax" else rows
            msg = ctypes.string_at(out.msg, out.msg_len).decode("utf-8", "replace") \
                if out.msg_len else ""
        finally:
            self._free(ctypes.byref(out))
        if out.status == 1:
            raise ValueError(msg)
        m = _PANIC_AT.match(msg)
        text, place = (m.group(1), m.group(2)) if m else (msg, "")
        where = f" (at {place})" if place else ""
        if text.startswith(("not yet implemented", "not implemented")):
            raise RustNotImplemented(f"{self.__name__} panicked: {text}{where}")
        raise RustPanic(f"{self.__name__} panicked: {text}{where}")


def _run_interruptibly(fn, c_args, keep, out) -> None:
    """Call ``fn(*c_args)`` in a helper thread (ctypes releases the GIL) and wait for it,
    so that KeyboardInterrupt reaches the caller even if the Rust code never returns. The
    thread keeps the arguments alive for as long as it runs."""
    def target():
        fn(*c_args)

    t = threading.Thread(target=target, name="rust-call", daemon=True)
    t._course_keep = (keep, out)  # alive while the thread runs, even after an interrupt
    t.start()
    while t.is_alive():
        t.join(0.1)


@dataclass
class RustLibrary:
    """A compiled crate: its path, its source files and the Python callables it exports."""

    path: Path
    sources: tuple[RustSource, ...]
    functions: dict[str, RustFunction]
    warnings: str = ""


def compile_rust(files: list[RustSource]) -> RustLibrary:
    """Compile ``files`` (one crate) and wrap the functions of :data:`SIGNATURES` it defines.

    Raises:
        RustcNotFound: no rustc on this machine (the message says how to install it).
        RustCompileError: rustc's message, with the files' own names and line numbers.
    """
    names = set().union(*(defined_names(f.text) for f in files)) if files else set()
    wanted = [n for n in SIGNATURES if n in names]
    path, warnings = _compile(list(files), wanted)
    lib = ctypes.CDLL(str(path))
    sources = tuple(files)
    return RustLibrary(path, sources, {n: RustFunction(n, lib, sources, path) for n in wanted},
                       warnings)


def load(path: Path | str = REFERENCE) -> RustLibrary:
    """Compile a Rust source file (by default the course's reference, :data:`REFERENCE`)."""
    path = Path(path)
    return compile_rust([RustSource(path.name, path.read_text(encoding="utf-8"))])


# ------------------------------------------------------------------------ the cell magic

class RustCells:
    """The Rust cells run so far in one IPython session, compiled together as one crate."""

    def __init__(self, shell):
        self.shell = shell
        self.cells: list[RustSource] = []
        self.library: RustLibrary | None = None
        self.broken: set[str] = set()  # functions whose last cell did not compile

    def run(self, line: str, cell: str) -> None:
        """``%%rust``: compile this cell with the earlier ones; bind the graded functions."""
        text = "\n" + cell  # line 1 is the %%rust line, as the notebook numbers it
        names = defined_names(cell)
        label = sorted(names & set(SIGNATURES)) or sorted(names) or [str(len(self.cells) + 1)]
        name = f"cell_{label[0]}.rs"
        kept = [c for c in self.cells if not (defined_names(c.text) & names)
                and c.text != text and c.name != name]
        try:
            library = compile_rust(kept + [RustSource(name, text)])
        except RustCompileError as exc:
            for n in names & set(SIGNATURES):  # never leave the old version callable,
                self.shell.user_ns.pop(n, None)
            self.cells = kept  # not even by a later cell that calls it
            self.broken |= names
            needs = sorted(n for n in self.broken - names if re.search(rf"\b{n}\s*\(", cell))
            if needs:  # its errors are most likely that cell's, showing again
                raise RustCompileError(
                    f"this cell calls {needs[0]}, whose cell above does not compile: fix "
                    f"that cell first, then run this one again\n\n{exc}") from None
            raise
        self.broken -= names
        self.cells = kept + [RustSource(name, text)]
        self.library = library
        if library.warnings:
            print(library.warnings, file=sys.stderr)
        self.shell.user_ns.update(library.functions)


def load_ipython_extension(ipython) -> None:
    """``%load_ext autograder.rust``: register the cell magic ``%%rust``."""
    cells = RustCells(ipython)
    ipython.register_magic_function(cells.run, magic_kind="cell", magic_name="rust")
