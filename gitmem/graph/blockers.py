"""What is blocked, by what, and since when.

An entity is blocked when its state says so (`blocked`, `waiting`, `on-hold`, ...) or when it
names a blocker (`blocked_by`) and is not finished. Its chain is what blocks it, and what
blocks that, depth first, each entity once (a cycle is marked, not followed). How long it has
been blocked comes from git history: the commit that wrote the first version of its current
blocked run (a walk from HEAD that stops, for each entity, at the first older version that was
not blocked; a blob is parsed once however many commits share it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from gitmem.errors import RecordInvalid, UsageError
from gitmem.graph.entity import Entity, from_record
from gitmem.graph.model import Graph
from gitmem.store.record import format_time
from gitmem.store.recordfile import parse

if TYPE_CHECKING:
    from gitmem.store.reader import Reader

__all__ = [
    "BLOCKED_STATES",
    "DONE_STATES",
    "Blocked",
    "blocked_since",
    "find_blockers",
    "is_blocked",
]

BLOCKED_STATES = frozenset({"blocked", "waiting", "on-hold", "on_hold", "stalled", "stuck"})
DONE_STATES = frozenset(
    {"done", "complete", "completed", "closed", "finished", "shipped", "merged", "resolved"}
)
DROPPED_STATES = frozenset({"cancelled", "canceled", "abandoned", "dropped", "wontfix"})


def is_blocked(state: str, blocked_by: tuple[str, ...]) -> bool:
    if state in BLOCKED_STATES:
        return True
    return bool(blocked_by) and state not in DONE_STATES | DROPPED_STATES


@dataclass(frozen=True)
class Link:
    """One blocker in a chain: its depth (1: blocks the entity itself)."""

    key: str
    id: str  # "" when no entity has the key (dangling)
    title: str
    state: str
    depth: int
    cycle: bool = False  # already in this chain: not followed again

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "id": self.id,
            "title": self.title,
            "state": self.state,
            "depth": self.depth,
            "cycle": self.cycle,
        }


@dataclass(frozen=True)
class Blocked:
    entity: Entity
    updated: datetime
    since: datetime | None  # when the current blocked run began (None: history unknown)
    chain: tuple[Link, ...]

    def to_dict(self, now: datetime) -> dict[str, Any]:
        e = self.entity
        days = None if self.since is None else round((now - self.since).total_seconds() / 86400, 1)
        return {
            **e.summary(),
            "blocked_since": None if self.since is None else format_time(self.since),
            "blocked_days": days,
            "chain": [link.to_dict() for link in self.chain],
        }


def find_blockers(
    store: Reader, graph: Graph, *, stale_days: float = 0, now: datetime
) -> list[Blocked]:
    """Blocked entities not updated for `stale_days` days (0: all), longest blocked first."""
    if stale_days < 0:
        raise UsageError(f"--stale-days {stale_days:g}: give 0 or more days")
    cutoff = now - timedelta(days=stale_days)
    updated = _updated(graph)
    chosen = [
        e
        for e in graph.entities.values()
        if is_blocked(e.state, e.blocked_by) and updated[e.id] <= cutoff
    ]
    at_head = {e.id: e.updated for e in chosen if e.updated is not None}
    since = blocked_since(store, [e.id for e in chosen], at_head, graph.paths)
    found = [Blocked(e, updated[e.id], since.get(e.id), _chain(graph, e)) for e in chosen]
    found.sort(key=lambda b: (b.since or b.updated, b.entity.id))
    return found


def _updated(graph: Graph) -> dict[str, datetime]:
    floor = datetime.min.replace(tzinfo=UTC)
    return {rid: e.updated or floor for rid, e in graph.entities.items()}


def _chain(graph: Graph, entity: Entity) -> tuple[Link, ...]:
    links: list[Link] = []
    path = [entity.id]

    def follow(current: Entity, depth: int) -> None:
        for edge in graph.out.get(current.id, ()):
            if edge.rel != "blocked_by":
                continue
            target = graph.entities.get(edge.target)
            if target is None:
                links.append(Link(edge.key, edge.target, "", "", depth))
                continue
            cycle = target.id in path
            links.append(Link(edge.key, target.id, target.title, target.state, depth, cycle))
            if not cycle and depth < 16:
                path.append(target.id)
                follow(target, depth + 1)
                path.pop()

    follow(entity, 1)
    return tuple(links)


def blocked_since(
    store: Reader,
    ids: list[str],
    at_head: Mapping[str, datetime] | None = None,
    paths: Mapping[str, str] | None = None,
) -> dict[str, datetime]:
    """For each entity id, when the first version of its current blocked run was written (its
    `updated`), found by walking history back from HEAD. `at_head`: the `updated` of ids the
    caller knows to be blocked at HEAD (the graph's entities), whose HEAD version is then not
    parsed again. `paths`: their files at HEAD, when the caller has them (the graph does),
    so that the store's catalog of every record need not be read (~30-45 ms at 10k).

    Per commit, the folders of the entities still open are looked up first (one tree read): a
    folder whose tree is the one of the commit walked before holds the same blobs, so the same
    answer, and its files are not looked up one by one (802 blocked entities of 2k: 1.1 s
    before, 62 ms after; docs/benchmarks.md, "Coordination")."""
    catalog = paths if paths is not None and all(rid in paths for rid in ids) else store.catalog()
    open_ids = {rid: catalog[rid] for rid in ids if rid in catalog}
    earliest: dict[str, datetime] = {}  # the oldest blocked version seen so far
    versions: dict[str, tuple[bool, datetime | None]] = {}  # blob -> (blocked, written)
    last_folders: dict[str, str | None] = {}  # folder -> its tree id in the commit walked before
    repo = store.repo
    head = store.head()
    for commit in repo.walk(head):
        if not open_ids:
            break
        known = at_head if commit.id == head and at_head else {}
        earliest.update({rid: known[rid] for rid in open_ids if rid in known})
        folders = repo.entry_ids(commit.id, {path.rpartition("/")[0] for path in open_ids.values()})
        changed = {
            rid: path
            for rid, path in open_ids.items()
            if (folder := path.rpartition("/")[0]) not in last_folders
            or folders[folder] != last_folders[folder]
            or folders[folder] is None
        }
        changed = {rid: path for rid, path in changed.items() if rid not in known}
        last_folders = folders
        blobs = repo.entry_ids(commit.id, changed.values()) if changed else {}
        for rid, path in changed.items():
            blob = blobs[path]
            blocked, written = False, None
            if blob is not None:
                if blob not in versions:
                    versions[blob] = _version(repo.blob(blob))
                blocked, written = versions[blob]
            if blocked:
                earliest[rid] = written or commit.committed
            else:
                del open_ids[rid]
    return earliest


def _version(data: bytes) -> tuple[bool, datetime | None]:
    try:
        record = parse(data.decode("utf-8"))
    except (UnicodeDecodeError, RecordInvalid):
        return False, None
    entity = from_record(record)
    return is_blocked(entity.state, entity.blocked_by), record.updated
