"""The public Python API: a store with search on top.

    from gitmem import Store
    store = Store.open(path)
    store.record("decision", "We chose X because ...", title="Use X")
    for hit in store.recall("what do we use for X").hits: ...

The CLI, the hooks and the MCP server all go through this class, so they give the same
answers for the same call.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem import embedding
from gitmem.store import Store as CoreStore

if TYPE_CHECKING:
    from gitmem.catalog import Filter
    from gitmem.index import Index, ModelRef, Progress
    from gitmem.recall import Options, Result

# The index, tantivy and SQLite load when a command first searches: `gitmem record` and the
# other writes never pay for them.

__all__ = ["Store"]


class Store(CoreStore):
    """A memory store: the git-backed records (see gitmem.store) plus the search index."""

    _model: ModelRef | None
    _model_problem: str | None = None
    _index: Index | None = None
    model_cache: Path | None = None  # where hub models are cached; None: ~/.cache/huggingface/hub

    def model(self) -> ModelRef | None:
        """The configured embedding model, found on disk but not loaded until it is needed;
        None (and `model_problem` says why) when there is none."""
        if not hasattr(self, "_model"):
            self._model = None
            spec = self.config.model
            if spec.strip().lower() == "none":
                self._model_problem = 'index.model is "none" in config.toml'
                return None
            local = self.root / spec
            path = embedding.locate(str(local) if local.is_dir() else spec, self.model_cache)
            if path is None:
                self._model_problem = (
                    f'the embedding model "{spec}" is not on this machine; download it once with '
                    f'"gitmem model fetch", point index.model in config.toml at a local model '
                    'directory, or build one with "gitmem model build --from DIR --out DIR"'
                )
                return None
            from gitmem.index import ModelRef

            self._model = ModelRef.from_folder(spec, path)
        return self._model

    @property
    def model_problem(self) -> str | None:
        self.model()
        return self._model_problem

    def use_model(self, model: ModelRef | None) -> None:
        """Use this model instead of the configured one (tests, benchmarks, evaluation)."""
        self._model, self._model_problem = model, None
        self._index = None

    def index(self, *, progress: Progress | None = None) -> Index:
        """The search index, caught up with HEAD."""
        index = self._opened_index()
        index.ensure_current(progress)
        return index

    def _opened_index(self) -> Index:
        """The index object, as it is (recall and rebuild do their own catching up)."""
        from gitmem.index import Index

        if self._index is None:
            self._index = Index(self, self.model())
        return self._index

    def rebuild(self, progress: Progress | None = None) -> dict[str, Any]:
        """Build the index again from HEAD (not caught up first: that would build it twice)."""
        index = self._opened_index()
        index.rebuild(progress)
        return index.stats()

    def recall(
        self,
        query: str,
        *,
        limit: int = 10,
        mode: str = "hybrid",
        filter: Filter | None = None,
        now: datetime | None = None,
        options: Options | None = None,
    ) -> Result:
        """Ranked hits for `query`: a short list; open the records with `get`."""
        from gitmem.recall import DEFAULTS, recall

        base = options or DEFAULTS
        chosen = replace(
            base,
            limit=limit,
            mode=mode,  # type: ignore[arg-type]
            filter=filter or base.filter,
            now=now or base.now,
        )
        return recall(self._opened_index(), query, chosen)
