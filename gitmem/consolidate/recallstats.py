"""Which records recall returned, and when: a log in the cache, never in the records.

A recall appends one line (`<unix seconds> <id> <id> ...`, best first) to
`.gitmem/recalls.log`; nothing is committed, so recalls create no history, and the log is as
disposable as the rest of the cache (deleting it only makes `gitmem sleep` see fewer recalls).
Appending is one small write; a log that cannot be written is skipped, never an error.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["LOG_NAME", "RecallStats", "note_recall", "read_stats"]

LOG_NAME = "recalls.log"
_TOGETHER = 3  # the hits of one recall counted as recalled together: its best three


def note_recall(cache_dir: Path, ids: list[str], when: float | None = None) -> None:
    if not ids:
        return
    line = f"{int(time.time() if when is None else when)} {' '.join(ids)}\n"
    try:
        cache_dir.mkdir(exist_ok=True)
        with (cache_dir / LOG_NAME).open("a", encoding="ascii") as log:
            log.write(line)
    except (OSError, UnicodeEncodeError):
        pass  # statistics are a cache: a read-only or full disk must not fail a recall


@dataclass(frozen=True)
class RecallStats:
    """Counts since `since` (unix seconds; None: the log is empty)."""

    since: int | None = None
    recalls: int = 0
    count: Counter[str] = field(default_factory=Counter)
    last: dict[str, int] = field(default_factory=dict)
    together: Counter[tuple[str, str]] = field(default_factory=Counter)


def read_stats(cache_dir: Path) -> RecallStats:
    count: Counter[str] = Counter()
    together: Counter[tuple[str, str]] = Counter()
    last: dict[str, int] = {}
    since: int | None = None
    recalls = 0
    try:
        text = (cache_dir / LOG_NAME).read_text(encoding="ascii", errors="replace")
    except OSError:
        return RecallStats()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2 or not parts[0].isdigit():
            continue  # a line cut short by a crash
        when, ids = int(parts[0]), parts[1:]
        since = when if since is None else min(since, when)
        recalls += 1
        count.update(ids)
        for rid in ids:
            last[rid] = max(when, last.get(rid, 0))
        best = sorted(set(ids[:_TOGETHER]))
        for i, a in enumerate(best):
            for b in best[i + 1 :]:
                together[(a, b)] += 1
    return RecallStats(since, recalls, count, last, together)
