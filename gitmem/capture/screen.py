"""Screening a distiller's answer before it is written (docs/capture.md): the records recall
finds related to a text, and the drafts kept once secrets (when refused), duplicates and
repeated keys are left out, each keyed draft superseding the current record of its key."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from gitmem.capture.dedup import Seen
from gitmem.capture.upsert import Keys
from gitmem.errors import GitmemError, NotFound
from gitmem.store.batch import Draft
from gitmem.store.record import Record
from gitmem.store.store import Store

__all__ = ["Related", "found", "screen"]

Related = Callable[[str, int], Sequence[str]]  # a query and a limit -> ids, best first


def found(store: Store, related: Related, query: str, limit: int) -> list[Record]:
    """The records `related` finds for `query`, best first; none when recall refuses."""
    try:
        ids = related(query, limit) if query else []
    except GitmemError:
        return []  # recall refused the query (or no index): distil without
    out: list[Record] = []
    for ident in ids:
        try:
            out.append(store.get(ident))
        except NotFound:
            continue
    return out


def screen(
    store: Store,
    drafts: Sequence[Draft],
    related: Related,
    seen: Seen,
    keys: Keys,
    secrets: str,
) -> tuple[list[Draft], int, tuple[str, ...]]:
    """The drafts to write: without secrets (when `secrets` is "refuse"), duplicates (of
    what `seen` holds, and what recall finds for each) and repeated keys; each keyed draft
    superseding the current record of its key. Also how many duplicates, and why each
    dropped draft was dropped."""
    kept: list[Draft] = []
    dropped: list[str] = []
    duplicates = 0
    keyed: set[tuple[str, tuple[str, ...]]] = set()
    for draft in drafts:
        text = f"{draft.title}\n{draft.abstract}\n{draft.body}"
        if secrets == "refuse" and _has_secret(draft):
            dropped.append(f"{draft.title!r}: holds a possible secret (capture.secrets = refuse)")
            continue
        for record in found(store, related, f"{draft.title} {draft.abstract}", 5):
            seen.add_record(record)
        key = keys.key_of(draft.type, draft.fields)
        if key and (draft.type, key) in keyed:
            dropped.append(f"{draft.title!r}: a second record with the same key in one answer")
            continue
        current = keys.current(draft.type, key)
        if current is not None:
            seen.add_record(current)
        if seen.duplicate(draft.type, draft.title, text) is not None:
            duplicates += 1
            continue
        if current is not None and not draft.supersedes:
            draft = replace(draft, supersedes=current.id)
        if draft.supersedes and any(d.supersedes == draft.supersedes for d in kept):
            dropped.append(f"{draft.title!r}: {draft.supersedes} is superseded by another record")
            continue
        if key:
            keyed.add((draft.type, key))
        seen.add(draft.type, draft.title, text, "")
        kept.append(draft)
    return kept, duplicates, tuple(dropped)


def _has_secret(draft: Draft) -> bool:
    from gitmem.store import guard

    values = [draft.title, draft.abstract, draft.body, *draft.tags]
    for value in draft.fields.values():
        values.extend([value] if isinstance(value, str) else value)
    return bool(guard.scan("\n".join(values)))
