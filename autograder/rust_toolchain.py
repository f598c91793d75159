"""The Rust toolchain of the grading machine, and the sandboxes the grader runs rustc and
the built programs in (bubblewrap, where it can start; the same limits without it).

rustc runs with ``/usr`` (the C linker and libraries), the toolchain's own folder, the
crate's source folder (read-only) and an output folder, with no network and a private
``/tmp``; a built program runs with nothing mounted but itself (and, when it could not be
linked statically, the shared libraries it needs, read-only), every namespace unshared.
Builds are kept in a folder of the grader's own (:func:`cache_dir`)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from autograder import bwrap_box, env_vars, limits
from autograder.bwrap_box import Box, bind, remount_ro, ro_bind, tmpfs
from autograder.rust_main import ROOT
from autograder.rust_source import INSTALL_HINT, find_rustc, rustc_version
from autograder.sandbox import bwrap, sandbox_error

EDITION = "2021"
COMPILE_ADDRESS_SPACE = 8 * 2**30  # rustc with LLVM reserves more than it uses
COMPILE_FILE_SIZE = 512 * 2**20  # the largest file rustc may write
RUN_ADDRESS_SPACE = 4 * 2**30


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
    """The Rust toolchain of this machine (found as :func:`autograder.rust_source.find_rustc`
    finds it); whether a program links statically is tried once and remembered in
    :func:`cache_dir`. Raises :class:`ToolchainError`."""
    found = find_rustc()
    if found is None:
        raise ToolchainError(INSTALL_HINT)
    try:
        done = subprocess.run([found, "--print", "sysroot"], capture_output=True, text=True,
                              timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolchainError(f"{found} --print sysroot failed: {exc}") from None
    sysroot = str(Path(done.stdout.strip()).resolve())
    real = Path(sysroot, "bin", "rustc")
    rustc = str(real) if real.is_file() and os.access(real, os.X_OK) else found
    version = rustc_version(rustc)
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    linker = str(Path(cc).resolve()) if cc else None
    base = Toolchain(rustc, sysroot, version, linker)
    memo = cache_dir() / ("toolchain-" + digest([version, sysroot, str(linker),
                                                  str(sandboxed())]) + ".json")
    try:
        known = json.loads(memo.read_text(encoding="utf-8"))
        return Toolchain(rustc, sysroot, version, linker, bool(known["static"]),
                         tuple(known["libs"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    static, libs = _probe_linking(base)
    write_new(memo, json.dumps({"static": static, "libs": list(libs)}).encode())
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
            rc, _ = run_rustc(t, src, out, [*rustc_flags(t), "-o", "/out/probe", ROOT], 120)
            if rc != 0:
                continue
            libs = () if static else _ldd(out / "probe")
            try:
                done = subprocess.run(run_command(out / "probe", libs, 60), input=b"",
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
    base = env_vars.RUST_GRADER_CACHE.get() or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "attention-course" / "rust-grader")
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = path.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise OSError(f"{path} is not the grader's own folder (owner {st.st_uid}, mode "
                      f"{oct(st.st_mode & 0o777)}); remove it or set "
                      f"{env_vars.RUST_GRADER_CACHE}")
    return path


def digest(parts: list[str]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:40]


def write_new(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all (a concurrent writer finds a whole file)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# -------------------------------------------------------------------- sandboxes

def _system_root() -> list[str]:
    """bwrap arguments for ``/usr`` read-only and the merged-/usr links (/bin, /lib...)."""
    args = ro_bind("/usr")
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        p = Path(top)
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), top]
        elif p.is_dir():
            args += ro_bind(top)
    return args


def _under_usr(path: str) -> bool:
    return path == "/usr" or path.startswith("/usr/")


def rustc_flags(tc: Toolchain) -> list[str]:
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


def forbid_flags() -> list[str]:
    return ["--edition", EDITION, "--crate-type", "bin", "--crate-name", "course_rust",
            "--error-format", "json", "--color", "never", "--emit=metadata"]


def run_rustc(tc: Toolchain, src: Path, out: Path, args: list[str],
           timeout: float) -> tuple[int | None, str]:
    """rustc ``args`` run with ``src`` at ``/src`` (read-only, the working folder) and
    ``out`` at ``/out``: (exit status, None on a timeout; stderr)."""
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": "/tmp",
           "LD_LIBRARY_PATH": str(Path(tc.sysroot, "lib"))}
    if sandboxed():
        mounts = [*_system_root(), *tmpfs("/tmp")]
        for extra in {tc.sysroot, str(Path(tc.rustc).parent),
                      str(Path(tc.linker).parent) if tc.linker else "/usr"}:
            if not _under_usr(extra):
                mounts += ro_bind(extra)
        box = Box(mounts=(*mounts, *ro_bind(str(src), "/src"), *bind(str(out), "/out")),
                  chdir="/src", env=env, proc_and_dev=False, new_session=True)
        cmd, cwd = bwrap_box.command(bwrap(), box, [tc.rustc, *args]), "/"
        outer = {"PATH": "/usr/bin:/bin"}
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


def run_command(binary: Path, libs: tuple[str, ...], cpu: float) -> list[str]:
    """The command line of a program's process: sandboxed where bubblewrap can start."""
    if not sandboxed():
        return limits.limited([str(binary)], cpu, RUN_ADDRESS_SPACE)

    mounts = [arg for lib in libs for arg in ro_bind(lib)]
    box = Box(mounts=(*mounts, *ro_bind(str(binary), "/program"), *remount_ro("/")),
              proc_and_dev=False, new_session=True)
    return limits.limited(bwrap_box.command(bwrap(), box, ["/program"]), cpu, RUN_ADDRESS_SPACE)
