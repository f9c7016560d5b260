"""The semantic half's ranking of every vector row, without numpy: gitmem.index.vectors.Ranking's
answers to the last bit, through ctypes calls into numpy's own OpenBLAS (gitmem.index.blas).

Importing numpy is ~110-200 ms of a `gitmem recall` process, a third of its budget, for one
product and a top-k. The product is the same sgemv calls over the same blocks as numpy's, so
the scores are the same floats. The top k comes from a copy of the scores shifted to
fl(score + 2): a cosine lies in [-1, 1], so a row that may rank is above 0 there and a hidden
one is set to 0; rounding is monotone, so a row below the k-th shifted value is below the k-th
score too, and the rows at or above it hold the k best and every row tying with them, to be
sorted by their exact scores. Rows at or above a threshold are found with one saxpy (the
shifted values minus the threshold) and the sign bytes of the result: no loop over the rows.
"""

from __future__ import annotations

import ctypes
import itertools
import math
import mmap
import sys
from array import array
from collections.abc import Sequence
from pathlib import Path

from gitmem.index import blas

__all__ = ["LiteRanking", "Unranked", "available", "hidden_rows"]

_ITEM = 4  # bytes of a float32
_STEP = 32  # the sample of shifted values that sets a threshold: one row in this many
_TINY = 2.0**-126  # the least positive normal float32: above 0, and kept in any FPU mode


class Unranked(Exception):
    """What LiteRanking cannot answer as Ranking would: no OpenBLAS to call, a vector file
    that cannot be mapped as asked (gone, shorter), or a score Ranking orders otherwise than
    a cosine (NaN, or below -2: a damaged file). The caller ranks with gitmem.index.vectors."""


def available() -> bool:
    """Whether numpy's OpenBLAS can be called (loading it once, ~12 ms, if not yet)."""
    return blas.openblas() is not None


class LiteRanking:
    """`vectors.Ranking(matrix, query, None, hide)` over the first `rows` rows of the vector
    file at `path`, without numpy: every row's score computed once, `top(k)` as often as a
    caller widens its k (one thread at a time). `query` is unit length, or all zeros: then
    it ranks no row. `hide` holds distinct rows below `rows` that never rank (hidden_rows).
    Raises Unranked where Ranking's answer cannot be matched."""

    def __init__(
        self, path: Path, rows: int, dim: int, query: array[float], hide: Sequence[int] = ()
    ) -> None:
        if query.typecode != "f" or len(query) != dim:
            raise ValueError(f"the query must be {dim} float32s, not {len(query)} {query.typecode}")
        lib = blas.openblas()
        if lib is None:
            raise Unranked("no OpenBLAS of numpy's to call")
        self._lib = lib
        self._scores = array("f")
        self._shown = 0  # rows that may rank
        if rows <= 0 or not any(query):
            return
        self._shifted = array("f", [2.0]) * rows
        self._base = self._shifted.buffer_info()[0]
        with blas.THREAD_LIMIT.one(lib.controls()):  # one thread (gitmem.index.blas), as numpy's
            self._scores = _product(lib, path, rows, dim, query)
            lib.saxpy(rows, 1.0, self._scores.buffer_info()[0], self._base)
            for row in hide:
                self._shifted[row] = 0.0  # below every row that may rank
            if math.isnan(lib.sasum(rows, self._base)):  # a NaN hidden is no matter
                raise Unranked("a NaN score: the vector file is damaged")
        self._shown = rows - len(hide)
        self._sample: list[float] = []  # every _STEP-th shifted value, best first

    def top(self, k: int) -> list[tuple[int, float]]:
        """The k best rows and every row that ties with the k-th, best first, ties by row,
        with their scores: what Ranking.top returns."""
        k = min(k, self._shown)
        if k <= 0:
            return []
        shifted, scores = self._shifted, self._scores
        found = self._at_least(k)
        kth = sorted((shifted[row] for row in found), reverse=True)[k - 1]
        found = [row for row in found if shifted[row] >= kth]
        pairs = sorted(((row, scores[row]) for row in found), key=_best_first)
        cut = pairs[k - 1][1]
        return [pair for pair in pairs if pair[1] >= cut]

    def _at_least(self, k: int) -> list[int]:
        """At least k rows, among them every row whose shifted value is at or above the k-th
        largest: those at or above a threshold read off a sample of the shifted values,
        lowered until enough are."""
        if not self._sample:
            self._sample = sorted(self._shifted[::_STEP], reverse=True)
        at = k // _STEP + 8
        while True:
            threshold = self._sample[at] if at < len(self._sample) else 0.0
            found = self._from(max(threshold, _TINY))  # never a hidden row's 0
            if len(found) >= k:
                return found
            if threshold <= 0:  # a visible row is not above 0: its score is below -2
                raise Unranked("a score below -2: the vector file is damaged")
            at *= 2

    def _from(self, threshold: float) -> list[int]:
        """The rows whose shifted value is at or above `threshold`: the sign of fl(value -
        threshold) is exact (a difference of floats rounds to 0 only when they are equal)."""
        rows = len(self._shifted)
        difference = array("f", [-threshold]) * rows
        with blas.THREAD_LIMIT.one(self._lib.controls()):
            self._lib.saxpy(rows, 1.0, self._base, difference.buffer_info()[0])
        signs = difference.tobytes()[_FLOAT_SIGN::_ITEM]  # a strided memoryview copies slowly
        return _ones(signs.translate(_POSITIVE))


def _best_first(pair: tuple[int, float]) -> tuple[float, int]:
    return (-pair[1], pair[0])


def _product(
    lib: blas.OpenBlas, path: Path, rows: int, dim: int, query: array[float]
) -> array[float]:
    """Every row's score, in vectors' blocks (BLOCK_ROWS), as numpy's."""
    scores = array("f", bytes(rows * _ITEM))
    try:
        with path.open("rb") as handle:
            mapped = mmap.mmap(handle.fileno(), rows * dim * _ITEM, access=mmap.ACCESS_COPY)
    except (OSError, ValueError) as error:  # gone, or shorter than `rows` (replaced meanwhile)
        raise Unranked(f"cannot map {rows} rows of {path}: {error}") from error
    try:
        # A private mapping, so ctypes may take its address; the pages stay the file's.
        base = ctypes.addressof(ctypes.c_char.from_buffer(mapped))
        out, q = scores.buffer_info()[0], query.buffer_info()[0]
        step = blas.BLOCK_ROWS
        for start in range(0, rows, step):
            count = min(step, rows - start)
            lib.sgemv(count, dim, base + start * dim * _ITEM, q, out + start * _ITEM)
    finally:
        mapped.close()
    return scores


# --- positions from bytes: a pass in C, not a loop over every row --------------------------
_SIGN = 7 if sys.byteorder == "little" else 0  # the byte of an int64 that holds its sign
_FLOAT_SIGN = 3 if sys.byteorder == "little" else 0  # and of a float32
_NEGATIVE = bytes(int(byte >= 0x80) for byte in range(256))  # 1 for a sign byte of a value < 0
_POSITIVE = bytes(int(byte < 0x80) for byte in range(256))  # 1 for one of a value >= 0
_NONZERO = bytes(int(byte != 0) for byte in range(256))


def _ones(flags: bytes) -> list[int]:
    """The positions of the 1s in `flags` (of 0s and 1s), ascending."""
    if flags.count(1) * 16 > len(flags):  # many: one pass in C beats a find for each
        return list(itertools.compress(range(len(flags)), flags))
    found, at = [], flags.find(1)
    while at >= 0:
        found.append(at)
        at = flags.find(1, at + 1)
    return found


def hidden_rows(
    key: array[int], superseded: array[int], rows: int, include_superseded: bool
) -> list[int]:
    """The rows of the first `rows` to hide, ascending, from the catalog's row facts
    (gitmem.index.rowfacts.RowFacts: `key` int64, -1 for a dead row; `superseded` int8, 1 for a
    superseded record's): dead rows always, superseded ones unless they are included. As
    vectors.RowArrays' `dead` and `hidden` masks, found by passes in C over the bytes: <1 ms
    at 100k rows with few to hide."""
    if key.itemsize != 8 or superseded.itemsize != 1:
        raise ValueError(f"row facts of {key.typecode} and {superseded.typecode}, not q and b")
    if len(key) < rows or len(superseded) < rows:
        raise ValueError(f"the row facts cover {min(len(key), len(superseded))} rows, not {rows}")
    dead = bytes(memoryview(key).cast("B")[: rows * 8])[_SIGN::8].translate(_NEGATIVE)
    if include_superseded:
        return _ones(dead)
    gone = bytes(memoryview(superseded).cast("B")[:rows]).translate(_NONZERO)
    if (dead.count(1) + gone.count(1)) * 64 < rows:  # few: a union of two short lists
        return sorted({*_ones(dead), *_ones(gone)})
    either = int.from_bytes(dead, "little") | int.from_bytes(gone, "little")
    return _ones(either.to_bytes(rows, "little"))
