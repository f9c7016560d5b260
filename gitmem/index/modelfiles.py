"""An embedding model's files and identity, found and told apart with the standard library
alone: which folder holds the model a spec names (a directory, or a hub id's snapshot in the
Hugging Face cache), where its config, matrix and tokenizer are in it (model2vec's layouts),
the `fingerprint` that tells a rebuilt model from the old one of the same name, and where the
tensors are in its safetensors file.

Naming a model is on every recall's path (gitmem.index.model.ModelRef is stamped with it), and
most recalls never load the model: so none of this imports numpy, tokenizers or model2vec
(gitmem.index.embedding loads the model).
"""

from __future__ import annotations

import hashlib
import json
import math
import mmap
import re
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from gitmem.errors import GitmemError

__all__ = [
    "BUILTIN",
    "DTYPES",
    "FIX",
    "MAX_LENGTH",
    "Layout",
    "ModelInfo",
    "ModelUnavailable",
    "Tensor",
    "builtin_folder",
    "builtin_names",
    "find_layout",
    "fingerprint",
    "hub_cache",
    "known_fingerprint",
    "locate",
    "looks_like_hub_id",
    "mapped",
    "model_files",
]
# The models shipped inside the package (package data, no network): "builtin:NAME" names
# gitmem/models/NAME/ (docs/search.md, "The embedding model").
BUILTIN = "builtin:"
_BUILTIN_ROOT = Path(__file__).resolve().parents[1] / "models"
FIX = (
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
# model2vec's default when config.json does not set max_length.
MAX_LENGTH = 512
# Safetensors dtype names, and numpy's for them (whose last digit is the item's size).
DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I8": "i1"}
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


class Layout(NamedTuple):
    config: Path
    matrix: Path
    tokenizer: Path
    tensor: str


class Tensor(NamedTuple):
    dtype: str  # the safetensors name: "F32", "F16", ...
    shape: tuple[int, ...]
    start: int  # where its data starts in the file
    items: int  # how many numbers it holds


def locate(spec: str, cache_dir: Path | None = None) -> Path | None:
    """The local directory of the model that ``spec`` names, or None: for "builtin:NAME" the
    model shipped with gitmem; ``spec`` itself when it is a directory holding a model; else
    for a hub id ("org/name") its snapshot in the Hugging Face cache (``cache_dir``, by default
    ~/.cache/huggingface/hub): the revision refs/main names, or failing that the newest one
    holding a model. Looks only at the file system."""
    if spec.strip().lower() in ("", "none"):
        return None
    if spec.startswith(BUILTIN):
        return builtin_folder(spec)
    if find_layout(Path(spec)) is not None:
        return Path(spec).absolute()
    if not looks_like_hub_id(spec):
        return None
    repo = (cache_dir or hub_cache()) / f"models--{spec.replace('/', '--')}"
    try:
        main = (repo / "refs" / "main").read_text().strip()
    except OSError:
        main = ""
    if re.fullmatch(r"\w+", main) and find_layout(repo / "snapshots" / main) is not None:
        return (repo / "snapshots" / main).absolute()
    try:
        found = [p for p in (repo / "snapshots").iterdir() if find_layout(p) is not None]
    except OSError:
        return None
    newest = max(found, key=lambda p: (p.stat().st_mtime, p.name), default=None)
    return None if newest is None else newest.absolute()


def builtin_folder(spec: str) -> Path | None:
    """The folder of the model shipped with gitmem that ``spec`` ("builtin:NAME") names, or
    None when gitmem ships no model of that name."""
    name = spec.removeprefix(BUILTIN)
    if not re.fullmatch(r"[\w][\w.-]*", name):
        return None
    folder = _BUILTIN_ROOT / name
    return folder if find_layout(folder) is not None else None


def builtin_names() -> list[str]:
    """The specs of the models shipped with gitmem ("builtin:NAME"), sorted."""
    try:
        found = [p for p in _BUILTIN_ROOT.iterdir() if find_layout(p) is not None]
    except OSError:
        return []
    return sorted(BUILTIN + p.name for p in found)


def fingerprint(folder: Path) -> str:
    """16 hex digits that change when the model in ``folder`` does, even under the same name: a
    hash of its config and tokenizer files, and of the size, the first 64 KiB (the header) and
    64 evenly spread 4 KiB blocks of its matrix. Rebuilding, retraining or quantising a model
    rewrites every block; hashing the whole matrix would cost each recall 20-60 ms."""
    layout = model_files(folder)
    try:
        identity = _identity(layout)
    except OSError as exc:
        raise ModelUnavailable(f"cannot read the embedding model in {folder}: {exc}") from exc
    stamp = _hash_model(folder, layout)
    _STAMPS[folder] = (identity, stamp)
    return stamp


def _identity(layout: Layout) -> tuple[tuple[int, int, int], ...]:
    """What changes when a file of the model is written: size, modification time, inode."""
    return tuple((s.st_size, s.st_mtime_ns, s.st_ino) for s in (p.stat() for p in layout[:3]))


def known_fingerprint(folder: Path) -> str:
    """The `fingerprint` of ``folder`` found earlier in this process if its files have not
    been written since: naming a model (gitmem.index.index.ModelRef) and loading it both need it,
    and hashing costs a recall 3-5 ms, more on a busy machine."""
    known = _STAMPS.get(folder)
    try:
        if known is not None and known[0] == _identity(model_files(folder)):
            return known[1]
    except OSError:
        pass
    return fingerprint(folder)


def _hash_model(folder: Path, layout: Layout) -> str:
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


def find_layout(folder: Path) -> Layout | None:
    for config, sub, tensor in _LAYOUTS:
        files = folder / sub
        found = Layout(
            folder / config, files / "model.safetensors", files / "tokenizer.json", tensor
        )
        if all(path.is_file() for path in found[:3]):
            return found
    return None


def model_files(folder: Path) -> Layout:
    layout = find_layout(folder)
    if layout is None:
        raise ModelUnavailable(
            f"{folder} holds no embedding model (config.json, model.safetensors and "
            f"tokenizer.json) — {FIX}"
        )
    return layout


def hub_cache() -> Path:
    return Path.home() / ".cache" / "huggingface" / "hub"


def looks_like_hub_id(spec: str) -> bool:
    return re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", spec) is not None


def mapped(path: Path) -> tuple[mmap.mmap, dict[str, Tensor]]:
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
        size = int(DTYPES[entry["dtype"]][-1])
        shape = tuple(int(n) for n in entry["shape"])
        start, end = (8 + length + int(n) for n in entry["data_offsets"])
        count = math.prod(shape)
        if not 8 + length <= start <= end <= len(data) or end - start != count * size:
            raise ValueError(f"{path}: tensor {name} does not fit its data_offsets")
        tensors[name] = Tensor(entry["dtype"], shape, start, count)
    return data, tensors
