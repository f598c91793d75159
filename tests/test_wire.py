"""The plain-data boundary (autograder.wire) and the checker's reading of a kernel's reply:
what crosses comes back as it went, and every malformed or oversized message is refused
with a reason before its data is read (issue 23)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from autograder import wire
from autograder.checker import CheckStopped, ProtocolError, Session, _learner_exception, visible_part


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
    exc = _learner_exception({"type": "ValueError", "kinds": ["ValueError", "Exception"],
                              "message": "empty row"})
    assert isinstance(exc, ValueError) and str(exc) == "empty row"
    fake = _learner_exception({"type": "KeyboardInterrupt", "kinds": ["KeyboardInterrupt"],
                               "message": ""})
    assert isinstance(fake, Exception) and not isinstance(fake, KeyboardInterrupt)


def test_the_kernel_runs_a_test_without_its_hidden_part():
    source = '"""doc"""\nx = 1\n### BEGIN HIDDEN TESTS\nex01.check(x)\n### END HIDDEN TESTS\ny = 2'
    assert visible_part(source) == '"""doc"""\nx = 1\ny = 2'
