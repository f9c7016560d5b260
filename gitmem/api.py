"""The public Python API: a store with search on top.

    from gitmem import Store
    store = Store.open(path)
    store.record("decision", "We chose X because ...", title="Use X")
    for hit in store.recall("what do we use for X").hits: ...

The CLI, the hooks and the MCP server all go through this class, so they give the same
answers for the same call.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.index.model import configured_model
from gitmem.index.modelfiles import ModelUnavailable
from gitmem.store.store import Store as CoreStore

if TYPE_CHECKING:
    from gitmem.agents.contextblock import Block
    from gitmem.capture.distill import DistillReport
    from gitmem.capture.trace import Trace
    from gitmem.consolidate.consolidation import Consolidation
    from gitmem.coord.coord import Coord
    from gitmem.graph.view import GraphView
    from gitmem.index.entries import Filter
    from gitmem.index.index import Index, Progress
    from gitmem.index.model import ModelRef
    from gitmem.recall.asof import TimeTravel
    from gitmem.recall.changes import Changes
    from gitmem.recall.options import RecordTypes
    from gitmem.recall.recall import Options, Result
    from gitmem.store.history import Version
    from gitmem.store.record import Record

# The index, tantivy and SQLite load when a command first searches: `gitmem record` and the
# other writes never pay for them.

__all__ = ["Store"]


class Store(CoreStore):
    """A memory store: the git-backed records (see gitmem.store.store) plus the search index."""

    _model: ModelRef | None
    _model_problem: str | None = None
    _index: Index | None = None
    _travel: TimeTravel | None = None
    _graph: GraphView | None = None
    model_cache: Path | None = None  # where hub models are cached; None: ~/.cache/huggingface/hub

    def model(self) -> ModelRef | None:
        """The configured embedding model, found on disk but not loaded until it is needed;
        None (and `model_problem` says why) when there is none."""
        if not hasattr(self, "_model"):
            try:
                self._model = configured_model(self.config.model, self.root, self.model_cache)
            except ModelUnavailable as exc:
                self._model, self._model_problem = None, str(exc)
            else:
                if self._model is None:
                    self._model_problem = 'index.model is "none" in config.toml'
        return self._model

    @property
    def model_problem(self) -> str | None:
        self.model()
        return self._model_problem

    def use_model(self, model: ModelRef | None) -> None:
        """Use this model instead of the configured one (tests, benchmarks, evaluation)."""
        self._model, self._model_problem = model, None
        self._index = None
        self._travel = None

    def index(self, *, progress: Progress | None = None) -> Index:
        """The search index, caught up with HEAD."""
        index = self._opened_index()
        index.ensure_current(progress)
        return index

    def _opened_index(self) -> Index:
        """The index object, as it is (recall and rebuild do their own catching up)."""
        from gitmem.index.index import Index

        if self._index is None:
            self._index = Index(self, self.model())
        return self._index

    def record_types(self) -> RecordTypes:
        """The record types a recall's filter may name: the schemas', and any a record in
        the index has (its schema removed since)."""
        from gitmem.recall.options import RecordTypes

        return RecordTypes(self.schemas, lambda name: self.index().has_type(name))

    def check_index(self) -> list[str]:
        """What a full check of the search index finds damaged (every file's checksum, the
        catalog's pages, the vector file's length; gitmem.index.verify): for `gitmem doctor`,
        since a read checks only the cheap facts and rebuilds on what it meets."""
        return self._opened_index().verify()

    def rebuild(
        self, progress: Progress | None = None, *, wait_graph: bool = False
    ) -> dict[str, Any]:
        """Build the index again from HEAD (not caught up first: that would build it twice).
        A large index's vector graph is left to a detached builder (stats' "graph" is then
        "building"; recalls rank exactly till it is saved), or with `wait_graph` built here,
        after the index lock is released (gitmem.index.annbuild)."""
        index = self._opened_index()
        index.graph_later = not wait_graph
        try:
            index.rebuild(progress)
        finally:
            index.graph_later = True
        if wait_graph:
            index.build_graph()
        return index.stats()

    def recall(
        self,
        query: str,
        *,
        limit: int = 10,
        mode: str = "hybrid",
        filter: Filter | None = None,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        now: datetime | None = None,
        options: Options | None = None,
        as_of: str | datetime | None = None,
    ) -> Result:
        """Ranked hits for `query`: a short list; open the records with `get`. `since` and
        `until` bound when the records were created (a datetime or a time as the CLI takes
        it; a bare date `until` includes that day) on top of `filter`; the decay's half-life
        and the fusion come from `options`. With `as_of` (a datetime, a time as the CLI
        takes it, or a commit), the memory as it stood then. Raises UsageError for a value
        the CLI would refuse."""
        from gitmem.recall.options import check_span, check_types, recall_options
        from gitmem.recall.recall import DEFAULTS, recall

        base = options or DEFAULTS
        flt = filter or base.filter
        # The CLI's checks (the library reads no environment: `options` carries the decay).
        checked = recall_options(
            {"limit": limit, "mode": mode, "since": since, "until": until, "scope": flt.scope}, {}
        )
        if as_of is None:  # at HEAD; a type of the past is not checked against it
            check_types(flt.types, self.record_types())
        bounds = checked.filter
        chosen = replace(
            base,
            limit=checked.limit,
            mode=checked.mode,
            filter=replace(
                flt,
                since=flt.since if since is None else bounds.since,
                until=flt.until if until is None else bounds.until,
            ),
            now=now or base.now,
        )
        check_span(chosen.filter)
        if as_of is not None:
            travel = self.time_travel()
            return travel.recall(self._opened_index(), query, chosen, travel.moment(as_of))
        from gitmem.consolidate.recallstats import note_recall
        from gitmem.index.index import DAMAGE, damaged

        index = self._opened_index()
        try:
            result = recall(index, query, chosen)
        except DAMAGE as exc:  # found by the search itself, past the checks at open
            if not damaged(exc):
                raise
            index.repair(exc)
            result = recall(index, query, chosen)
        note_recall(self.cache_dir, [hit.id for hit in result.hits])  # for gitmem sleep
        return result

    # --- time travel (docs/time-travel.md) ---------------------------------------------------

    def time_travel(self) -> TimeTravel:
        """The store's reads of the past, over a cache caught up with HEAD on each use."""
        from gitmem.recall.asof import TimeTravel

        if self._travel is None:
            self._travel = TimeTravel(self, self.model(), self._opened_index())
        return self._travel

    def get(self, id_or_prefix: str, as_of: str | datetime | None = None) -> Record:
        if as_of is None:
            return super().get(id_or_prefix)
        travel = self.time_travel()
        return travel.get(id_or_prefix, travel.moment(as_of))

    def records(self, as_of: str | datetime | None = None) -> Iterator[Record]:
        """Every record at HEAD, or as it stood at `as_of` (superseded ones included)."""
        if as_of is None:
            return super().records()
        travel = self.time_travel()
        return iter(travel.records(travel.moment(as_of)))

    def history(self, id_or_prefix: str, as_of: str | datetime | None = None) -> list[Version]:
        versions = super().history(id_or_prefix)
        if as_of is None:
            return versions
        travel = self.time_travel()
        return travel.history(versions, travel.moment(as_of))

    def diff(self, start: str | datetime, end: str | datetime | None = None) -> Changes:
        """What changed between two moments or commits (`end` None: now)."""
        from gitmem.recall.changes import diff

        return diff(self.time_travel(), start, end)

    def context(
        self, *, project: str = "", budget: int | None = None, now: datetime | None = None
    ) -> Block:
        """The block SessionStart injects for `project` ("": every project), within `budget`
        bytes (default: the store's hooks.context_bytes, 8192 unless configured; docs/hooks.md)."""
        from gitmem.agents.context import build
        from gitmem.agents.settings import hook_settings

        size = budget or hook_settings(self.root)[0].context_bytes
        return build(self.root, project=project, budget=size, now=now, store=self)

    # --- capture (docs/capture.md) -----------------------------------------------------------

    def distill(
        self,
        env: Mapping[str, str],
        session: str | None = None,
        *,
        force: bool = False,
        dry_run: bool = False,
        trigger: str = "",
        sweep: bool = False,
    ) -> DistillReport:
        """Distil archived session transcripts into records (gitmem.capture.distill); `env`
        is the distiller's environment (its PATH finds it); `sweep` also takes the other
        sessions whose turn has come (gitmem.capture.sweep)."""
        from gitmem.capture.distill import distill

        def related(query: str, limit: int) -> list[str]:
            return [hit.id for hit in self.recall(query, limit=limit).hits]

        return distill(
            self,
            related,
            env,
            session=session,
            force=force,
            dry_run=dry_run,
            trigger=trigger,
            sweep=sweep,
        )

    def trace(self, id_or_prefix: str) -> Trace:
        """The archived transcript messages a captured record came from."""
        from gitmem.capture.trace import trace

        return trace(self.cache_dir, self.get(id_or_prefix))

    # --- coordination between agents (docs/coord.md) ------------------------------------------

    def coord(self, agent: str = "", device: str = "") -> Coord:
        """Messages, tasks, the session log, presence and the handoff, as `agent` (default:
        git's user.name) on `device` (default: the host name)."""
        from gitmem.coord.coord import Coord

        return Coord(self, agent, device)

    # --- the work graph (docs/graph.md) --------------------------------------------------------

    @property
    def graph(self) -> GraphView:
        """Entities from watched Markdown files, their edges and the graph's queries."""
        if self._graph is None:
            from gitmem.graph.view import GraphView

            self._graph = GraphView(self, self.recall, self.time_travel)
        return self._graph

    def consolidation(self) -> Consolidation:
        """gitmem sleep, proposals, decide and feedback (docs/consolidation.md)."""
        from gitmem.consolidate.consolidation import Consolidation

        return Consolidation(self, lambda: None if self.model() is None else self.index())
