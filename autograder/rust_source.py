"""What the kernel's ``%%rust`` (:mod:`autograder.rust`) and the grader's build
(:mod:`autograder.rust_build`) share about Rust: the graded functions' signatures, a crate's
files and the names they define, the compiler found, its messages named after the
learner's cells, and the errors a Rust function raises in Python."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

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
"""The functions the glue (the kernel's and the grader's) can call, with the signature it
expects."""


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


def dedup_uses(files: list[RustSource]) -> list[RustSource]:
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


def render_messages(stderr: str, glue_file: str) -> str:
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

