"""`gitmem graph search`: hybrid recall restricted to entities, weighted toward meaning.

Entity titles are short and their words are the ones people search with, but what a plan
*is about* is in its body: the semantic half gets the larger share (SEMANTIC_WEIGHT, also for
queries that name an identifier, where plain recall leans on keywords), set by
benchmarks/bench_graph.py's small measurement on the test fixture (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from gitmem.errors import UsageError
from gitmem.graph.entity import ENTITY_TYPE
from gitmem.graph.model import Graph
from gitmem.index.entries import Filter
from gitmem.recall.recall import DEFAULTS, Options
from gitmem.store.record import slugify

if TYPE_CHECKING:
    from gitmem.recall.recall import Result

__all__ = ["IDENTIFIER_WEIGHT", "SEMANTIC_WEIGHT", "graph_search", "search_options"]

SEMANTIC_WEIGHT = 0.7  # the semantic half's share of a hybrid graph search
IDENTIFIER_WEIGHT = 0.5  # ... of one whose query names an identifier (fix-login, PAY-12)

Recall = Callable[..., "Result"]


def search_options(
    semantic: float = SEMANTIC_WEIGHT, identifier: float = IDENTIFIER_WEIGHT
) -> Options:
    return replace(DEFAULTS, semantic_weight=semantic, identifier_weight=identifier)


def graph_search(
    recall: Recall,
    graph: Graph,
    query: str,
    *,
    types: Sequence[str] = (),
    days: float | None = None,
    limit: int = 10,
    mode: str = "hybrid",
    now: datetime,
    options: Options | None = None,
) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    """(hits as JSON-ready dicts, notices). `types`: entity types (plan, task); `days`: only
    entities updated within that many days."""
    if days is not None and days <= 0:
        raise UsageError(f"--days {days:g}: give a positive number of days")
    wanted = {slugify(t, "").replace("-", "_") for t in types if t.strip()}
    tags = (f"entity:{next(iter(wanted))}",) if len(wanted) == 1 else ()
    narrow = (bool(wanted) and not tags) or days is not None
    depth = min(1000, limit * 10) if narrow else limit
    result = recall(
        query,
        limit=depth,
        mode=mode,
        filter=Filter(types=(ENTITY_TYPE,), tags=tags),
        options=options or search_options(),
    )
    cutoff = None if days is None else now - timedelta(days=days)
    hits: list[dict[str, Any]] = []
    for hit in result.hits:
        entity = graph.entities.get(hit.id)
        if entity is None or (wanted and entity.type not in wanted):
            continue
        if cutoff is not None and (entity.updated is None or entity.updated < cutoff):
            continue
        hits.append({**entity.summary(), "score": round(hit.score, 6)})
        if len(hits) == limit:
            break
    return hits, result.notices
