"""What `gitmem status` reports about a store, as JSON-ready data."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gitmem.store import Store

__all__ = ["store_status"]


def store_status(store: Store) -> dict[str, Any]:
    counts: Counter[str] = Counter()
    superseded = 0
    for record in store.records():
        counts[record.type] += 1
        superseded += record.status == "superseded"
    head = store.head()
    return {
        "store": str(store.root),
        "branch": store.repo.branch(),
        "head": head,
        "records": sum(counts.values()),
        "superseded": superseded,
        "by_type": dict(sorted(counts.items())),
        "pending": [{"path": p.path, "state": p.state} for p in store.pending()],
    }
