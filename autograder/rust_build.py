"""ex08's Rust, built and run by the grader itself: "Rust by construction" (issue 23).

The learner's ``%%rust`` solution cells are taken from the submitted notebook
(:func:`rust_cells`), compiled by the grader into one program, and that program is what
the checker calls (:class:`BuiltRust`), so no Python object of the kernel can pose as a
compiled Rust function. The exercise's rules are enforced by the compiler and the sandbox,
not by reading the text:

- **One binary crate** (:func:`crate_root`): the cells ``include!``d at the crate root, in
  notebook order (a cell that defines a name again replaces the earlier cell, as the
  ``%%rust`` magic does), then a course-written ``main`` (safe Rust, standard library only)
  that reads one request per line on stdin and writes one reply line per request on
  stdout. Each cell is its own file ``cell_<grade_id>.rs`` whose line 1 is the cell's
  ``%%rust`` line, so rustc's messages point at the learner's cell and line.
- **Two builds** (:func:`build`): (a) the plain program (``-C opt-level=1``, statically
  linked where the C library allows it), which the behaviour tests call; (b) the same crate with
  ``#![forbid(unsafe_code)]`` at its root, checked only (``--emit=metadata``): it decides
  the rule test (no ``unsafe`` block, function, impl or trait, no ``#[no_mangle]``,
  ``#[export_name]`` or ``#[link_section]``; an inner ``#[allow(unsafe_code)]`` cannot lift
  a ``forbid``). Both run rustc inside a bubblewrap sandbox that shows only ``/usr`` (the C
  linker and libraries), the toolchain's own folder (its sysroot), the crate's source
  folder (read-only) and an output folder, with no network and a private ``/tmp``: an
  ``include_str!("/etc/passwd")``, or of any file of the course, the workspace or the home
  folder, finds nothing. Builds are cached by a hash of everything that goes into them, in
  a folder of the grader's own (:func:`cache_dir`, mode 0700, never one a kernel sees).
- **Its own sandboxed process** (:class:`RustProgram`): the program runs under bubblewrap
  with nothing mounted but itself (and, when it could not be linked statically, the
  shared libraries it needs, read-only), every namespace unshared (no network), a new
  session, killed with its parent, and resource limits (CPU seconds about the cell time
  limit, :data:`RUN_ADDRESS_SPACE` of address space, no core file). So ``std::fs``,
  ``std::net`` and ``std::process`` find nothing at run time: a file, a socket or a
  program to start does not exist there. The process is started at the first call, serves
  every call of one notebook and is killed when the notebook's checker session closes; a
  call that does not answer within the time limit is a failure (:class:`RustTimeout`) and
  its process is killed (the next call starts a new one).

The protocol (course ``main`` <-> :class:`RustProgram`), one line each way per call:

- first line in: a random token (the nonce); then ``SEQ NAME ARGS`` with ARGS a list of
  the arguments, written as nested ``[a,b]`` lists of numbers in Python's ``repr(float)``
  (``inf``, ``-inf`` and ``nan`` included; Rust parses them exactly);
- each reply: ``NONCE SEQ ok VALUE`` (Rust's ``{:?}`` of each ``f64``, which Python's
  ``float`` reads back exactly), ``NONCE SEQ err MESSAGE``, ``NONCE SEQ panic
  MESSAGE<TAB>FILE:LINE:COL`` (``catch_unwind``: a panic ends the call, not the process)
  or ``NONCE SEQ refused WHY``; messages escape ``\\``, newline, CR and tab. Lines that do
  not begin with the nonce are the learner's own output and are skipped (at most
  :data:`MAX_LINE` bytes a line and :data:`MAX_NOISE` bytes a call).

Without bubblewrap (``grade --no-sandbox``) rustc and the program run unsandboxed, with the
same limits and a cleared environment, as the rest of such a grading run does.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import queue
import re
import secrets
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from autograder import limits, rust
from autograder.rust import (SIGNATURES, RustCompileError, RustNotImplemented, RustPanic,
                             RustSource)
from autograder.sandbox import bwrap, sandbox_error

EDITION = "2021"
COMPILE_ADDRESS_SPACE = 8 * 2**30  # rustc with LLVM reserves more than it uses
COMPILE_FILE_SIZE = 512 * 2**20  # the largest file rustc may write
RUN_ADDRESS_SPACE = 4 * 2**30
MAX_LINE = 4 * 2**20  # a reply line (and any line the program prints) at most this long
MAX_NOISE = 4 * 2**20  # bytes of the learner's own output skipped during one call
MIN_COMPILE_TIMEOUT = 60.0  # seconds rustc may take, at least (the cell limit if longer)
STDERR_TAIL = 2000  # characters of the program's stderr kept for a crash's message
FORBID = "#![forbid(unsafe_code)]"


# ---------------------------------------------------------------------------- errors

class RustNotDefined(RuntimeError):
    """The learner's ``%%rust`` cells define no function of that name."""


class RustCallFailed(RuntimeError):
    """A call did not come back with a value, an ``Err`` or a panic (base class)."""


class RustTimeout(RustCallFailed):
    """The call ran longer than its time limit; the process was killed."""


class RustCrashed(RustCallFailed):
    """The program ended during the call (an abort, a signal, a limit, ``exit``)."""


class RustRefused(RustCallFailed):
    """The program's reply broke the protocol or a limit (a line too long, too much
    output); the process was killed."""


# --------------------------------------------------------------------- the notebook

def _is_rust_cell(source: str) -> bool:
    return source.lstrip().split("\n", 1)[0].split()[:1] == ["%%rust"]


def rust_cells(nb) -> list[RustSource]:
    """The crate's files from notebook ``nb``: each code cell with nbgrader's
    ``solution: true`` whose first line is ``%%rust``, in order, as
    ``cell_<grade_id>.rs`` (line 1 is the ``%%rust`` line, blank in the file). A cell that
    defines a top-level name an earlier cell defined replaces that cell (what the
    ``%%rust`` magic does in the kernel)."""
    cells = nb.cells if nb is not None else []
    kept: list[RustSource] = []
    for i, c in enumerate(cells):
        meta = c.get("metadata", {}).get("nbgrader", {})
        if c.get("cell_type") != "code" or not meta.get("solution") or not _is_rust_cell(
                c.source):
            continue
        lines = c.source.split("\n")
        at = next(n for n, ln in enumerate(lines) if ln.strip())  # the %%rust line
        text = "\n" * (at + 1) + "\n".join(lines[at + 1:])
        gid = re.sub(r"\W", "_", str(meta.get("grade_id") or ""))[:60] or f"{i + 1}"
        name = f"cell_{gid}.rs"
        names = rust.defined_names(text)
        kept = [f for f in kept if not (rust.defined_names(f.text) & names) and f.name != name]
        kept.append(RustSource(name, text))
    return kept


# ------------------------------------------------------------------ the course main

_MAIN = r'''
#[allow(dead_code, unused_imports)]
mod __course_main {
    //! The course's `main`: one request a line on stdin, one reply line each on stdout
    //! (autograder/rust_build.py). Safe Rust, standard library only.
    use std::cell::RefCell;
    use std::fmt::Write as _;
    use std::io::{BufRead, Write};
    use std::panic;

    thread_local! {
        static PANIC: RefCell<(String, String)> = RefCell::new((String::new(), String::new()));
    }

    pub enum Value {
        Num(f64),
        List(Vec<Value>),
    }

    struct Parser<'a> {
        s: &'a [u8],
        i: usize,
    }

    impl<'a> Parser<'a> {
        fn value(&mut self, depth: usize) -> Result<Value, String> {
            if depth > 3 {
                return Err("arguments nested too deeply".to_string());
            }
            if self.s.get(self.i) == Some(&b'[') {
                self.i += 1;
                let mut items = Vec::new();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Value::List(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Value::List(items));
                        }
                        _ => return Err(format!("expected ',' or ']' at byte {}", self.i)),
                    }
                }
            }
            let start = self.i;
            while self.i < self.s.len() && !matches!(self.s[self.i], b',' | b']' | b'[') {
                self.i += 1;
            }
            let text = std::str::from_utf8(&self.s[start..self.i])
                .map_err(|_| "arguments are not UTF-8".to_string())?;
            text.parse::<f64>().map(Value::Num).map_err(|_| format!("not a number: {:?}", text))
        }
    }

    fn vector(v: &Value, what: &str) -> Result<Vec<f64>, String> {
        match v {
            Value::List(items) => items
                .iter()
                .map(|x| match x {
                    Value::Num(n) => Ok(*n),
                    Value::List(_) => Err(format!("{} must be a list of numbers", what)),
                })
                .collect(),
            Value::Num(_) => Err(format!("{} must be a list of numbers", what)),
        }
    }

    fn matrix(v: &Value, what: &str) -> Result<Vec<Vec<f64>>, String> {
        match v {
            Value::List(rows) => rows.iter().map(|r| vector(r, what)).collect(),
            Value::Num(_) => Err(format!("{} must be a list of rows", what)),
        }
    }

    fn escape(s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c => out.push(c),
            }
        }
        out
    }

    fn floats(out: &mut String, v: &[f64]) {
        out.push('[');
        for (i, x) in v.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{:?}", x);
        }
        out.push(']');
    }

    fn run<F>(f: F, one_row: bool) -> String
    where
        F: FnOnce() -> Result<Vec<Vec<f64>>, String>,
    {
        PANIC.with(|p| *p.borrow_mut() = (String::new(), String::new()));
        match panic::catch_unwind(panic::AssertUnwindSafe(f)) {
            Ok(Ok(rows)) => {
                let mut out = String::from("ok ");
                if one_row {
                    floats(&mut out, rows.first().map(|r| r.as_slice()).unwrap_or(&[]));
                } else {
                    out.push('[');
                    for (i, r) in rows.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        floats(&mut out, r);
                    }
                    out.push(']');
                }
                out
            }
            Ok(Err(msg)) => format!("err {}", escape(&msg)),
            Err(_) => {
                let (msg, place) = PANIC.with(|p| p.borrow().clone());
                format!("panic {}\t{}", escape(&msg), escape(&place))
            }
        }
    }

    fn answer(request: &str) -> String {
        let mut parts = request.splitn(3, ' ');
        let seq = parts.next().unwrap_or("");
        let name = parts.next().unwrap_or("");
        let args = match (Parser { s: parts.next().unwrap_or("").as_bytes(), i: 0 }).value(0) {
            Ok(Value::List(a)) => a,
            Ok(Value::Num(_)) => return format!("{} refused the arguments are not a list", seq),
            Err(e) => return format!("{} refused {}", seq, escape(&e)),
        };
        format!("{} {}", seq, call(name, &args))
    }

    pub fn serve() {
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
            PANIC.with(|c| *c.borrow_mut() = (msg, place));
        }));
        let stdin = std::io::stdin();
        let mut nonce = String::new();
        if stdin.lock().read_line(&mut nonce).is_err() {
            return;
        }
        let nonce = nonce.trim().to_string();
        let mut line = String::new();
        loop {
            line.clear();
            match stdin.lock().read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let request = line.trim_end_matches('\n');
            let reply = match panic::catch_unwind(|| answer(request)) {
                Ok(r) => r,
                Err(_) => String::from("0 refused the course's main panicked"),
            };
            let out = std::io::stdout();
            let mut out = out.lock();
            // A newline first: the learner's own unfinished `print!` ends before the reply.
            if write!(out, "\n{} {}\n", nonce, reply).and_then(|_| out.flush()).is_err() {
                return;
            }
        }
    }

    fn call(name: &str, args: &[Value]) -> String {
        match name {
%(arms)s
            _ => String::from("refused no such function in this program"),
        }
    }
}

fn main() {
    __course_main::serve();
}
'''

_ARMS = {
    "softmax": r'''
            "softmax" => {
                if args.len() != 1 {
                    return String::from("refused softmax takes 1 argument");
                }
                let row = match vector(&args[0], "row") {
                    Ok(r) => r,
                    Err(e) => return format!("refused {}", escape(&e)),
                };
                // The course calls `fn softmax(row: &[f64]) -> Result<Vec<f64>, String>`.
                let softmax: fn(&[f64]) -> Result<Vec<f64>, String> = super::softmax;
                run(move || softmax(&row).map(|w| vec![w]), true)
            }''',
    "scaled_dot_product_attention": r'''
            "scaled_dot_product_attention" => {
                if args.len() != 3 {
                    return String::from("refused scaled_dot_product_attention takes 3 arguments");
                }
                let mut m = Vec::new();
                for (a, what) in args.iter().zip(["Q", "K", "V"]) {
                    match matrix(a, what) {
                        Ok(x) => m.push(x),
                        Err(e) => return format!("refused {}", escape(&e)),
                    }
                }
                let (q, k, v) = (&m[0], &m[1], &m[2]);
                // The course calls `fn scaled_dot_product_attention(q: &[Vec<f64>],
                // k: &[Vec<f64>], v: &[Vec<f64>]) -> Result<Vec<Vec<f64>>, String>`.
                let attention: fn(&[Vec<f64>], &[Vec<f64>], &[Vec<f64>])
                    -> Result<Vec<Vec<f64>>, String> = super::scaled_dot_product_attention;
                run(move || attention(q, k, v), false)
            }''',
}

ROOT = "main.rs"  # the crate root's file name (rustc's messages name it for the glue)


def crate_root(files: list[RustSource], functions: list[str], forbid: bool = False) -> str:
    """The crate root: ``#![forbid(unsafe_code)]`` when ``forbid``, each file
    ``include!``d, then the course's ``main`` with a dispatch arm for each of
    ``functions`` (names of :data:`autograder.rust.SIGNATURES`)."""
    head = (FORBID + "\n" if forbid else "") + "#![allow(unused)]\n"
    head += "".join(f'include!("{f.name}");\n' for f in files)
    return head + _MAIN.replace("%(arms)s", "".join(_ARMS[n] for n in functions))


# ------------------------------------------------------------------- the toolchain

@dataclass(frozen=True)
class Toolchain:
    """The compiler and what the sandboxes need of it: ``rustc`` (the toolchain's own
    executable, not rustup's proxy), ``sysroot``, ``version``, ``linker`` (the C compiler
    rustc links with, its real path), ``static`` (programs link statically) and ``libs``
    (else: the shared libraries a program needs, bound read-only into its sandbox)."""

    rustc: str
    sysroot: str
    version: str
    linker: str | None
    static: bool = True
    libs: tuple[str, ...] = ()


class ToolchainError(RuntimeError):
    """No usable Rust toolchain on the grading machine (the message says why)."""


def sandboxed() -> bool:
    """Whether rustc and the programs run under bubblewrap (it can start here)."""
    return sandbox_error() is None


@functools.lru_cache(maxsize=None)
def toolchain() -> Toolchain:
    """The Rust toolchain of this machine (found as :func:`autograder.rust.find_rustc`
    finds it); whether a program links statically is tried once and remembered in
    :func:`cache_dir`. Raises :class:`ToolchainError`."""
    found = rust.find_rustc()
    if found is None:
        raise ToolchainError(rust.INSTALL_HINT)
    try:
        done = subprocess.run([found, "--print", "sysroot"], capture_output=True, text=True,
                              timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolchainError(f"{found} --print sysroot failed: {exc}") from None
    sysroot = str(Path(done.stdout.strip()).resolve())
    real = Path(sysroot, "bin", "rustc")
    rustc = str(real) if real.is_file() and os.access(real, os.X_OK) else found
    version = rust.rustc_version(rustc)
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    linker = str(Path(cc).resolve()) if cc else None
    base = Toolchain(rustc, sysroot, version, linker)
    memo = cache_dir() / ("toolchain-" + _digest([version, sysroot, str(linker),
                                                  str(sandboxed())]) + ".json")
    try:
        known = json.loads(memo.read_text(encoding="utf-8"))
        return Toolchain(rustc, sysroot, version, linker, bool(known["static"]),
                         tuple(known["libs"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    static, libs = _probe_linking(base)
    _write_new(memo, json.dumps({"static": static, "libs": list(libs)}).encode())
    return Toolchain(rustc, sysroot, version, linker, static, libs)


_PROBE = 'fn main() { println!("{}", ["o", "k"].concat()); }\n'


def _probe_linking(tc: Toolchain) -> tuple[bool, tuple[str, ...]]:
    """(programs link statically, else the libraries the course's own probe program needs
    per ``ldd``): a static build that starts in the empty sandbox is preferred."""
    with tempfile.TemporaryDirectory(dir=cache_dir(), prefix="probe-") as tmp:
        src, out = Path(tmp, "src"), Path(tmp, "out")
        src.mkdir()
        out.mkdir()
        (src / ROOT).write_text(_PROBE, encoding="utf-8")
        for static in (True, False):
            t = Toolchain(tc.rustc, tc.sysroot, tc.version, tc.linker, static)
            rc, _ = _rustc(t, src, out, [*_flags(t), "-o", "/out/probe", ROOT], 120)
            if rc != 0:
                continue
            libs = () if static else _ldd(out / "probe")
            try:
                done = subprocess.run(_run_command(out / "probe", libs, 60), input=b"",
                                      capture_output=True, timeout=60)
            except (OSError, subprocess.SubprocessError):
                continue
            if done.stdout.strip() == b"ok":
                return static, libs
    raise ToolchainError("rustc could not build a program that runs in the sandbox (is a C "
                         "linker, `cc`, installed?)")


def _ldd(binary: Path) -> tuple[str, ...]:
    """The shared libraries (and the loader) the course's probe program needs."""
    done = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=60)
    found = set()
    for line in done.stdout.splitlines():
        for part in line.split():
            if part.startswith("/") and os.path.exists(part):
                found.add(part)
                found.add(str(Path(part).resolve()))
    return tuple(sorted(found))


def cache_dir() -> Path:
    """The grader's own folder for builds: ``$AUTOGRADER_RUST_GRADER_CACHE``, else
    (``$XDG_CACHE_HOME`` or ``~/.cache``)/attention-course/rust-grader. Made with mode
    0700 and refused unless this user owns it and no one else may write to it (a kernel's
    sandbox never mounts it). Raises OSError."""
    base = os.environ.get("AUTOGRADER_RUST_GRADER_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "attention-course" / "rust-grader")
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = path.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise OSError(f"{path} is not the grader's own folder (owner {st.st_uid}, mode "
                      f"{oct(st.st_mode & 0o777)}); remove it or set "
                      "AUTOGRADER_RUST_GRADER_CACHE")
    return path


def _digest(parts: list[str]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:40]


def _write_new(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all (a concurrent writer finds a whole file)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# -------------------------------------------------------------------- sandboxes

def _system_root() -> list[str]:
    """bwrap arguments for ``/usr`` read-only and the merged-/usr links (/bin, /lib...)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        p = Path(top)
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), top]
        elif p.is_dir():
            args += ["--ro-bind", top, top]
    return args


def _under_usr(path: str) -> bool:
    return path == "/usr" or path.startswith("/usr/")


def _flags(tc: Toolchain) -> list[str]:
    # opt-level 1 in one codegen unit: half the time of -O on a small crate. Like the
    # kernel's -O it has no overflow checks and no debug assertions, and Rust allows no
    # value-changing float optimisation, so a program computes the same at either level.
    flags = ["--edition", EDITION, "--crate-type", "bin", "-C", "opt-level=1", "-C",
             "codegen-units=1", "--crate-name", "course_rust", "--error-format", "json",
             "--color", "never", "-C", "debuginfo=0", "-C", "strip=symbols"]
    if tc.linker:
        flags += ["-C", f"linker={tc.linker}"]
    if tc.static:
        flags += ["-C", "target-feature=+crt-static"]
    return flags


def _forbid_flags() -> list[str]:
    return ["--edition", EDITION, "--crate-type", "bin", "--crate-name", "course_rust",
            "--error-format", "json", "--color", "never", "--emit=metadata"]


def _rustc(tc: Toolchain, src: Path, out: Path, args: list[str],
           timeout: float) -> tuple[int | None, str]:
    """rustc ``args`` run with ``src`` at ``/src`` (read-only, the working folder) and
    ``out`` at ``/out``: (exit status, None on a timeout; stderr)."""
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": "/tmp",
           "LD_LIBRARY_PATH": str(Path(tc.sysroot, "lib"))}
    if sandboxed():
        box = [bwrap(), "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop",
               "ALL", *_system_root(), "--tmpfs", "/tmp"]
        for extra in {tc.sysroot, str(Path(tc.rustc).parent),
                      str(Path(tc.linker).parent) if tc.linker else "/usr"}:
            if not _under_usr(extra):
                box += ["--ro-bind", extra, extra]
        box += ["--ro-bind", str(src), "/src", "--bind", str(out), "/out", "--chdir", "/src",
                "--clearenv"]
        for k, v in env.items():
            box += ["--setenv", k, v]
        cmd, cwd, outer = [*box, "--", tc.rustc, *args], "/", {"PATH": "/usr/bin:/bin"}
    else:  # --no-sandbox: the same paths, outside any sandbox
        args = [str(out) + a[4:] if a.startswith("/out") else a for a in args]
        cmd, cwd, outer = [tc.rustc, *args], str(src), env
        env["TMPDIR"] = str(out)
    try:
        done = subprocess.run(limits.limited(cmd, timeout, COMPILE_ADDRESS_SPACE,
                                             COMPILE_FILE_SIZE), capture_output=True,
                              timeout=limits.backstop(timeout), cwd=cwd, env=outer)
    except subprocess.TimeoutExpired:
        return None, ""
    if limits.out_of_cpu(done.returncode):
        return None, ""
    return done.returncode, done.stderr.decode("utf-8", "replace")


def _run_command(binary: Path, libs: tuple[str, ...], cpu: float) -> list[str]:
    """The command line of a program's process: sandboxed where bubblewrap can start."""
    if not sandboxed():
        return limits.limited([str(binary)], cpu, RUN_ADDRESS_SPACE)

    box = [bwrap(), "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    for lib in libs:
        box += ["--ro-bind", lib, lib]
    box += ["--ro-bind", str(binary), "/program", "--remount-ro", "/", "--chdir", "/",
            "--clearenv", "--", "/program"]
    return limits.limited(box, cpu, RUN_ADDRESS_SPACE)


# ----------------------------------------------------------------------- building

@dataclass
class Build:
    """What the grader built from the learner's cells.

    ``sources``: the crate's files; ``functions``: the graded names they define (in
    :data:`~autograder.rust.SIGNATURES` order); ``binary``: the plain program, None when
    ``error`` (rustc's message, the cells and lines named) says why there is none;
    ``forbid_error``: None when the crate compiles under ``#![forbid(unsafe_code)]``, else
    rustc's message; ``warnings``; ``cached``: found in :func:`cache_dir`, not compiled."""

    sources: tuple[RustSource, ...]
    functions: tuple[str, ...]
    binary: Path | None = None
    error: str | None = None
    forbid_error: str | None = None
    warnings: str = ""
    cached: bool = False
    toolchain: Toolchain | None = None


_HEADER = "your %%rust cells do not compile"
_FILES = "(rustc's cell_<id>.rs is your solution cell <id>; line 1 is its %%rust line)"


def _compile_error(stderr: str, rc: int, sources: tuple[RustSource, ...]) -> str:
    """What every call of a crate that does not compile raises: its first error in one
    line (:func:`autograder.rust.headline`), then rustc's messages."""
    first = rust.headline(stderr, {f.name: f.text for f in sources})
    return (f"{_HEADER}: {first}" if first else _HEADER) + f"\n{_FILES}\n\n" + (
        _messages(stderr, errors_only=True) or f"rustc exited with status {rc}")


_LINKER_SAYS = re.compile(r"undefined reference to .*|cannot find -l\S+|multiple definition of .*")


def _messages(stderr: str, errors_only: bool = False) -> str:
    """rustc's messages (its JSON diagnostics rendered, as :mod:`autograder.rust` shows
    them); only the errors when ``errors_only`` (a failed build: its warnings would hide
    them). A failed link is told by what the linker missed, not by its command line."""
    kept = []
    for line in stderr.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            kept.append(line)
            continue
        if not isinstance(d, dict) or (errors_only and d.get("level") == "warning"):
            continue
        if str(d.get("message", "")).startswith("linking with"):
            missed = sorted(set(_LINKER_SAYS.findall(str(d.get("rendered", "")))))
            d["rendered"] = ("error: the program could not be linked: " + (
                "; ".join(m.strip() for m in missed) or "the linker failed") + " (an `extern` "
                "block or `#[link]` names what is not in Rust's standard library)")
            line = json.dumps(d)
        kept.append(line)
    return rust._render("\n".join(kept), ROOT)


def build(files: list[RustSource], timeout: float = MIN_COMPILE_TIMEOUT) -> Build:
    """Build (or find in the cache) the program of ``files`` and check the crate under
    ``#![forbid(unsafe_code)]`` (see the module's docstring). Never raises for a problem of
    the learner's or of the machine: ``error`` says it (rustc's message; rustc not found;
    rustc ran longer than ``timeout`` seconds, at least :data:`MIN_COMPILE_TIMEOUT`)."""
    files = rust._dedup_uses(list(files))
    names = set().union(*(rust.defined_names(f.text) for f in files)) if files else set()
    functions = tuple(n for n in SIGNATURES if n in names)
    result = Build(tuple(files), functions)
    try:
        tc = result.toolchain = toolchain()
        root = cache_dir()
    except (ToolchainError, OSError) as exc:
        result.error = result.forbid_error = f"the grader cannot compile Rust: {exc}"
        return result
    timeout = max(float(timeout or 0), MIN_COMPILE_TIMEOUT)
    plain, strict = crate_root(files, list(functions)), crate_root(files, list(functions), True)
    key = _digest([tc.version, tc.sysroot, str(tc.linker), str(tc.static), str(sandboxed()),
                   " ".join(_flags(tc)), " ".join(_forbid_flags()), plain, strict,
                   *(f"{f.name}\0{f.text}" for f in files)])
    done = root / key
    if (done / "result.json").is_file():
        try:
            return _load(result, done)
        except (OSError, ValueError, KeyError):
            pass
    with tempfile.TemporaryDirectory(dir=root, prefix="build-") as tmp:
        src, out = Path(tmp, "src"), Path(tmp, "out")
        src.mkdir()
        out.mkdir()
        for f in files:
            (src / f.name).write_text(f.text, encoding="utf-8")
        (src / ROOT).write_text(plain, encoding="utf-8")
        (src / "forbid.rs").write_text(strict, encoding="utf-8")
        plain_rc, plain_err = _rustc(tc, src, out, [*_flags(tc), "-o", "/out/program", ROOT],
                                     timeout)
        forbid_rc, forbid_err = (None, "") if plain_rc is None else _rustc(
            tc, src, out, [*_forbid_flags(), "-o", "/out/forbid.rmeta", "forbid.rs"], timeout)
        if plain_rc is None or forbid_rc is None:  # not remembered: a rerun may be faster
            result.error = result.forbid_error = (
                f"rustc ran longer than {timeout:g} s of CPU time on your %%rust cells (a "
                "compile-time loop or recursion?)")
            return result
        if plain_rc == 0 and not (out / "program").is_file():
            plain_rc = -1
        # rustc's own output is kept, and rendered when read (so rendering can change)
        record = {"plain": [plain_rc, plain_err], "forbid": [forbid_rc, forbid_err]}
        keep = Path(tmp, "keep")
        keep.mkdir()
        if plain_rc == 0:
            os.replace(out / "program", keep / "program")
        (keep / "result.json").write_text(json.dumps(record), encoding="utf-8")
        try:
            os.rename(keep, done)  # whole or not at all; a concurrent build may have won
        except OSError:
            pass
        if not (done / "result.json").is_file():
            result.error = result.forbid_error = "the grader could not keep the build"
            return result
    return _load(result, done, cached=False)


def _load(result: Build, folder: Path, cached: bool = True) -> Build:
    """``result`` filled from the build kept in ``folder``."""
    record = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    (plain_rc, plain_err), (forbid_rc, forbid_err) = record["plain"], record["forbid"]
    if plain_rc == 0:
        result.binary = folder / "program"
        if not result.binary.is_file():
            raise OSError("a cached build lost its program")
        result.error, result.warnings = None, _messages(plain_err)
    else:
        result.binary = None
        result.error = _compile_error(plain_err, plain_rc, result.sources)
    result.forbid_error = None if forbid_rc == 0 else (
        _messages(forbid_err, errors_only=True) or f"rustc exited with status {forbid_rc}")
    result.cached = cached
    return result


def forbid_problem(files: list[RustSource], timeout: float = MIN_COMPILE_TIMEOUT) -> str | None:
    """None when ``files`` compile as one crate under ``#![forbid(unsafe_code)]``, else
    rustc's message: :func:`build`'s check build alone (no program is linked; for the
    kernel's own functions, as ``check`` and the course's tests pass them), cached."""
    files = rust._dedup_uses(list(files))
    names = set().union(*(rust.defined_names(f.text) for f in files)) if files else set()
    functions = [n for n in SIGNATURES if n in names]
    try:
        tc, root = toolchain(), cache_dir()
    except (ToolchainError, OSError) as exc:
        return f"the grader cannot compile Rust: {exc}"
    strict = crate_root(files, functions, True)
    memo = root / ("forbid-" + _digest([tc.version, tc.sysroot, str(sandboxed()),
                                         " ".join(_forbid_flags()), strict,
                                         *(f"{f.name}\0{f.text}" for f in files)]) + ".json")
    try:
        rc, stderr = json.loads(memo.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        with tempfile.TemporaryDirectory(dir=root, prefix="forbid-") as tmp:
            src, out = Path(tmp, "src"), Path(tmp, "out")
            src.mkdir()
            out.mkdir()
            for f in files:
                (src / f.name).write_text(f.text, encoding="utf-8")
            (src / "forbid.rs").write_text(strict, encoding="utf-8")
            rc, stderr = _rustc(tc, src, out, [*_forbid_flags(), "-o", "/out/forbid.rmeta",
                                               "forbid.rs"], max(timeout, MIN_COMPILE_TIMEOUT))
        if rc is None:
            return (f"rustc ran longer than {max(timeout, MIN_COMPILE_TIMEOUT):g} s of CPU "
                    "time on your cells")
        _write_new(memo, json.dumps([rc, stderr]).encode("utf-8"))
    return None if rc == 0 else (_messages(stderr, errors_only=True)
                                 or f"rustc exited with status {rc}")


# ------------------------------------------------------------------------ running

class _Launcher:
    """Starts the programs' processes from one long-lived thread.

    bwrap's ``--die-with-parent`` is ``PR_SET_PDEATHSIG``, which fires when the *thread*
    that started the process ends; the checker calls from a thread per test, which would
    take the process with it at the end of each test."""

    def __init__(self):
        self._jobs: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _serve(self) -> None:
        while True:
            fn, box, ready = self._jobs.get()
            try:
                box["value"] = fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                box["raised"] = exc
            ready.set()

    def run(self, fn: Callable[[], Any]) -> Any:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="rust-launcher",
                                                daemon=True)
                self._thread.start()
        box: dict = {}
        ready = threading.Event()
        self._jobs.put((fn, box, ready))
        ready.wait()
        if "raised" in box:
            raise box["raised"]
        return box["value"]


_LAUNCHER = _Launcher()


def _kill(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.kill()
        proc.wait(timeout=30)
    except (OSError, subprocess.SubprocessError):
        pass


_NUMBER = re.compile(rb"-?(?:inf|NaN|[0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?)")


def _parse_value(text: bytes) -> list:
    """Nested lists of numbers as the course's ``main`` writes them (``[1.0,NaN]``,
    ``[[1.0],[2.5e-7]]``); raises ValueError when ``text`` is anything else."""
    stack: list[list] = []
    out: list | None = None
    i, n = 0, len(text)
    while i < n:
        c = text[i:i + 1]
        if c == b"[":
            if len(stack) >= 3:
                raise ValueError("nested too deeply")
            stack.append([])
            i += 1
        elif c == b"]":
            if not stack:
                raise ValueError("an unmatched ]")
            done = stack.pop()
            if stack:
                stack[-1].append(done)
            else:
                out = done
                if i + 1 != n:
                    raise ValueError("text after the value")
            i += 1
            if i < n and text[i:i + 1] == b"," and stack:
                i += 1
        else:
            m = _NUMBER.match(text, i)
            if not m or not stack:
                raise ValueError(f"not a number at byte {i}")
            stack[-1].append(float(m.group(0)))
            i = m.end()
            if i < n and text[i:i + 1] == b",":
                i += 1
    if out is None or stack:
        raise ValueError("an unfinished list")
    return out


def _unescape(text: str) -> str:
    table = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\"}
    return re.sub(r"\\(.)", lambda m: table.get(m.group(1), m.group(1)), text)


def _number(x: Any, what: str) -> str:
    if isinstance(x, (str, bytes, bytearray)):
        raise TypeError(f"{what} must be a number, got {type(x).__name__}")
    try:
        return repr(float(x))
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"{what} must be a number, got {type(x).__name__} ({exc})") from None


def _plain(x: Any) -> Any:
    return x.tolist() if type(x).__module__ == "numpy" and hasattr(x, "tolist") else x


def _encode_vector(x: Any, what: str) -> str:
    x = _plain(x)
    try:
        items = list(x)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of numbers, got "
                        f"{type(x).__name__}") from None
    return "[" + ",".join(_number(v, f"{what}[{i}]") for i, v in enumerate(items)) + "]"


def _encode_matrix(m: Any, what: str) -> str:
    m = _plain(m)
    try:
        rows = list(m)
    except TypeError:
        raise TypeError(f"{what} must be a list of rows, got {type(m).__name__}") from None
    return "[" + ",".join(_encode_vector(r, f"{what}[{i}]") for i, r in enumerate(rows)) + "]"


@dataclass
class _Process:
    proc: subprocess.Popen
    nonce: str
    buffer: bytearray = field(default_factory=bytearray)
    stderr: list = field(default_factory=list)  # the tail of its stderr, as bytes
    drainer: threading.Thread | None = None


class RustProgram:
    """The grader's program of one notebook's Rust cells, and its sandboxed process.

    ``call(name, args)`` sends one request and returns the reply's value, or raises:
    ValueError (the function's ``Err``), :class:`~autograder.rust.RustPanic` (a panic),
    :class:`~autograder.rust.RustNotImplemented` (``todo!()``/``unimplemented!()``, a
    NotImplementedError), :class:`~autograder.rust.RustCompileError` (the cells do not
    compile), :class:`RustNotDefined` (no such function in the cells),
    :class:`RustTimeout` (no reply within ``timeout`` seconds), :class:`RustCrashed` (the
    process ended), :class:`RustRefused` (a reply over the limits). ``close()`` kills the
    process. ``timeout`` is the time limit of one call in seconds (the cell time limit), and
    also the process's CPU seconds."""

    def __init__(self, built: Build, timeout: float = 60.0):
        self.build = built
        self.timeout = float(timeout)
        self._proc: _Process | None = None
        self._seq = 0
        self._lock = threading.Lock()
        self._closed = False
        self._finalizer = weakref.finalize(self, RustProgram._stop, [None])

    @classmethod
    def from_cells(cls, files: list[RustSource], timeout: float = 60.0) -> RustProgram:
        """Build ``files`` (:func:`build`) and return the program (not started yet)."""
        return cls(build(files, timeout), timeout)

    @property
    def pid(self) -> int | None:
        """The process id of the running process (bwrap's, when sandboxed), or None."""
        p = self._proc
        return p.proc.pid if p is not None and p.proc.poll() is None else None

    @staticmethod
    def _stop(holder: list) -> None:
        if holder and holder[0] is not None:
            _kill(holder[0])

    def close(self) -> None:
        """Kill the process (if one runs); later calls start none."""
        with self._lock:
            self._closed = True
            self._end()

    def _end(self) -> None:
        p, self._proc = self._proc, None
        if p is not None:
            _kill(p.proc)
            for f in (p.proc.stdin, p.proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass

    def _start(self) -> _Process:
        tc = self.build.toolchain
        cmd = _run_command(self.build.binary, tc.libs if tc and not tc.static else (),
                           self.timeout)

        def launch():
            return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, cwd="/", env={})

        proc = _LAUNCHER.run(launch)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, RustProgram._stop, [proc])
        p = _Process(proc, secrets.token_hex(16))
        p.drainer = threading.Thread(target=_drain, args=(proc.stderr, p.stderr), daemon=True,
                                     name="rust-stderr")
        p.drainer.start()
        os.set_blocking(proc.stdin.fileno(), False)
        return p

    def call(self, name: str, args: tuple) -> list:
        """The learner's Rust function ``name`` called with ``args`` (see the class)."""
        b = self.build
        if b.error is not None:
            raise RustCompileError(b.error)
        if name not in b.functions:
            raise RustNotDefined(
                f"your %%rust cells define no `fn {name}` (the course calls "
                f"`{SIGNATURES[name]}`; a function defined inside another item, or under "
                "another name, is not found)")
        if name == "softmax":
            if len(args) != 1:
                raise TypeError(f"softmax takes 1 argument (row), got {len(args)}")
            payload = "[" + _encode_vector(args[0], "row") + "]"
        else:
            if len(args) != 3:
                raise TypeError(f"scaled_dot_product_attention takes 3 arguments (Q, K, V), "
                                f"got {len(args)}")
            payload = "[" + ",".join(_encode_matrix(m, w) for m, w in zip(args, "QKV")) + "]"
        with self._lock:
            if self._closed:
                raise RustCallFailed("the Rust program was closed (the notebook's grading "
                                     "ended)")
            if self._proc is None or self._proc.proc.poll() is not None:
                self._end()
                self._proc = self._start()
                first = self._proc.nonce + "\n"
            else:
                first = ""
            self._seq += 1
            seq = self._seq
            deadline = time.monotonic() + limits.backstop(self.timeout)  # CPU: rlimit
            try:
                self._send((first + f"{seq} {name} {payload}\n").encode("ascii"), deadline,
                           name)
                kind, rest = self._receive(seq, deadline, name)
            except RustCallFailed:
                self._end()
                raise
        return self._value(name, kind, rest)

    def _send(self, data: bytes, deadline: float, name: str) -> None:
        p = self._proc
        fd, view = p.proc.stdin.fileno(), memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RustTimeout(self._late(name))
            _, ready, _ = select.select([], [fd], [], left)
            if not ready:
                continue
            try:
                n = os.write(fd, view)
            except BlockingIOError:
                continue
            except OSError:  # the process is gone: its reply says how
                return
            view = view[n:]

    def _late(self, name: str) -> str:
        return (f"{name} waited longer than {limits.backstop(self.timeout):g} s without "
                "answering (a blocked read?): its process was stopped")

    def _receive(self, seq: int, deadline: float, name: str) -> tuple[str, bytes]:
        p = self._proc
        fd = p.proc.stdout.fileno()
        prefix = f"{p.nonce} ".encode("ascii")
        noise = 0
        while True:
            while b"\n" in p.buffer:
                at = p.buffer.index(b"\n")
                line = bytes(p.buffer[:at])
                del p.buffer[:at + 1]
                if not line.startswith(prefix):
                    noise += len(line) + 1
                    if noise > MAX_NOISE:
                        raise RustRefused(f"{name} printed more than {MAX_NOISE} bytes: its "
                                          "process was stopped")
                    continue
                got, _, body = line[len(prefix):].partition(b" ")
                if got != str(seq).encode("ascii"):
                    raise RustRefused(f"the reply to {name} is another request's (the "
                                      "program's output is out of step)")
                kind, _, rest = body.partition(b" ")
                return kind.decode("ascii", "replace"), rest
            if len(p.buffer) > MAX_LINE:
                raise RustRefused(f"{name} wrote a line longer than {MAX_LINE} bytes (a "
                                  "reply over the limit is refused): its process was stopped")
            left = deadline - time.monotonic()
            if left <= 0:
                raise RustTimeout(self._late(name))
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise self._ended(name)
            p.buffer += chunk

    def _ended(self, name: str) -> RustCallFailed:
        """What ended the program during ``name``: RustTimeout at its CPU limit (the cell
        time limit, counted in CPU seconds: :mod:`autograder.limits`), else RustCrashed."""
        p = self._proc
        try:
            rc = p.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            rc = None
        if limits.out_of_cpu(rc):
            return RustTimeout(f"{name} ran longer than {self.timeout:g} s of CPU time (the "
                               "time limit; an endless loop?): its process was stopped")
        if rc is None:
            how = "closed its output"
        else:
            sig = -rc if rc < 0 else rc - 128 if 128 < rc < 128 + 65 else 0  # bwrap: 128 + n
            try:
                how = f"was killed by signal {signal.Signals(sig).name}" if sig else \
                    f"exited with status {rc}"
            except ValueError:
                how = f"exited with status {rc}"
            if sig == signal.SIGKILL:
                how += " (a limit: its memory, or its CPU time)"
        if p.drainer is not None:
            p.drainer.join(timeout=5)  # what it wrote before it ended
        tail = b"".join(p.stderr).decode("utf-8", "replace").strip()[-STDERR_TAIL:]
        return RustCrashed(f"the Rust program ended during {name}: it {how}"
                           + (f"; it wrote: {tail}" if tail else ""))

    def _value(self, name: str, kind: str, rest: bytes) -> list:
        text = rest.decode("utf-8", "replace")
        if kind == "ok":
            try:
                value = _parse_value(rest)
            except ValueError as exc:
                raise RustRefused(f"the reply of {name} is not a list of numbers ({exc})") \
                    from None
            if name == "softmax" and not all(type(x) is float for x in value):
                raise RustRefused("the reply of softmax is not a list of numbers")
            if name != "softmax" and not all(type(r) is list for r in value):
                raise RustRefused(f"the reply of {name} is not a list of rows")
            return value
        if kind == "err":
            raise ValueError(_unescape(text))
        if kind == "panic":
            msg, _, place = text.partition("\t")
            msg, place = _unescape(msg), _unescape(place)
            where = f" (at {place})" if place else ""
            if msg.startswith(("not yet implemented", "not implemented")):
                raise RustNotImplemented(f"{name} panicked: {msg}{where}")
            raise RustPanic(f"{name} panicked: {msg}{where}")
        raise RustRefused(f"the program refused the call of {name}: {_unescape(text)[:500]}")


def _drain(stream, tail: list) -> None:
    """Read a process's stderr to its end, keeping the last :data:`STDERR_TAIL` bytes (so
    a program that writes much to it never blocks on a full pipe)."""
    size = 0
    try:
        while True:
            chunk = stream.read1(1 << 16) if hasattr(stream, "read1") else stream.read(1 << 16)
            if not chunk:
                return
            tail.append(chunk)
            size += len(chunk)
            while size > STDERR_TAIL and len(tail) > 1:
                size -= len(tail.pop(0))
    except (OSError, ValueError):
        return


# ----------------------------------------------------------------- what the checker calls

class BuiltRust:
    """One of the learner's Rust functions as the grader built it: called with ex01's
    convention (``softmax(row)``, ``scaled_dot_product_attention(Q, K, V)``: lists of
    floats, lists of lists, or NumPy arrays, in; lists of Python floats out). Raises what
    :meth:`RustProgram.call` raises: ValueError for the function's ``Err``, RuntimeError
    (:class:`~autograder.rust.RustPanic`) for a panic, NotImplementedError for ``todo!()``,
    TypeError for arguments that are not numbers.

    Attributes: ``__name__``, ``signature`` (the Rust signature called), ``program``
    (its :class:`RustProgram`) and ``rust_sources`` (the crate's files)."""

    def __init__(self, name: str, program: RustProgram):
        if name not in SIGNATURES:
            raise ValueError(f"no Rust function {name!r} is graded (known: "
                             f"{', '.join(SIGNATURES)})")
        self.__name__ = self.__qualname__ = name
        self.signature = SIGNATURES[name]
        self.program = program
        self.rust_sources = program.build.sources
        self.__doc__ = f"Rust `{self.signature}`, built by the grader, run in its sandbox."

    def __call__(self, *args):
        return self.program.call(self.__name__, args)

    def __repr__(self) -> str:
        return f"<Rust function {self.signature}, built by the grader>"


def built_functions(session) -> dict[str, BuiltRust]:
    """The checker's ``softmax`` and ``scaled_dot_product_attention`` for one notebook
    (:data:`autograder.checker.BUILT`): the ``%%rust`` solution cells of
    ``session.notebook`` built into one program (:func:`build`), whose process is started
    at the first call, limited to ``session.timeout`` seconds a call, and killed when the
    session closes (``session.on_close``). A function the cells do not define, or cells
    that do not compile, give a callable that raises the reason at each call."""
    timeout = float(getattr(session, "timeout", 60) or 60)
    program = RustProgram.from_cells(rust_cells(getattr(session, "notebook", None)), timeout)
    hooks = getattr(session, "on_close", None)
    if isinstance(hooks, list):
        hooks.append(program.close)
    return {name: BuiltRust(name, program) for name in SIGNATURES}
