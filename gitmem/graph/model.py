"""The work graph at a commit: every `entity` record, and its edges resolved.

An edge names its target by key (gitmem.graph.entity). It resolves, in order, to the entity
of that key in the same project, to an entity whose id it is, or to any record whose id it
is (so an entity's `links: [use-x-4k2m9p]` reaches a decision record); else it is dangling,
kept and reported. The graph is read from HEAD's tree; entity records are parsed once per blob
and kept in this process (a new commit parses only the blobs it changed), so a query after a
write does not read the whole graph again.
"""

from __future__ import annotations

import contextlib
import json
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.atomic import replace_file
from gitmem.errors import NotFound, RecordInvalid, UsageError
from gitmem.graph.entity import EDGE_FIELDS, ENTITY_TYPE, Entity, from_record
from gitmem.store.record import format_time, parse_time
from gitmem.store.recordfile import parse

if TYPE_CHECKING:
    from gitmem.store.reader import Reader

__all__ = ["RECORD_RELATIONS", "RELATIONS", "Edge", "Graph", "Step", "check_walk", "load_graph"]

# A plain record's own edges, besides `links` (as `links_to`): only `related` from a record
# follows them (gitmem.graph.view).
RECORD_RELATIONS = ("supersedes", "superseded_by")
RELATIONS = (*EDGE_FIELDS, *RECORD_RELATIONS)

ENTITY_DIR = f"records/{ENTITY_TYPE}"
CACHE_NAME = "graph-entities.json"  # in the store's cache directory
CACHE_VERSION = 1
_PARSED: dict[str, Entity] = {}  # blob id -> entity, for this process
_PARSED_MAX = 50_000
_GRAPHS: dict[tuple[str, str | None], Graph] = {}  # (store root, HEAD) -> graph, the last few


@dataclass(frozen=True)
class Edge:
    source: str  # entity id
    rel: str  # parent, blocked_by, depends_on, links_to
    key: str  # the target as the file names it
    target: str  # the id it resolved to; "" when dangling

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "rel": self.rel, "key": self.key, "target": self.target}


@dataclass(frozen=True)
class Step:
    """An entity (or record) reached from the start of `related`: how far, by which edge, and
    in which direction ("out": the previous one names it; "in": it names the previous one)."""

    id: str
    depth: int
    rel: str
    direction: str
    via: str  # the id it was reached from


@dataclass
class Graph:
    head: str | None
    entities: dict[str, Entity] = field(default_factory=dict)
    out: dict[str, list[Edge]] = field(default_factory=dict)
    into: dict[str, list[Edge]] = field(default_factory=dict)

    def entity(self, id_or_prefix: str) -> Entity:
        if id_or_prefix in self.entities:
            return self.entities[id_or_prefix]
        matches = sorted(i for i in self.entities if i.startswith(id_or_prefix))
        if not matches:
            raise NotFound(
                f'no entity with id "{id_or_prefix}" — list them with "gitmem list --type entity"'
            )
        if len(matches) > 1:
            shown = ", ".join(matches[:10])
            raise UsageError(f'"{id_or_prefix}" is ambiguous; it matches {shown}')
        return self.entities[matches[0]]

    def dangling(self, ids: Iterable[str] | None = None) -> list[Edge]:
        """Edges whose target is unknown, of the entities `ids` (default: all), in id order."""
        chosen = sorted(self.entities if ids is None else set(ids) & self.entities.keys())
        return [e for i in chosen for e in self.out.get(i, ()) if not e.target]

    def related(
        self, start: str, depth: int = 1, rels: Sequence[str] = ()
    ) -> tuple[Entity, list[Step]]:
        """What is within `depth` edges of the entity `start` (an id or unique prefix)."""
        check_walk(depth, rels)
        origin = self.entity(start)
        return origin, self.walk(origin.id, depth, rels)

    def walk(
        self, start: str, depth: int, rels: Sequence[str] = (), own: Sequence[Edge] = ()
    ) -> list[Step]:
        """What is within `depth` edges of the id `start`, both directions, each reached once
        by its shortest way (so a cycle ends there), breadth first, in edge order. `own`: the
        start's edges when it is a plain record (its `links`, `supersedes`), which the graph
        does not hold; a plain record reached on the way is an end, its links not followed."""
        seen = {start}
        steps: list[Step] = []
        queue: deque[tuple[str, int]] = deque([(start, 0)])
        while queue:
            here, level = queue.popleft()
            if level == depth:
                continue
            outward = own if here == start and here not in self.entities else ()
            ways = [(e.target, e.rel, "out") for e in (*outward, *self.out.get(here, ()))]
            ways += [(e.source, e.rel, "in") for e in self.into.get(here, ())]
            for other, rel, direction in ways:
                if not other or other in seen or (rels and rel not in rels):
                    continue
                seen.add(other)
                steps.append(Step(other, level + 1, rel, direction, here))
                if other in self.entities:
                    queue.append((other, level + 1))
        return steps

    def neighbours(self, record_id: str) -> list[str]:
        """Ids one edge away from `record_id`, either way, in order: the targets it names,
        then what names it."""
        found = [e.target for e in self.out.get(record_id, ()) if e.target]
        found += [e.source for e in self.into.get(record_id, ())]
        return [i for i in dict.fromkeys(found) if i != record_id]


def check_walk(depth: int, rels: Sequence[str]) -> None:
    """Refuse a depth or relation `related` does not know (exit 2, usage)."""
    if not 1 <= depth <= 3:
        raise UsageError(f"--depth {depth}: give 1, 2 or 3")
    unknown = sorted(set(rels) - set(RELATIONS))
    if unknown:
        raise UsageError(
            f"--rel-type {', '.join(unknown)}: the relations are {', '.join(RELATIONS)}"
        )


def load_graph(store: Reader) -> Graph:
    """The graph at the store's HEAD (cached per HEAD in this process)."""
    head = store.head()
    key = (str(store.root), head)
    cached = _GRAPHS.get(key)
    if cached is not None:
        return cached
    disk = _DiskCache(store.cache_dir / CACHE_NAME)
    entities: dict[str, Entity] = {}
    for path, blob in store.repo.files(head, ENTITY_DIR):
        entity = _PARSED.get(blob) or disk.get(blob)
        if entity is None:
            entity = _parse(store, path, blob)
            if entity is None:
                continue
            disk.put(blob, entity)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[blob] = entity
        entities[entity.id] = entity
    disk.save(set(_PARSED))
    graph = _resolve(head, entities, store.catalog())
    if len(_GRAPHS) >= 4:
        _GRAPHS.pop(next(iter(_GRAPHS)))
    _GRAPHS[key] = graph
    return graph


class _DiskCache:
    """Parsed entity blobs in the store's cache (`.gitmem/graph-entities.json`), so that a new
    process (`gitmem graph related`, a hook) does not parse every entity record again: keyed by
    blob id, so it can never be stale, only incomplete; always safe to delete. Bodies are left
    out (the graph's answers never show them)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.changed = False
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            ok = isinstance(data, dict) and data.get("version") == CACHE_VERSION
            self.rows: dict[str, dict[str, Any]] = data["entities"] if ok else {}
        except (OSError, ValueError, KeyError, TypeError):
            self.rows = {}

    def get(self, blob: str) -> Entity | None:
        row = self.rows.get(blob)
        if not isinstance(row, dict):
            return None
        try:
            when = row.pop("updated", None)
            fields: dict[str, Any] = {
                k: tuple(v) if isinstance(v, list) else v for k, v in row.items()
            }
            entity = Entity(**fields, updated=None if when is None else parse_time(when))
        except (TypeError, ValueError):
            return None
        finally:
            row["updated"] = when
        return entity

    def put(self, blob: str, entity: Entity) -> None:
        row = asdict(replace(entity, body=""))
        row["updated"] = None if entity.updated is None else format_time(entity.updated)
        self.rows[blob] = row
        self.changed = True

    def save(self, live: set[str]) -> None:
        """Write it back if it learnt something, keeping only the blobs of this HEAD."""
        if not self.changed and len(self.rows) <= len(live):
            return
        rows = {b: r for b, r in self.rows.items() if b in live}
        with contextlib.suppress(OSError):  # a read-only store: the next process parses again
            self.path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(
                self.path, json.dumps({"version": CACHE_VERSION, "entities": rows}, sort_keys=True)
            )


def _parse(store: Reader, path: str, blob: str) -> Entity | None:
    try:
        record = parse(store.repo.blob(blob).decode("utf-8"))
    except (UnicodeDecodeError, RecordInvalid):  # `gitmem validate` reports it
        return None
    if record.type != ENTITY_TYPE or record.status == "superseded":  # a sync conflict's loser
        return None
    return replace(from_record(record), body="")


def _resolve(head: str | None, entities: dict[str, Entity], catalog: dict[str, str]) -> Graph:
    by_key: dict[tuple[str, str], list[str]] = {}
    for entity in entities.values():
        by_key.setdefault((entity.project, entity.key), []).append(entity.id)
    graph = Graph(head, entities)
    for entity in sorted(entities.values(), key=lambda e: e.id):
        edges: list[Edge] = []
        for rel, key in entity.edges():
            targets = by_key.get((entity.project, key)) or (
                [key] if key in entities or key in catalog else [""]
            )
            for target in sorted(targets):
                if target == entity.id:
                    continue
                edge = Edge(entity.id, rel, key, target)
                edges.append(edge)
                if target:
                    graph.into.setdefault(target, []).append(edge)
        graph.out[entity.id] = edges
    return graph
