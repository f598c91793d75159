"""ex08's crate built by the grader (:func:`build`): the plain program, and the same crate
checked under ``#![forbid(unsafe_code)]``, both cached by a hash of everything that goes
into them; rustc's messages rendered to name the learner's cells and lines."""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from autograder.rust_source import (SIGNATURES, RustSource, dedup_uses, defined_names, headline,
                                    render_messages)
from autograder.rust_main import ROOT, crate_root
from autograder.rust_toolchain import (Toolchain, ToolchainError, cache_dir, digest,
                                       forbid_flags, run_rustc, rustc_flags, sandboxed,
                                       toolchain, write_new)

MIN_COMPILE_TIMEOUT = 60.0  # seconds rustc may take, at least (the cell limit if longer)


@dataclass
class Build:
    """What the grader built from the learner's cells.

    ``sources``: the crate's files; ``functions``: the graded names they define (in
    :data:`~autograder.rust_source.SIGNATURES` order); ``binary``: the plain program, None when
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
    line (:func:`autograder.rust_source.headline`), then rustc's messages."""
    first = headline(stderr, {f.name: f.text for f in sources})
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
    return render_messages("\n".join(kept), ROOT)


def build(files: list[RustSource], timeout: float = MIN_COMPILE_TIMEOUT) -> Build:
    """Build (or find in the cache) the program of ``files`` and check the crate under
    ``#![forbid(unsafe_code)]`` (see the module's docstring). Never raises for a problem of
    the learner's or of the machine: ``error`` says it (rustc's message; rustc not found;
    rustc ran longer than ``timeout`` seconds, at least :data:`MIN_COMPILE_TIMEOUT`)."""
    files = dedup_uses(list(files))
    names = set().union(*(defined_names(f.text) for f in files)) if files else set()
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
    key = digest([tc.version, tc.sysroot, str(tc.linker), str(tc.static), str(sandboxed()),
                   " ".join(rustc_flags(tc)), " ".join(forbid_flags()), plain, strict,
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
        plain_rc, plain_err = run_rustc(tc, src, out,
                                        [*rustc_flags(tc), "-o", "/out/program", ROOT], timeout)
        forbid_rc, forbid_err = (None, "") if plain_rc is None else run_rustc(
            tc, src, out, [*forbid_flags(), "-o", "/out/forbid.rmeta", "forbid.rs"], timeout)
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
    files = dedup_uses(list(files))
    names = set().union(*(defined_names(f.text) for f in files)) if files else set()
    functions = [n for n in SIGNATURES if n in names]
    try:
        tc, root = toolchain(), cache_dir()
    except (ToolchainError, OSError) as exc:
        return f"the grader cannot compile Rust: {exc}"
    strict = crate_root(files, functions, True)
    memo = root / ("forbid-" + digest([tc.version, tc.sysroot, str(sandboxed()),
                                         " ".join(forbid_flags()), strict,
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
            rc, stderr = run_rustc(tc, src, out, [*forbid_flags(), "-o", "/out/forbid.rmeta",
                                                  "forbid.rs"], max(timeout, MIN_COMPILE_TIMEOUT))
        if rc is None:
            return (f"rustc ran longer than {max(timeout, MIN_COMPILE_TIMEOUT):g} s of CPU "
                    "time on your cells")
        write_new(memo, json.dumps([rc, stderr]).encode("utf-8"))
    return None if rc == 0 else (_messages(stderr, errors_only=True)
                                 or f"rustc exited with status {rc}")
