"""Text embeddings for semantic recall: find and load a static (model2vec) model, encode, chunk,
build one.

A recall must finish within 0.4 s as a whole process, and model2vec's own loader costs 0.5-0.9 s,
most of it imports. So `load` reads the model folder itself (the matrix through a memory map of
model.safetensors, the tokenizer with the `tokenizers` library) and `_FastEmbedder` computes what
`StaticModel.encode` of model2vec 0.10 computes; a test holds the two together. model2vec is
imported only to distil or build a model, and to load a folder the fast reader does not
understand. This is the only gitmem module that imports model2vec, tokenizers and
huggingface_hub; they and numpy are imported on first use (and what only building a model
needs), so importing this module and calling `locate` or `fingerprint` stay cheap.

A recall needs one vector, its query's, and importing numpy costs it 110-200 ms: `query_encoder`
computes that vector with the standard library alone, for the plain layouts it reads exactly.
Every embedder's `encode_query` computes it with the same arithmetic (`_unit_mean`), so the
full CLI and gitmem.cli.quickrecall score bit for bit alike.
"""

from __future__ import annotations

import hashlib
import json
import math
import mmap
import operator
import re
import struct
import sys
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeAlias

from gitmem.errors import GitmemError
from gitmem.index.lazytokenizer import LazyTokenizer
from gitmem.index.wordpiece import WordCache

if TYPE_CHECKING:
    import numpy as np
    from model2vec import StaticModel
    from tokenizers import Tokenizer

__all__ = [
    "Embedder",
    "ModelInfo",
    "ModelUnavailable",
    "QueryEncoder",
    "Vectors",
    "chunks",
    "distill",
    "fingerprint",
    "load",
    "locate",
    "query_encoder",
]

Vectors: TypeAlias = "np.ndarray[Any, np.dtype[np.float32]]"

_FIX = (
    "download it once with network, or point model= in config.toml at a local directory, "
    'or run "gitmem model build --from DIR --out DIR"'
)
# model2vec's three folder layouts, in its order of preference: its own, sentence-transformers',
# and sentence-transformers' with the model in a subfolder. Each gives the config file, the
# folder of model.safetensors and tokenizer.json, and the matrix's name in model.safetensors.
_LAYOUTS = (
    ("config.json", "", "embeddings"),
    ("config_sentence_transformers.json", "", "embedding.weight"),
    ("config_sentence_transformers.json", "0_StaticEmbedding/", "embedding.weight"),
)
# What to download of a hub model: the files of those layouts and the model card.
_MODEL_FILES = [
    "config.json",
    "config_sentence_transformers.json",
    "model.safetensors",
    "tokenizer.json",
    "modules.json",
    "README.md",
    "0_StaticEmbedding/*",
]
# model2vec's default when config.json does not set max_length.
_MAX_LENGTH = 512
_WIDE = 64  # batches at least this large: a word cache for tokens, a float32 matrix to pool
_BATCH = 256  # texts encoded at once: bounds the (texts, tokens, dim) array the mean is taken of
# Safetensors dtype names, and numpy's for them (whose last digit is the item's size).
_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I8": "i1"}
# The matrix types `query_encoder` reads, and struct's codes for them. float16 is exact too:
# struct widens it to float exactly, and `_unit_mean` rounds the mean to float16 as numpy does.
_QUERY_DTYPES = {"F32": "f", "F16": "e"}
_HALF = {"float32": False, "float16": True}  # the same by numpy's names: is it float16?
# The last fingerprint of each folder, with the identity of its files then.
_STAMPS: dict[Path, tuple[tuple[tuple[int, int, int], ...], str]] = {}


class ModelUnavailable(GitmemError):
    """The embedding model named in the configuration cannot be loaded or built here."""


@dataclass(frozen=True)
class ModelInfo:
    """What is loaded: its name (hub id or directory name), vector size, local directory, and
    the `fingerprint` of its files ("" when unknown), which tells a rebuilt model from the old
    one of the same name."""

    name: str
    dim: int
    path: str
    fingerprint: str = ""


class Embedder(Protocol):
    """Turns texts into unit vectors; the narrow seam tests may fill with a stand-in."""

    @property
    def info(self) -> ModelInfo: ...

    def encode(self, texts: Sequence[str]) -> Vectors:
        """float32, shape (len(texts), info.dim), rows of length 1 (a text with no known token
        stays a zero row)."""
        ...

    def encode_query(self, text: str) -> array[float]:
        """One text's vector as `QueryEncoder.encode_query` computes it, bit for bit, for the
        models it reads (else ``encode([text])[0]``); within 1e-6 of that either way."""
        ...


class _Layout(NamedTuple):
    config: Path
    matrix: Path
    tokenizer: Path
    tensor: str


class _Parts(NamedTuple):
    tokenizer: Tokenizer | LazyTokenizer
    matrix: np.ndarray[Any, Any]
    weights: np.ndarray[Any, Any] | None
    mapping: np.ndarray[Any, Any] | None
    max_length: int | None


def locate(spec: str, cache_dir: Path | None = None) -> Path | None:
    """The local directory of the model that ``spec`` names, or None: ``spec`` itself when it
    is a directory holding a model, else for a hub id ("org/name") its snapshot in the Hugging
    Face cache (``cache_dir``, by default ~/.cache/huggingface/hub): the revision refs/main
    names, or failing that the newest one holding a model. Looks only at the file system."""
    if spec.strip().lower() in ("", "none"):
        return None
    if _layout(Path(spec)) is not None:
        return Path(spec).absolute()
    if not _looks_like_hub_id(spec):
        return None
    repo = (cache_dir or _hub_cache()) / f"models--{spec.replace('/', '--')}"
    try:
        main = (repo / "refs" / "main").read_text().strip()
    except OSError:
        main = ""
    if re.fullmatch(r"\w+", main) and _layout(repo / "snapshots" / main) is not None:
        return (repo / "snapshots" / main).absolute()
    try:
        found = [p for p in (repo / "snapshots").iterdir() if _layout(p) is not None]
    except OSError:
        return None
    newest = max(found, key=lambda p: (p.stat().st_mtime, p.name), default=None)
    return None if newest is None else newest.absolute()


def fingerprint(folder: Path) -> str:
    """16 hex digits that change when the model in ``folder`` does, even under the same name: a
    hash of its config and tokenizer files, and of the size, the first 64 KiB (the header) and
    64 evenly spread 4 KiB blocks of its matrix. Rebuilding, retraining or quantising a model
    rewrites every block; hashing the whole matrix would cost each recall 20-60 ms."""
    layout = _model_files(folder)
    try:
        identity = _identity(layout)
    except OSError as exc:
        raise ModelUnavailable(f"cannot read the embedding model in {folder}: {exc}") from exc
    stamp = _hash_model(folder, layout)
    _STAMPS[folder] = (identity, stamp)
    return stamp


def _identity(layout: _Layout) -> tuple[tuple[int, int, int], ...]:
    """What changes when a file of the model is written: size, modification time, inode."""
    return tuple((s.st_size, s.st_mtime_ns, s.st_ino) for s in (p.stat() for p in layout[:3]))


def _known_fingerprint(folder: Path) -> str:
    """The `fingerprint` of ``folder`` found earlier in this process if its files have not
    been written since: naming a model (gitmem.index.index.ModelRef) and loading it both need it,
    and hashing costs a recall 3-5 ms, more on a busy machine."""
    known = _STAMPS.get(folder)
    try:
        if known is not None and known[0] == _identity(_model_files(folder)):
            return known[1]
    except OSError:
        pass
    return fingerprint(folder)


def _hash_model(folder: Path, layout: _Layout) -> str:
    digest = hashlib.sha256()
    try:
        for path in layout[:3]:
            with path.open("rb") as file:
                size = file.seek(0, 2)
                digest.update(f"{path.name} {size}\n".encode())
                file.seek(0)
                if size <= 1 << 20:  # the config, the tokenizer, a small matrix: whole
                    digest.update(file.read())
                    continue
                digest.update(file.read(1 << 16))
                step = (size - (1 << 16) - (1 << 12)) // 63
                for k in range(64):
                    file.seek((1 << 16) + k * step)
                    digest.update(file.read(1 << 12))
    except OSError as exc:
        raise ModelUnavailable(f"cannot read the embedding model in {folder}: {exc}") from exc
    return digest.hexdigest()[:16]


def load(spec: str, *, offline: bool = True, cache_dir: Path | None = None) -> Embedder | None:
    """Load the model that ``spec`` names: a local directory, a hub id, or "none" (no model).

    A hub id is looked up with `locate` and, only when it is not there and ``offline`` is
    False, downloaded into ``cache_dir`` (by default ~/.cache/huggingface/hub). A relative
    directory is taken relative to the working directory: callers resolve config-relative
    paths first.
    """
    if spec.strip().lower() in ("", "none"):
        return None
    folder = locate(spec, cache_dir) or _download(spec, offline=offline, cache_dir=cache_dir)
    name = folder.resolve().name if folder == Path(spec).absolute() else spec
    stamp = _known_fingerprint(folder)
    parts = _read(_model_files(folder))
    if parts is not None:
        return _FastEmbedder(ModelInfo(name, parts.matrix.shape[1], str(folder), stamp), parts)
    model = _read_with_model2vec(spec, folder)
    return _StaticEmbedder(model, ModelInfo(name, int(model.dim), str(folder), stamp))


def _layout(folder: Path) -> _Layout | None:
    for config, sub, tensor in _LAYOUTS:
        files = folder / sub
        found = _Layout(
            folder / config, files / "model.safetensors", files / "tokenizer.json", tensor
        )
        if all(path.is_file() for path in found[:3]):
            return found
    return None


def _model_files(folder: Path) -> _Layout:
    layout = _layout(folder)
    if layout is None:
        raise ModelUnavailable(
            f"{folder} holds no embedding model (config.json, model.safetensors and "
            f"tokenizer.json) — {_FIX}"
        )
    return layout


def _hub_cache() -> Path:
    return Path.home() / ".cache" / "huggingface" / "hub"


def _looks_like_hub_id(spec: str) -> bool:
    return re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", spec) is not None


def _download(spec: str, *, offline: bool, cache_dir: Path | None) -> Path:
    where = cache_dir or _hub_cache()
    if Path(spec).is_dir():
        why = "no config.json, model.safetensors and tokenizer.json there"
    elif not _looks_like_hub_id(spec):
        why = "no such directory"
    elif offline:
        why = f"not in {where} and offline"
    else:
        from huggingface_hub import snapshot_download

        try:
            return Path(
                snapshot_download(
                    spec, cache_dir=where, allow_patterns=_MODEL_FILES, etag_timeout=5
                )
            )
        except (OSError, ValueError) as exc:
            why = f"download failed ({exc})"
    raise ModelUnavailable(f"embedding model {spec!r}: {why} — {_FIX}")


def _tokenizer(path: Path) -> Tokenizer:
    """The real tokenizer; built late (gitmem.index.lazytokenizer), so a file that only it finds
    damaged is reported here, when a text first needs it, as `_read` would have."""
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception
        raise ModelUnavailable(
            f"embedding model in {path.parent}: cannot read {path.name} ({exc}) — {_FIX}"
        ) from exc


def _read(layout: _Layout) -> _Parts | None:
    """The model read without model2vec, or None when it holds anything this reader has not
    been checked against model2vec for (model2vec then reads it)."""
    try:
        config = json.loads(layout.config.read_bytes())
        tensors = _safetensors(layout.matrix)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        # A query needs only a few words looked up: the real tokenizer (~50 ms to import and
        # build, holding the GIL) is built when a text needs it (gitmem.index.lazytokenizer).
        lazy = LazyTokenizer.read(layout.tokenizer, lambda: _tokenizer(layout.tokenizer))
        tokenizer = lazy if lazy is not None else _tokenizer(layout.tokenizer)
    except ModelUnavailable:
        raise
    except Exception as exc:  # tokenizers raises a bare Exception, and model2vec would too
        raise ModelUnavailable(
            f"embedding model in {layout.tokenizer.parent}: cannot read {layout.tokenizer.name} "
            f"({exc}) — {_FIX}"
        ) from exc
    matrix = tensors.pop(layout.tensor, None)
    weights, mapping = tensors.pop("weights", None), tensors.pop("mapping", None)
    if matrix is None or tensors or not isinstance(config, dict):
        return None
    size = tokenizer.get_vocab_size()
    max_length = config.get("max_length", _MAX_LENGTH)
    if not (
        config.get("pooling", "mean") == "mean"
        and (max_length is None or (type(max_length) is int and max_length > 0))
        and matrix.ndim == 2
        and matrix.dtype.name in ("float16", "float32", "float64", "int8")
        and (weights is None or (weights.shape == (size,) and weights.dtype.kind == "f"))
        and (mapping is None or (mapping.shape == (size,) and mapping.dtype.kind == "i"))
        and (mapping is not None or len(matrix) == size)
        and size >= 3  # so the median token length is at least 1: see _FastEmbedder._ids
    ):
        return None
    return _Parts(tokenizer, matrix, weights, mapping, max_length)


class _Tensor(NamedTuple):
    dtype: str  # the safetensors name: "F32", "F16", ...
    shape: tuple[int, ...]
    start: int  # where its data starts in the file
    items: int  # how many numbers it holds


def _safetensors(path: Path) -> dict[str, np.ndarray[Any, Any]]:
    """The tensors in a safetensors file as read-only arrays over a memory map of it, so a row
    is read from disk only when a text uses it."""
    import numpy as np

    data, header = _mapped(path)
    return {
        name: np.frombuffer(data, _DTYPES[t.dtype], t.items, t.start).reshape(t.shape)
        for name, t in header.items()
    }


def _mapped(path: Path) -> tuple[mmap.mmap, dict[str, _Tensor]]:
    """A memory map of a safetensors file and where its tensors are in it. The format: an
    8-byte little-endian header length, a JSON header giving each tensor's dtype, shape and
    data_offsets, then the data. Raises OSError, ValueError, KeyError or TypeError."""
    with path.open("rb") as file:
        data = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + length])
    if not isinstance(header, dict):
        raise ValueError(f"{path}: the header is not a JSON object")
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        size = int(_DTYPES[entry["dtype"]][-1])
        shape = tuple(int(n) for n in entry["shape"])
        start, end = (8 + length + int(n) for n in entry["data_offsets"])
        count = math.prod(shape)
        if not 8 + length <= start <= end <= len(data) or end - start != count * size:
            raise ValueError(f"{path}: tensor {name} does not fit its data_offsets")
        tensors[name] = _Tensor(entry["dtype"], shape, start, count)
    return data, tensors


class _FastEmbedder:
    """Computes what model2vec 0.10's ``StaticModel.encode(texts, normalize=False)`` does for
    the model read by `_read`, then scales each row to length 1."""

    def __init__(self, info: ModelInfo, parts: _Parts) -> None:
        self.info = info
        self._tokenizer, self._matrix, self._weights, self._mapping, max_length = parts
        self._tokens = _Tokens(self._tokenizer, max_length)
        self._wide: np.ndarray[Any, Any] | None = None  # float32 copy of a float16 matrix

    def encode(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        _refuse_one_str(texts)
        out = np.zeros((len(texts), self.info.dim), dtype=np.float32)
        for start in range(0, len(texts), _BATCH):
            out[start : start + _BATCH] = self._mean(
                self._tokens.ids(texts[start : start + _BATCH])
            )
        return _unit_rows(out)

    def encode_query(self, text: str) -> array[float]:
        dtype = self._matrix.dtype.name
        if self._mapping is not None or self._weights is not None or dtype not in _HALF:
            return array("f", self.encode([text])[0].tolist())
        return _unit_mean_numpy(self._matrix[self._tokens.ids([text])[0]], half=_HALF[dtype])

    def _wide_matrix(self) -> np.ndarray[Any, Any]:
        import numpy as np

        if self._wide is None:
            self._wide = self._matrix.astype(np.float32, copy=False)
        return self._wide

    def _mean(self, ids: list[list[int]]) -> np.ndarray[Any, Any]:
        """The mean of each text's token rows, in the matrix's float type (float32 for int8),
        computed as model2vec computes it so that float16 models round the same way."""
        import numpy as np

        matrix = self._matrix
        out = np.zeros(
            (len(ids), matrix.shape[1]), np.float32 if matrix.dtype == np.int8 else matrix.dtype
        )
        plain = self._mapping is None and self._weights is None
        if plain and len(ids) >= _WIDE and matrix.dtype in (np.float16, np.float32):
            # numpy's mean of float16 rows sums them one after the other in float32, divides
            # in float32 and rounds to float16. So does this, from a float32 copy of the matrix
            # made once: bit for bit the same, 5x faster on an index build's batches.
            wide = self._wide_matrix()
            for i, row in enumerate(ids):
                if row:
                    out[i] = wide[row].mean(axis=0, dtype=np.float32)
            return out
        if plain:
            by_length: dict[int, list[int]] = {}
            for i, row in enumerate(ids):
                if row:
                    by_length.setdefault(len(row), []).append(i)
            for texts in by_length.values():
                out[texts] = matrix[np.array([ids[i] for i in texts], dtype=np.int64)].mean(axis=1)
            return out
        for i, row in enumerate(ids):
            if row:
                rows = matrix[row if self._mapping is None else self._mapping[row]]
                if self._weights is not None:
                    rows = rows * self._weights[row][:, None]
                out[i] = rows.mean(axis=0)
        return out


class _Tokens:
    """A text's token ids as model2vec finds them, for the full embedder and `QueryEncoder`
    alike: no padding, truncation at max_length tokens after cutting the text to max_length ×
    the median token length characters, and the unknown token dropped."""

    def __init__(self, tokenizer: Tokenizer | LazyTokenizer, max_length: int | None) -> None:
        self._tokenizer = tokenizer
        self._max_length = max_length
        # Whatever tokenizer.json says, model2vec never pads and truncates at its max_length.
        tokenizer.no_padding()
        if max_length is None:
            tokenizer.no_truncation()
        else:
            tokenizer.enable_truncation(max_length)
        self._unk = _unk_id(tokenizer)
        self._words: WordCache | bool | None = False  # made on the first large batch
        self._median: int | None = None  # the median token length, found on first need

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        if self._max_length is not None and any(len(t) > self._max_length for t in texts):
            # model2vec first cuts a text to max_length × the median token length characters.
            # The median is at least 1 (_read asks for 3 tokens or more, and only one can be
            # empty), so a text of max_length characters or fewer is never cut.
            if self._median is None:
                lengths = sorted(len(token) for token in self._tokenizer.get_vocab())
                self._median = (lengths[(len(lengths) - 1) // 2] + lengths[len(lengths) // 2]) // 2
            texts = [text[: self._max_length * self._median] for text in texts]
        words = self._word_cache() if len(texts) >= _WIDE else None
        found = [None if words is None else words.ids(t) for t in texts]
        rest = [i for i, ids in enumerate(found) if ids is None]
        if rest:
            encodings = self._tokenizer.encode_batch_fast(
                [texts[i] for i in rest], add_special_tokens=False
            )
            for i, encoding in zip(rest, encodings, strict=True):
                found[i] = encoding.ids
        return [[i for i in ids or () if i != self._unk] for ids in found]

    def _word_cache(self) -> WordCache | None:
        """Index builds tokenize through a per-word cache (gitmem.index.wordpiece); a query or a
        small batch goes to the tokenizer directly."""
        if self._words is False:
            self._words = WordCache.for_tokenizer(self._tokenizer, self._max_length)
        return self._words if isinstance(self._words, WordCache) else None


def _unk_id(tokenizer: Tokenizer | LazyTokenizer) -> int | None:
    """The unknown token's id, which model2vec drops from every text (as its loader finds it)."""
    model = tokenizer.model
    if hasattr(model, "unk_token"):  # WordPiece, BPE, WordLevel
        return None if model.unk_token is None else tokenizer.token_to_id(model.unk_token)
    unk = json.loads(tokenizer.to_str())["model"].get("unk_id")  # Unigram keeps only the id
    return unk if isinstance(unk, int) else None


class _StaticEmbedder:
    """A model that only model2vec's own loader understands, encoded by model2vec."""

    def __init__(self, model: StaticModel, info: ModelInfo) -> None:
        self._model = model
        self.info = info

    def encode(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        _refuse_one_str(texts)
        if not texts:
            return np.zeros((0, self.info.dim), dtype=np.float32)
        # use_multiprocessing=False: model2vec's parallel path sets TOKENIZERS_PARALLELISM in
        # os.environ, and threads buy nothing for the batch sizes gitmem sends.
        raw = self._model.encode(
            list(texts), normalize=False, use_multiprocessing=False, show_progress_bar=False
        )
        return _unit_rows(np.array(raw, dtype=np.float32, ndmin=2))

    def encode_query(self, text: str) -> array[float]:
        return array("f", self.encode([text])[0].tolist())


def _read_with_model2vec(spec: str, folder: Path) -> StaticModel:
    from model2vec import StaticModel
    from safetensors import SafetensorError

    try:
        return StaticModel.from_pretrained(folder)
    except (OSError, ValueError, KeyError, SafetensorError) as exc:
        raise ModelUnavailable(
            f"embedding model {spec!r}: {folder} is not a model2vec model ({exc}) — {_FIX}"
        ) from exc


def _refuse_one_str(texts: Sequence[str]) -> None:
    if isinstance(texts, str):
        raise TypeError("encode() takes a sequence of texts, not one str")


def _unit_rows(vectors: Vectors) -> Vectors:
    """``vectors`` with each row scaled to length 1 in place; a zero row stays zero."""
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    np.divide(vectors, norms, out=vectors, where=norms > 0)
    return vectors


def _unit_mean(rows: Iterable[Sequence[float]], dim: int, *, half: bool = False) -> array[float]:
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


def _unit_mean_numpy(rows: np.ndarray[Any, Any], *, half: bool) -> array[float]:
    """`_unit_mean` of the rows of a float32 or float16 matrix, with numpy: the same
    operations, each correctly rounded to float32 (float16 for ``half``) as there, so the
    same bits (tested), in about a tenth of the time (~0.05 vs ~0.6 ms for a short query; on
    the critical path of every recall in a process that has numpy)."""
    import numpy as np

    dim = rows.shape[1]
    if rows.shape[0] == 0:
        return array("f", bytes(4 * dim))
    total = np.zeros(dim, dtype=np.float32)
    for row in rows.astype(np.float32):  # one row after the other, as _unit_mean adds them
        total += row
    mean = total / np.float32(rows.shape[0])
    if half:  # round to nearest, ties to even, as struct's "e"
        mean = mean.astype(np.float16).astype(np.float32)
    wide = mean.astype(np.float64)
    norm = math.sqrt(math.fsum((wide * wide).tolist()))  # each square exact in float64
    if not norm > 0:
        return array("f", mean.tobytes())
    return array("f", (wide / norm).astype(np.float32).tobytes())


class QueryEncoder:
    """A query's vector from a model folder with the standard library alone: the tokenizer
    through gitmem.index.lazytokenizer, the matrix's rows unpacked from a memory map of it."""

    def __init__(self, info: ModelInfo, tokens: _Tokens, data: mmap.mmap, matrix: _Tensor) -> None:
        self.info = info
        self._tokens = tokens
        self._data = data
        self._start = matrix.start
        self._row = struct.Struct(f"<{info.dim}{_QUERY_DTYPES[matrix.dtype]}")
        self._half = matrix.dtype == "F16"
        self._rows = matrix.shape[0]
        self._matrix: np.ndarray[Any, Any] | None = None  # a view of `data`, made on first use

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
            return _unit_mean_numpy(self._numpy_matrix()[ids], half=self._half)
        size, data, start = self._row.size, self._data, self._start
        rows = (self._row.unpack_from(data, start + i * size) for i in ids)
        return _unit_mean(rows, self.info.dim, half=self._half)

    def _numpy_matrix(self) -> np.ndarray[Any, Any]:
        import numpy as np

        if self._matrix is None:
            dtype = np.dtype("<f2" if self._half else "<f4")  # safetensors: little-endian
            count = self._rows * self.info.dim
            flat = np.frombuffer(self._data, dtype=dtype, count=count, offset=self._start)
            self._matrix = flat.reshape(self._rows, self.info.dim)
        return self._matrix


def query_encoder(folder: Path) -> QueryEncoder | None:
    """The `QueryEncoder` of the model in ``folder``, with the `ModelInfo` `load` would give it,
    or None for anything but a layout it computes exactly (a float32 or float16 matrix, with
    neither weights nor a token mapping, that `_read` would read) and for a folder it cannot
    read: `load` then reads the model, or says what is wrong with it."""
    folder = folder.absolute()
    layout = _layout(folder)
    if layout is None:
        return None
    try:
        config = json.loads(layout.config.read_bytes())
        data, tensors = _mapped(layout.matrix)
        stamp = _known_fingerprint(folder)
    except (OSError, ValueError, KeyError, TypeError, ModelUnavailable):
        return None
    matrix = tensors.pop(layout.tensor, None)
    max_length = config.get("max_length", _MAX_LENGTH) if isinstance(config, dict) else None
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
        lazy = LazyTokenizer.read(layout.tokenizer, lambda: _tokenizer(layout.tokenizer))
        tokenizer = lazy if lazy is not None else _tokenizer(layout.tokenizer)
        tokens = _Tokens(tokenizer, max_length)
        size = tokenizer.get_vocab_size()
    except Exception:  # what a damaged tokenizer.json raises, tokenizers' bare Exception too
        return None
    # At least 3 tokens, so that the median token length is at least 1: see _Tokens.ids.
    if matrix.shape[0] != size or size < 3:
        return None
    info = ModelInfo(folder.resolve().name, matrix.shape[1], str(folder), stamp)
    return QueryEncoder(info, tokens, data, matrix)


def chunks(text: str, *, max_words: int = 200, overlap: int = 40) -> list[str]:
    """Split a long text into overlapping windows of at most ``max_words`` words, so one long
    record is not averaged into mush. Each window is a slice of the original text (layout
    kept); a text of ``max_words`` words or fewer comes back whole, as ``[text]``."""
    if max_words < 1 or not 0 <= overlap < max_words:
        raise ValueError(
            f"chunks: need max_words >= 1 and 0 <= overlap < max_words, got "
            f"max_words={max_words}, overlap={overlap}"
        )
    if len(text.split()) <= max_words:  # most records; str.split and \S+ agree on spaces
        return [text]
    spans = [m.span() for m in re.finditer(r"\S+", text)]
    out: list[str] = []
    start = 0
    while True:
        end = min(start + max_words, len(spans))
        out.append(text[spans[start][0] : spans[end - 1][1]])
        if end == len(spans):
            return out
        start += max_words - overlap


def distill(source_dir: Path, out_dir: Path, *, dims: int = 256) -> ModelInfo:
    """Distil a static model2vec model (``dims`` wide) from a local sentence-transformers
    model directory, without network. Needs the optional extra ``gitmem[distill]``. The
    paths are checked first: a wrong one is said before anything is installed or computed."""
    if not (source_dir / "config.json").is_file():
        raise ModelUnavailable(
            f"cannot distil {source_dir}: no config.json there — point --from at the directory "
            "of a sentence-transformers model (the one holding config.json and model.safetensors)"
        )
    _check_out(out_dir)
    try:
        from model2vec.distill import distill_from_model
        from transformers import AutoModel, AutoTokenizer  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        missing = getattr(exc, "name", None) or "torch"
        raise ModelUnavailable(
            f"cannot distil {source_dir}: the distill extra is not installed ({missing} is "
            "missing) — run pip install 'gitmem[distill]' (on a machine without a GPU, "
            "pip install torch==2.13.0 or another CPU build first)"
        ) from exc
    # local_files_only: a path that happens to look like a hub id must never go to the network.
    try:
        model = AutoModel.from_pretrained(str(source_dir), local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(
            str(source_dir), local_files_only=True, use_fast=True
        )
    except (OSError, ValueError, KeyError) as exc:
        raise ModelUnavailable(
            f"cannot distil {source_dir}: not a transformers model that can be read here "
            f"({exc}) — point --from at a sentence-transformers model's directory"
        ) from exc
    static = distill_from_model(model=model, tokenizer=tokenizer, pca_dims=dims)
    return _save(static, out_dir, name=out_dir.name)


def _check_out(out_dir: Path) -> None:
    """Refuse to replace anything: `out_dir` may be missing or an empty directory."""
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise GitmemError(f"{out_dir} already exists and is not empty — remove it or pick another")


def _save(model: StaticModel, out_dir: Path, *, name: str) -> ModelInfo:
    """Write the model beside ``out_dir`` and move it into place, so a half-written model is
    never loaded. Refuses to replace a non-empty directory."""
    import secrets
    import shutil

    _check_out(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = out_dir.parent / f".{out_dir.name}.{secrets.token_hex(4)}.tmp"
    try:
        staging.mkdir()
        model.save_pretrained(staging, model_name=name)
        if out_dir.exists():
            out_dir.rmdir()
        staging.rename(out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ModelInfo(name, int(model.dim), str(out_dir.absolute()), fingerprint(out_dir))
