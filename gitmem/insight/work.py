"""What `gitmem stats` and the report show of the work graph, of consolidation's proposals and
of the recall statistics: read through those wings' own readers (gitmem.graph.model and
.blockers, gitmem.consolidate.proposals and .recallstats), never a second way of reading them.

Each is cheap at 10k records: the graph at HEAD comes from its blob-keyed cache, proposals are
the few files under proposals/, the recall log is one cache file.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gitmem.consolidate.proposals import Proposal, load_proposals
from gitmem.consolidate.recallstats import read_stats
from gitmem.graph.blockers import Blocked, find_blockers
from gitmem.graph.model import Graph, load_graph
from gitmem.index.entries import Entry

if TYPE_CHECKING:
    from gitmem.store.reader import Reader

__all__ = ["Work", "graph_stats", "proposal_stats", "read_work", "recall_stats"]

TOP_RECALLED = 10


@dataclass(frozen=True)
class Work:
    graph: Graph
    blocked: list[Blocked]  # longest blocked first
    proposals: list[Proposal]  # every one at HEAD, in id order
    now: datetime


def read_work(store: Reader, now: datetime | None = None) -> Work:
    moment = now or datetime.now(UTC).replace(microsecond=0)
    graph = load_graph(store)
    blocked = find_blockers(store, graph, now=moment) if graph.entities else []
    return Work(graph, blocked, list(load_proposals(store)), moment)


def _ranked(counted: Counter[str]) -> dict[str, int]:
    return dict(sorted(counted.items(), key=lambda kv: (-kv[1], kv[0])))


def graph_stats(work: Work) -> dict[str, Any]:
    entities = work.graph.entities.values()
    return {
        "entities": len(work.graph.entities),
        "by_type": _ranked(Counter(e.type for e in entities)),
        "by_state": _ranked(Counter(e.state or "(none)" for e in entities)),
        "blocked": len(work.blocked),
        "dangling": len(work.graph.dangling()),
    }


def proposal_stats(work: Work) -> dict[str, Any]:
    return {
        "pending": sum(p.status == "pending" for p in work.proposals),
        "by_kind": _ranked(Counter(p.kind for p in work.proposals if p.status == "pending")),
        "decided": _ranked(Counter(p.status for p in work.proposals if p.status != "pending")),
    }


def recall_stats(store: Reader, entries: list[Entry]) -> dict[str, Any]:
    """From `.gitmem/recalls.log` (gitmem.consolidate.recallstats): how often recall ran and
    which records it returned; ids no longer at HEAD are left out of `top`."""
    stats = read_stats(store.cache_dir)
    if not stats.recalls:
        return {
            "recorded": False,
            "since": None,
            "recalls": 0,
            "recalled": 0,
            "never_recalled": sum(e.status != "superseded" for e in entries),
            "top": [],
            "note": "no recall recorded yet in this store's cache",
        }
    live = {e.id for e in entries}
    active = {e.id for e in entries if e.status != "superseded"}
    counted = [(rid, n) for rid, n in stats.count.items() if rid in live]
    counted.sort(key=lambda kv: (-kv[1], kv[0]))
    since = datetime.fromtimestamp(stats.since or 0, UTC).isoformat().replace("+00:00", "Z")
    return {
        "recorded": True,
        "since": since,
        "recalls": stats.recalls,
        "recalled": len(counted),
        "never_recalled": len(active - set(stats.count)),
        "top": [[rid, n] for rid, n in counted[:TOP_RECALLED]],
        "note": f"{stats.recalls} recalls since {since[:10]}, kept in the cache, never committed",
    }
