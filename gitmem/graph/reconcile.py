"""`gitmem entity reconcile`: the graph made to agree with the files again.

- An entity of this project whose file is gone is forgotten (one commit each, as `gitmem
  forget`; history keeps it, `--as-of` still finds it).
- The `document` reference records of the indexer before the work graph (one per watched
  file, tagged `document`) are forgotten too: the files they pointed at are entities now.
- Dangling edges (to a key no entity or record has) are listed; with `prune` they are taken
  out of the entity records, in one commit. The file still names them: when it changes and is
  indexed again, they come back (the file is the truth).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitmem.errors import RecordInvalid
from gitmem.graph.entity import EDGE_FIELDS
from gitmem.graph.indexer import Watched
from gitmem.graph.model import Edge, load_graph
from gitmem.store.recordfile import parse

if TYPE_CHECKING:
    from gitmem.store.store import Store

__all__ = ["ReconcileReport", "reconcile"]

DOCUMENT_TAG = "document"  # the old indexer's reference records (docs/graph.md)


@dataclass(frozen=True)
class ReconcileReport:
    forgotten: tuple[dict[str, str], ...]  # entities whose file is gone
    retired: tuple[dict[str, str], ...]  # the old indexer's document references
    dangling: tuple[Edge, ...]
    pruned: bool
    commits: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "forgotten": list(self.forgotten),
            "retired_documents": list(self.retired),
            "dangling": [e.to_dict() for e in self.dangling],
            "pruned": self.pruned,
            "commits": list(self.commits),
        }


def reconcile(
    store: Store, where: Watched, *, prune: bool = False, agent: str = ""
) -> ReconcileReport:
    commits: list[str] = []
    forgotten: list[dict[str, str]] = []
    graph = load_graph(store)
    for entity in sorted(graph.entities.values(), key=lambda e: e.id):
        if entity.project != where.project or not entity.path:
            continue
        if (where.root / entity.path).exists():
            continue
        result = store.forget(
            entity.id, reason=f"entity reconcile: {entity.path} is gone", agent=agent
        )
        forgotten.append({"id": entity.id, "path": entity.path, "title": entity.title})
        commits.extend([result.commit] if result.commit else [])
    retired: list[dict[str, str]] = []
    for rid, url in _old_documents(store, where.project):
        result = store.forget(
            rid, reason=f"entity reconcile: {url} is an entity now (docs/graph.md)", agent=agent
        )
        retired.append({"id": rid, "path": url})
        commits.extend([result.commit] if result.commit else [])
    graph = load_graph(store)
    mine = [e.id for e in graph.entities.values() if e.project == where.project]
    dangling = tuple(graph.dangling(mine))
    if prune and dangling:
        gone: dict[str, set[tuple[str, str]]] = {}
        for edge in dangling:
            gone.setdefault(edge.source, set()).add((edge.rel, edge.key))
        items = []
        for rid, pairs in sorted(gone.items()):
            record = store.get(rid)
            fields = dict(record.extra)
            for rel in EDGE_FIELDS:
                value = fields.get(rel)
                if value is None:
                    continue
                kept = tuple(
                    k
                    for k in ((value,) if isinstance(value, str) else value)
                    if (rel, k) not in pairs
                )
                if rel == "parent":
                    fields[rel] = kept[0] if kept else ""
                else:
                    fields[rel] = kept
            fields = {k: v for k, v in fields.items() if v not in ("", ())}
            items.append(record.with_(fields=fields).to_dict())
        result = store.import_records(
            items, agent=agent, source_name="entity reconcile --prune", secrets="allow"
        )
        commits.extend([result.commit] if result.commit else [])
    return ReconcileReport(tuple(forgotten), tuple(retired), dangling, prune, tuple(commits))


def _old_documents(store: Store, project: str) -> list[tuple[str, str]]:
    head = store.head()
    wanted = f"project:{project}" if project else ""
    found: list[tuple[str, str]] = []
    for _, blob in store.repo.files(head, "records/reference"):
        try:
            record = parse(store.repo.blob(blob).decode("utf-8"))
        except (UnicodeDecodeError, RecordInvalid):
            continue
        if DOCUMENT_TAG in record.tags and (not wanted or wanted in record.tags):
            url = record.extra.get("url", "")
            found.append((record.id, url if isinstance(url, str) else ""))
    return found
