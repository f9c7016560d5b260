"""The span index: one keyword index of every document a view of the past may search, each valid
over an interval of effective time, so that a view searches it instead of indexing its own
records (docs/time-travel.md, "The span index").

A record's keyword document at a moment is its version's text and its context then (its
neighbours' leads, gitmem.index.neighbours). A *span* is one such (version, context) pair over
[t0, t1): it opens when the record's version or context changes and closes at its next change
or its deletion (t1 NULL: still open). The spans are found by replaying the timeline's events in
order, one effective second at a time, on the same facts table the HEAD index's catch-up keeps:
at each moment the records whose version changed, and those whose context holds one of them
before or after, are looked at again. A source's document (the leads of its active records)
has spans the same way. Documents are never rewritten: a span that closes changes only its
row's t1, so a search at T names only the hits live at T (gitmem.recall.spanview). Keys are
given in the order spans open, so they grow with t0 (a replay goes forward in time, and a
catch-up only past the last second replayed): "t0 <= T" is "key below the first key opened
after T", which tantivy filters itself.

Layout, in the time-travel cache's directory:

    spans/spans.sqlite        the stamp, and every span's row (records' and sources')
    spans/neighbours.sqlite   the active records' facts at the last moment replayed
    spans/text/, sources/     keyword indexes of the spans' documents, keyed by span

It is caught up under timeline.lock by replaying the events past the last moment replayed. A
history rewritten (the timeline's epoch moved) or events at or before that moment (a merge
bringing older work) rebuild it, in a new directory swapped in; so does a replay that died
part-way (its stamp still says `writing`).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitmem.index.entries import SUPERSEDED
from gitmem.index.neighbours import FILE, Neighbours
from gitmem.index.textdoc import TextFields, keyed_fields, text_fields, with_context
from gitmem.index.textindex import TextDoc, TextIndex, TextIndexCorrupt
from gitmem.recall.timeline import Timeline
from gitmem.recall.timelinedb import (
    Connection,
    DatabaseError,
    chunks,
    connect,
    count_events,
    marks,
    meta_value,
    rows_of,
)
from gitmem.recall.versions import Made

__all__ = ["Spans", "spans_of"]

DIR = "spans"
_VERSION = "3"
_BULK = 2000  # a moment touching more records makes every context from one read of the facts
_AHEAD = 5000  # events whose versions' Made are read in one go (a store of one-record commits)
TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE spans (
    key INTEGER PRIMARY KEY, id TEXT NOT NULL, blob TEXT NOT NULL, context TEXT NOT NULL,
    source TEXT NOT NULL, active INTEGER NOT NULL, t0 INTEGER NOT NULL, t1 INTEGER,
    row0 INTEGER NOT NULL, nrows INTEGER NOT NULL
);
CREATE INDEX spans_by_id ON spans (id);
CREATE INDEX spans_by_start ON spans (t0);
CREATE TABLE sources (
    key INTEGER PRIMARY KEY, name TEXT NOT NULL, digest TEXT NOT NULL,
    t0 INTEGER NOT NULL, t1 INTEGER
);
CREATE INDEX sources_by_name ON sources (name);
CREATE INDEX sources_by_start ON sources (t0);
"""


class Spans:
    """An opened span index (see `spans_of` for one caught up with the timeline)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.db: Connection = connect(root / "spans.sqlite")
        self.inode = _inode(root / "spans.sqlite")
        self.seen: str | None = None  # the position whose documents the searchers see
        try:
            self.text = TextIndex.open(root / "text")
            self.sources = TextIndex.open(root / "sources")
        except TextIndexCorrupt:
            self.db.close()
            raise

    def meta(self, key: str) -> str | None:
        return meta_value(self.db, key)

    def close(self) -> None:
        self.db.close()


def spans_of(timeline: Timeline, held: Spans | None) -> Spans:
    """The span index of `timeline` as it stands (its `ensure_current` called first), caught up
    or rebuilt if it is not; `held`: the one this process opened before, reused if current.
    Finding it current reads two counts, never the events."""
    epoch = timeline.meta("epoch") or "0"
    root = timeline.root / DIR
    same = held is not None and held.inode == _inode(root / "spans.sqlite")
    if held is not None and same and _fits(held, timeline, epoch) == "current":
        _follow(held)
        return held
    with timeline.locked():
        spans = _open(root)
        fit = "rebuild" if spans is None else _fits(spans, timeline, epoch)
        if spans is not None and fit == "current":
            _follow(spans)
            return spans
        if spans is not None and fit == "catch up":
            _replay(spans, timeline, int(spans.meta("position") or "0"))
            return spans
        if spans is not None:
            spans.close()
        return _rebuild(timeline, root, epoch)


def _fits(spans: Spans, timeline: Timeline, epoch: str) -> str:
    """ "current", "catch up" (only events after the last moment replayed are new), or
    "rebuild"."""
    try:
        meta = dict(spans.db.execute("SELECT key, value FROM meta").fetchall())
    except DatabaseError:
        return "rebuild"
    position, last = int(meta.get("position", "-1")), int(meta.get("last", "-1"))
    if (
        meta.get("version") != _VERSION
        or meta.get("state") != "ok"
        or meta.get("epoch") != epoch
        or count_events(timeline.db, last) != position
    ):
        return "rebuild"
    return "current" if count_events(timeline.db) == position else "catch up"


def _follow(spans: Spans) -> None:
    """See the documents another process's catch-up committed."""
    position = spans.meta("position")
    if spans.seen != position:
        spans.text.reload()
        spans.sources.reload()
        spans.seen = position


def _open(root: Path) -> Spans | None:
    if not (root / "spans.sqlite").is_file():
        return None
    try:
        return Spans(root)
    except (DatabaseError, TextIndexCorrupt):
        return None


def _rebuild(timeline: Timeline, root: Path, epoch: str) -> Spans:
    """Built in a new directory and swapped in, so that a reader never sees half of it."""
    parent = root.parent
    for stale in [*parent.glob(f"{DIR}.new-*"), *parent.glob(f"{DIR}.old-*")]:
        shutil.rmtree(stale, ignore_errors=True)  # under the lock: left by a process that died
    fresh = parent / f"{DIR}.new-{os.getpid()}"
    try:
        for part in ("text", "sources"):
            (fresh / part).mkdir(parents=True)
            TextIndex.create(fresh / part)
        db = connect(fresh / "spans.sqlite")
        db.executescript(TABLES)
        db.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [("version", _VERSION), ("epoch", epoch), ("position", "0"), ("last", "-1")],
        )
        db.close()
        spans = Spans(fresh)
        try:
            _replay(spans, timeline, 0)
        finally:
            spans.close()
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise
    old = parent / f"{DIR}.old-{os.getpid()}"
    if root.exists():
        os.replace(root, old)
    os.replace(fresh, root)
    shutil.rmtree(old, ignore_errors=True)
    return Spans(root)


def _replay(spans: Spans, timeline: Timeline, start: int) -> None:
    """Replay the events from `start` on, a moment at a time, in one commit of each part; the
    stamp says `writing` meanwhile, so a replay that dies is rebuilt, not trusted."""
    times, events = timeline.events()
    db = spans.db
    db.execute("INSERT OR REPLACE INTO meta VALUES ('state', 'writing')")
    facts = Neighbours(spans.root / FILE, create=True)
    try:
        with spans.text.filling() as add_text, spans.sources.filling() as add_source:
            db.execute("BEGIN IMMEDIATE")
            try:
                replay = _Replay(db, facts, timeline, add_text, add_source)
                i = start
                while i < len(times):
                    if i >= replay.ahead:  # the next events' versions, read together
                        replay.read_ahead(events[i : i + _AHEAD])
                        replay.ahead = i + _AHEAD
                    end = bisect.bisect_right(times, times[i], i)
                    replay.moment(
                        times[i], {rid: (path, blob) for rid, path, blob in events[i:end]}
                    )
                    i = end
                last = str(times[-1]) if times else "-1"
                db.executemany(
                    "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                    [("position", str(len(times))), ("last", last)],
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        facts.commit()
    finally:
        facts.close()
    db.execute("INSERT OR REPLACE INTO meta VALUES ('state', 'ok')")
    spans.seen = spans.meta("position")


@dataclass(frozen=True)
class _Open:
    key: int
    blob: str
    context: str  # its digest


class _Replay:
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
                doc = TextDoc(f"{name}@{key}", digest, "", "", body, (), "source", key)
                docs.append(text_fields(doc))
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


def _inode(path: Path) -> int:
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return -1
