"""Building an embedding model: distil one from a sentence-transformers model and put it in
place whole. The paths are checked before anything is installed or computed; the model is
written beside its directory and moved in by rename, so a half-written model is never loaded.
The libraries' part (transformers, model2vec) is gitmem.index.embedding's.
"""

from __future__ import annotations

import json
import secrets
import shutil
from pathlib import Path
from typing import Protocol

from gitmem.errors import GitmemError
from gitmem.index.modelfiles import ModelInfo, ModelUnavailable, fingerprint

__all__ = ["DTYPES", "distill", "save"]


class Saveable(Protocol):
    """A model that writes itself into a folder (model2vec's StaticModel)."""

    @property
    def dim(self) -> int: ...

    def save_pretrained(self, path: Path, model_name: str) -> None: ...


DTYPES = ("float32", "float16", "int8")  # what a distilled matrix may be stored as


def distill(
    source_dir: Path,
    out_dir: Path,
    *,
    dims: int = 256,
    dtype: str = "float16",
    clusters: int | None = None,
    teacher: str | None = None,
) -> ModelInfo:
    """Distil a static model2vec model (``dims`` wide) from a local sentence-transformers
    model directory, without network. Needs the optional extra ``gitmem[distill]``. The matrix
    is stored as ``dtype`` (one of DTYPES); ``clusters`` quantises the vocabulary to that many
    vectors. The paths and options are checked first: a wrong one is said before anything is
    installed or computed. The model's config names its ``teacher`` (by default the source
    folder's name), never the folder's path: the same build on another machine gives the same
    files."""
    if dims < 1 or dtype not in DTYPES or (clusters is not None and clusters < 2):
        raise GitmemError(
            f"cannot distil with dims {dims}, dtype {dtype!r}, clusters {clusters}: dims must "
            f"be at least 1, dtype one of {', '.join(DTYPES)}, clusters at least 2 or none"
        )
    if not (source_dir / "config.json").is_file():
        raise ModelUnavailable(
            f"cannot distil {source_dir}: no config.json there — point --from at the directory "
            "of a sentence-transformers model (the one holding config.json and model.safetensors)"
        )
    _check_out(out_dir)
    from gitmem.index import embedding  # the libraries load only once the paths are good

    model = embedding.distil_static(source_dir, dims, dtype=dtype, clusters=clusters)
    return save(model, out_dir, name=out_dir.name, teacher=teacher or source_dir.resolve().name)


def _check_out(out_dir: Path) -> None:
    """Refuse to replace anything: `out_dir` may be missing or an empty directory."""
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise GitmemError(f"{out_dir} already exists and is not empty — remove it or pick another")


def save(model: Saveable, out_dir: Path, *, name: str, teacher: str | None = None) -> ModelInfo:
    """Write the model beside ``out_dir`` and move it into place, so a half-written model is
    never loaded. Refuses to replace a non-empty directory. With ``teacher``, its config.json
    names that as the tokenizer's source instead of what model2vec wrote there (the absolute
    path of the folder it was distilled from)."""
    _check_out(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = out_dir.parent / f".{out_dir.name}.{secrets.token_hex(4)}.tmp"
    try:
        staging.mkdir()
        model.save_pretrained(staging, model_name=name)
        if teacher is not None:
            _name_teacher(staging / "config.json", teacher)
        if out_dir.exists():
            out_dir.rmdir()
        staging.rename(out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ModelInfo(name, int(model.dim), str(out_dir.absolute()), fingerprint(out_dir))


def _name_teacher(config: Path, teacher: str) -> None:
    settings = json.loads(config.read_text(encoding="utf-8"))
    settings["tokenizer_name"] = teacher
    config.write_text(json.dumps(settings, indent=4) + "\n", encoding="utf-8")
