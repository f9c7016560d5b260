"""Choosing and ordering records for `list` (and anything else that filters records)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gitmem.store.record import Record

__all__ = ["Filters", "select"]


@dataclass(frozen=True)
class Filters:
    type_: str | None = None
    tags: tuple[str, ...] = ()  # all of them must be present
    agent: str | None = None
    scope: str | None = None
    status: str = "active"  # active | superseded | all

    def match(self, record: Record) -> bool:
        if self.type_ and record.type != self.type_:
            return False
        if self.tags and not set(self.tags) <= set(record.tags):
            return False
        if self.agent and record.agent != self.agent:
            return False
        if self.scope and record.scope != self.scope:
            return False
        return self.status == "all" or record.status == self.status


def select(
    records: Iterable[Record],
    filters: Filters,
    *,
    sort: str = "created",
    reverse: bool = False,
    limit: int = 0,
) -> list[Record]:
    """Matching records; dates newest first and text A-Z, unless `reverse`. Ties by id."""
    chosen = [r for r in records if filters.match(r)]
    if sort in ("created", "updated"):
        chosen.sort(key=lambda r: (getattr(r, sort), r.id), reverse=not reverse)
    else:
        chosen.sort(key=lambda r: (getattr(r, sort).lower(), r.id), reverse=reverse)
    return chosen[:limit] if limit else chosen
