"""ex08's Rust built and run by the grader (autograder/rust_build.py): exact floats both
ways, Err/panic/todo as Python exceptions, the forbid(unsafe_code) build, a compile sandbox
that shows no file of the grader's, a run sandbox with no files, network or programs, the
limits (a call's time, memory, output), and the process's end with the notebook. Needs
rustc; the sandbox tests need bubblewrap. No result here depends on timing: an endless loop
is stopped by a short limit, and only the failure is asserted."""

from __future__ import annotations

import json
import math
import os
import struct
import textwrap
from types import SimpleNamespace

import nbformat
import pytest
from conftest import REPO

from autograder import (rust_build, rust_compile, rust_program, rust_protocol,
                        rust_source, rust_toolchain)
from autograder.rust_source import RustSource as S
from autograder.session import Session
from autograder.sandbox import sandbox_error

needs_sandbox = pytest.mark.skipif(sandbox_error() is not None,
                                   reason=f"no sandbox here: {sandbox_error()}")
SIGNATURE = "fn softmax(row: &[f64]) -> Result<Vec<f64>, String>"
GRADER_FILE = REPO / "autograder" / "checks" / "ex08.py"  # what a learner must not read

# One program, many behaviours: row[0] says which (one build serves most tests here).
MULTI = textwrap.dedent(f"""
    {SIGNATURE} {{
        let what = row.first().copied().unwrap_or(-1.0) as i64;
        let arg = row.get(1).copied().unwrap_or(0.0) as usize;
        match what {{
            1 => Err(String::from("no scores\\nat all: a \\\\ and a \\t tab, π")),
            2 => panic!("index {{}} is past the end", 7),
            3 => todo!(),
            4 => unimplemented!("later"),
            5 => loop {{ std::hint::black_box(0); }},
            6 => {{
                let v = std::hint::black_box(vec![1u8; 8 << 30]);
                Ok(vec![v[arg] as f64])
            }}
            7 => std::process::exit(3),
            8 => Ok(vec![0.1; 1 << 21]),
            9 => {{
                print!("unfinished line ");
                println!("{{}} lines of the learner's own", 2);
                eprintln!("and one on stderr");
                Ok(row[1..].to_vec())
            }}
            10 => {{
                let paths = [{json.dumps(str(GRADER_FILE))}, "/etc/passwd", "/proc/self/mem", "."];
                match std::fs::read(paths[arg]) {{
                    Ok(b) => Ok(vec![b.len() as f64]),
                    Err(e) => Err(format!("read {{}}: {{}}", paths[arg], e)),
                }}
            }}
            11 => match std::net::TcpStream::connect(["127.0.0.1:22", "1.1.1.1:80"][arg]) {{
                Ok(_) => Ok(vec![1.0]),
                Err(e) => Err(format!("connect: {{}}", e)),
            }},
            12 => match std::process::Command::new(["/bin/sh", "python3"][arg]).output() {{
                Ok(o) => Ok(vec![o.stdout.len() as f64]),
                Err(e) => Err(format!("start: {{}}", e)),
            }},
            13 => match std::fs::write(["/tmp/escaped", "/program", "escaped"][arg], b"x") {{
                Ok(_) => Ok(vec![1.0]),
                Err(e) => Err(format!("write: {{}}", e)),
            }},
            _ => Ok(row.to_vec()),
        }}
    }}
""")
IDENTITY_ATTENTION = textwrap.dedent("""
    fn scaled_dot_product_attention(q: &[Vec<f64>], k: &[Vec<f64>], v: &[Vec<f64>])
        -> Result<Vec<Vec<f64>>, String> {
        if q.len() != k.len() { return Err(format!("{} != {}", q.len(), k.len())); }
        Ok(v.to_vec())
    }
""")


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory):
    """A cache folder of this module's own (builds are keyed by their sources anyway)."""
    assert rust_source.find_rustc(), rust_source.INSTALL_HINT
    folder = tmp_path_factory.mktemp("rust-grader-cache")
    old = os.environ.get("AUTOGRADER_RUST_GRADER_CACHE")
    os.environ["AUTOGRADER_RUST_GRADER_CACHE"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("AUTOGRADER_RUST_GRADER_CACHE", None)
    else:
        os.environ["AUTOGRADER_RUST_GRADER_CACHE"] = old


@pytest.fixture(scope="module")
def multi(private_cache):
    built = rust_compile.build([S("cell_softmax.rs", MULTI),
                              S("cell_scaled_dot_product_attention.rs", IDENTITY_ATTENTION)])
    assert built.error is None and built.forbid_error is None, built.error
    assert built.functions == ("softmax", "scaled_dot_product_attention")
    program = rust_program.RustProgram(built, timeout=30)
    yield program
    program.close()


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def test_floats_cross_both_ways_exactly_including_inf_and_nan(multi):
    values = [0.1, 1 / 3, -2.5e-7, 1e-300, 5e-324, 2.2250738585072014e-308, -0.0, 0.0,
              math.inf, -math.inf, math.nan, 1.7976931348623157e308, 1e22, 1e16,
              123456789.123, 12345678901234567890.0, 7.0]
    got = multi.call("softmax", ([0.0] + values,))[1:]
    assert all(type(x) is float for x in got)
    assert [math.isnan(x) or _bits(x) for x in got] == [math.isnan(x) or _bits(x)
                                                        for x in values]
    V = [values[:5], values[5:11], values[11:]]
    out = multi.call("scaled_dot_product_attention", ([[1.0]] * 3, [[1.0]] * 3, V))
    assert [[math.isnan(x) or _bits(x) for x in r] for r in out] == \
        [[math.isnan(x) or _bits(x) for x in r] for r in V]
    assert multi.call("scaled_dot_product_attention", ([], [], [])) == []
    with pytest.raises(ValueError, match="^2 != 1$"):
        multi.call("scaled_dot_product_attention", ([[1.0], [2.0]], [[1.0]], [[1.0]]))


def test_err_panic_and_todo_are_python_exceptions_and_the_process_goes_on(multi):
    with pytest.raises(ValueError) as err:
        multi.call("softmax", ([1.0],))
    assert str(err.value) == "no scores\nat all: a \\ and a \t tab, π"
    pid = multi.pid
    with pytest.raises(rust_source.RustPanic) as panic:
        multi.call("softmax", ([2.0],))
    assert isinstance(panic.value, RuntimeError)
    assert not isinstance(panic.value, NotImplementedError)
    assert str(panic.value).startswith("softmax panicked: index 7 is past the end (at "
                                       "cell_softmax.rs:")
    with pytest.raises(NotImplementedError, match="not yet implemented"):
        multi.call("softmax", ([3.0],))
    with pytest.raises(NotImplementedError, match="not implemented: later"):
        multi.call("softmax", ([4.0],))
    assert multi.call("softmax", ([0.0, 1.5],)) == [0.0, 1.5]
    assert multi.pid == pid  # one process for all of them


def test_the_learners_own_output_does_not_disturb_the_replies(multi):
    assert multi.call("softmax", ([9.0, 4.0, 2.0],)) == [4.0, 2.0]
    assert multi.call("softmax", ([0.0, 3.0],)) == [0.0, 3.0]


def test_arguments_are_checked_before_they_are_sent(multi):
    import numpy as np

    with pytest.raises(TypeError, match=r"row\[1\] must be a number, got str"):
        multi.call("softmax", ([0.0, "1.0"],))
    with pytest.raises(TypeError, match="row must be a sequence of numbers, got float"):
        multi.call("softmax", (1.0,))
    with pytest.raises(TypeError, match="softmax takes 1 argument"):
        multi.call("softmax", ([1.0], [2.0]))
    with pytest.raises(TypeError, match=r"K\[0\] must be a sequence"):
        multi.call("scaled_dot_product_attention", ([[1.0]], [1.0], [[1.0]]))
    assert multi.call("softmax", (np.array([0.0, 2.0, 3.0]),)) == [0.0, 2.0, 3.0]
    assert multi.call("softmax", ([0, True, 2**60],)) == [0.0, 1.0, float(2**60)]


def test_an_endless_loop_fails_at_the_limit_and_the_next_call_starts_anew(multi):
    short = rust_program.RustProgram(multi.build, timeout=1)
    try:
        assert short.call("softmax", ([0.0, 1.0],)) == [0.0, 1.0]
        first = short.pid
        with pytest.raises(rust_protocol.RustTimeout, match="softmax ran longer than 1 s of CPU time"):
            short.call("softmax", ([5.0],))
        assert short.pid is None  # killed
        assert short.call("softmax", ([0.0, 2.0],)) == [0.0, 2.0]
        assert short.pid not in (None, first)
    finally:
        short.close()


def test_memory_limit_exit_and_crash_are_failures_not_the_end(multi):
    with pytest.raises(rust_protocol.RustCrashed, match="memory allocation of 8589934592 bytes "
                                                     "failed"):
        multi.call("softmax", ([6.0, 5.0],))
    with pytest.raises(rust_protocol.RustCrashed, match="exited with status 3"):
        multi.call("softmax", ([7.0],))
    assert multi.call("softmax", ([0.0, 4.0],)) == [0.0, 4.0]


def test_a_reply_over_the_limit_is_refused(multi):
    with pytest.raises(rust_protocol.RustRefused, match="longer than 4194304 bytes"):
        multi.call("softmax", ([8.0],))
    assert multi.call("softmax", ([0.0, 5.0],)) == [0.0, 5.0]


@needs_sandbox
@pytest.mark.parametrize("case,path", [(0, GRADER_FILE), (1, "/etc/passwd"),
                                       (2, "/proc/self/mem"), (3, ".")])
def test_std_fs_finds_no_file_at_run_time(multi, case, path):
    assert GRADER_FILE.is_file()
    with pytest.raises(ValueError, match=f"^read {path}: "):
        multi.call("softmax", ([10.0, float(case)],))


@needs_sandbox
@pytest.mark.parametrize("what,case", [(11, 0), (11, 1), (12, 0), (12, 1), (13, 0), (13, 1),
                                       (13, 2)])
def test_no_network_no_program_and_nothing_to_write_at_run_time(multi, what, case):
    with pytest.raises(ValueError, match="^(connect|start|write): "):
        multi.call("softmax", ([float(what), float(case)],))


def _softmax_crate(body: str) -> list[S]:
    return [S("cell_softmax.rs", f"\n{SIGNATURE} {{\n{body}\n}}\n")]


def test_the_forbid_build_refuses_unsafe_even_under_an_inner_allow():
    built = rust_compile.build(_softmax_crate(
        "    #[allow(unsafe_code)]\n    let x = unsafe { *row.get_unchecked(0) };\n"
        "    Ok(vec![x])"))
    assert built.error is None  # the plain build works: only the rule test depends on it
    program = rust_program.RustProgram(built, timeout=30)
    try:
        assert program.call("softmax", ([2.5],)) == [2.5]
    finally:
        program.close()
    assert "usage of an `unsafe` block" in built.forbid_error
    assert "--> cell_softmax.rs:4:" in built.forbid_error
    assert "allow(unsafe_code) incompatible with previous forbid" in built.forbid_error
    exported = rust_compile.build(_softmax_crate("    Ok(row.to_vec())") + [
        S("cell_helper.rs", "\n#[no_mangle]\nfn helper() {}\n")])
    assert exported.error is None and "`no_mangle`" in exported.forbid_error
    # Comments, strings and an unexecuted `extern` block are not unsafe code.
    fine = rust_compile.build(_softmax_crate(
        "    /* unsafe /* nested: unsafe { } */ still a comment: std::fs */\n"
        '    let _note = "unsafe { std::process::exit(1) }";\n'
        "    Ok(row.to_vec())") + [S("cell_c.rs", '\nextern "C" { fn abs(x: i32) -> i32; }\n')])
    assert (fine.error, fine.forbid_error) == (None, None)
    # The check build alone (the kernel's own functions) says the same.
    assert rust_compile.forbid_problem(fine.sources) is None
    assert rust_compile.forbid_problem(built.sources) == built.forbid_error


def test_a_symbol_outside_the_standard_library_does_not_link():
    """An ``extern`` block naming the Python interpreter's C API (which a library loaded
    into the kernel could reach): the grader's program has no such symbol."""
    built = rust_compile.build(_softmax_crate(
        "    Ok(vec![unsafe { *Py_GetVersion() } as f64])") + [
        S("cell_ffi.rs", '\nextern "C" { fn Py_GetVersion() -> *const u8; }\n')])
    assert built.binary is None
    assert "could not be linked: undefined reference to `Py_GetVersion'" in built.error
    assert len(built.error) < 1000, built.error  # not the linker's command line


@needs_sandbox
def test_compile_time_reads_find_no_file_of_the_graders():
    notebook = REPO / "solutions" / "ex08_rust_attention" / "ex08_rust_attention.ipynb"
    for path in ("/etc/hostname", str(GRADER_FILE), str(notebook)):
        assert os.path.isfile(path)  # here, outside the sandbox
        built = rust_compile.build(_softmax_crate(
            f"    let s = include_str!({json.dumps(path)});\n    Ok(vec![s.len() as f64])"))
        assert built.binary is None
        assert f"couldn't read `{path}`" in built.error, built.error
        assert "--> cell_softmax.rs:3:" in built.error
        assert built.error.startswith("your %%rust cells do not compile")


def test_a_compile_error_names_the_cell_and_line_and_every_call_raises_it():
    nb = nbformat.v4.new_notebook(cells=[
        _cell("%%rust\n" + SIGNATURE + " {\n    Ok(1)\n}", "softmax"),
        _cell("%%rust\n" + IDENTITY_ATTENTION, "scaled_dot_product_attention")])
    session = SimpleNamespace(notebook=nb, timeout=30, on_close=[])
    functions = rust_build.built_functions(session)
    for name, args in [("softmax", ([1.0],)),
                       ("scaled_dot_product_attention", ([[1.0]], [[1.0]], [[1.0]]))]:
        with pytest.raises(rust_source.RustCompileError) as err:
            functions[name](*args)
        assert "--> cell_softmax.rs:3:8" in str(err.value) and "E0308" in str(err.value)
        assert str(err.value).splitlines()[0] == (  # the cell, its line, rustc's message
            "your %%rust cells do not compile: cell softmax, line 3 (Ok(1)): mismatched "
            "types (error[E0308])"), str(err.value)
    # A changed signature is reported with the one the course calls.
    built = rust_compile.build([S("cell_softmax.rs", "\nfn softmax(row: Vec<f64>) -> Result<"
                                                   "Vec<f64>, String> { Ok(row) }\n")])
    assert "keep it exactly" in built.error and SIGNATURE in built.error


def _cell(source: str, grade_id: str, solution: bool = True):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": False, "grade_id": grade_id, "locked": False,
                                 "schema_version": 3, "solution": solution, "task": False}
    return cell


def test_the_notebooks_rust_solution_cells_and_only_those_are_built():
    softmax = "%%rust\n" + SIGNATURE + " {\n    Ok(vec![1.0; row.len()])\n}"
    nb = nbformat.v4.new_notebook(cells=[
        _cell(softmax.replace("1.0;", "9.0;"), "softmax"),  # replaced by the later cell
        _cell("%%rust\nfn stray() -> u8 { 1 + }", "mine", solution=False),  # not graded
        _cell("softmax = lambda row: [0.5] * len(row)", "kc1"),  # Python: not Rust
        _cell(softmax, "again"),
        _cell("\n%%rust\n" + SIGNATURE.replace("softmax", "scaled_dot_product_attention")
              .replace("row: &[f64]", "q: &[Vec<f64>], k: &[Vec<f64>], v: &[Vec<f64>]")
              .replace("Vec<f64>, String>", "Vec<Vec<f64>>, String>")
              + " {\n    todo!()\n}", "scaled_dot_product_attention"),
    ])
    files = rust_build.rust_cells(nb)
    assert [f.name for f in files] == ["cell_again.rs", "cell_scaled_dot_product_attention.rs"]
    assert files[1].text.startswith("\n\nfn ")  # line 3 of the cell is line 3 of the file
    session = SimpleNamespace(notebook=nb, timeout=30, on_close=[])
    functions = rust_build.built_functions(session)
    try:
        assert type(functions["softmax"]) is rust_build.BuiltRust
        assert functions["softmax"]([3.0, 4.0]) == [1.0, 1.0]
        with pytest.raises(NotImplementedError, match=r"cell_scaled_dot_product_attention\.rs"
                                                      r":4:"):
            functions["scaled_dot_product_attention"]([[1.0]], [[1.0]], [[1.0]])
    finally:
        for hook in session.on_close:
            hook()
    only = rust_build.built_functions(SimpleNamespace(notebook=nbformat.v4.new_notebook(
        cells=[_cell(softmax, "softmax")]), timeout=30, on_close=[]))
    with pytest.raises(rust_protocol.RustNotDefined, match="no `fn scaled_dot_product_attention`"):
        only["scaled_dot_product_attention"]([[1.0]], [[1.0]], [[1.0]])
    only["softmax"].program.close()


def test_the_process_is_killed_when_the_session_closes(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[_cell("%%rust\n" + MULTI, "softmax")])
    session = Session(lambda code: None, tmp_path, nb, timeout=30)
    functions = rust_build.built_functions(session)
    assert functions["softmax"]([0.0, 1.0]) == [0.0, 1.0]
    program = functions["softmax"].program
    proc = program._proc.proc
    assert proc.poll() is None
    session.close()
    assert proc.poll() is not None and program.pid is None
    with pytest.raises(rust_protocol.RustCallFailed, match="closed"):
        functions["softmax"]([0.0, 1.0])


def test_builds_are_cached_by_their_sources(private_cache):
    files = _softmax_crate("    Ok(row.iter().map(|x| x * 2.0).collect())")
    first = rust_compile.build(files)
    again = rust_compile.build(files)
    assert (first.cached, again.cached) == (False, True)
    assert again.binary == first.binary and again.binary.parent.parent == private_cache
    other = rust_compile.build(_softmax_crate("    Ok(row.iter().map(|x| x * 3.0).collect())"))
    assert other.cached is False and other.binary != first.binary


def test_the_cache_folder_must_be_the_graders_own(tmp_path, monkeypatch):
    open_folder = tmp_path / "shared"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    monkeypatch.setenv("AUTOGRADER_RUST_GRADER_CACHE", str(open_folder))
    with pytest.raises(OSError, match="not the grader's own folder"):
        rust_toolchain.cache_dir()
    built = rust_compile.build(_softmax_crate("    Ok(row.to_vec())"))
    assert built.binary is None and "cannot compile Rust" in built.error


def test_ex08s_checks_accept_the_grader_built_functions():
    from autograder.checks import ex08
    from autograder.config import SOLUTIONS

    nb = nbformat.read(SOLUTIONS / "ex08_rust_attention" / "ex08_rust_attention.ipynb", 4)
    session = SimpleNamespace(notebook=nb, timeout=30, on_close=[])
    functions = rust_build.built_functions(session)
    softmax, attention = functions["softmax"], functions["scaled_dot_product_attention"]
    try:
        for name, _, _ in ex08.ON_RUST:
            getattr(ex08, name)(softmax if "softmax" in name else attention)
        ex08.uses_only_safe_std(softmax, attention)
    finally:
        softmax.program.close()
    unsafe = nbformat.read(SOLUTIONS / "ex08_rust_attention" / "ex08_rust_attention.ipynb", 4)
    for c in unsafe.cells:
        if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "softmax":
            c.source = c.source.replace("let m = row", "let m = unsafe { row.get_unchecked(0) "
                                        "}.max(0.0).min(0.0) + row")
    functions = rust_build.built_functions(SimpleNamespace(notebook=unsafe, timeout=30,
                                                           on_close=[]))
    try:
        ex08.softmax_matches_reference(functions["softmax"])  # the values are right
        with pytest.raises(AssertionError, match=r"(?s)forbid\(unsafe_code\).*usage of an "
                                                 r"`unsafe` block.*cell_softmax\.rs:10:"):
            ex08.uses_only_safe_std(functions["softmax"],
                                    functions["scaled_dot_product_attention"])
    finally:
        functions["softmax"].program.close()
    with pytest.raises(AssertionError, match="Rust function compiled from your %%rust cell"):
        ex08.softmax_is_stable(lambda row: row)
