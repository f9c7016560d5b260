"""One replay of the timeline's events into the span index (gitmem.recall.spans): each
effective second's records whose version or context changed close their open span and open a
new one, with its document, in the caller's transaction."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gitmem.index.context import source_doc
from gitmem.index.entries import SUPERSEDED
from gitmem.index.neighbours import Neighbours
from gitmem.index.textdoc import TextFields, keyed_fields, text_fields, with_context
from gitmem.recall.timeline import Timeline
from gitmem.recall.timelinedb import Connection, chunks, marks, rows_of
from gitmem.recall.versions import Made

__all__ = ["Replay"]

_BULK = 2000  # a moment touching more records makes every context from one read of the facts


@dataclass(frozen=True)
class _Open:
    key: int
    blob: str
    context: str  # its digest


class Replay:
    """One replay's moments, writing spans' rows in the caller's transaction and their
    documents through the keyword indexes' `filling` functions."""

    def __init__(
        self,
        db: Connection,
        facts: Neighbours,
        timeline: Timeline,
        add_text: Callable[[Sequence[TextFields], int], None],
        add_source: Callable[[Sequence[TextFields], int], None],
    ) -> None:
        self.db, self.facts, self.timeline = db, facts, timeline
        self.add_text, self.add_source = add_text, add_source
        self.ahead = 0  # events read ahead up to here
        self._made: dict[str, Made] = {}
        self.next = {
            table: int(db.execute(f"SELECT coalesce(max(key), -1) + 1 FROM {table}").fetchone()[0])
            for table in ("spans", "sources")
        }

    def moment(self, t: int, latest: dict[str, tuple[str, str | None]]) -> None:
        """The events of one effective second: each id's last one counts (as in a view)."""
        timeline, facts = self.timeline, self.facts
        now = {rid: timeline.entry(path, blob) for rid, (path, blob) in latest.items()}
        was = self._open("spans", "id", now)
        changed = sorted(
            rid
            for rid, entry in now.items()
            if (None if entry is None else entry.blob) != (w.blob if (w := was.get(rid)) else None)
        )
        if not changed:
            return
        made = self._versions([b for r in changed if (b := _blob(now[r]))])
        around = facts.around(changed)
        names = set(facts.sources(changed).values())
        facts.drop([rid for rid in changed if now[rid] is None])
        facts.put([made[b][0] for r in changed if (b := _blob(now[r]))])
        around |= facts.around(changed)
        names |= set(facts.sources(changed).values())
        affected = sorted(set(changed) | around)
        opened = {**self._open("spans", "id", [r for r in affected if r not in was]), **was}
        context = _contexts(facts, affected)
        fresh: list[tuple[str, str, str]] = []
        for rid in affected:
            old = opened.get(rid)
            blob = _blob(now[rid]) if rid in now else (old.blob if old else None)
            text = context(rid) if blob else ""
            if old is not None and (old.blob, old.context) == (blob, _digest(text)):
                continue
            if old is not None:
                self._close("spans", old.key, t)
            if blob is not None:
                fresh.append((rid, blob, text))
        self._write(t, fresh, made)
        self._sources(t, sorted(names))

    def _write(self, t: int, fresh: list[tuple[str, str, str]], made: dict[str, Made]) -> None:
        """Open a span for each (id, blob, context) and add its document."""
        made = {**made, **self._versions([blob for _, blob, _ in fresh if blob not in made])}
        vectors = rows_of(self.timeline.db, [blob for _, blob, _ in fresh])
        rows, docs = [], []
        for rid, blob, text in fresh:
            key = self._key("spans")
            record, (fields, stored) = made[blob]
            active = int(record.status != SUPERSEDED)
            first, count = _run(vectors.get(blob, []))
            rows.append((key, rid, blob, _digest(text), record.source, active, t, first, count))
            docs.append(with_context(_named(fields, stored, f"{rid}@{key}", key, blob), text))
        self.db.executemany("INSERT INTO spans VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)", rows)
        self.add_text(docs, -1)

    def read_ahead(self, events: Sequence[tuple[str, str, str | None]]) -> None:
        """Keep the Made of the valid versions `events` write (dropping those kept before)."""
        timeline = self.timeline
        self._made = timeline.made(
            sorted({b for _, path, blob in events if (b := _blob(timeline.entry(path, blob)))})
        )

    def _versions(self, blobs: Sequence[str]) -> dict[str, Made]:
        """The Made of `blobs`: read ahead, or read now (a neighbour's older version)."""
        missing = [blob for blob in blobs if blob not in self._made]
        found = self.timeline.made(missing) if missing else {}
        return {**{blob: self._made[blob] for blob in blobs if blob in self._made}, **found}

    def _sources(self, t: int, names: Sequence[str]) -> None:
        """A span for each source document that changed, as the HEAD index's sources' index
        holds it (gitmem.index.context), keyed by span."""
        was = self._open("sources", "name", names)
        rows, docs = [], []
        for name in names:
            body = self.facts.source_text(name)
            digest, old = _digest(body), was.get(name)
            if old is not None and old.blob == digest:
                continue
            if old is not None:
                self._close("sources", old.key, t)
            if body:
                key = self._key("sources")
                rows.append((key, name, digest, t))
                docs.append(text_fields(source_doc(f"{name}@{key}", body, key)))
        self.db.executemany("INSERT INTO sources VALUES (?, ?, ?, ?, NULL)", rows)
        self.add_source(docs, -1)

    def _open(self, table: str, name: str, ids: Iterable[str]) -> dict[str, _Open]:
        """The open span of each of `ids` (a source's digest stands in its blob's place)."""
        columns = "key, id, blob, context" if table == "spans" else "key, name, digest, ''"
        out: dict[str, _Open] = {}
        for part in chunks(sorted(ids)):
            query = (
                f"SELECT {columns} FROM {table} WHERE t1 IS NULL AND {name} IN ({marks(len(part))})"
            )
            for key, rid, blob, context in self.db.execute(query, part):
                out[rid] = _Open(key, blob, context)
        return out

    def _close(self, table: str, key: int, t: int) -> None:
        self.db.execute(f"UPDATE {table} SET t1 = ? WHERE key = ?", (t, key))

    def _key(self, table: str) -> int:
        key = self.next[table]
        self.next[table] = key + 1
        return key


def _named(fields: dict[str, Any], stored: bytes, name: str, key: int, blob: str) -> TextFields:
    """A version's document named `name` and keyed by its span: the fields, and the stored
    source (JSON whose first item is the id: replaced without parsing the body again)."""
    first = json.dumps([fields["id"]], ensure_ascii=False).encode()[:-1]
    named = json.dumps([name], ensure_ascii=False).encode()[:-1] + stored[len(first) :]
    return {**fields, "id": name, **keyed_fields(key, blob)}, named


def _run(rows: list[int]) -> tuple[int, int]:
    """A version's vector rows as (first, count): appended together, they are contiguous
    (gitmem.index.catchup); (-1, 0) otherwise, for the semantic half to look them up."""
    if rows and rows[-1] - rows[0] + 1 == len(rows):
        return rows[0], len(rows)
    return -1, 0


def _contexts(facts: Neighbours, ids: Sequence[str]) -> Callable[[str], str]:
    """Each record's context: asked one by one, or for a moment that touches many (a first
    import), made from one read of the facts (the same text: gitmem.index.neighbours)."""
    return facts.contexts()[0] if len(ids) > _BULK else facts.context


def _blob(entry: object) -> str | None:
    return getattr(entry, "blob", None)


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()
