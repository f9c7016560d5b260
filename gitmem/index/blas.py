"""numpy's own OpenBLAS, called through ctypes without importing numpy.

A `gitmem recall` process would spend ~110-200 ms importing numpy for one heavy step: the
product of the query with every vector row. numpy's wheels ship their OpenBLAS as a plain
shared library (numpy.libs on Linux and Windows, numpy/.dylibs on macOS), which ctypes loads
in ~12 ms; its sgemv over the same blocks is the very call numpy's float32 `matrix @ q` makes,
so the scores are the same to the last bit (gitmem.index.literank). Here too is the one count of
OpenBLAS threads that both numpy's products (gitmem.index.vectors) and those made here go through.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["BLOCK_ROWS", "THREAD_LIMIT", "Controls", "OpenBlas", "ThreadLimit", "openblas"]

# The rows of one block of a product over every row (gitmem.index.vectors._Product, and
# gitmem.index.literank): BLAS may round a row differently in a block cut elsewhere, so both
# cut here.
BLOCK_ROWS = 4096

Controls = tuple[Callable[[], int], Callable[[int], None]]  # get and set the thread count
_ROW_MAJOR, _NO_TRANS = 101, 111  # CBLAS's CblasRowMajor and CblasNoTrans


class OpenBlas:
    """The few calls gitmem makes; addresses are of float32 buffers the caller keeps alive."""

    def __init__(self, lib: Any, prefix: str, suffix: str) -> None:
        size = ctypes.c_int64 if suffix == "64_" else ctypes.c_int  # OpenBLAS's blasint
        ptr, real = ctypes.c_void_p, ctypes.c_float

        def bind(name: str, args: list[Any], result: Any) -> Any:
            function = getattr(lib, f"{prefix}{name}{suffix}")
            function.argtypes, function.restype = args, result
            return function

        self._sgemv = bind(
            "cblas_sgemv",
            [ctypes.c_int, ctypes.c_int, size, size, real, ptr, size, ptr, size, real, ptr, size],
            None,
        )
        self._sdot = bind("cblas_sdot", [size, ptr, size, ptr, size], real)
        self._isamax = bind("cblas_isamax", [size, ptr, size], ctypes.c_size_t)
        self._saxpy = bind("cblas_saxpy", [size, real, ptr, size, ptr, size], None)
        self._sasum = bind("cblas_sasum", [size, ptr, size], real)
        self._get = bind("openblas_get_num_threads", [], ctypes.c_int)
        self._set = bind("openblas_set_num_threads", [ctypes.c_int], None)

    def sgemv(self, rows: int, dim: int, matrix: int, query: int, out: int) -> None:
        """out[i] = row i · query, for `rows` row-major rows of `dim` floats: the call numpy's
        float32 2-D @ 1-D makes. A block of one row numpy computes as a dot product (its
        matmul's 1 x n case), which can round otherwise: so does this."""
        if rows == 1:
            ctypes.c_float.from_address(out).value = self._sdot(dim, matrix, 1, query, 1)
        elif rows > 1:
            self._sgemv(_ROW_MAJOR, _NO_TRANS, rows, dim, 1.0, matrix, dim, query, 1, 0.0, out, 1)

    def isamax(self, n: int, address: int) -> int:
        """The 0-based index of an element of largest absolute value (0 when n is 0)."""
        return int(self._isamax(n, address, 1))

    def saxpy(self, n: int, alpha: float, x: int, y: int) -> None:
        """y += alpha * x."""
        self._saxpy(n, alpha, x, 1, y, 1)

    def sasum(self, n: int, address: int) -> float:
        """The sum of the absolute values (NaN if any element is NaN)."""
        return float(self._sasum(n, address, 1))

    def get_threads(self) -> int:
        return int(self._get())

    def set_threads(self, n: int) -> None:
        self._set(n)

    def controls(self) -> Controls:
        return (self.get_threads, self.set_threads)


def openblas() -> OpenBlas | None:
    """numpy's bundled OpenBLAS, loaded once per process; None where there is none (numpy
    not installed, built against another BLAS) or it lacks a call gitmem makes."""
    if not _FOUND:
        with _LOAD_LOCK:
            if not _FOUND:
                _FOUND.append(_load())
    return _FOUND[0]


_FOUND: list[OpenBlas | None] = []
_LOAD_LOCK = threading.Lock()


def _load() -> OpenBlas | None:
    for path in _candidates():
        try:
            lib = ctypes.CDLL(str(path))  # once numpy is loaded: its handle
        except OSError:
            continue
        for prefix in ("scipy_", ""):
            for suffix in ("64_", ""):
                try:
                    return OpenBlas(lib, prefix, suffix)
                except AttributeError:  # a call under another name
                    continue
    return None


def _candidates() -> list[Path]:
    """The OpenBLAS files of numpy's wheel, found without importing numpy."""
    try:
        spec = importlib.util.find_spec("numpy")
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    found: list[Path] = []
    for location in spec.submodule_search_locations or []:
        package = Path(location).resolve()
        found += sorted((package.parent / "numpy.libs").glob("*openblas*"))
        found += sorted((package / ".dylibs").glob("*openblas*"))
    return found


# --- one OpenBLAS thread around gitmem's products ---------------------------------------------
# Why one thread: see gitmem.index.vectors. numpy's products and gitmem.index.literank's call
# the same library, so they share one count: each product that enters sets one thread; the
# count from before is put back only when the last product of the process leaves.


class ThreadLimit:
    """How many products are inside the limit, and the count to put back after the last."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.before = 0
        self._put: Callable[[int], None] | None = None  # the first product's, for a fork

    @contextmanager
    def one(self, controls: Controls | None) -> Iterator[None]:
        """One BLAS thread inside (controls None: a BLAS gitmem does not know, left alone)."""
        if controls is None:
            yield
            return
        get, put = controls
        entered = False
        try:
            with self.lock:
                if self.depth == 0:
                    self.before, self._put = get(), put
                self.depth += 1
                entered = True
                put(1)  # inside: an interrupt delivered as it returns still puts the count back
            yield
        finally:
            if entered:
                with self.lock:
                    self.depth -= 1
                    if self.depth == 0:
                        put(self.before)

    def after_fork(self) -> None:
        """A child forked while another thread held the lock would wait on it forever; and the
        products running in the parent's other threads are not running in the child, so
        nothing there would put the count back: the child does (a count no higher than the
        threads OpenBLAS has made takes none of its locks)."""
        self.lock = threading.Lock()
        if self.depth and self._put is not None:
            self._put(self.before)
        self.depth = 0


THREAD_LIMIT = ThreadLimit()


def _after_fork() -> None:
    global _LOAD_LOCK
    _LOAD_LOCK = threading.Lock()
    THREAD_LIMIT.after_fork()


os.register_at_fork(after_in_child=_after_fork)
