"""The catalog's records as values: a record as the catalog knows it (`Entry`), its row in the
records table, and which entries a recall may return (`Filter`), as SQL over that table and as
a test of an entry already fetched: the two say the same."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from gitmem.index.stamp import TAG_SEP

if TYPE_CHECKING:
    from gitmem.store.record import Record

__all__ = ["SUPERSEDED", "Entry", "Filter", "entry_from_row", "entry_row"]

SUPERSEDED = "superseded"  # the status a Filter leaves out unless asked


@dataclass(frozen=True)
class Filter:
    """Which records a recall may return. Empty fields do not filter."""

    types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()  # every one of them
    agent: str = ""
    scope: str = ""
    since: int | None = None  # created at or after (Unix seconds)
    until: int | None = None  # created at or before
    include_superseded: bool = False
    exclude: frozenset[str] = frozenset()  # ids never to return

    def sql(self) -> tuple[str, list[object]]:
        clauses: list[str] = []
        args: list[object] = []
        if self.types:
            clauses.append(f"type IN ({','.join('?' * len(self.types))})")
            args.extend(self.types)
        for tag in self.tags:
            clauses.append("instr(tags, ?) > 0")
            args.append(f"{TAG_SEP}{tag}{TAG_SEP}")
        if self.agent:
            clauses.append("agent = ?")
            args.append(self.agent)
        if self.scope:
            clauses.append("scope = ?")
            args.append(self.scope)
        if self.since is not None:
            clauses.append("created >= ?")
            args.append(self.since)
        if self.until is not None:
            clauses.append("created <= ?")
            args.append(self.until)
        if not self.include_superseded:
            clauses.append("status != 'superseded'")
        if self.exclude:
            clauses.append(f"id NOT IN ({','.join('?' * len(self.exclude))})")
            args.extend(sorted(self.exclude))
        return (" AND ".join(clauses) or "1"), args

    def admits(self, entry: Entry) -> bool:
        """The same test as `sql`, on an entry already fetched."""
        return not (
            entry.id in self.exclude
            or (not self.include_superseded and entry.status == SUPERSEDED)
            or (self.types and entry.type not in self.types)
            or (self.tags and not set(self.tags) <= set(entry.tags))
            or (self.agent and entry.agent != self.agent)
            or (self.scope and entry.scope != self.scope)
            or (self.since is not None and entry.created < self.since)
            or (self.until is not None and entry.created > self.until)
        )

    @property
    def status_only(self) -> bool:
        """Whether it asks nothing but the status, which the row facts know (RowFacts)."""
        return self == Filter(include_superseded=self.include_superseded)

    @property
    def narrow(self) -> bool:
        """Whether it can exclude more than superseded records."""
        return bool(
            self.types
            or self.tags
            or self.agent
            or self.scope
            or self.since is not None
            or self.until is not None
            or self.exclude
        )


class Entry(NamedTuple):
    """A record as the catalog knows it (a tuple: recall builds thousands per second)."""

    id: str
    path: str
    blob: str
    type: str
    title: str
    abstract: str
    tags: tuple[str, ...]
    agent: str
    scope: str
    status: str
    created: int  # Unix seconds, UTC
    updated: int
    weight: float


def entry_row(record: Record, path: str, blob: str) -> tuple[object, ...]:
    return (
        record.id,
        path,
        blob,
        record.type,
        record.title,
        record.abstract,
        TAG_SEP + TAG_SEP.join(record.tags) + TAG_SEP if record.tags else "",
        record.agent,
        record.scope,
        record.status,
        int(record.created.timestamp()),
        int(record.updated.timestamp()),
        record.weight,
    )


def entry_from_row(row: tuple[Any, ...]) -> Entry:
    tags = row[6]
    return Entry._make((*row[:6], tuple(tags[1:-1].split(TAG_SEP)) if tags else (), *row[7:]))
