"""Text embeddings for semantic recall: load a static (model2vec) model, encode, build one.

A recall must finish within 0.4 s as a whole process, and model2vec's own loader costs 0.5-0.9 s,
most of it imports. So `load` reads the model folder itself (found by gitmem.index.modelfiles;
the matrix through a memory map of model.safetensors, the tokenizer through
gitmem.index.tokenizer) and `_FastEmbedder` computes what `StaticModel.encode` of model2vec 0.10
computes; a test holds the two together. model2vec is imported only to distil or build a model,
and to load a folder the fast reader does not understand. This is the only gitmem module that
imports model2vec, tokenizers and huggingface_hub; they and numpy are imported on first use (and
what only building a model needs), so importing this module stays cheap.

Every embedder's `encode_query` computes a query's vector with the arithmetic of
gitmem.index.queryvec.unit_mean (here in numpy: `unit_mean_numpy`), so the full CLI and
gitmem.cli.quickrecall score bit for bit alike.
"""

from __future__ import annotations

import json
import math
import mmap
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeAlias

from gitmem.index import tokenizer as tokenizing
from gitmem.index.modelfiles import (
    BUILTIN,
    DTYPES,
    FIX,
    MAX_LENGTH,
    Layout,
    ModelInfo,
    ModelUnavailable,
    Tensor,
    builtin_names,
    hub_cache,
    known_fingerprint,
    locate,
    looks_like_hub_id,
    mapped,
    model_files,
)
from gitmem.index.tokenizer import WIDE, Tokens

if TYPE_CHECKING:
    import numpy as np
    from model2vec import StaticModel
    from tokenizers import Tokenizer

__all__ = [
    "Embedder",
    "Vectors",
    "distil_static",
    "load",
    "real_tokenizer",
    "tensor_array",
    "unit_mean_numpy",
]

Vectors: TypeAlias = "np.ndarray[Any, np.dtype[np.float32]]"

# What to download of a hub model: the files of model2vec's layouts and the model card.
_MODEL_FILES = [
    "config.json",
    "config_sentence_transformers.json",
    "model.safetensors",
    "tokenizer.json",
    "modules.json",
    "README.md",
    "0_StaticEmbedding/*",
]
_BATCH = 256  # texts encoded at once: bounds the (texts, tokens, dim) array the mean is taken of
_HALF = {"float32": False, "float16": True}  # numpy's names of the float types: is it float16?


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


class _Parts(NamedTuple):
    tokenizer: Tokenizer | tokenizing.LazyTokenizer
    matrix: np.ndarray[Any, Any]
    weights: np.ndarray[Any, Any] | None
    mapping: np.ndarray[Any, Any] | None
    max_length: int | None


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
    stamp = known_fingerprint(folder)
    parts = _read(model_files(folder))
    if parts is not None:
        return _FastEmbedder(ModelInfo(name, parts.matrix.shape[1], str(folder), stamp), parts)
    model = _read_with_model2vec(spec, folder)
    return _StaticEmbedder(model, ModelInfo(name, int(model.dim), str(folder), stamp))


def _download(spec: str, *, offline: bool, cache_dir: Path | None) -> Path:
    where = cache_dir or hub_cache()
    if spec.startswith(BUILTIN):
        shipped = ", ".join(builtin_names()) or "none"
        why = f"gitmem ships no model of that name (it ships: {shipped})"
    elif Path(spec).is_dir():
        why = "no config.json, model.safetensors and tokenizer.json there"
    elif not looks_like_hub_id(spec):
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
    raise ModelUnavailable(f"embedding model {spec!r}: {why} — {FIX}")


def real_tokenizer(path: Path) -> Tokenizer:
    """The real tokenizer; built late (gitmem.index.tokenizer), so a file that only it finds
    damaged is reported here, when a text first needs it, as `_read` would have."""
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception
        raise ModelUnavailable(
            f"embedding model in {path.parent}: cannot read {path.name} ({exc}) — {FIX}"
        ) from exc


def _read(layout: Layout) -> _Parts | None:
    """The model read without model2vec, or None when it holds anything this reader has not
    been checked against model2vec for (model2vec then reads it)."""
    try:
        config = json.loads(layout.config.read_bytes())
        tensors = _safetensors(layout.matrix)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        # A query needs only a few words looked up: the real tokenizer (~50 ms to import and
        # build, holding the GIL) is built when a text needs it (gitmem.index.tokenizer).
        tokenizer = tokenizing.load(layout.tokenizer, real_tokenizer)
    except ModelUnavailable:
        raise
    except Exception as exc:  # tokenizers raises a bare Exception, and model2vec would too
        raise ModelUnavailable(
            f"embedding model in {layout.tokenizer.parent}: cannot read {layout.tokenizer.name} "
            f"({exc}) — {FIX}"
        ) from exc
    matrix = tensors.pop(layout.tensor, None)
    weights, mapping = tensors.pop("weights", None), tensors.pop("mapping", None)
    if matrix is None or tensors or not isinstance(config, dict):
        return None
    size = tokenizer.get_vocab_size()
    max_length = config.get("max_length", MAX_LENGTH)
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


def _safetensors(path: Path) -> dict[str, np.ndarray[Any, Any]]:
    """The tensors in a safetensors file as read-only arrays over a memory map of it, so a row
    is read from disk only when a text uses it."""
    data, header = mapped(path)
    return {name: tensor_array(data, t) for name, t in header.items()}


def tensor_array(data: mmap.mmap, tensor: Tensor) -> np.ndarray[Any, Any]:
    """A read-only array of ``tensor`` over the memory map ``data`` of its safetensors file."""
    import numpy as np

    return np.frombuffer(data, DTYPES[tensor.dtype], tensor.items, tensor.start).reshape(
        tensor.shape
    )


class _FastEmbedder:
    """Computes what model2vec 0.10's ``StaticModel.encode(texts, normalize=False)`` does for
    the model read by `_read`, then scales each row to length 1."""

    def __init__(self, info: ModelInfo, parts: _Parts) -> None:
        self.info = info
        self._tokenizer, self._matrix, self._weights, self._mapping, max_length = parts
        self._tokens = Tokens(self._tokenizer, max_length)
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
        return unit_mean_numpy(self._matrix[self._tokens.ids([text])[0]], half=_HALF[dtype])

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
        if plain and len(ids) >= WIDE and matrix.dtype in (np.float16, np.float32):
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
            f"embedding model {spec!r}: {folder} is not a model2vec model ({exc}) — {FIX}"
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


def unit_mean_numpy(rows: np.ndarray[Any, Any], *, half: bool) -> array[float]:
    """gitmem.index.queryvec.unit_mean of the rows of a float32 or float16 matrix, with numpy:
    the same operations, each correctly rounded to float32 (float16 for ``half``) as there, so
    the same bits (tested), in about a tenth of the time (~0.05 vs ~0.6 ms for a short query; on
    the critical path of every recall in a process that has numpy)."""
    import numpy as np

    dim = rows.shape[1]
    if rows.shape[0] == 0:
        return array("f", bytes(4 * dim))
    total = np.zeros(dim, dtype=np.float32)
    for row in rows.astype(np.float32):  # one row after the other, as unit_mean adds them
        total += row
    mean = total / np.float32(rows.shape[0])
    if half:  # round to nearest, ties to even, as struct's "e"
        mean = mean.astype(np.float16).astype(np.float32)
    wide = mean.astype(np.float64)
    norm = math.sqrt(math.fsum((wide * wide).tolist()))  # each square exact in float64
    if not norm > 0:
        return array("f", mean.tobytes())
    return array("f", (wide / norm).astype(np.float32).tobytes())


def distil_static(
    source_dir: Path, dims: int, *, dtype: str = "float16", clusters: int | None = None
) -> StaticModel:
    """A static model2vec model (``dims`` wide, PCA) distilled from the transformers model in
    ``source_dir`` (gitmem.index.modelbuild.distill checks the paths and options first): its
    matrix stored as ``dtype`` (float32, float16 or int8: model2vec's ``quantize_to``) and,
    given ``clusters``, its vocabulary quantised to that many shared vectors (k-means; each
    token keeps its own weight)."""
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
    return distill_from_model(
        model=model,
        tokenizer=tokenizer,
        pca_dims=dims,
        quantize_to=dtype,
        vocabulary_quantization=clusters,
    )
