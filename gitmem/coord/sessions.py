"""The session log: `gitmem log ACTION SUMMARY` and `gitmem sessions` (docs/coord.md).

Two kinds of entries, both `context` records tagged `session`, so SessionStart's block and
recall see them like any memory:
- the hooks' session records (gitmem.agents.session): one per agent session, updated in place
  as it goes on (files touched, the host's summary);
- `gitmem log` entries: one record (one commit) per thing an agent says it did, tagged `log`,
  `action:<ACTION>` and `device:<device>`, with the files it names.
`gitmem sessions` lists both, newest first, from the month folders the window can reach.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from gitmem.coord.records import months_since, of_type, updated_since, utc_now
from gitmem.coord.sessiontag import ACTION_PREFIX, DEVICE_PREFIX, LOG_TAG, SESSION_TAG
from gitmem.errors import UsageError
from gitmem.store.record import Record

if TYPE_CHECKING:
    from gitmem.store.store import Store

__all__ = ["Session", "log", "sessions"]

TYPE = "context"
FILES_MAX = 200
_ACTION_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


@dataclass(frozen=True)
class Session:
    """One entry of the log: a hook's session record or a `gitmem log` entry."""

    record: Record
    kind: str  # "session" (a hook's) or "log"
    action: str
    device: str


def _tagged(record: Record, prefix: str) -> str:
    return next((t[len(prefix) :] for t in record.tags if t.startswith(prefix)), "")


def _entry(record: Record) -> Session:
    kind = LOG_TAG if LOG_TAG in record.tags else SESSION_TAG
    return Session(record, kind, _tagged(record, ACTION_PREFIX), _tagged(record, DEVICE_PREFIX))


def log(
    store: Store,
    me: str,
    action: str,
    summary: str,
    *,
    files: tuple[str, ...] = (),
    project: str = "",
    device: str = "",
    now: datetime | None = None,
) -> tuple[Session, str | None]:
    """One log entry (one commit). ACTION is one lower-case word (fixed, reviewed, ...)."""
    verb = action.strip().lower()
    if not _ACTION_RE.match(verb):
        raise UsageError(
            f'"{action}" is not an action: give one lower-case word, e.g. fixed, reviewed, '
            "deployed (letters, digits, - or _)"
        )
    if not summary.strip():
        raise UsageError("gitmem log needs a summary: say what you did, in a sentence")
    if len(files) > FILES_MAX:
        raise UsageError(f"gitmem log takes at most {FILES_MAX} files; name the main ones")
    text = summary.strip() + "\n"
    if files:
        text += "\n## Files\n\n" + "".join(f"- {f}\n" for f in files)
    first = " ".join(summary.split())
    title = f"{verb}: {first}"
    if len(title) > 72:
        title = title[:71].rsplit(" ", 1)[0] + "…"
    tags = [SESSION_TAG, LOG_TAG, ACTION_PREFIX + verb] + (
        [DEVICE_PREFIX + device] if device else []
    )
    result = store.record(
        TYPE,
        text,
        title=title,
        tags=tags,
        agent=me,
        scope="agent",
        source=f"gitmem log on {device}" if device else "gitmem log",
        fields={"project": project} if project else None,
        now=now or utc_now(),
    )
    return _entry(result.record), result.commit


def sessions(
    store: Store,
    *,
    last: timedelta = timedelta(days=7),
    agent: str = "",
    now: datetime | None = None,
    limit: int = 0,
) -> list[Session]:
    """Session records and log entries updated within `last`, newest first."""
    moment = now or utc_now()
    since = moment - last
    found = [
        _entry(r)
        for r in of_type(store, TYPE, months_since(since, moment), keep=updated_since(since))
        if SESSION_TAG in r.tags and r.updated >= since and (not agent or r.agent == agent)
    ]
    found.sort(key=lambda s: (s.record.updated, s.record.id), reverse=True)
    return found[:limit] if limit else found
