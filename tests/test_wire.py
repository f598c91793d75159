"""The plain-data boundary (autograder.wire) and the checker's reading of a kernel's reply:
what crosses comes back as it went, and every malformed or oversized message is refused
with a reason before its data is read (issue 23)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from autograder import wire
from autograder.checker import visible_part
from autograder.session import Session
from autograder.session_errors import CheckStopped, ProtocolError, TimeLimit, learner_exception


def _round_trip(value, tmp_path):
    tree = wire.encode(value, wire.Arrays(tmp_path, "m"))
    return wire.decode(json.loads(json.dumps(tree)), wire.Arrays(tmp_path, "m"))


def test_plain_values_come_back_with_their_types(tmp_path):
    value = [1.0, 2, True, None, "s", (0.5, float("nan")), {"k": [float("inf")]},
             np.float32(1.5), np.arange(6, dtype=np.int16).reshape(2, 3)]
    got = _round_trip(value, tmp_path)
    assert [type(v) for v in got[:5]] == [float, int, bool, type(None), str]
    assert type(got[5]) is tuple and np.isnan(got[5][1])
    assert got[6] == {"k": [float("inf")]}
    assert type(got[7]) is np.float32 and got[7] == 1.5
    assert got[8].dtype == np.int16 and got[8].tolist() == [[0, 1, 2], [3, 4, 5]]


def test_an_ndarray_subclass_crosses_as_its_plain_data(tmp_path):
    class Lies(np.ndarray):
        @property
        def dtype(self):
            return np.dtype(np.float32)

    got = _round_trip(np.ones(3).view(Lies), tmp_path)
    assert type(got) is np.ndarray and got.dtype == np.float64


def test_other_objects_cross_as_their_type_name_only(tmp_path):
    class Sneaky:
        pass

    got = _round_trip(Sneaky(), tmp_path)
    assert isinstance(got, wire.Opaque) and type(got).__name__ == "Sneaky"
    assert type(_round_trip(np.array([object()]), tmp_path)).__name__ == "ndarray"


@pytest.mark.parametrize("tree", [
    {"t": "pickle", "v": "gASV"}, {"t": "plain", "v": 1.5}, {"t": "int", "v": "1e5"},
    {"t": "plain", "v": "x" * (wire.MAX_STR + 1)}, [1, 2], {"t": "list", "v": "abc"},
    {"t": "ndarray", "file": "../../etc/passwd"}, {"t": "ndarray", "file": "other-0.npy"},
])
def test_malformed_nodes_are_refused(tree, tmp_path):
    with pytest.raises(wire.WireError):
        wire.decode(tree, wire.Arrays(tmp_path, "m"))


def test_no_text_of_the_kernels_reaches_a_refusals_message(tmp_path):
    """A refused reply is a broken protocol whose message reaches the learner's feedback
    (TamperingDetected): it names what was wrong, never quotes the kernel's own text, which
    could carry what the learner's code saw (the hidden inputs) past every filter."""
    secret = "LEAKED-4.387629070651185"
    refused = [{"t": secret}, {"t": "ndarray", "file": f"m-{secret}.npy"},
               {"t": "tensor", "dtype": secret, "device": "cpu", "file": "m-0.npy"},
               {"t": "tensor", "dtype": "float32", "device": secret[:20], "file": "m-0.npy"},
               {"t": "torch", "dtype": secret}, [secret]]
    for tree in refused:
        with pytest.raises(wire.WireError) as caught:
            wire.decode(tree, wire.Arrays(tmp_path, "m"))
        assert "LEAKED" not in str(caught.value), str(caught.value)
    with open(tmp_path / "m-0.npy", "wb") as f:  # a header holding the text
        f.write(np.lib.format.magic(1, 0) + b"\x40\x00{'descr': '" + secret.encode() + b"'}")
    with pytest.raises(wire.WireError) as caught:
        wire.Arrays(tmp_path, "m").read("m-0.npy")
    assert "LEAKED" not in str(caught.value), str(caught.value)

    def says_why(code):
        import autograder.kernel_client as kc

        real = kc._run
        kc._run = lambda *args: {"error": secret}
        try:
            exec(code, {})
        finally:
            kc._run = real

    (tmp_path / "x").mkdir()
    session = Session(says_why, tmp_path / "x")
    with pytest.raises(ProtocolError) as caught:
        session.serving(lambda: session.resolve("softmax"))
    assert "LEAKED" not in str(caught.value), str(caught.value)


def test_array_files_are_checked_before_their_data_is_read(tmp_path):
    arrays = wire.Arrays(tmp_path, "m")
    np.save(tmp_path / "m-0.npy", np.array(["text"]))  # a string dtype
    with open(tmp_path / "m-1.npy", "wb") as f:  # a header claiming more than the limit
        np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False,
                                                 "shape": (2**30,)})
    np.save(tmp_path / "m-2.npy", np.arange(10.0))
    data = (tmp_path / "m-2.npy").read_bytes()
    (tmp_path / "m-2.npy").write_bytes(data[:-8])  # a truncated body
    (tmp_path / "m-3.npy").symlink_to(tmp_path / "m-2.npy")
    for n, why in enumerate(["dtype", "larger than allowed", "bytes of data"]):
        with pytest.raises(wire.WireError, match=why):
            arrays.read(f"m-{n}.npy")
    with pytest.raises(wire.WireError, match="cannot be opened"):  # a link is not followed
        arrays.read("m-3.npy")


def _request_id(folder) -> str:
    return next(p.name for p in folder.iterdir() if p.name.endswith(".request.json")).split(
        ".")[0]


def _kernel(namespace: dict):
    """A stand-in for the learner's kernel: it runs the checker's serving cell here."""
    def execute(code: str) -> None:
        exec(code, namespace)
    return execute


def test_one_kernel_cell_serves_every_call_of_a_test(tmp_path):
    cells = []

    def execute(code):
        cells.append(code)
        exec(code, {"double": lambda xs: [2 * x for x in xs], "shown": []})

    session = Session(execute, tmp_path)
    got = session.serving(lambda: [session.resolve("double")([1.0, i]) for i in range(5)])
    assert got == [[2.0, 2.0 * i] for i in range(5)] and len(cells) == 1
    assert list(tmp_path.iterdir()) == []  # requests, replies and the socket are gone


def test_a_run_of_test_cells_is_served_by_one_kernel_cell(tmp_path):
    """Consecutive test cells cost one kernel cell: each test is served over a socket of
    its own, in order, each but the first behind a marker of its own; a test that raised
    ends the run (the kernel's cell ends, the tests after it are not begun)."""
    cells, shown = [], []
    namespace = {"double": lambda xs: [2 * x for x in xs]}

    def execute(code):
        cells.append(code)
        exec(code, namespace)

    import autograder.kernel_client as kc

    real_mark = kc._mark
    kc._mark = lambda phase, token: shown.append((phase, token))
    try:
        session = Session(execute, tmp_path)
        served = session.serving_run([
            lambda: session.resolve("double")([1.0]),
            lambda: session.resolve("double")([2.0]),
            lambda: session.resolve("double")([3.0]),
        ])
        assert [s.value for s in served] == [[2.0], [4.0], [6.0]] and len(cells) == 1
        assert [s.raised for s in served] == [None, None, None]
        assert [len(s.marks) for s in served] == [0, 1, 1]  # the first needs no marker
        assert shown == [served[1].marks[0], served[2].marks[0]]
        assert {m[0] for s in served for m in s.marks} == {"visible"}

        def stops():
            raise CheckStopped("the kernel stopped answering")

        began = []
        served = session.serving_run([lambda: session.resolve("double")([1.0]), stops,
                                      lambda: began.append("third")])
        assert len(cells) == 2 and began == [] and len(served) == 2
        assert served[0].value == [2.0] and isinstance(served[1].raised, CheckStopped)
    finally:
        kc._mark = real_mark
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("line-")] == []


def test_a_runs_outputs_are_split_test_by_test_at_the_checkers_markers():
    """Each test of a run gets the outputs from its own first marker to the next test's;
    a marker suppressed, replayed or moved by the learner's code leaves every test of the
    run without output (the verdicts do not depend on it)."""
    from autograder.kernel_client import SERVING
    from autograder.serving_outputs import shown, split_by_test

    def mark(phase, token):
        return {"output_type": "display_data", "data": {"text/plain": ""},
                "metadata": {SERVING: {"phase": phase, "token": token}}}

    def out(text):
        return {"output_type": "stream", "name": "stdout", "text": text}

    marks = [[("hidden", "h1")], [("visible", "b2"), ("hidden", "h2")], [("visible", "b3")]]
    outputs = [out("one"), mark("hidden", "h1"), out("secret 1"), mark("visible", "b2"),
               out("two"), mark("hidden", "h2"), out("secret 2"), mark("visible", "b3"),
               out("three")]
    parts = split_by_test(outputs, marks)
    assert [[o["text"] for o in shown(p, m)] for p, m in zip(parts, marks)] == [
        ["one"], ["two"], ["three"]]
    for bad in ([o for o in outputs if o != mark("visible", "b2")],  # suppressed
                outputs[:4] + [mark("visible", "b3")] + outputs[4:],  # replayed early
                outputs[7:] + outputs[:7]):  # out of order
        assert split_by_test(bad, marks) == [[], [], []]
    forged = outputs[:2] + [mark("visible", "h1")] + outputs[2:]  # a marker of its own
    assert [shown(p, m) for p, m in zip(split_by_test(forged, marks), marks)][0] == []


def test_a_kernel_that_does_not_serve_or_answers_another_request_breaks_the_protocol(tmp_path):
    import autograder.kernel_client as kc

    def answers_another_request(code):
        real = kc.serve

        def wrong(namespace, folder, rid):
            (tmp_path / f"{rid}.reply.json").write_text(json.dumps({"id": "r0", "value": {
                "t": "plain", "v": None}}))
        kc.serve = wrong
        try:
            exec(code, {})
        finally:
            kc.serve = real

    session = Session(lambda code: None, tmp_path)
    with pytest.raises(ProtocolError, match="did not serve"):
        session.serving(lambda: session.resolve("softmax"))
    with pytest.raises(ProtocolError, match="outside a test"):
        session.resolve("softmax")
    session = Session(answers_another_request, tmp_path)
    with pytest.raises(ProtocolError, match="another request"):
        session.serving(lambda: session.resolve("softmax"))
    assert list(tmp_path.iterdir()) == []  # the request is cleared after its reply


def test_a_kernel_that_stops_answering_stops_the_check(tmp_path):
    import autograder.kernel_client as kc

    def hangs_up(code):
        real = kc.serve
        def interrupted(namespace, folder, rid):  # the time limit, between two calls
            raise KeyboardInterrupt
        kc.serve = interrupted
        try:
            exec(code, {})
        except KeyboardInterrupt:
            pass
        finally:
            kc.serve = real

    session = Session(hangs_up, tmp_path)
    with pytest.raises(CheckStopped, match="stopped answering"):
        session.serving(lambda: [session.resolve("softmax"), session.resolve("softmax")])


class _Clock:
    """A clock the test moves: the checker's and the kernel's time, as each spends it."""

    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_the_time_limit_counts_the_kernels_time_never_the_checkers(tmp_path, monkeypatch):
    """A test whose checker work (a probe, a build) takes longer than the limit on a loaded
    machine keeps its verdict: only the kernel's time is counted."""
    from autograder import kernel_line

    clock = _Clock()
    monkeypatch.setattr(kernel_line, "now", clock)

    def quick(x):
        clock.t += 1.0  # each call takes 1 s of the kernel's time
        return x

    session = Session(_kernel({"quick": quick}), tmp_path, timeout=10)

    def test():
        out = []
        for i in range(5):
            clock.t += 100.0  # the checker's own work: 500 s in all
            out.append(session.resolve("quick")(i))
        return out

    assert session.serving(test) == [0, 1, 2, 3, 4]
    stopped = []

    def slow(x):
        clock.t += 4.0
        return x

    session = Session(_kernel({"slow": slow}), tmp_path, timeout=10)
    session.interrupt = lambda: stopped.append("interrupt")
    calls = []

    def three_calls():
        for i in range(3):
            calls.append(session.resolve("slow")(i))

    with pytest.raises(TimeLimit, match="10 s"):  # 12 s of the kernel's time
        session.serving(three_calls)
    assert calls == [0, 1] and stopped == ["interrupt"]


def test_a_kernel_that_hangs_is_interrupted_and_one_that_ignores_that_is_killed(
        tmp_path, monkeypatch):
    import threading

    from autograder import kernel_line

    interrupted, killed = threading.Event(), threading.Event()

    def hangs(x):
        if not interrupted.wait(60):
            return "never interrupted"
        raise KeyboardInterrupt

    session = Session(_kernel({"hangs": hangs}), tmp_path, timeout=0.2)
    session.interrupt, session.kill = interrupted.set, killed.set
    with pytest.raises(TimeLimit):
        session.serving(lambda: session.resolve("hangs")(1))
    assert interrupted.is_set() and not killed.is_set()

    interrupted.clear()
    monkeypatch.setattr(kernel_line, "GRACE", 0.2)

    def ignores_interrupts(x):
        if not killed.wait(60):
            return "never killed"
        raise SystemExit  # what is left of a killed kernel's cell: it ends

    session = Session(_kernel({"ignores": ignores_interrupts}), tmp_path, timeout=0.2)
    session.interrupt, session.kill = interrupted.set, killed.set
    with pytest.raises(TimeLimit):
        session.serving(lambda: session.resolve("ignores")(1))
    assert interrupted.is_set() and killed.is_set()


def test_a_cell_that_does_not_end_once_its_tests_are_done_is_interrupted_then_killed(
        tmp_path, monkeypatch):
    """A learner's code that keeps the serving cell busy after the checker said ``done``
    (a wrapped client, a hook after each cell) does not hold the grader: past the time
    limit the kernel is interrupted, and killed GRACE s later; the verdicts stay."""
    import threading

    from autograder import kernel_line

    interrupted, killed = threading.Event(), threading.Event()
    namespace = {"double": lambda xs: [2 * x for x in xs]}

    def lingers(code):
        exec(code, namespace)  # the tests are served
        if not interrupted.wait(60):
            raise AssertionError("never interrupted")

    session = Session(lingers, tmp_path, timeout=0.2)
    session.interrupt, session.kill = interrupted.set, killed.set
    assert session.serving(lambda: session.resolve("double")([1.0])) == [2.0]
    assert interrupted.is_set() and not killed.is_set()

    interrupted.clear()
    monkeypatch.setattr(kernel_line, "GRACE", 0.2)

    def ignores_the_interrupt(code):
        exec(code, namespace)
        if not killed.wait(60):
            raise AssertionError("never killed")
        raise CheckStopped("the kernel died")  # what the executor says of a killed kernel

    session = Session(ignores_the_interrupt, tmp_path, timeout=0.2)
    session.interrupt, session.kill = interrupted.set, killed.set
    served = session.serving_run([lambda: session.resolve("double")([1.0])])
    assert interrupted.is_set() and killed.is_set()
    assert served[0].value == [2.0] and isinstance(served[0].raised, CheckStopped)


def test_links_laid_by_the_kernel_reroute_no_write_and_no_read(tmp_path):
    """The kernel can write the exchange folder: a link it lays where the checker will
    write or read, or in place of the folder itself, is refused, never followed."""
    folder, target = tmp_path / "x", tmp_path / "gradebook.db"
    folder.mkdir()
    target.write_bytes(b"the gradebook")
    session = Session(lambda code: None, folder)
    arrays = wire.Arrays(session.folder, "r9.in")
    (folder / "r9.in-0.npy").symlink_to(target)
    with pytest.raises(FileExistsError):
        arrays.write(np.zeros(3))
    (folder / "r9.reply.json").symlink_to(target)
    with pytest.raises(wire.WireError, match="cannot be opened"):
        wire.load(session.folder, "r9.reply.json")
    session.folder.clear()  # removes the links, not what they point to
    assert list(folder.iterdir()) == [] and target.read_bytes() == b"the gradebook"
    folder.rename(tmp_path / "moved")
    (tmp_path / "elsewhere").mkdir()
    folder.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    # The folder held by its descriptor: the link put in its place gets nothing.
    wire.dump({"t": "plain", "v": None}, session.folder, "r10.request.json")
    assert list((tmp_path / "elsewhere").iterdir()) == []
    assert [p.name for p in (tmp_path / "moved").iterdir()] == ["r10.request.json"]
    with pytest.raises(ProtocolError, match="replaced"):
        Session(lambda code: None, folder)


def test_a_learner_exception_keeps_its_kind_and_message_not_its_power():
    exc = learner_exception({"type": "ValueError", "kinds": ["ValueError", "Exception"],
                              "message": "empty row"})
    assert isinstance(exc, ValueError) and str(exc) == "empty row"
    fake = learner_exception({"type": "KeyboardInterrupt", "kinds": ["KeyboardInterrupt"],
                               "message": ""})
    assert isinstance(fake, Exception) and not isinstance(fake, KeyboardInterrupt)


def test_the_kernel_runs_a_test_without_its_hidden_part():
    source = '"""doc"""\nx = 1\n### BEGIN HIDDEN TESTS\nex01.check(x)\n### END HIDDEN TESTS\ny = 2'
    assert visible_part(source) == '"""doc"""\nx = 1\ny = 2'


def test_a_test_cell_is_cut_at_its_hidden_parts_with_the_cells_line_numbers():
    from autograder.checker import segments

    source = 'x = 1\n### BEGIN HIDDEN TESTS\nassert x\n### END HIDDEN TESTS\nraise ValueError'
    parts = segments(source)
    assert [h for h, _ in parts] == [False, True, False]
    assert [code.strip() for _, code in parts] == ["x = 1", "assert x", "raise ValueError"]
    assert parts[2][1].count("\n") == 4  # line 5 of the cell is line 5 of its code


def test_visible_prints_reach_the_kernel_and_names_a_test_defined_stay_for_the_next(tmp_path):
    from autograder.checker import run_test

    shown = []
    namespace = {"double": lambda x: 2 * x}
    session = Session(_kernel(namespace), tmp_path)
    import autograder.kernel_client as kc

    real_mark = kc._mark
    kc._mark = lambda phase, token: shown.append(("mark", phase, token))
    try:
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            first = run_test(session, 'y = double(2)\nprint("y is", y)\n### BEGIN HIDDEN TESTS\n'
                             'print("hidden")\nassert double(3) == 6\n### END HIDDEN TESTS\n',
                             {}, "t1")
            marks = list(session.marks)
            second = run_test(session, "assert y == 4, y", {}, "t2")
    finally:
        kc._mark = real_mark
    assert first is None and second is None
    assert out.getvalue() == "y is 4\n"  # printed in the kernel; the hidden print is not
    assert [(m[0], m[1]) for m in shown] == [("mark", "hidden")]
    assert marks == [("hidden", shown[0][2])]  # the marker carries the checker's token


def test_the_display_is_cut_at_the_checkers_markers_and_dropped_when_they_are_forged():
    import nbformat

    from autograder.kernel_client import SERVING
    from autograder.serving_outputs import shown

    def out(text):
        return nbformat.v4.new_output("stream", name="stdout", text=text)

    def mark(phase, token):
        return nbformat.v4.new_output("display_data", data={"text/plain": ""},
                                      metadata={SERVING: {"phase": phase, "token": token}})

    marks = [("hidden", "a1"), ("visible", "b2")]
    outputs = [out("seen"), mark("hidden", "a1"), out("secret input"), mark("visible", "b2"),
               out("seen too")]
    assert [o.text for o in shown(outputs, marks)] == ["seen", "seen too"]
    forged = outputs[:3] + [mark("visible", "a1")] + outputs[3:]  # a replayed token
    assert shown(forged, marks) == []
    assert shown(outputs[:1] + outputs[2:], marks) == []  # the hidden marker suppressed


# --- torch tensors and modules (ex05, ex07) -------------------------------------------------

torch = pytest.importorskip("torch")


def _tensor_round_trip(value, tmp_path, keep_grad=False):
    import tempfile

    folder = tempfile.mkdtemp(dir=tmp_path)  # a message of its own
    tree = wire.encode(value, wire.Arrays(folder, "m"))
    return wire.decode(json.loads(json.dumps(tree)), wire.Arrays(folder, "m"),
                       keep_grad=keep_grad)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64,
                                   torch.bool, torch.int64, torch.uint8, torch.complex64])
def test_a_tensor_crosses_with_its_dtype_shape_and_values(dtype, tmp_path):
    gen = torch.Generator().manual_seed(0)
    value = (torch.randn(3, 4, generator=gen) * 100).to(dtype)
    got = _tensor_round_trip(value, tmp_path)
    assert type(got) is torch.Tensor and got.dtype == dtype and got.shape == (3, 4)
    assert got.device.type == "cpu" and torch.equal(got, value)


def test_bfloat16_crosses_as_float32_data_it_can_hold(tmp_path):
    value = torch.tensor([1.0, -2.5, 3.140625, float("inf"), float("nan")],
                         dtype=torch.bfloat16)
    tree = wire.encode(value, wire.Arrays(tmp_path, "m"))
    assert tree["dtype"] == "bfloat16"
    assert np.load(tmp_path / tree["file"]).dtype == np.float32
    got = wire.decode(tree, wire.Arrays(tmp_path, "m"))
    assert got.dtype == torch.bfloat16 and got[:4].tolist() == [1.0, -2.5, 3.140625,
                                                                 float("inf")]
    assert torch.isnan(got[4])


def test_a_non_contiguous_view_crosses_as_its_values(tmp_path):
    base = torch.arange(24.0).reshape(4, 6)
    view = base.t()[::2, 1:]  # transposed and strided
    got = _tensor_round_trip(view, tmp_path)
    assert got.shape == view.shape and torch.equal(got, view) and got.is_contiguous()
    neg = torch.tensor([1 + 2j, 3 - 1j]).conj()  # a lazily conjugated view
    assert torch.equal(_tensor_round_trip(neg, tmp_path), torch.tensor([1 - 2j, 3 + 1j]))


def test_a_tensor_subclass_whose_dtype_shape_and_device_lie_crosses_as_its_data(tmp_path):
    class Lies(torch.Tensor):
        @property
        def dtype(self):
            return torch.float16

        @property
        def shape(self):
            return torch.Size([1])

        @property
        def device(self):
            return torch.device("cuda")

    value = torch.arange(6.0, dtype=torch.float64).reshape(2, 3).as_subclass(Lies)
    assert value.dtype == torch.float16  # what a check reading attributes would have seen
    got = _tensor_round_trip(value, tmp_path)
    assert type(got) is torch.Tensor and got.dtype == torch.float64 and got.shape == (2, 3)
    assert got.device.type == "cpu" and got.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_requires_grad_crosses_to_the_kernel_only(tmp_path):
    value = torch.nn.Parameter(torch.ones(2))
    assert not _tensor_round_trip(value, tmp_path).requires_grad  # the checker reads data
    assert _tensor_round_trip(value, tmp_path, keep_grad=True).requires_grad  # kernel inputs


def test_dtypes_devices_and_sizes_cross_by_name(tmp_path):
    got = _tensor_round_trip([torch.float64, torch.device("cpu"), torch.Size([2, 3])], tmp_path)
    assert got == [torch.float64, torch.device("cpu"), (2, 3)] and type(got[2]) is tuple


def test_a_tensor_that_is_not_plain_strided_data_crosses_as_a_name(tmp_path):
    sparse = torch.eye(3).to_sparse()
    meta = torch.empty(2, device="meta")
    for value in (sparse, meta, torch.zeros(2, dtype=torch.float8_e4m3fn)):
        got = _tensor_round_trip(value, tmp_path)
        assert isinstance(got, wire.Opaque) and type(got).__name__.startswith("Tensor")


def _tensor_node(tmp_path, array, **tags):
    np.save(tmp_path / "m-0.npy", array)
    return {"t": "tensor", "file": "m-0.npy", "dtype": "float32", "device": "cpu",
            "requires_grad": False, **tags}


@pytest.mark.parametrize("tags,array,why", [
    ({"dtype": "float32"}, np.zeros(3), "whose array is float64"),
    ({"dtype": "object"}, np.zeros(3, np.float32), "does not cross"),
    ({"dtype": "float8_e4m3fn"}, np.zeros(3, np.float32), "does not cross"),
    ({"dtype": "bfloat16"}, np.array([1.0 + 2**-12], np.float32), "cannot hold"),
    ({"device": "mps"}, np.zeros(3, np.float32), "neither cpu nor cuda"),
    ({"device": "cuda:999"}, np.zeros(3, np.float32), "neither cpu nor cuda"),
    ({"device": ["cpu"]}, np.zeros(3, np.float32), "not a name"),
    ({"requires_grad": "yes"}, np.zeros(3, np.float32), "not a bool"),
    ({"dtype": "int64", "requires_grad": True}, np.zeros(3, np.int64), "requires grad"),
    ({"file": "../m-0.npy"}, np.zeros(3, np.float32), "not this message's"),
])
def test_malformed_tensor_nodes_are_refused_with_a_reason(tags, array, why, tmp_path):
    tree = _tensor_node(tmp_path, array, **tags)
    with pytest.raises(wire.WireError, match=why):
        wire.decode(tree, wire.Arrays(tmp_path, "m"), keep_grad=True)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_a_tensor_on_a_device_this_process_lacks_is_refused(tmp_path):
    tree = _tensor_node(tmp_path, np.zeros(3, np.float32), device="cuda:0")
    with pytest.raises(wire.WireError, match="does not have"):
        wire.decode(tree, wire.Arrays(tmp_path, "m"))


def test_an_oversized_tensor_is_refused_before_its_data_is_read(tmp_path):
    with open(tmp_path / "m-0.npy", "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False,
                                                 "shape": (2**28,)})
    tree = {"t": "tensor", "file": "m-0.npy", "dtype": "float32", "device": "cpu"}
    with pytest.raises(wire.WireError, match="larger than allowed"):
        wire.decode(tree, wire.Arrays(tmp_path, "m"))


def test_the_wire_imports_torch_only_for_a_tensor():
    import subprocess
    import sys

    code = ("import json, sys, tempfile\nfrom autograder import wire\n"
            "d = tempfile.mkdtemp()\n"
            "t = wire.encode([1.0, {'a': (2, None)}], wire.Arrays(d, 'm'))\n"
            "wire.decode(json.loads(json.dumps(t)), wire.Arrays(d, 'm'))\n"
            "print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "False", done.stderr


class _Block(torch.nn.Module):
    """A learner's module for the command tests: two Linears, a LayerNorm, a buffer."""

    def __init__(self, d: int = 4, bias: bool = True):
        super().__init__()
        self.q_proj = torch.nn.Linear(d, d, bias=bias)
        self.out_proj = torch.nn.Linear(d, d, bias=bias)
        self.norm = torch.nn.LayerNorm(d)
        self.register_buffer("scale", torch.ones(()))
        self.num_heads = 2

    def forward(self, x, shift: float = 0.0):
        return self.out_proj(self.norm(self.q_proj(x))) * self.scale + shift


class _LyingBlock(_Block):
    """Its own surfaces lie: state_dict, load_state_dict, named_modules, parameters."""

    def state_dict(self, *args, **kwargs):
        return {"q_proj.weight": torch.zeros(4, 4)}

    def load_state_dict(self, *args, **kwargs):
        return torch.nn.modules.module._IncompatibleKeys([], [])

    def named_modules(self, *args, **kwargs):
        yield "", self

    def parameters(self, *args, **kwargs):
        return iter([])


def _module_session(tmp_path, **names):
    namespace = dict(names)
    return Session(_kernel(namespace), tmp_path), namespace


def test_a_module_is_built_loaded_run_and_probed_by_command(tmp_path):
    from autograder.remote import RemoteModule

    session, namespace = _module_session(tmp_path, Block=_Block)
    x = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(1))

    def test():
        Block = session.resolve("Block")
        block = Block.call((4,), {}, seed=5)
        assert isinstance(block, RemoteModule) and isinstance(block, torch.nn.Module)
        assert not isinstance(block, torch.nn.Linear) and type(block.q_proj).__name__ == \
            "RemoteModule" and isinstance(block.q_proj, torch.nn.Linear)
        facts = dict(block.describe_modules())
        assert facts["q_proj"]["in_features"] == 4 and facts["q_proj"]["bias"] is True
        assert facts["norm"]["normalized_shape"] == [4] and facts[""]["type"] == "_Block"
        assert block.num_heads == 2 and getattr(block, "missing", None) is None
        shapes = block.parameter_shapes()
        assert ("q_proj.weight", "float32", (4, 4)) in shapes and len(shapes) == 6
        state = {n: torch.full_like(t, 0.5) for n, t in block.state_dict().items()
                 if n != "scale"}
        keys = block.load_state_dict(state, strict=False)
        assert keys.missing_keys == ["scale"] and keys.unexpected_keys == []
        with pytest.raises(RuntimeError, match="Unexpected key"):
            block.load_state_dict({**state, "nope": torch.zeros(1)})
        mine = _Block(4)
        mine.load_state_dict({**state, "scale": torch.ones(())})
        assert torch.allclose(block(x), mine(x)) and torch.allclose(block(x, shift=1.0),
                                                                    mine(x) + 1)
        assert block.eval() is block and block.training is False
        return block

    block = session.serving(test)
    kernel_block = next(v for v in __import__("autograder.kernel_client", fromlist=["H"])
                        .HANDLES.values() if isinstance(v, _Block))
    assert kernel_block.training is False
    assert torch.equal(kernel_block.q_proj.weight, torch.full((4, 4), 0.5))
    assert block.kind == "_Block"


def test_a_held_tensor_changes_in_the_kernel_only_by_command(tmp_path):
    session, namespace = _module_session(tmp_path, block=_Block(4))

    def test():
        block = session.resolve("block")
        weight = block.out_proj.weight
        assert torch.equal(weight, namespace["block"].out_proj.weight.detach())
        with pytest.raises(RuntimeError, match="leaf Variable"):  # as torch: autograd on
            weight.zero_()
        with torch.no_grad():  # the checker's no_grad reaches the kernel
            weight.zero_()
            block.out_proj.bias.fill_(2.0)
        doubled = weight + 1  # a plain tensor of the copy, not sent anywhere
        assert type(doubled) is torch.Tensor and torch.equal(doubled, torch.ones(4, 4))
        return block(torch.randn(1, 2, 4))

    out = session.serving(test)
    assert torch.equal(namespace["block"].out_proj.weight, torch.zeros(4, 4))
    assert torch.equal(out, torch.full((1, 2, 4), 2.0))


def test_a_submodules_input_is_captured_and_given_to_the_checkers_hook(tmp_path):
    session, _ = _module_session(tmp_path, block=_Block(4))
    x = torch.randn(1, 3, 4)

    def test():
        block = session.resolve("block")
        seen = []
        hook = block.norm.register_forward_pre_hook(
            lambda module, args, kwargs: seen.append((args[0], kwargs)), with_kwargs=True)
        block(x)
        hook.remove()
        block(x)
        return seen

    seen = session.serving(test)
    assert len(seen) == 1 and seen[0][1] == {} and seen[0][0].shape == (1, 3, 4)


def test_a_module_whose_own_surfaces_lie_is_read_through_torchs_base_class(tmp_path):
    session, namespace = _module_session(tmp_path, block=_LyingBlock(4))

    def test():
        block = session.resolve("block")
        names = [n for n, _ in block.describe_modules()]
        keys = block.load_state_dict({"q_proj.weight": torch.ones(4, 4)}, strict=False)
        return names, keys, block.state_dict(), block.parameter_shapes()

    names, keys, state, shapes = session.serving(test)
    assert names == ["", "q_proj", "out_proj", "norm"]
    assert "q_proj.bias" in keys.missing_keys and torch.equal(
        namespace["block"].q_proj.weight, torch.ones(4, 4))
    assert set(state) == {"q_proj.weight", "q_proj.bias", "out_proj.weight", "out_proj.bias",
                          "norm.weight", "norm.bias", "scale"} and len(shapes) == 6


def test_a_learners_module_passed_to_a_learners_function_is_the_kernels_object(tmp_path):
    session, namespace = _module_session(
        tmp_path, block=_Block(4), twice=lambda module, x: (module(x) * 2, module.num_heads))

    def test():
        block, twice = session.resolve("block"), session.resolve("twice")
        x = torch.ones(1, 2, 4)
        return block(x), twice(block, x)

    once, (doubled, heads) = session.serving(test)
    assert torch.allclose(doubled, 2 * once) and heads == 2


def test_a_malformed_tensor_in_a_kernels_reply_breaks_the_protocol(tmp_path):
    import autograder.kernel_client as kc

    def replies_a_bad_tensor(code):
        real = kc.serve

        def bad(namespace, folder, rid):
            np.save(tmp_path / f"{rid}.out-0.npy", np.zeros(3))  # float64 data
            (tmp_path / f"{rid}.reply.json").write_text(json.dumps({"id": rid, "value": {
                "t": "tensor", "file": f"{rid}.out-0.npy", "dtype": "float16",
                "device": "cpu"}}))
        kc.serve = bad
        try:
            exec(code, {})
        finally:
            kc.serve = real

    session = Session(replies_a_bad_tensor, tmp_path)
    with pytest.raises(ProtocolError, match="float16 tensor whose array is float64"):
        session.serving(lambda: session.resolve("x"))
