"""The embedding model as the index knows it: by name, loaded on first use.

A recall that finds the index current and asks for keywords only never loads the model, and one
that ranks by meaning computes its query's vector with gitmem.index.queryvec until something
loads the model: a process that only recalls then imports neither numpy nor tokenizers.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitmem.index.embedding import Embedder
    from gitmem.index.queryvec import QueryEncoder

__all__ = ["ModelRef", "configured_model"]


class ModelRef:
    """An embedding model known by name (what the index is stamped with), loaded on first use:
    a recall that finds the index current and asks for keywords only never pays for it."""

    def __init__(self, name: str, load: Callable[[], Embedder], folder: Path | None = None) -> None:
        self.name = name
        self.folder = folder  # where another process can load the same model from
        # Said beside every recall when this is not the model the configuration names (the
        # built-in one standing in for the former default): why, and how to get the named one.
        self.notice = ""
        self._load = load
        self._model: Embedder | None = None
        self._query: QueryEncoder | None = None
        self._query_sought = False

    def get(self) -> Embedder:
        if self._model is None:
            self._model = self._load()
        return self._model

    def encode_query(self, text: str) -> array[float]:
        """The query's unit vector. The same bits from the loaded model and from its numpy-free
        reader (gitmem.index.queryvec.QueryEncoder), which a recall uses while nothing else has
        loaded the model: a process that only recalls then never imports numpy."""
        encoder = self._query_encoder() if self._model is None else None
        return (encoder or self.get()).encode_query(text)

    @property
    def dim(self) -> int:
        encoder = self._query_encoder() if self._model is None else None
        return encoder.dim if encoder is not None else self.get().info.dim

    def _query_encoder(self) -> QueryEncoder | None:
        if not self._query_sought:
            from gitmem.index.queryvec import query_encoder

            self._query_sought = True
            self._query = None if self.folder is None else query_encoder(self.folder)
        return self._query

    @classmethod
    def from_folder(cls, spec: str, folder: Path) -> ModelRef:
        """The model in a local folder, named by the spec that found it and its fingerprint."""
        from gitmem.index.modelfiles import ModelUnavailable, fingerprint

        def load() -> Embedder:
            from gitmem.index import embedding

            model = embedding.load(str(folder), offline=True)
            if model is None:
                raise ModelUnavailable(f"no embedding model at {folder}")
            return model

        return cls(f"{spec}@{fingerprint(folder)}", load, folder)


def configured_model(spec: str, root: Path, cache: Path | None = None) -> ModelRef | None:
    """The model a store's configuration names (`index.model`), found on disk but not loaded:
    "builtin:NAME" (shipped with gitmem), a folder relative to the store `root` or anywhere, or
    a hub id in the Hugging Face `cache` (None: ~/.cache/huggingface/hub). None for "none";
    ModelUnavailable, saying what to do, when it is not on this machine. Both
    gitmem.api.Store.model and the fast recall path ask this.

    The former default, a hub model that `gitmem init` wrote into every store's config.toml
    before gitmem shipped a model, stands for the built-in default while it is not in the
    cache: the ModelRef's `notice` says so and how to fetch it."""
    from gitmem.index.modelfiles import ModelUnavailable, locate
    from gitmem.store.config import DEFAULT_MODEL, FORMER_DEFAULT_MODEL

    if spec.strip().lower() == "none":
        return None
    local = root / spec
    folder = locate(str(local) if local.is_dir() else spec, cache)
    if folder is None and spec == FORMER_DEFAULT_MODEL:
        ref = configured_model(DEFAULT_MODEL, root, cache)
        if ref is not None:
            ref.notice = (
                f'the embedding model "{spec}" is not on this machine: using the built-in '
                f'"{DEFAULT_MODEL}"; run "gitmem model fetch" to use {spec}, or set '
                f'index.model = "{DEFAULT_MODEL}" in config.toml'
            )
        return ref
    if folder is None:
        raise ModelUnavailable(
            f'the embedding model "{spec}" is not on this machine; download it once with '
            f'"gitmem model fetch", point index.model in config.toml at a local model '
            'directory, or build one with "gitmem model build --from DIR --out DIR"'
        )
    return ModelRef.from_folder(spec, folder)
