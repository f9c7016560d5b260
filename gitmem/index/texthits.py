"""Naming and ranking the hits of a keyword search (gitmem.index.textindex runs the search).

A hit is named by its catalog key and blob fingerprint (fast fields) when every document has
one, or else by its stored document; `top` keeps fetching while a filter rejects too many hits
or hits tie with the last one kept, so that equal scores at the cut go by id. The objects are
tantivy's searchers, queries and addresses, passed in: this module does not import tantivy
(gitmem.index.textindex is its one owner; tantivy ships no types, so nothing is lost by `Any`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gitmem.index import textdoc
from gitmem.index.textdoc import TextHit

__all__ = ["MAX_FETCH", "Namer", "Unkeyed", "id_blob", "keyed", "keys", "stored", "top"]

TIE_PAD = 16  # hits fetched beyond `limit`, so that equal scores at the cut go by id
MAX_FETCH = 1024


class Unkeyed(Exception):
    """A document without a key: the search names its hits from the stored documents."""


# What names a search's hits: for each address, (id, blob, key), or None to leave it out.
Namer = Callable[[Any, list[Any]], list[tuple[str, str, int] | None]]


def stored(searcher: Any, addresses: list[Any]) -> list[Any]:
    return [(*id_blob(searcher.doc(address)), -1) for address in addresses]


def keyed(resolve: Callable[[list[int]], dict[int, tuple[str, str]]]) -> Namer:
    def name(searcher: Any, addresses: list[Any]) -> list[Any]:
        marks = [mark for mark in keys(searcher, addresses) if mark is not None]
        if len(marks) < len(addresses):
            raise Unkeyed
        found = resolve([key for key, _ in marks]) if marks else {}
        return [
            None
            if (known := found.get(key)) is None or textdoc.fingerprint(known[1]) != mark
            else (known[0], "", key)
            for key, mark in marks
        ]

    return name


def keys(searcher: Any, addresses: list[Any]) -> list[tuple[int, int] | None]:
    """Each document's (key, blob fingerprint), None where it has none."""
    if not addresses:
        return []
    keys = searcher.fast_field_values("key", addresses)
    prints = searcher.fast_field_values("print", addresses)
    return [
        None if key is None or mark is None else (int(key), int(mark))
        for key, mark in zip(keys, prints, strict=True)
    ]


def top(
    searcher: Any,
    query: Any,
    limit: int,
    allowed: frozenset[str] | None,
    name: Namer,
) -> list[TextHit]:
    """Top `limit` by (score desc, id): fetch more hits while `allowed` (or `name`) rejects
    too many, or while hits tie with the last one kept (up to `MAX_FETCH`)."""
    total = searcher.num_docs
    want = limit + TIE_PAD
    if allowed is not None:  # about enough hits to find `want` allowed ones
        want = want * total // len(allowed) + want
    want = min(want, total)
    seen: dict[tuple[int, int], tuple[str, str, int] | None] = {}
    while True:
        hits = searcher.search(query, want, count=False).hits
        fresh = [a for _, a in hits if (a.segment_ord, a.doc) not in seen]
        named = name(searcher, fresh)
        seen.update(zip([(a.segment_ord, a.doc) for a in fresh], named, strict=True))
        rows = []
        for score, address in hits:
            hit = seen[(address.segment_ord, address.doc)]
            if hit is not None and (allowed is None or hit[0] in allowed):
                rows.append(TextHit(hit[0], hit[1], float(score), hit[2]))
        rows.sort(key=lambda hit: (-hit.score, hit.id))
        if len(hits) < want or want >= total:
            return rows[:limit]
        if len(rows) >= limit and (rows[limit - 1].score > hits[-1][0] or want >= MAX_FETCH):
            return rows[:limit]
        want = min(want * 4, total)


def id_blob(doc: Any) -> tuple[str, str]:
    return str(doc.get_first("id")), str(doc.get_first("blob"))
