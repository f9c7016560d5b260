"""The semantic half's storage: an append-only file of float32 unit vectors, and exact top-k.

One row per chunk of a record; which row belongs to which record (and whether it is still
current) lives in the index's catalog. Rows are only ever appended; a row whose record changed
is left dead until the next compaction. The file is memory-mapped, so opening it costs nothing
and several processes share the same pages.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gitmem.atomic import replace_file
from gitmem.index.blas import BLOCK_ROWS
from gitmem.index.blasthread import one_blas_thread as _one_blas_thread

__all__ = [
    "GraphRanking",
    "Matrix",
    "Ranking",
    "RowArrays",
    "VectorFile",
    "help_products",
    "normalise",
    "query_row",
    "top_rows",
]

Matrix = np.ndarray[Any, np.dtype[np.float32]]
_ITEM = 4  # bytes of a float32


def normalise(vectors: Any) -> Matrix:
    """Rows scaled to unit length (zero rows stay zero), as contiguous float32."""
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: Matrix = (matrix / norms).astype(np.float32, copy=False)
    return result


def query_row(vector: Any) -> Matrix:
    """A query's vector (gitmem.index.embedding's encode_query: an array of float32, unit length)
    as the row a Ranking takes, without a copy and without rounding it again."""
    return np.frombuffer(vector, dtype=np.float32)


class VectorFile:
    def __init__(self, path: Path, dim: int) -> None:
        self.path = path
        self.dim = dim

    def rows(self) -> int:
        try:
            return self.path.stat().st_size // (self.dim * _ITEM)
        except FileNotFoundError:
            return 0

    def truncate(self, rows: int) -> None:
        """Drop rows past `rows` (left by an update that died before its catalog commit)."""
        if self.rows() > rows:
            with self.path.open("r+b") as handle:
                handle.truncate(rows * self.dim * _ITEM)

    def append(self, vectors: Matrix) -> int:
        """Append rows; returns the number of the first one."""
        if vectors.shape[1] != self.dim:
            raise ValueError(f"vectors have {vectors.shape[1]} dimensions, the file {self.dim}")
        first = self.rows()
        with self.path.open("ab") as handle:
            handle.write(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
        return first

    def matrix(self, rows: int) -> Matrix:
        """The first `rows` rows, memory-mapped read-only."""
        if rows == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        mapped: Matrix = np.memmap(self.path, dtype=np.float32, mode="r", shape=(rows, self.dim))
        return mapped

    def replace(self, vectors: Matrix) -> None:
        """Write a whole new file (compaction) and swap it in atomically."""
        replace_file(self.path, np.ascontiguousarray(vectors, dtype=np.float32).tobytes())


def top_rows(
    matrix: Matrix, query: Matrix, k: int, subset: Sequence[int] | None = None
) -> list[tuple[int, float]]:
    """The k rows with the highest cosine to `query` (unit vectors), and any more that tie
    with the k-th; best first, ties by row (see Ranking.top)."""
    return Ranking(matrix, query, subset).top(k) if k > 0 else []


class RowArrays:
    """The catalog's row facts (gitmem.index.rowfacts.RowFacts: packed arrays of what each vector
    row is) read as numpy arrays without a copy, for the first `rows` rows, and `ids_of` their
    record ids; None from `of` when the facts do not cover them (then the caller asks the
    catalog row by row)."""

    def __init__(
        self, parts: Mapping[str, Any], rows: int, ids_of: Callable[[list[int]], list[str]]
    ) -> None:
        self.ids_of = ids_of
        self.key = np.frombuffer(parts["key"], dtype=np.int64)[:rows]
        self.updated = np.frombuffer(parts["updated"], dtype=np.int64)[:rows]
        self.weight = np.frombuffer(parts["weight"], dtype=np.float64)[:rows]
        superseded = np.frombuffer(parts["superseded"], dtype=np.int8)[:rows]
        self.dead = self.key < 0  # rows to leave out of every ranking ...
        self.hidden = self.dead | (superseded != 0)  # ... and of one without superseded records

    def take(self, part: str, rows: list[int]) -> list[Any]:
        """The `part` ("key", "updated" or "weight") of each of `rows`, as Python numbers."""
        values: list[Any] = getattr(self, part)[rows].tolist()
        return values

    @classmethod
    def of(
        cls, parts: Mapping[str, Any], rows: int, ids_of: Callable[[list[int]], list[str]]
    ) -> RowArrays | None:
        sizes = {len(part) for part in parts.values()}
        if len(sizes) != 1 or sizes.pop() < rows:
            return None
        return cls(parts, rows, ids_of)


class Ranking:
    """Every row's cosine to `query` (only the rows of `subset` when given, never those `hide`
    marks), computed once; `top(k)` as often as a caller widens its k. A query without a vector
    (none of its words known to the model) is like no row: it ranks none, rather than all of
    them tied at 0."""

    def __init__(
        self,
        matrix: Matrix,
        query: Matrix,
        subset: Sequence[int] | None = None,
        hide: Any = None,
    ) -> None:
        self._index: Any = None
        self._scores: Matrix = np.zeros(0, dtype=np.float32)
        self._shown = 0  # rows that may rank
        q = query.reshape(-1).astype(np.float32, copy=False)
        if matrix.shape[0] == 0 or not q.any():
            return
        if subset is not None:
            self._index = np.asarray(subset, dtype=np.int64)
            if self._index.size:
                rows_of = matrix[self._index]  # the gather reads the mapping: outside the lock
                with _one_blas_thread():
                    self._scores = rows_of @ q
        else:
            self._scores = _Product(matrix, q).run()
        self._shown = self._scores.shape[0]
        if hide is not None and self._index is None:
            self._scores[hide] = -np.inf  # below any cosine: past every row that may rank
            self._shown -= int(np.count_nonzero(hide))

    def top(self, k: int) -> list[tuple[int, float]]:
        """The k best rows and every row that ties with the k-th, best first, ties by row.
        Rows that tie are copies of one text; which of them a cut kept would depend on where
        they lie in the file, and a rebuild lays rows out otherwise than a catch-up, so the
        two would answer differently (the caller settles ties by record id)."""
        scores = self._scores
        size = scores.shape[0]
        k = min(k, self._shown)
        if k <= 0:
            return []
        if k < size:
            picked = _at_least_kth(scores, k)
            if picked.size < k:  # NaN in a damaged vector file: compares false
                picked = np.argpartition(-scores, k - 1)[:k]
        else:
            picked = np.arange(size)
        rows = picked if self._index is None else self._index[picked]
        best = scores[picked]
        order = np.lexsort((rows, -best))  # by score, best first, then by row
        # tolist: Python numbers in one call (a float32 becomes the float it is exactly).
        return list(zip(rows[order].tolist(), best[order].tolist(), strict=True))


class GraphRanking:
    """Ranking's `top` for an index past gitmem.index.ann's threshold: the rows its graph
    proposes, and every row appended since the graph was saved, scored exactly (their cosines
    are the vector file's, as Ranking's), never those `hide` marks. Approximate in which rows
    it finds (recall@10 against exact: docs/benchmarks.md, "A million records"), not in their
    scores. `hide` is a boolean array over the rows, or what asks the catalog about the rows
    it is indexed with (gitmem.index.semantic): that is asked only about the best rows, in
    score order, until `k` are shown (the rows appended since the graph, up to LAZY_ROWS and
    more while the builder runs, cost ~10 us each to ask about)."""

    def __init__(self, matrix: Matrix, query: Matrix, graph: Any, hide: Any) -> None:
        self._matrix, self._graph, self._hide = matrix, graph, hide
        self._q = query.reshape(-1).astype(np.float32, copy=False)
        self._covered = min(graph.covered, matrix.shape[0])
        self._tail = np.arange(self._covered, matrix.shape[0], dtype=np.int64)

    def top(self, k: int) -> list[tuple[int, float]]:
        if k <= 0 or not self._q.any():
            return []
        ask = max(2 * k, k + 64)
        while True:
            found: Any = self._graph.search(self._q, ask)  # None: the graph failed (ann.Graph)
            exact = found is None or found.size < min(ask, self._graph.size)
            if exact:  # rows the graph cannot reach from its entry: rank every row
                rows = np.arange(self._matrix.shape[0], dtype=np.int64)
            else:
                found = found.astype(np.int64)
                found = found[found < self._covered]  # a newer graph than this mapping
                rows = _distinct(np.concatenate([found, self._tail]))
            if isinstance(self._hide, np.ndarray):
                rows = rows[~self._hide[rows]]
            # Row by row, not BLAS: a BLAS product may round a row by where it lies among the
            # others, and the rows gathered here differ between a catch-up and a rebuild.
            scores = np.einsum("ij,j->i", self._matrix[rows], self._q)
            order = np.lexsort((rows, -scores))
            rows, scores = rows[order], scores[order]
            if self._hide is not None and not isinstance(self._hide, np.ndarray):
                shown = _shown_in_order(self._hide, rows, scores, k)
                rows, scores = rows[shown], scores[shown]
            if exact or rows.size >= k or ask >= self._graph.size:
                break
            ask *= 4  # the filter hid most of what the graph found
        if rows.size > k:  # the k best and any that tie with the k-th
            keep = scores >= scores[k - 1]
            rows, scores = rows[keep], scores[keep]
        return list(zip(rows.tolist(), scores.tolist(), strict=True))


def _shown_in_order(
    hide: Any, rows: np.ndarray[Any, Any], scores: Matrix, k: int
) -> np.ndarray[Any, Any]:
    """Positions of the rows `hide` does not mark among `rows` (best first, `scores` theirs),
    `hide` asked in batches down the order until k are shown and the next row scores below
    the k-th shown: the rows below it need no asking (a tie with the k-th is asked about)."""
    shown: list[np.ndarray[Any, Any]] = []
    count, start, batch = 0, 0, max(2 * k, 32)
    while start < rows.size:
        end = min(rows.size, start + batch)
        hidden = np.asarray(hide[rows[start:end]], dtype=bool)
        visible = start + np.flatnonzero(~hidden)
        shown.append(visible)
        count += visible.size
        start, batch = end, batch * 2
        if count >= k and start < rows.size:
            kth = scores[np.concatenate(shown)[k - 1]]
            if scores[start] < kth:
                break
    return np.concatenate(shown) if shown else np.empty(0, dtype=np.int64)


def _distinct(rows: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """np.unique's answer (sorted, each once) without its import of numpy.ma (~30 ms of a
    `gitmem recall` process)."""
    rows = np.sort(rows)
    keep = np.ones(rows.size, dtype=bool)
    keep[1:] = rows[1:] != rows[:-1]
    return rows[keep]


_SAMPLE_STEP = 16


def _at_least_kth(scores: Matrix, k: int) -> np.ndarray[Any, Any]:
    """The rows (ascending) whose score is at least the k-th highest (0 < k < rows). At
    least k rows score as high as the k-th highest of every 16th row, so the k-th highest of
    all is among those few (~16 k) rows: one selection over them and one over the sample
    instead of one over every row (0.4 vs 0.9 ms at 100k rows, measured). With NaN (a
    damaged vector file) it may return the rows tied with the k-th highest other score, more
    than k, or fewer than k (then Ranking.top takes k rows by argpartition)."""
    size = scores.shape[0]
    if size >= 4 * _SAMPLE_STEP * k:
        sample = scores[::_SAMPLE_STEP]
        floor = np.partition(sample, sample.shape[0] - k)[sample.shape[0] - k]
        rows = np.flatnonzero(scores >= floor)
        if rows.size >= k:  # else NaN: the full selection below sorts it out
            near = scores[rows]
            kept: np.ndarray[Any, Any] = rows[
                near >= np.partition(near, near.size - k)[near.size - k]
            ]
            return kept
    kth = np.partition(scores, size - k)[size - k]
    return np.flatnonzero(scores >= kth)


# --- the product over every row, in blocks another thread may share ---------------------------
# At 100k records the product reads 100 MB and is the longest step of a recall; the keyword
# half, beside it on the other core, is done well before it. The product is cut into blocks
# of fixed rows, so whichever thread computes a block its rows score the same (BLAS may round a
# row differently in a block cut elsewhere); the thread that starts a product works through
# them in order, and the keyword half's thread, once done, takes blocks too (help_products).
# BLOCK_ROWS is gitmem.index.blas's, so that gitmem.index.literank cuts the same blocks.
# Each block runs on one BLAS thread (gitmem.index.blasthread says why).
_RUNNING: set[_Product] = set()
_RUNNING_LOCK = threading.Lock()


class _Product:
    def __init__(self, matrix: Matrix, q: Matrix) -> None:
        self.matrix, self.q = matrix, q
        self.owner = threading.get_ident()  # whose helpers may take blocks (help_products)
        self.scores: Matrix = np.empty(matrix.shape[0], dtype=np.float32)
        self._blocks = -(-matrix.shape[0] // BLOCK_ROWS)
        self._next = 0
        self._left = self._blocks
        self._retry: list[int] = []  # blocks a helper took and failed to finish
        self._cond = threading.Condition(threading.Lock())

    def run(self) -> Matrix:
        """Every row's score; other threads may help until it returns."""
        try:
            if self._blocks > 1:
                with _RUNNING_LOCK:
                    _RUNNING.add(self)
            with _one_blas_thread():
                self.work(owner=True)
        finally:
            with _RUNNING_LOCK:
                _RUNNING.discard(self)
            with self._cond:  # left early (an error, an interrupt): a helper has no one to help
                self._next, self._retry = self._blocks, []
        return self.scores

    def work(self, *, owner: bool) -> None:
        """Compute blocks until none is left to take; the owner also waits for the blocks
        helpers are still computing (and computes any a helper gave back)."""
        while True:
            with self._cond:
                if self._retry:
                    block = self._retry.pop()
                elif self._next < self._blocks:
                    block, self._next = self._next, self._next + 1
                elif owner and self._left:
                    self._cond.wait()
                    continue
                else:
                    return
            try:
                start = block * BLOCK_ROWS
                stop = min(start + BLOCK_ROWS, self.scores.shape[0])
                np.matmul(self.matrix[start:stop], self.q, out=self.scores[start:stop])
            except BaseException:
                with self._cond:
                    self._retry.append(block)
                    self._cond.notify_all()
                raise
            with self._cond:
                self._left -= 1
                if not self._left:
                    self._cond.notify_all()


def help_products(owner: int) -> None:
    """Take a share of the products the thread `owner` (a threading.get_ident()) is running
    (see _Product); a failure here gives the block back to the product's own thread. Only one
    thread's: helping another's would make the helper's caller wait for that product too."""
    with _RUNNING_LOCK:
        running = [product for product in _RUNNING if product.owner == owner]
    if not running:
        return
    with _one_blas_thread():
        for product in running:
            product.work(owner=False)


def _fresh_lock() -> None:
    """A child forked while another thread held the lock would wait on it forever, and the
    products running in the parent's other threads are not running in the child (gitmem.index.blas
    gives the child a fresh thread lock and puts the count back itself)."""
    global _RUNNING_LOCK
    _RUNNING_LOCK = threading.Lock()
    _RUNNING.clear()


os.register_at_fork(after_in_child=_fresh_lock)
