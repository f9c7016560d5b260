"""The work graph's part of `gitmem graph handoff` (built by gitmem.coord): what changed in the
graph since a moment, and what is blocked now."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gitmem.graph.blockers import find_blockers
from gitmem.graph.model import load_graph

if TYPE_CHECKING:
    from gitmem.store.reader import Reader

__all__ = ["graph_part"]


def graph_part(store: Reader, since: datetime, *, now: datetime | None = None) -> dict[str, Any]:
    """{"entities_updated": entities whose record changed at or after `since`, newest first;
    "blockers": every blocked entity with its chain, as `gitmem graph blockers --json`}."""
    moment = now or datetime.now(UTC).replace(microsecond=0)
    graph = load_graph(store)
    updated = sorted(
        (e for e in graph.entities.values() if e.updated is not None and e.updated >= since),
        key=lambda e: (e.updated, e.id),
        reverse=True,
    )
    return {
        "entities_updated": [e.summary() for e in updated],
        "blockers": [b.to_dict(moment) for b in find_blockers(store, graph, now=moment)],
    }
