"""What `gitmem stats` reports, and what `gitmem report` draws: counts, growth, history, health.

Everything is read from what is already kept, so a large store answers in about a second:
the records at HEAD from the search index's catalog (one row each, no record is parsed), the
writes from the commits' `Gitmem-Operation` trailers (forgets and supersedes exist only in
history), sync from the state the last sync left (no network), the index's health from its
stamp, the work graph, proposals and recall statistics from gitmem.insight.work.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from gitmem.agents.project import TAG_PREFIX as PROJECT_PREFIX
from gitmem.index.entries import Entry

if TYPE_CHECKING:
    from gitmem.api import Store
    from gitmem.insight.work import Work

__all__ = ["TOP_TAGS", "store_stats", "week_of"]

TOP_TAGS = 20


def week_of(moment: datetime) -> datetime:
    """The Monday 00:00 UTC that starts `moment`'s ISO week."""
    day = moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return day - timedelta(days=day.weekday())


def store_stats(
    store: Store,
    since: datetime | None = None,
    entries: list[Entry] | None = None,
    work: Work | None = None,
) -> dict[str, Any]:
    """The whole answer of `gitmem stats --json`; `since` limits growth and the history counts
    to what was written from then on (the counts of records are always of HEAD)."""
    from gitmem.insight.status import store_status
    from gitmem.insight.work import graph_stats, proposal_stats, read_work, recall_stats
    from gitmem.sync.state import sync_status

    found = store.index().every() if entries is None else entries
    status = store_status(store)
    work = read_work(store) if work is None else work
    return {
        "store": str(store.root),
        "head": status["head"],
        "generated": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "since": None if since is None else since.isoformat().replace("+00:00", "Z"),
        "records": _counts(found),
        "growth": _growth(found, since),
        "top_tags": _top_tags(found),
        "history": _history(store, since),
        "sync": sync_status(store),
        "index": status["index"],
        "graph": graph_stats(work),
        "proposals": proposal_stats(work),
        "recall": recall_stats(store, found),
    }


def _counts(entries: list[Entry]) -> dict[str, Any]:
    def by(key: Any) -> dict[str, int]:
        counted = Counter(key(e) for e in entries)
        return dict(sorted(counted.items(), key=lambda kv: (-kv[1], kv[0])))

    projects: Counter[str] = Counter()
    for entry in entries:
        for tag in entry.tags:
            if tag.startswith(PROJECT_PREFIX):
                projects[tag[len(PROJECT_PREFIX) :]] += 1
    return {
        "total": len(entries),
        "active": sum(e.status != "superseded" for e in entries),
        "by_type": by(lambda e: e.type),
        "by_agent": by(lambda e: e.agent or "(none)"),
        "by_scope": by(lambda e: e.scope or "(none)"),
        "by_status": by(lambda e: e.status or "active"),
        "by_project": dict(sorted(projects.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def _growth(entries: list[Entry], since: datetime | None) -> list[dict[str, Any]]:
    """Records added per ISO week (by their `created`), every week from the first to the last
    present, empty weeks included, so that a chart's bars are evenly spaced."""
    start = None if since is None else since.timestamp()
    chosen = [e for e in entries if start is None or e.created >= start]
    if not chosen:
        return []
    weeks: dict[datetime, list[Entry]] = {}
    for entry in chosen:
        weeks.setdefault(week_of(datetime.fromtimestamp(entry.created, UTC)), []).append(entry)
    out = []
    week, last = min(weeks), max(weeks)
    while week <= last:
        members = weeks.get(week, [])
        out.append(
            {
                "week": week.strftime("%G-W%V"),
                "start": week.date().isoformat(),
                "added": len(members),
                "by_type": dict(Counter(e.type for e in members)),
                "by_agent": dict(Counter(e.agent or "(none)" for e in members)),
            }
        )
        week += timedelta(days=7)
    return out


def _top_tags(entries: list[Entry]) -> list[list[Any]]:
    counted = Counter(tag for e in entries for tag in e.tags if not tag.startswith(PROJECT_PREFIX))
    return [[tag, n] for tag, n in sorted(counted.items(), key=lambda kv: (-kv[1], kv[0]))][
        :TOP_TAGS
    ]


def _history(store: Store, since: datetime | None) -> dict[str, Any]:
    """Commits by the operation their trailer names (a commit without one: `other`)."""
    operations: Counter[str] = Counter()
    first = last = None
    commits = 0
    for commit in store.repo.walk(store.head()):
        if since is not None and commit.committed < since:
            continue
        commits += 1
        operations[commit.trailers().get("Gitmem-Operation", "other")] += 1
        first = commit.committed if first is None else min(first, commit.committed)
        last = commit.committed if last is None else max(last, commit.committed)

    def stamp(moment: datetime | None) -> str | None:
        if moment is None:
            return None
        return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")

    return {
        "commits": commits,
        "by_operation": dict(sorted(operations.items(), key=lambda kv: (-kv[1], kv[0]))),
        "supersedes": operations.get("supersede", 0),
        "forgets": operations.get("forget", 0),
        "first": stamp(first),
        "last": stamp(last),
    }
