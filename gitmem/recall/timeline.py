"""The timeline: every version of every record that history reachable from HEAD holds, with the
moment it was written, kept as a disposable cache next to the search index.

Layout under the store's `.gitmem/`:

    timeline/timeline.sqlite   commits, events, versions, vector rows, the stamp
    timeline/vectors.f32       chunk vectors of every version (with an embedding model)
    timeline.lock              held by whoever catches it up or rebuilds it

"Written" is a commit's effective time, and the events are what each commit wrote: see
gitmem.recall.commitwalk, which finds both.

Versions are keyed by blob and parsed once ever; they depend on content only, so a history
that was rewritten (not a fast-forward) re-walks the commits and keeps every version. For the
same reason a version whose blob the HEAD index holds takes its vectors from there (one text,
one model: the same vectors) instead of being embedded again: in a store whose records are
mostly written once, that is nearly all of them. No keyword index is kept: a view of the past
indexes its own records, with their context as it stood (gitmem.recall.pastcontext).
"""

from __future__ import annotations

import bisect
import json
import os
import secrets
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path, PurePosixPath
from typing import Any

from gitmem.errors import GitmemError
from gitmem.index.build import IndexDoc
from gitmem.index.catchup import embed_docs
from gitmem.index.entries import Entry
from gitmem.index.model import ModelRef
from gitmem.recall.commitwalk import is_record, walk
from gitmem.recall.timelinedb import (
    TABLES,
    Connection,
    DatabaseError,
    chunks,
    connect,
    entries_of,
    marks,
    meta_value,
    next_row,
    write,
)
from gitmem.recall.versions import (
    COLUMNS,
    MADE_VERSION,
    Made,
    make,
    pack,
    parse_versions,
    unpack,
)
from gitmem.store.lock import cache_lock
from gitmem.store.reader import RECORDS_DIR
from gitmem.store.store import Store

__all__ = ["Donor", "Timeline"]

# 3: no keyword index of its own (`text/`), which 2 had and nothing read. 4: versions' Made.
SCHEMA_VERSION = "4"
_LOCK_TIMEOUT = 300.0
_BATCH = 2000
_COPIED = 50_000  # vector rows copied at a time
# Views' Made are kept _KEEP_BATCH a transaction (~20 ms), each waiting at most _KEEP_WAIT s
# for the database: a catch-up (which waits up to _LOCK_TIMEOUT) is never held up for long.
_KEEP_BATCH = 1000
_KEEP_WAIT = 0.1
_KEEP = "INSERT OR REPLACE INTO made VALUES (?, ?)"
_RESTAMP = (
    ("DELETE FROM made", [()]),
    ("INSERT OR REPLACE INTO meta VALUES ('made', ?)", [(MADE_VERSION,)]),
)

# Every event in the order versions follow: (effective time, generation, commit id), and in one
# commit a write after a deletion (a record that moved to another type's directory).
_COMMITS = "SELECT oid, t, gen FROM commits"
_ORDERED = "SELECT t, id, path, blob FROM events ORDER BY t, gen, oid, blob IS NOT NULL"
# The vectors another cache holds of some blobs (blob -> its record's id): (blob, its number of
# rows) in order, those rows' numbers and the matrix they index (gitmem.index.index.Index).
Donor = Callable[[Mapping[str, str]], tuple[list[tuple[str, int]], list[int], Any]]


class Timeline:
    """Call `ensure_current` before reading; readers then see the state it caught up to."""

    def __init__(self, store: Store, model: ModelRef | None, donor: Donor | None = None) -> None:
        """`donor`: where the vectors of versions already embedded (at HEAD) are copied from,
        with the same model."""
        self.store = store
        self.model = model
        self.donor = donor
        self.root = store.cache_dir / "timeline"
        self.notices: list[str] = []
        self._db: Connection | None = None
        self._rows: tuple[str, dict[str, list[int]], dict[int, str]] | None = None
        # The events in order and the valid versions' entries, read once per HEAD: a view is
        # then a scan in memory (a few ms at 10k events) rather than a query per moment.
        self._log: tuple[str, list[int], list[tuple[str, str, str | None]]] | None = None
        self._entries: dict[str, Entry] = {}
        self._built = 0  # inode of the database file opened: a rebuild swaps in a new one
        # Counts the caches opened: a rebuild numbers vector rows anew, so what a reader kept
        # from an earlier one (asof's views) is stale.
        self.opened = 0

    @property
    def model_name(self) -> str:
        return "" if self.model is None else self.model.name

    # --- keeping up with HEAD ----------------------------------------------------------------

    def ensure_current(self) -> None:
        head = self.store.head() or ""
        if self._load() is not None or self.meta("head") != head:
            with self.locked():
                self.current_locked()

    def current_locked(self) -> None:
        """`ensure_current` by a caller already holding `locked()`: the cache opened is then
        the one on disk (another process's rebuild followed) and caught up with HEAD."""
        problem = self._load()
        if problem is not None:
            if self.root.exists():
                self.notices.append(f"time-travel cache {problem}; rebuilding it from git")
            self._rebuild()
        elif self.meta("head") != (self.store.head() or ""):
            self._catch_up(self._connection(), self.root)

    def rebuild(self) -> None:
        with self.locked():
            self._rebuild()

    def _load(self) -> str | None:
        path = self.root / "timeline.sqlite"
        if self._db is not None:
            # Another process may have swapped in a rebuilt cache: follow it.
            if self._built == _inode(path):
                return None
            self._close()
        if not path.exists():
            return "is missing"
        try:
            db = connect(path)
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        except DatabaseError as exc:
            return f"is unreadable ({exc})"
        if meta.get("schema") != SCHEMA_VERSION or "head" not in meta:
            db.close()
            return "is of another version or unfinished"
        if meta.get("model") != self.model_name:
            db.close()
            return f"was built with {meta.get('model') or 'no model'}"
        if _size(self.root / "vectors.f32") < int(meta.get("vector_bytes", "0")):
            db.close()
            return "has lost vectors"
        self._db, self._built = db, _inode(path)
        self.opened += 1
        return None

    def _close(self) -> None:
        if self._db is not None:
            self._db.close()
        self._db, self._rows, self._log = None, None, None
        self._entries.clear()

    def locked(self) -> AbstractContextManager[None]:
        """Held by whoever changes the cache (its span index too)."""
        return cache_lock(
            self.store.cache_dir / "timeline.lock", _LOCK_TIMEOUT, "the time-travel cache"
        )

    def _rebuild(self) -> None:
        """Build in a new directory and swap it in, so a reader never sees half of it."""
        self._close()
        # Under the lock, any other build directory was left by a process that died.
        for stale in [
            *self.root.parent.glob("timeline.new-*"),
            *self.root.parent.glob("timeline.old-*"),
        ]:
            shutil.rmtree(stale, ignore_errors=True)
        fresh = self.root.with_name(f"timeline.new-{os.getpid()}")
        fresh.mkdir(parents=True)
        db = connect(fresh / "timeline.sqlite")
        try:
            db.executescript(TABLES)
            db.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [
                    ("schema", SCHEMA_VERSION),
                    ("model", self.model_name),
                    ("made", MADE_VERSION),
                    # Each build numbers the vector rows anew: what points at them (the span
                    # index) records the build it was made from.
                    ("build", secrets.token_hex(8)),
                ],
            )
            self._catch_up(db, fresh)
        except BaseException:
            db.close()
            shutil.rmtree(fresh, ignore_errors=True)
            raise
        db.close()
        old = self.root.with_name(f"timeline.old-{os.getpid()}")
        if self.root.exists():
            os.replace(self.root, old)
        os.replace(fresh, self.root)
        shutil.rmtree(old, ignore_errors=True)
        if self._load() is not None:
            raise GitmemError(f"the time-travel cache at {self.root} could not be rebuilt")

    def _catch_up(self, db: Connection, root: Path) -> None:
        """Walk only the commits not seen yet; a history that was rewritten is walked again."""
        repo = self.store.repo
        head = self.store.head()
        old = meta_value(db, "head") or ""
        rewritten = old != "" and (
            head is None or repo.resolve(old) is None or not repo.is_ancestor(old, head)
        )
        known = {} if rewritten else {oid: (t, gen) for oid, t, gen in db.execute(_COMMITS)}
        commits, events = walk(repo, head, known)
        seen = {b for (b,) in db.execute("SELECT blob FROM versions")}
        fresh = sorted({e[2] for e in events if e[2] is not None} - seen)
        versions, docs = parse_versions(repo, fresh)
        vector_rows = self._embed(db, root, docs)
        # One transaction: a catch-up that dies leaves the cache as it was (what it appended to
        # the vector file is cut off next time). It holds timeline.lock: it may wait for views.
        db.execute(f"PRAGMA busy_timeout = {int(_LOCK_TIMEOUT * 1000)}")
        db.execute("BEGIN IMMEDIATE")
        try:
            if rewritten:
                db.execute("DELETE FROM commits")
                db.execute("DELETE FROM events")
                # What the span index (gitmem.recall.spans) replayed is no longer history.
                epoch = int(meta_value(db, "epoch") or "0") + 1
                db.execute("INSERT OR REPLACE INTO meta VALUES ('epoch', ?)", (str(epoch),))
            db.executemany(f"INSERT INTO versions VALUES ({marks(COLUMNS)})", versions)
            db.executemany("INSERT INTO rows VALUES (?, ?)", vector_rows)
            db.executemany("INSERT INTO commits VALUES (?, ?, ?)", commits)
            db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", events)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('head', ?)", (head or "",))
            # What _load checks the vector file against: one cut short is rebuilt.
            written = str(_size(root / "vectors.f32"))
            db.execute("INSERT OR REPLACE INTO meta VALUES ('vector_bytes', ?)", (written,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._rows = None

    def _embed(self, db: Connection, root: Path, docs: Sequence[IndexDoc]) -> list[Any]:
        """The vector rows of `docs` (row, blob): copied from the donor where it has them,
        embedded otherwise."""
        vectors = self._vectors(root)
        if vectors is None:
            return []
        from gitmem.index.vectors import VectorFile

        assert isinstance(vectors, VectorFile) and self.model is not None
        vectors.truncate(next_row(db))  # rows an update left before dying
        rows: list[tuple[int, str]] = []
        wanted = {d.blob: PurePosixPath(d.path).stem for d in docs}  # a record's id names its file
        given, numbers, matrix = self.donor(wanted) if self.donor and docs else ([], [], None)
        if given and matrix is not None:
            row = vectors.rows()
            for start in range(0, len(numbers), _COPIED):  # in parts: 1M rows are 1 GB
                vectors.append(matrix[numbers[start : start + _COPIED]])
            for blob, count in given:
                rows.extend((n, blob) for n in range(row, row + count))
                row += count
        copied = {blob for blob, _ in given}
        rest = [d for d in docs if d.blob not in copied]
        for start in range(0, len(rest), _BATCH):
            found = embed_docs(self.model.get(), vectors, rest[start : start + _BATCH])
            rows.extend((row, blob) for blob, numbers in found.items() for row in numbers)
        return rows

    def _vectors(self, root: Path | None = None) -> Any:
        if self.model is None:
            return None
        from gitmem.index.vectors import VectorFile

        return VectorFile((root or self.root) / "vectors.f32", self.model.dim)

    def _connection(self) -> Connection:
        assert self._db is not None
        return self._db

    @property
    def db(self) -> Connection:
        """The cache's database, for gitmem.recall.timelinedb's reads (after ensure_current)."""
        return self._connection()

    # --- reading -----------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        return meta_value(self._connection(), key)

    def stamp(self, oid: str) -> tuple[int, int] | None:
        """(effective time, generation) of a commit reachable from HEAD; None otherwise."""
        row = self._connection().execute("SELECT t, gen FROM commits WHERE oid = ?", (oid,))
        found = row.fetchone()
        return None if found is None else (int(found[0]), int(found[1]))

    def span(self) -> tuple[int, int] | None:
        """The effective times of the first commit and of HEAD; None for an empty store."""
        head = self.meta("head")
        first = self._connection().execute("SELECT min(t) FROM commits").fetchone()[0]
        stamp = None if not head else self.stamp(head)
        return None if first is None or stamp is None else (int(first), stamp[0])

    def at_time(self, t: int) -> dict[str, Entry]:
        """Every record (superseded ones included) as it stood at effective time `t`: the
        latest event of each id at or before `t`; a deletion or an invalid version is absent."""
        times, events = self.events()
        latest: dict[str, tuple[str, str | None]] = {}
        for rid, path, blob in events[: bisect.bisect_right(times, t)]:
            latest[rid] = (path, blob)
        return self._known(latest.values())

    def at_commit(self, oid: str) -> dict[str, Entry]:
        """Every record in a commit's own tree."""
        self.events()
        files = self.store.repo.files(oid, RECORDS_DIR)
        return self._known((path, blob) for path, blob in files if is_record(path))

    def entry(self, path: str, blob: str | None) -> Entry | None:
        """The entry of a valid version at its own path (what a view holds); None otherwise."""
        entry = None if blob is None else self._entries.get(blob)
        return entry if entry is not None and entry.path == path else None

    def _known(self, found: Iterable[tuple[str, str | None]]) -> dict[str, Entry]:
        """Entries of the (path, blob) pairs that hold a valid record at its own path."""
        out: dict[str, Entry] = {}
        for path, blob in found:
            entry = self.entry(path, blob)
            if entry is not None:
                out[entry.id] = entry
        return out

    def events(self) -> tuple[list[int], list[tuple[str, str, str | None]]]:
        """Every event's effective time, and the events (id, path, blob or None), in the order
        versions follow (read once per HEAD)."""
        head = self.meta("head") or ""
        if self._log is None or self._log[0] != head:
            db = self._connection()
            rows = db.execute(_ORDERED).fetchall()
            times = [int(row[0]) for row in rows]
            events = [(str(row[1]), str(row[2]), row[3]) for row in rows]
            fresh = {blob for _, _, blob in events if blob} - self._entries.keys()
            self._entries.update(entries_of(db, fresh))
            self._log = (head, times, events)
        return self._log[1], self._log[2]

    def fields(self, blobs: Iterable[str]) -> dict[str, tuple[dict[str, Any], str]]:
        """blob -> (the version's frontmatter as JSON data, a hash of its body)."""
        out: dict[str, tuple[dict[str, Any], str]] = {}
        for part in chunks(sorted(set(blobs))):
            query = f"SELECT blob, fields, body FROM versions WHERE blob IN ({marks(len(part))})"
            for blob, fields, body in self._connection().execute(query, part):
                out[blob] = (json.loads(fields), body)
        return out

    def made(self, blobs: Sequence[str]) -> dict[str, Made]:
        """Each valid version's record and keyword fields (gitmem.recall.versions.Made): as
        an earlier view kept them, else made now and kept for the next. On a connection of
        its own: a view asks from recall's keyword thread while the semantic half reads. A
        damaged row is made again and replaced; rows made another way (MADE_VERSION) are
        dropped first, or, while the cache is busy, neither read nor added to."""
        db = connect(self.root / "timeline.sqlite", _KEEP_WAIT)
        try:
            out: dict[str, Made] = {}
            current = meta_value(db, "made") == MADE_VERSION or write(db, *_RESTAMP)
            for part in chunks(blobs if current else []):
                query = f"SELECT blob, data FROM made WHERE blob IN ({marks(len(part))})"
                for blob, data in db.execute(query, part):
                    found = unpack(blob, data)
                    if found is not None:
                        out[blob] = found
            fresh = [blob for blob in blobs if blob not in out]
            for blob in fresh:
                out[blob] = make(self.store.repo, blob)
            for start in range(0, len(fresh) if current else 0, _KEEP_BATCH):
                kept = [(blob, pack(out[blob])) for blob in fresh[start : start + _KEEP_BATCH]]
                if not write(db, (_KEEP, kept)):
                    break  # busy (a catch-up) or failing (a full disk): kept another time
        finally:
            db.close()
        return out

    def vector_rows(self) -> tuple[dict[str, list[int]], dict[int, str]]:
        """blob -> its vector rows, and row -> blob (read once per caught-up state)."""
        head = self.meta("head") or ""
        if self._rows is None or self._rows[0] != head:
            by_blob: dict[str, list[int]] = {}
            owner: dict[int, str] = {}
            for row, blob in self._connection().execute("SELECT row, blob FROM rows"):
                by_blob.setdefault(blob, []).append(row)
                owner[row] = blob
            self._rows = (head, by_blob, owner)
        return self._rows[1], self._rows[2]

    def matrix(self) -> Any:
        vectors = self._vectors()
        return None if vectors is None else vectors.matrix(next_row(self._connection()))

    def size(self) -> int:
        """Bytes the cache takes on disk."""
        return sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file())


def _inode(path: Path) -> int:
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return -1


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
