"""A query's vector read from a model folder with the standard library alone.

A recall needs one vector, its query's, and importing numpy costs a `gitmem recall` process
110-200 ms. So `query_encoder` computes that vector without numpy for the plain layouts it
reads exactly (a float32 or float16 matrix, neither weights nor a token mapping): the tokenizer
through gitmem.index.tokenizer, the matrix's rows unpacked from a memory map of
model.safetensors. Every embedder's `encode_query` (gitmem.index.embedding) computes it with
the same arithmetic (`unit_mean`), so the full CLI and gitmem.cli.quickrecall score bit for
bit alike.
"""

from __future__ import annotations

import json
import math
import mmap
import operator
import struct
import sys
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gitmem.index import tokenizer
from gitmem.index.modelfiles import (
    MAX_LENGTH,
    ModelInfo,
    ModelUnavailable,
    Tensor,
    find_layout,
    known_fingerprint,
    mapped,
)
from gitmem.index.tokenizer import Tokens

__all__ = ["QueryEncoder", "query_encoder", "unit_mean"]
# The matrix types `query_encoder` reads, and struct's codes for them. float16 is exact too:
# struct widens it to float exactly, and `unit_mean` rounds the mean to float16 as numpy does.
_QUERY_DTYPES = {"F32": "f", "F16": "e"}


def unit_mean(rows: Iterable[Sequence[float]], dim: int, *, half: bool = False) -> array[float]:
    """The mean of a text's token rows scaled to length 1: the one arithmetic every query's
    vector is computed with, so that any two paths score alike bit for bit. The rows are added
    one after the other in float32 (a float64 sum of two float32 numbers rounded to float32 is
    their exact float32 sum), divided by their count in float32 (likewise exact), rounded to
    float16 when ``half`` (model2vec's mean of a float16 matrix is float16), and each component
    divided by the square root of the correctly rounded (math.fsum) float64 sum of their
    squares, then rounded to float32. No rows, or a zero mean, give zeros."""
    total = array("f", bytes(4 * dim))
    count = 0
    for row in rows:
        total = array("f", map(operator.add, total, row))
        count += 1
    if count == 0:
        return total
    mean = array("f", [x / count for x in total])
    if half:  # struct rounds to float16 to nearest, ties to even, as numpy does
        mean = array("f", struct.unpack(f"<{dim}e", struct.pack(f"<{dim}e", *mean)))
    norm = math.sqrt(math.fsum(x * x for x in mean))
    return array("f", [x / norm for x in mean]) if norm > 0 else mean


def _numpy_loaded() -> bool:
    return "numpy" in sys.modules


class QueryEncoder:
    """A query's vector from a model folder with the standard library alone: the tokenizer
    through gitmem.index.tokenizer, the matrix's rows unpacked from a memory map of it."""

    def __init__(self, info: ModelInfo, tokens: Tokens, data: mmap.mmap, matrix: Tensor) -> None:
        self.info = info
        self._tokens = tokens
        self._data = data
        self._tensor = matrix
        self._start = matrix.start
        self._row = struct.Struct(f"<{info.dim}{_QUERY_DTYPES[matrix.dtype]}")
        self._half = matrix.dtype == "F16"
        # numpy's view of `data` (typed loosely: numpy is gitmem.index.embedding's to import).
        self._matrix: Any = None

    @property
    def dim(self) -> int:
        return self.info.dim

    @property
    def folder(self) -> Path:
        return Path(self.info.path)

    def encode_query(self, text: str) -> array[float]:
        """``text``'s vector, bit for bit what the full embedder's `encode_query` gives; with
        numpy's arithmetic where the process has already imported it (it is faster)."""
        ids = self._tokens.ids([text])[0]
        if _numpy_loaded():
            # numpy's arithmetic is gitmem.index.embedding's to do (it imports numpy): not a
            # cost here, since the process has numpy already.
            from gitmem.index import embedding

            if self._matrix is None:
                self._matrix = embedding.tensor_array(self._data, self._tensor)
            return embedding.unit_mean_numpy(self._matrix[ids], half=self._half)
        size, data, start = self._row.size, self._data, self._start
        rows = (self._row.unpack_from(data, start + i * size) for i in ids)
        return unit_mean(rows, self.info.dim, half=self._half)


def query_encoder(folder: Path) -> QueryEncoder | None:
    """The `QueryEncoder` of the model in ``folder``, with the `ModelInfo` `load` would give it,
    or None for anything but a layout it computes exactly (a float32 or float16 matrix, with
    neither weights nor a token mapping, that gitmem.index.embedding.load would read without
    model2vec) and for a folder it cannot read: `load` then reads the model, or says what is
    wrong with it."""
    folder = folder.absolute()
    layout = find_layout(folder)
    if layout is None:
        return None
    try:
        config = json.loads(layout.config.read_bytes())
        data, tensors = mapped(layout.matrix)
        stamp = known_fingerprint(folder)
    except (OSError, ValueError, KeyError, TypeError, ModelUnavailable):
        return None
    matrix = tensors.pop(layout.tensor, None)
    max_length = config.get("max_length", MAX_LENGTH) if isinstance(config, dict) else None
    if not (
        matrix is not None
        and not tensors  # no weights, no mapping, nothing else
        and isinstance(config, dict)
        and config.get("pooling", "mean") == "mean"
        and (max_length is None or (type(max_length) is int and max_length > 0))
        and matrix.dtype in _QUERY_DTYPES
        and len(matrix.shape) == 2
    ):
        return None
    try:
        found = tokenizer.load(layout.tokenizer, _real_tokenizer)
        tokens = Tokens(found, max_length)
        size = found.get_vocab_size()
    except Exception:  # what a damaged tokenizer.json raises, tokenizers' bare Exception too
        return None
    # At least 3 tokens, so that the median token length is at least 1: see Tokens.ids.
    if matrix.shape[0] != size or size < 3:
        return None
    info = ModelInfo(folder.resolve().name, matrix.shape[1], str(folder), stamp)
    return QueryEncoder(info, tokens, data, matrix)


def _real_tokenizer(path: Path) -> Any:
    """The `tokenizers` library's tokenizer, which gitmem.index.embedding builds: only for a
    text or a tokenizer that gitmem.index.tokenizer does not reproduce."""
    from gitmem.index import embedding

    return embedding.real_tokenizer(path)
