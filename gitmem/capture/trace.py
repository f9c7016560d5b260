"""Provenance: the archived transcript messages a captured record came from.

A captured record's `source` is `transcript:<session>#<first>-<last>`, the lines of the
session's archive (`.gitmem/transcripts/`, redacted as archived) it was distilled from;
`trace` reads those lines back. A record written by hand has another source (or none) and so
no provenance; an archive that is gone (the cache is local and disposable, and another
device never had it) is said plainly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from gitmem.capture import queue
from gitmem.capture.transcript import Message, message_of, read_lines
from gitmem.store.record import Record

__all__ = ["Trace", "parse_source", "trace"]

_SOURCE = re.compile(r"^transcript:(?P<session>.+)#(?P<first>[0-9]+)-(?P<last>[0-9]+)$")
MESSAGE_CHARS = 20_000  # of one message printed; the archive keeps it whole


@dataclass(frozen=True)
class Trace:
    record: str
    source: str
    session: str = ""
    first: int = 0
    last: int = 0
    messages: tuple[Message, ...] = ()
    problem: str = ""  # why there are no messages ("": there are)


def parse_source(source: str) -> tuple[str, int, int] | None:
    found = _SOURCE.match(source.strip())
    if found is None:
        return None
    return found["session"], int(found["first"]), int(found["last"])


def trace(cache: Path, record: Record) -> Trace:
    parsed = parse_source(record.source)
    if parsed is None:
        said = f" (its source says {record.source!r})" if record.source else ""
        return Trace(
            record.id,
            record.source,
            problem=f"{record.id} has no provenance: it was not captured from a session{said}",
        )
    session, first, last = parsed
    base = Trace(record.id, record.source, session, first, last)
    state = queue.find(cache, session)
    archive = state.archive_path(cache) if state is not None else None
    if archive is None or not archive.is_file():
        where = "on this device (archives stay local, in the store's .gitmem/)"
        return replace(base, problem=f"the transcript of session {session} is not archived {where}")
    return Trace(record.id, record.source, session, first, last, _messages(archive, first, last))


def _messages(archive: Path, first: int, last: int) -> tuple[Message, ...]:
    found: list[Message] = []
    for number, _, raw in read_lines(archive, 0, 0):
        if number > last:
            break
        if number < first or raw is None:
            continue
        try:
            message = message_of(json.loads(raw))
        except ValueError:
            continue
        if message is not None:
            role, text = message
            found.append(Message(number, role, text[:MESSAGE_CHARS]))
    return tuple(found)
