"""Each record's context: what the records next to it lend it, and each source's document
(docs/search.md, "Context and the source prior").

A record's neighbours are HEAD's active records (a superseded one is nobody's neighbour, a
forgotten one is gone): the `WINDOW` records before it and after it in its `source` ordered by
(created, id), of those written within `SPAN` seconds of it, then the records it links to and
that link to it, the `PARTNERS` most recent (by created, then id; a record linked by
thousands would otherwise carry all their leads). Each lends its lead:
the first `LEAD_WORDS` words of its title, abstract and body. A record that is not active, or
has no neighbours, has no context. A source's document is the leads of all its records, in
that order. Both are pure functions of HEAD's active records, which this table holds (SQLite,
`neighbours.sqlite` beside the catalog): a full build and a catch-up make them by the same
queries, so they agree.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.index.stamp import readonly_uri

if TYPE_CHECKING:
    from gitmem.store.record import Record

__all__ = ["FILE", "LEAD_WORDS", "PARTNERS", "SPAN", "WINDOW", "Neighbours", "lead"]

FILE = "neighbours.sqlite"
WINDOW = 2  # records before and after in the same source
# ... written within this many seconds of it: a burst of work (a conversation, what a session
# left behind), not the same source's notes hours or days apart (docs/search.md, "Context").
SPAN = 30 * 60
LEAD_WORDS = 40
PARTNERS = 8  # link partners that lend their lead: the most recent
_SUPERSEDED = "superseded"

_TABLES = """
CREATE TABLE IF NOT EXISTS facts (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, created INTEGER NOT NULL, lead TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS links (src TEXT NOT NULL, dst TEXT NOT NULL, PRIMARY KEY (src, dst));
"""
_INDEXES = """
CREATE INDEX IF NOT EXISTS facts_in_order ON facts (source, created, id);
CREATE INDEX IF NOT EXISTS links_to ON links (dst);
"""


def lead(record: Record) -> str:
    """What a record lends its neighbours: its first LEAD_WORDS words."""
    # maxsplit: the words past the lead stay one piece, not split (a long body, a build's cost)
    words = " ".join((record.title, record.abstract, record.body)).split(None, LEAD_WORDS)
    return " ".join(words[:LEAD_WORDS])


class Neighbours:
    """The active records' facts that contexts are made of. Writes wait for `commit`."""

    def __init__(
        self, path: Path, *, create: bool = False, readonly: bool = False, indexed: bool = True
    ) -> None:
        """`indexed` False (with `create`: a full build's new table) leaves the indexes for
        `index()` to make once the rows are in: one sort, not a B-tree insert per row."""
        if not create and not path.is_file():
            raise sqlite3.DatabaseError(f"{path} is missing")
        if readonly:
            self._db = sqlite3.connect(readonly_uri(path), uri=True, check_same_thread=False)
        else:
            self._db = sqlite3.connect(path, check_same_thread=False)
            # As the catalog's: a process that dies loses nothing committed.
            self._db.execute("PRAGMA synchronous=NORMAL")
        if create:
            self._db.execute("PRAGMA journal_mode=WAL")  # readers go on while a catch-up writes
            self._db.executescript(_TABLES)
        if (create and indexed) or not (create or readonly):
            # A writer's open makes them if a build left them unmade (a no-op otherwise):
            # without them each catch-up's window query scans the table (~0.2 s an id at 300k).
            self.index()

    def close(self) -> None:
        self._db.close()

    def index(self) -> None:
        """Make the indexes the queries use (if not made yet)."""
        self._db.executescript(_INDEXES)

    def commit(self) -> None:
        self._db.commit()

    def put(self, records: Iterable[Record], *, new: bool = False) -> None:
        """Add (or replace) `records`; those not active are dropped instead. `new`: none of
        them is here yet (a full build's, each id once), so there is nothing to drop first; an id
        there after all fails the build (sqlite3.IntegrityError), as the catalog would."""
        records = list(records)
        if not new:
            self.drop([r.id for r in records])
        active = [r for r in records if r.status != _SUPERSEDED]
        insert = "INSERT" if new else "INSERT OR REPLACE"
        self._db.executemany(
            f"{insert} INTO facts (id, source, created, lead) VALUES (?, ?, ?, ?)",
            [(r.id, r.source, int(r.created.timestamp()), lead(r)) for r in active],
        )
        self._db.executemany(
            "INSERT OR IGNORE INTO links (src, dst) VALUES (?, ?)",
            [(r.id, dst) for r in active for dst in r.links if dst != r.id],
        )

    def drop(self, ids: Sequence[str]) -> None:
        self._db.executemany("DELETE FROM facts WHERE id = ?", [(i,) for i in ids])
        self._db.executemany("DELETE FROM links WHERE src = ?", [(i,) for i in ids])

    def around(self, ids: Iterable[str]) -> set[str]:
        """The active records whose context holds one of `ids` (the same relation both ways)."""
        out: set[str] = set()
        for rid in ids:
            out.update(self._window(rid))
            out.update(self._partners(rid))
        return out

    def sources(self, ids: Iterable[str]) -> dict[str, str]:
        """The source of each of `ids` that is active and has one."""
        wanted = list(dict.fromkeys(ids))
        out: dict[str, str] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            query = f"SELECT id, source FROM facts WHERE source != '' AND id IN ({marks})"
            out.update(self._db.execute(query, part).fetchall())
        return out

    def all_sources(self) -> list[str]:
        rows = self._db.execute("SELECT DISTINCT source FROM facts WHERE source != ''")
        return sorted(source for (source,) in rows)

    def context(self, rid: str) -> str:
        """The text `rid`'s neighbours lend it ("" if none, or if it is not active)."""
        return "\n".join(self._leads(self.near(rid)))

    def every_context(self) -> dict[str, str]:
        """Every active record's `context` (tests compare it with `context`'s)."""
        context_of, ids = self.contexts()
        return {rid: context_of(rid) for rid in ids}

    def contexts(self) -> tuple[Callable[[str], str], list[str]]:
        """`context` as a function of the id, from two reads of the tables (what a full build
        needs: the same as asking `context` of each, tested, at a fraction of the queries),
        and the active ids. It holds every lead, not every context (those are up to
        2 x WINDOW + PARTNERS leads each): a build makes each context as it writes it."""
        rows = self._db.execute(
            "SELECT id, source, lead, created FROM facts ORDER BY source, created, id"
        )
        leads: dict[str, str] = {}
        created: dict[str, int] = {}
        runs: dict[str, list[str]] = {}
        where: dict[str, int] = {}
        for rid, source, text, at in rows:
            leads[rid], created[rid] = text, at
            run = runs.setdefault(source, [])
            where[rid] = len(run)
            run.append(rid)
        sources = {rid: source for source, run in runs.items() for rid in run}
        partners: dict[str, set[str]] = {}
        for src, dst in self._db.execute("SELECT src, dst FROM links"):
            if src != dst and src in leads and dst in leads:
                partners.setdefault(src, set()).add(dst)
                partners.setdefault(dst, set()).add(src)

        def context_of(rid: str) -> str:
            if rid not in leads:
                return ""
            source, at = sources[rid], where[rid]
            run = runs[source] if source else []
            window = [
                n
                for n in (*run[max(0, at - WINDOW) : at], *run[at + 1 : at + 1 + WINDOW])
                if abs(created[n] - created[rid]) <= SPAN
            ]
            near = [*window, *_latest(partners.get(rid, set()) - set(window), created)]
            return "\n".join(leads[n] for n in near if leads[n])

        return context_of, list(leads)

    def near(self, rid: str) -> list[str]:
        """The records whose leads make `rid`'s context, in that order ([] if not active)."""
        if not self._created([rid]):
            return []
        window = self._window(rid)
        partners = self._partners(rid)
        return [*window, *_latest(set(partners) - set(window) - {rid}, partners)]

    def source_text(self, source: str) -> str:
        """The document of `source`: the leads of its records, in order ("" if none)."""
        rows = self._db.execute(
            "SELECT lead FROM facts WHERE source = ? ORDER BY created, id", (source,)
        )
        return "\n".join(text for (text,) in rows)

    def _window(self, rid: str) -> list[str]:
        """The WINDOW active records before `rid` and after it in its source, in order, of
        those within SPAN seconds of it. A symmetric relation: in a run ordered by time, the
        records within SPAN of `rid` are next to it, so one farther off never displaces one
        nearer (what `around` relies on)."""
        row = self._db.execute("SELECT source, created FROM facts WHERE id = ?", (rid,)).fetchone()
        if row is None or not row[0]:
            return []
        source, created = row
        before = self._db.execute(
            "SELECT id FROM facts WHERE source = ? AND (created, id) < (?, ?) AND created >= ?"
            " ORDER BY created DESC, id DESC LIMIT ?",
            (source, created, rid, created - SPAN, WINDOW),
        ).fetchall()
        after = self._db.execute(
            "SELECT id FROM facts WHERE source = ? AND (created, id) > (?, ?) AND created <= ?"
            " ORDER BY created, id LIMIT ?",
            (source, created, rid, created + SPAN, WINDOW),
        ).fetchall()
        return [i for (i,) in reversed(before)] + [i for (i,) in after]

    def _partners(self, rid: str) -> dict[str, int]:
        """The active records `rid` links to or that link to it, each with its created time
        (`rid` active or not: a record that leaves still names the partners whose context it
        leaves). All of them, not only the PARTNERS that lend `rid` their lead: a change of
        any may change which those are."""
        rows = self._db.execute(
            "SELECT dst FROM links WHERE src = ? UNION SELECT src FROM links WHERE dst = ?",
            (rid, rid),
        ).fetchall()
        found = {i for (i,) in rows} - {rid}
        return self._created(found)

    def _created(self, ids: Iterable[str]) -> dict[str, int]:
        """The created time of each of `ids` that is active."""
        wanted = sorted(ids)
        out: dict[str, int] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(f"SELECT id, created FROM facts WHERE id IN ({marks})", part)
            out.update(rows.fetchall())
        return out

    def _leads(self, ids: Sequence[str]) -> list[str]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self._db.execute(f"SELECT id, lead FROM facts WHERE id IN ({marks})", list(ids))
        leads = dict(rows.fetchall())
        return [leads[i] for i in ids if leads.get(i)]


def _latest(ids: set[str], created: dict[str, int]) -> list[str]:
    """The PARTNERS most recent of `ids`, newest first (ties by id): the same in a full build
    and in a catch-up."""
    return sorted(ids, key=lambda i: (-created[i], i))[:PARTNERS]
