"""The work graph as the Python API offers it: `store.graph` (gitmem.api.Store.graph).

    where = Watched(Path("~/src/app").expanduser(), "github.com/me/app", ("docs", "notes"))
    store.graph.index_all(where)
    store.graph.related("task-fix-login-3e7ynb", depth=2).to_dict()
    store.graph.blockers(stale_days=3)

Each method returns a value whose `to_dict()` is the JSON `gitmem entity/graph ... --json`
prints and the MCP tool answers, so the three give the same result for the same call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.errors import NotFound
from gitmem.graph.blockers import Blocked, find_blockers
from gitmem.graph.changes import GraphChanges, graph_diff
from gitmem.graph.entity import Entity
from gitmem.graph.indexer import IndexReport, Watched, index_files, watched_files
from gitmem.graph.model import Edge, Graph, Step, check_walk, load_graph
from gitmem.graph.neighbours import neighbours
from gitmem.graph.reconcile import ReconcileReport, reconcile
from gitmem.graph.search import Recall, graph_search
from gitmem.store.record import Record, format_time

if TYPE_CHECKING:
    from gitmem.recall.asof import TimeTravel
    from gitmem.store.store import Store

__all__ = ["Blockers", "GraphHits", "GraphView", "Indexed", "Related"]


def _own_edges(record: Record, catalog: dict[str, str]) -> tuple[Edge, ...]:
    """A plain record's edges: its `links` (as links_to), `supersedes`, `superseded_by`; a
    target no record of the store has is dangling."""
    named = [("links_to", i) for i in record.links]
    named += [("supersedes", i) for i in record.supersedes]
    named += [("superseded_by", i) for i in filter(None, [record.superseded_by])]
    return tuple(
        Edge(record.id, rel, key, key if key in catalog else "")
        for rel, key in dict.fromkeys(named)
        if key != record.id
    )


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


@dataclass(frozen=True)
class Indexed:
    """An index run: what happened to each file, and the dangling edges of what it indexed."""

    report: IndexReport
    dangling: tuple[Edge, ...]

    def to_dict(self) -> dict[str, Any]:
        r = self.report
        return {
            "commit": r.commit,
            "new": r.count("new"),
            "updated": r.count("updated"),
            "unchanged": r.count("unchanged"),
            "skipped": r.count("skipped"),
            "files": [f.to_dict() for f in r.files],
            "dangling": [e.to_dict() for e in self.dangling],
        }

    def refusal(self) -> str:
        """Why the first file asked for was not indexed ("" when none was skipped): `index-file`
        refuses with it (exit 1, a tool error through MCP); nothing was written for it."""
        skipped = [f for f in self.report.files if f.action == "skipped"]
        return f"{skipped[0].path}: not indexed — {skipped[0].note}" if skipped else ""


@dataclass(frozen=True)
class Related:
    """What `related` reached from its start: an entity, or any other record (whose own
    edges, its `links` and `supersedes`, are `own`)."""

    origin: Entity | Record
    steps: tuple[Step, ...]
    graph: Graph
    titles: dict[str, tuple[str, str]]  # plain records reached: id -> (type, title)
    own: tuple[Edge, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        items = []
        for s in self.steps:
            entity = self.graph.entities.get(s.id)
            if entity is not None:
                about = {**entity.summary(), "kind": "entity"}
            else:
                kind, title = self.titles.get(s.id, ("", ""))
                about = {"id": s.id, "type": kind, "title": title, "kind": "record"}
            items.append(
                {**about, "depth": s.depth, "rel": s.rel, "direction": s.direction, "via": s.via}
            )
        if isinstance(self.origin, Entity):
            start = {**self.origin.summary(), "kind": "entity"}
            dangling = self.graph.dangling([self.origin.id])
        else:
            r = self.origin
            start = {"id": r.id, "type": r.type, "title": r.title, "state": "", "path": ""}
            start |= {"project": "", "updated": format_time(r.updated), "kind": "record"}
            dangling = [e for e in self.own if not e.target]
        return {
            "entity": start,
            "related": items,
            "dangling": [e.to_dict() for e in dangling],
        }


@dataclass(frozen=True)
class Blockers:
    stale_days: float
    now: datetime
    items: tuple[Blocked, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "now": format_time(self.now),
            "stale_days": self.stale_days,
            "blockers": [b.to_dict(self.now) for b in self.items],
        }


@dataclass(frozen=True)
class GraphHits:
    query: str
    hits: tuple[dict[str, Any], ...]
    notices: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "hits": list(self.hits), "notices": list(self.notices)}


class GraphView:
    """The graph of one store: indexing, reconciling and the queries."""

    def __init__(self, store: Store, recall: Recall, travel: Callable[[], TimeTravel]) -> None:
        self._store = store
        self._recall = recall
        self._travel = travel

    def graph(self) -> Graph:
        """The graph at HEAD (kept in this process per HEAD)."""
        return load_graph(self._store)

    def index_file(
        self, path: Path, where: Watched, *, agent: str = "", now: datetime | None = None
    ) -> Indexed:
        return self.index_files([path], where, agent=agent, now=now)

    def index_files(
        self,
        paths: Sequence[Path],
        where: Watched,
        *,
        agent: str = "",
        now: datetime | None = None,
    ) -> Indexed:
        """Index these files (one commit); `now` stamps what is written (default: now)."""
        report = index_files(self._store, paths, where, agent=agent, now=now)
        return Indexed(report, tuple(self.graph().dangling(report.ids)))

    def index_all(
        self,
        where: Watched,
        directory: Path | None = None,
        *,
        agent: str = "",
        now: datetime | None = None,
    ) -> Indexed:
        return self.index_files(watched_files(where, directory), where, agent=agent, now=now)

    def reconcile(self, where: Watched, *, prune: bool = False, agent: str = "") -> ReconcileReport:
        return reconcile(self._store, where, prune=prune, agent=agent)

    def related(self, id_or_prefix: str, depth: int = 1, rels: Sequence[str] = ()) -> Related:
        """What is within `depth` edges of an entity, or of any record: its `links`,
        `supersedes` and `superseded_by`, the entities naming it, and on from those entities
        (docs/graph.md, "A record's neighbours")."""
        check_walk(depth, rels)
        graph = self.graph()
        start: Entity | Record
        own: tuple[Edge, ...] = ()
        try:
            rid = (
                id_or_prefix
                if id_or_prefix in graph.entities
                else self._store.resolve(id_or_prefix)
            )
        except NotFound:
            raise NotFound(
                f'no entity or record with id "{id_or_prefix}" — list them with "gitmem list"'
            ) from None
        if rid in graph.entities:
            start = graph.entities[rid]
        else:
            start = self._store.get(rid)
            own = _own_edges(start, self._store.catalog())
        steps = graph.walk(rid, depth, rels, own)
        titles: dict[str, tuple[str, str]] = {}
        for step in steps:
            if step.id not in graph.entities:
                record = self._store.previous(step.id)
                if record is not None:
                    titles[step.id] = (record.type, record.title)
        return Related(start, tuple(steps), graph, titles, own)

    def blockers(self, stale_days: float = 0, *, now: datetime | None = None) -> Blockers:
        moment = now or _now()
        found = find_blockers(self._store, self.graph(), stale_days=stale_days, now=moment)
        return Blockers(stale_days, moment, tuple(found))

    def search(
        self,
        query: str,
        *,
        types: Sequence[str] = (),
        days: float | None = None,
        limit: int = 10,
        mode: str = "hybrid",
        now: datetime | None = None,
    ) -> GraphHits:
        hits, notices = graph_search(
            self._recall,
            self.graph(),
            query,
            types=types,
            days=days,
            limit=limit,
            mode=mode,
            now=now or _now(),
        )
        return GraphHits(query, tuple(hits), notices)

    def diff(self, start: str | datetime, end: str | datetime | None = None) -> GraphChanges:
        return graph_diff(self._travel(), start, end)

    def neighbours(self, record_id: str) -> list[str]:
        return neighbours(self._store, record_id)
