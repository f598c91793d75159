"""The kernel's build of a crate of Rust cells (:func:`compile_library`): the generated
``extern "C"`` glue (``catch_unwind``; the learner never writes ``unsafe`` or ``extern``)
added to the learner's files, compiled with ``rustc --crate-type cdylib -O`` into a shared
library, cached by the hash of its source (:func:`cache_dir`)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from autograder import env_vars
from autograder.rust_source import (INSTALL_HINT, RustcNotFound, RustCompileError, RustSource,
                                    dedup_uses, find_rustc, headline, render_messages,
                                    rustc_version)

def cache_dir() -> Path:
    """Where compiled libraries are kept: $AUTOGRADER_RUST_CACHE, else the user's cache
    folder (``$XDG_CACHE_HOME`` or ``~/.cache``)/attention-course/rust, else a folder in
    the temporary directory when that one is not writable."""
    for base in (env_vars.RUST_CACHE.get(),
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


def compile_library(files: list[RustSource], functions: list[str]) -> tuple[Path, str]:
    """Compile (or find in the cache) the crate; returns (library path, warnings)."""
    rustc = find_rustc()
    if rustc is None:
        raise RustcNotFound(INSTALL_HINT)
    files = dedup_uses(files)
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
        messages = render_messages(done.stderr, "course_glue.rs")
        if done.returncode != 0 or not (build / "lib.so").is_file():
            first = headline(done.stderr, {f.name: f.text for f in files})
            raise RustCompileError((f"{first}\n\n" if first else "") + (
                messages or f"rustc exited with status {done.returncode}"))
        os.replace(build / "lib.so", target)  # atomic: a concurrent build finds a whole file
    return target, messages

