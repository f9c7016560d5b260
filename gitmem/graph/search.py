"""`gitmem graph search`: hybrid recall restricted to entities, weighted toward meaning.

People ask for work in other words than its files use ("users get logged out" for "login
sessions expire"), so the semantic half gets the larger share of a plain query
(SEMANTIC_WEIGHT); a query that names an identifier (`task-12`, `auth-revamp`) leans on
keywords, as recall's does, less so. Both set by benchmarks/tune_graph_search.py's small
measurement on the test fixture (docs/benchmarks.md).
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

# Set by benchmarks/tune_graph_search.py on the test fixture (docs/benchmarks.md, "Work graph"):
SEMANTIC_WEIGHT = 0.8  # the semantic half's share of a hybrid graph search (recall's: 0.2)
IDENTIFIER_WEIGHT = 0.3  # ... of one whose query names an identifier, task-12 (recall's: 0.1)

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
