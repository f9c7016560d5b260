"""The graph's edges as recall's context: the records one edge away from a record (issue 21).

For an entity: what its frontmatter and wiki links name (resolved: entities, or any record
whose id a file names) and every entity that names it. For any other record: its own `links`
and `supersedes`/`superseded_by`, and the entities that name it. Dangling edges are left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitmem.graph.model import load_graph

if TYPE_CHECKING:
    from gitmem.store.reader import Reader

__all__ = ["neighbours"]


def neighbours(store: Reader, record_id: str) -> list[str]:
    """Ids of the records linked to `record_id` or linking to it through the work graph, in a
    stable order (what it names first, then what names it); [] for an unknown id."""
    graph = load_graph(store)
    found = graph.neighbours(record_id)
    if record_id not in graph.entities:
        record = store.previous(record_id)
        if record is not None:
            own = [*record.links, *record.supersedes, *filter(None, [record.superseded_by])]
            found = [*own, *found]
    return [i for i in dict.fromkeys(found) if i != record_id]
