"""The semantic half's storage: an append-only file of float32 unit vectors, and exact top-k.

One row per chunk of a record; which row belongs to which record (and whether it is still
current) lives in the index's catalog. Rows are only ever appended; a row whose record changed
is left dead until the next compaction. The file is memory-mapped, so opening it costs nothing
and several processes share the same pages.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Matrix", "VectorFile", "normalise", "top_rows"]

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
        tmp = self.path.with_suffix(".tmp")
        tmp.write_bytes(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
        os.replace(tmp, self.path)


def top_rows(
    matrix: Matrix, query: Matrix, k: int, subset: Sequence[int] | None = None
) -> list[tuple[int, float]]:
    """The k rows with the highest cosine to `query` (unit vectors), best first; ties by row."""
    if k <= 0 or matrix.shape[0] == 0:
        return []
    q = query.reshape(-1).astype(np.float32, copy=False)
    if subset is not None:
        index = np.asarray(subset, dtype=np.int64)
        if index.size == 0:
            return []
        scores = matrix[index] @ q
    else:
        index = None
        scores = matrix @ q
    k = min(k, scores.shape[0])
    if k < scores.shape[0]:
        picked = np.argpartition(-scores, k - 1)[:k]
    else:
        picked = np.arange(scores.shape[0])
    rows = picked if index is None else index[picked]
    pairs = [(int(r), float(s)) for r, s in zip(rows, scores[picked], strict=True)]
    pairs.sort(key=lambda pair: (-pair[1], pair[0]))
    return pairs
