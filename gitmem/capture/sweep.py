"""Which other sessions a run takes at a boundary (the sweep, docs/capture.md).

A session's own boundary distills that session; nothing else would come back for the others.
So every automatic run (the detached one after a session's Stop, SessionEnd or PreCompact,
and the one SessionStart starts) also takes, after its own, the sessions whose turn has come:

- a failed span whose retry is due (capture.retry_after after the failure, doubled for each
  further failure): a distiller that was not logged in, or timed out, at SessionEnd;
- spans an earlier run left at capture.spans_per_run;
- a session whose archive has not grown for capture.quiet seconds: distilled to its end
  without the wait for capture.min_messages. Codex has no SessionEnd, and its Stop waits
  for that many new messages, so this is how the last messages of its sessions are taken.

A session still going on (its archive grows, nothing failed) is left to its own Stop.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from gitmem.capture.queue import SessionQueue
from gitmem.capture.settings import CaptureSettings
from gitmem.store.record import parse_time

__all__ = ["due", "retry_due"]


def retry_due(state: SessionQueue, now: datetime) -> bool:
    """Whether an automatic run may try the session's span at the watermark now (a stamp
    that does not parse does not hold it back)."""
    if not state.retry:
        return True
    try:
        return parse_time(state.retry) <= now
    except ValueError:
        return True


def due(
    cache: Path, states: Sequence[SessionQueue], settings: CaptureSettings, now: datetime
) -> list[SessionQueue]:
    """The sessions whose turn has come, in the order given (oldest first)."""
    found: list[SessionQueue] = []
    quiet_since = now.timestamp() - settings.quiet
    for state in states:
        if not state.waiting(cache):
            continue
        if state.retry:
            if retry_due(state, now):
                found.append(state)
            continue
        try:
            grew = state.archive_path(cache).stat().st_mtime
        except OSError:
            continue
        if state.more or grew <= quiet_since:
            found.append(state)
    return found
