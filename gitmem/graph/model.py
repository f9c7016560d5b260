"""The work graph at a commit: every `entity` record, and its edges resolved.

An edge names its target by key (gitmem.graph.entity). It resolves, in order, to the entity
of that key in the same project, to an entity whose id it is, or to any record whose id it
is (so an entity's `links: [use-x-4k2m9p]` reaches a decision record); else it is dangling,
kept and reported. The graph is read from HEAD's tree; entity records are parsed once per blob
and kept in this process (a new commit parses only the blobs it changed), so a query after a
write does not read the whole graph again. The last HEAD's graph, resolved, is kept in the
store's cache too (`_DiskCache`), so a new process at an unchanged HEAD only reads that file.
"""

from __future__ import annotations

import contextlib
import json
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
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
CACHE_VERSION = 2  # 2: the resolved graph of the last HEAD besides the parsed rows
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
    paths: dict[str, str] = field(default_factory=dict)  # entity id -> its file in the store

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
    """The graph at the store's HEAD: kept per HEAD in this process, and the last one resolved
    in the store's cache, so a new process at an unchanged HEAD reads it instead of resolving
    (`gitmem graph handoff` at a session's start; docs/benchmarks.md, "Work graph")."""
    head = store.head()
    key = (str(store.root), head)
    cached = _GRAPHS.get(key)
    if cached is not None:
        return cached
    disk = _DiskCache(store.cache_dir / CACHE_NAME)
    graph = disk.graph(head)
    if graph is None:
        found: list[tuple[str, str, Entity]] = []
        for path, blob in store.repo.files(head, ENTITY_DIR):
            entity = _PARSED.get(blob) or disk.get(blob)
            if entity is None:
                entity = _parse(store, path, blob)
                if entity is None:
                    continue
            _keep(blob, entity)
            found.append((blob, path, entity))
        graph = _resolve(head, {e.id: e for _, _, e in found}, store.catalog())
        graph.paths.update((e.id, path) for _, path, e in found)
        if store.head() != head:  # a commit landed meanwhile: the catalog may be of a newer
            return graph  # HEAD than the stamp would say, so neither cache keeps this graph
        disk.save(head, found, graph)
    if len(_GRAPHS) >= 4:
        _GRAPHS.pop(next(iter(_GRAPHS)))
    _GRAPHS[key] = graph
    return graph


def _keep(blob: str, entity: Entity) -> None:
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[blob] = entity


_FIELDS = tuple(f.name for f in fields(Entity))
_TUPLES = tuple(i for i, name in enumerate(_FIELDS) if name in EDGE_FIELDS[1:])
_UPDATED = _FIELDS.index("updated")
_BODY = _FIELDS.index("body")
_TEXTS = tuple(i for i in range(len(_FIELDS)) if i not in _TUPLES and i != _UPDATED)


class _DiskCache:
    """The graph of the last HEAD read, in the store's cache (`.gitmem/graph-entities.json`;
    always safe to delete): every entity of that HEAD as a row keyed by its blob id, in tree
    order, and the resolved edges. At that HEAD a new process builds the graph from it without
    walking the tree, parsing or resolving; at another, the rows still spare parsing every
    blob that did not change (a blob's row can never be stale, only missing). Stamped with
    CACHE_VERSION and Entity's fields; written whole with an atomic rename, so a reader sees
    the old file or the new one; anything unexpected in it is read as a miss. Bodies are left
    out (the graph's answers never show them)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.head: str | None = None
        self.rows: dict[str, list[Any]] = {}
        self.order: list[tuple[str, str]] = []  # (blob, path) of HEAD's entity records
        self.edges: list[Any] = []
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data["version"] != CACHE_VERSION or data["fields"] != list(_FIELDS):
                return
            rows = [(b, p, r) for b, p, r in data["entities"] if isinstance(b, str)]
            self.rows = {b: r for b, _, r in rows if isinstance(r, list)}
            self.order = [(b, p) for b, p, _ in rows]
            head, edges = data["head"], data["edges"]
        except (OSError, ValueError, KeyError, TypeError):
            return
        if isinstance(head, str) and isinstance(edges, list):
            self.head, self.edges = head, edges

    def get(self, blob: str) -> Entity | None:
        row = self.rows.get(blob)
        if row is None or len(row) != len(_FIELDS):
            return None
        values = list(row)
        if not all(isinstance(values[i], str) for i in _TEXTS):
            return None
        try:
            for i in _TUPLES:
                values[i] = tuple(values[i])
            if values[_UPDATED] is not None:
                values[_UPDATED] = parse_time(values[_UPDATED])
        except (TypeError, ValueError, AttributeError):
            return None
        return Entity(*values)

    def graph(self, head: str | None) -> Graph | None:
        """The graph at `head` as resolved before, or None (another HEAD, or a damaged file)."""
        if head is None or head != self.head:
            return None
        entities: dict[str, Entity] = {}
        paths: dict[str, str] = {}
        for blob, path in self.order:
            entity = _PARSED.get(blob) or self.get(blob)
            if entity is None or not isinstance(path, str):
                return None
            _keep(blob, entity)
            entities[entity.id] = entity
            paths[entity.id] = path
        edges: list[Edge] = []
        for item in self.edges:
            if not (isinstance(item, list) and len(item) == 4 and item[0] in entities):
                return None
            if not all(isinstance(part, str) for part in item):
                return None
            edges.append(Edge(*item))
        graph = _assemble(head, entities, edges)
        graph.paths.update(paths)
        return graph

    def save(self, head: str | None, found: list[tuple[str, str, Entity]], graph: Graph) -> None:
        """Write HEAD's entities and edges (called when the file did not give this HEAD's
        graph: another HEAD's, or damaged); not when there are none to resolve."""
        if head is None or not found:
            return
        rows = []
        for blob, path, entity in found:
            row = [getattr(entity, name) for name in _FIELDS]  # not the file's: it may be bad
            row[_BODY] = ""
            if entity.updated is not None:
                row[_UPDATED] = format_time(entity.updated)
            rows.append([blob, path, row])
        edges = [[e.source, e.rel, e.key, e.target] for i in graph.out for e in graph.out[i]]
        data = {"version": CACHE_VERSION, "fields": _FIELDS, "head": head}
        data |= {"entities": rows, "edges": edges}
        with contextlib.suppress(OSError):  # a read-only store: the next process resolves again
            self.path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(self.path, json.dumps(data, separators=(",", ":")))


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
    edges: list[Edge] = []
    for entity in sorted(entities.values(), key=lambda e: e.id):
        for rel, key in entity.edges():
            targets = by_key.get((entity.project, key)) or (
                [key] if key in entities or key in catalog else [""]
            )
            edges.extend(Edge(entity.id, rel, key, t) for t in sorted(targets) if t != entity.id)
    return _assemble(head, entities, edges)


def _assemble(head: str | None, entities: dict[str, Entity], edges: list[Edge]) -> Graph:
    """The graph of these entities and edges (edges in their sources' id order)."""
    graph = Graph(head, entities, {i: [] for i in sorted(entities)})
    for edge in edges:
        graph.out[edge.source].append(edge)
        if edge.target:
            graph.into.setdefault(edge.target, []).append(edge)
    return graph
