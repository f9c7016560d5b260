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

It is caught up under timeline.lock by replaying the events past the last moment replayed and
before HEAD's effective second (a moment at or after it is HEAD's view; writes may still land
on it). A history rewritten (the timeline's epoch moved), events at or before that moment (a
merge bringing older work) or a timeline of another build (its vector rows numbered anew: the
stamp names the build replayed) rebuild it, in a new directory swapped in; so does a replay
that died part-way (its stamp still says `writing`). The replay itself: gitmem.recall.replay.
"""

from __future__ import annotations

import bisect
import os
import shutil
from pathlib import Path

from gitmem.index.neighbours import FILE, Neighbours
from gitmem.index.textindex import TextIndex, TextIndexCorrupt
from gitmem.recall.replay import Replay
from gitmem.recall.timeline import Timeline
from gitmem.recall.timelinedb import Connection, DatabaseError, connect, count_events, meta_value

__all__ = ["Spans", "spans_of"]

DIR = "spans"
_VERSION = "3"
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
    root = timeline.root / DIR
    same = held is not None and held.inode == _inode(root / "spans.sqlite")
    if held is not None and same and _fits(held, timeline) == "current":
        _follow(held)
        return held
    with timeline.locked():
        # Another process may have rebuilt the timeline since it was caught up, numbering its
        # vector rows anew: replay only what the cache on disk holds (`build` then tells).
        timeline.current_locked()
        same = held is not None and held.inode == _inode(root / "spans.sqlite")
        spans = held if same else _open(root)
        fit = "rebuild" if spans is None else _fits(spans, timeline)
        if spans is not None and fit == "current":
            _follow(spans)
            return spans
        if spans is not None and fit == "catch up":
            _replay(spans, timeline, int(spans.meta("position") or "0"))
            return spans
        if spans is not None and spans is not held:
            spans.close()
        return _rebuild(timeline, root)


def _fits(spans: Spans, timeline: Timeline) -> str:
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
        or meta.get("epoch") != (timeline.meta("epoch") or "0")
        or meta.get("build", "") != (timeline.meta("build") or "")
        or count_events(timeline.db, last) != position
    ):
        return "rebuild"
    # Nothing new before HEAD's second (what _replay stops at) but what `last` counted.
    upto = max(last, _until(timeline) - 1)
    return "current" if count_events(timeline.db, upto) == position else "catch up"


def _until(timeline: Timeline) -> int:
    """HEAD's effective second: a replay stops before it, since a moment at or after it is
    answered from HEAD's view (gitmem.recall.asof), and more writes may still land on it (two
    in one second, a clock behind), which would otherwise count as older work."""
    span = timeline.span()
    return 0 if span is None else span[1]


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


def _rebuild(timeline: Timeline, root: Path) -> Spans:
    """Built in a new directory and swapped in, so that a reader never sees half of it."""
    parent = root.parent
    for stale in [*parent.glob(f"{DIR}.new-*"), *parent.glob(f"{DIR}.old-*")]:
        shutil.rmtree(stale, ignore_errors=True)  # under the lock: left by a process that died
    fresh = parent / f"{DIR}.new-{os.getpid()}"
    stamp = [
        ("version", _VERSION),
        ("epoch", timeline.meta("epoch") or "0"),
        ("build", timeline.meta("build") or ""),  # the timeline's rows it points at
        ("position", "0"),
        ("last", "-1"),
    ]
    try:
        for part in ("text", "sources"):
            (fresh / part).mkdir(parents=True)
            TextIndex.create(fresh / part)
        db = connect(fresh / "spans.sqlite")
        db.executescript(TABLES)
        db.executemany("INSERT INTO meta VALUES (?, ?)", stamp)
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
    """Replay the events from `start` on before HEAD's second, a moment at a time, in one
    commit of each part; the stamp says `writing` meanwhile, so a replay that dies is rebuilt,
    not trusted."""
    times, events = timeline.events()
    stop = bisect.bisect_left(times, _until(timeline))
    db = spans.db
    db.execute("INSERT OR REPLACE INTO meta VALUES ('state', 'writing')")
    facts = Neighbours(spans.root / FILE, create=True)
    try:
        with spans.text.filling() as add_text, spans.sources.filling() as add_source:
            db.execute("BEGIN IMMEDIATE")
            try:
                replay = Replay(db, facts, timeline, add_text, add_source)
                i = start
                while i < stop:
                    if i >= replay.ahead:  # the next events' versions, read together
                        replay.read_ahead(events[i : i + _AHEAD])
                        replay.ahead = i + _AHEAD
                    end = bisect.bisect_right(times, times[i], i)
                    replay.moment(
                        times[i], {rid: (path, blob) for rid, path, blob in events[i:end]}
                    )
                    i = end
                if i > start:
                    db.executemany(
                        "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                        [("position", str(i)), ("last", str(times[i - 1]))],
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


def _inode(path: Path) -> int:
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return -1
