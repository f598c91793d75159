"""The exchange folder of the grading boundary (:mod:`autograder.wire`): files created and
opened through the folder's descriptor (no link laid in the folder reroutes a write or a
read), the sockets' paths, and the ``.npy`` files of one message, each checked (header,
dtype, size) before its data is read. Stdlib only at import (NumPy when an array is read or
written): the learner's kernel, the checker and the website's in-page checker import it."""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path
from typing import Any, Callable

# Limits on the arrays the checker reads from the kernel: far above any honest result of the
# exercises (ex06's largest output is 4096 x 64 float64, 2 MiB), far below the grader's RAM.
MAX_ARRAY_BYTES = 64 * 2**20
MAX_TOTAL_ARRAY_BYTES = 256 * 2**20
ARRAY_KINDS = "biufc"  # bool, int, uint, float, complex: no object, string or void dtypes


class WireError(ValueError):
    """A message that is not plain data within the limits (what is wrong, and where)."""


class Folder:
    """An exchange folder, held by a directory descriptor: every file is created, opened
    and removed relative to it, never through a path or a link. Whoever else can write
    the folder (the learner's kernel) cannot make a write land anywhere else, replace the
    folder by a link, or have a file read through a link."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    @staticmethod
    def _plain(name: str) -> str:
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            raise WireError("a file name that is not plain")
        return name

    def create(self, name: str):
        """A new file ``name`` for writing (it must not exist, not even as a link)."""
        fd = os.open(self._plain(name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                     0o644, dir_fd=self.fd)
        return os.fdopen(fd, "wb")

    def open(self, name: str):
        """File ``name`` for reading: a regular file, not through a link (WireError)."""
        try:
            fd = os.open(self._plain(name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK,
                         dir_fd=self.fd)
        except OSError as exc:  # missing, or a link (not followed)
            raise WireError(f"{name} cannot be opened: {exc.strerror}") from None
        f = os.fdopen(fd, "rb")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            f.close()
            raise WireError(f"{name} is not a regular file")
        return f

    def clear(self, keep: frozenset[str] | set[str] = frozenset()) -> None:
        """Remove every entry but those named in ``keep`` (links themselves, not what they
        point to)."""
        for name in os.listdir(self.fd):
            if name in keep:
                continue
            try:
                os.unlink(name, dir_fd=self.fd)
            except OSError:  # a folder someone made here: left, never followed
                pass


def socket_path(folder_fd: int, folder: str, name: str) -> str:
    """The path of socket ``name`` in the exchange folder: through the folder's descriptor
    where ``/proc`` has it (short, and no link laid in its place is followed)."""
    via_fd = f"/proc/self/fd/{folder_fd}/{name}"
    return via_fd if os.path.isdir(f"/proc/self/fd/{folder_fd}") else os.path.join(folder, name)


def as_folder(folder) -> Folder:
    """``folder`` as a :class:`Folder` (a path is opened)."""
    return folder if isinstance(folder, Folder) else Folder(folder)


class Arrays:
    """The ``.npy`` files of one message, in ``folder``, named ``{prefix}-{n}.npy``."""

    def __init__(self, folder: Folder | Path | str, prefix: str):
        self.folder, self.prefix, self.count, self.total = as_folder(folder), prefix, 0, 0
        # One object in a message crosses once and comes back as one object: the same
        # tensor given as query, key and value is one tensor on the other side (``key is
        # query`` holds there as here). id -> (object, node) written; key -> value read.
        self.written: dict[int, tuple[Any, dict]] = {}
        self.decoded: dict[tuple, Any] = {}

    def once(self, value, make: Callable[[], dict]) -> dict:
        """The node of ``value`` made by ``make()``, or the one already made for it."""
        hit = self.written.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        node = make()
        self.written[id(value)] = (value, node)
        return node

    def read_once(self, key: tuple, make: Callable[[], Any]):
        """What ``make()`` decodes for ``key`` (a file and how it is read), once per
        message."""
        if key not in self.decoded:
            self.decoded[key] = make()
        return self.decoded[key]

    def write(self, array) -> str:
        import numpy as np

        name = f"{self.prefix}-{self.count}.npy"
        self.count += 1
        with self.folder.create(name) as f:
            plain = np.asarray(array)
            if not plain.flags.c_contiguous:
                plain = plain.copy(order="C")
            np.lib.format.write_array(f, plain, allow_pickle=False)
        return name

    def read(self, name: Any):
        """The array in file ``name`` of this message, checked before its data is read."""
        import numpy as np

        if not isinstance(name, str) or not re.fullmatch(
                re.escape(self.prefix) + r"-\d{1,9}\.npy", name):
            raise WireError("an array file name that is not this message's")
        with self.folder.open(name) as f:
            info = os.fstat(f.fileno())
            if info.st_size > MAX_ARRAY_BYTES + 4096:
                raise WireError(f"{name} holds {info.st_size} bytes, more than the "
                                f"{MAX_ARRAY_BYTES} an array may")
            try:
                version = np.lib.format.read_magic(f)
                read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                               (2, 0): np.lib.format.read_array_header_2_0}.get(version)
                if read_header is None:
                    raise ValueError(f"version {version}")
                shape, fortran, dtype = read_header(f, max_header_size=10000)
            except (ValueError, SyntaxError, TypeError):
                raise WireError(f"{name} has no valid .npy header") from None
            if dtype.kind not in ARRAY_KINDS or dtype.hasobject or dtype.fields:
                raise WireError(f"{name} has dtype {dtype.str}, which is not plain numbers")
            nbytes = math.prod(shape) * dtype.itemsize
            if nbytes > MAX_ARRAY_BYTES or self.total + nbytes > MAX_TOTAL_ARRAY_BYTES:
                raise WireError(f"{name}: an array of shape {shape} is larger than allowed")
            self.total += nbytes
            data = f.read(nbytes + 1)
            if len(data) != nbytes:
                raise WireError(f"{name}: {len(data)} bytes of data for shape {shape} of "
                                f"{dtype.str} ({nbytes} expected)")
        array = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
        return array.copy()
