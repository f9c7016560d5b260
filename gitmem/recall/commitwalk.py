"""The walk of the commits the time-travel cache has not seen: when each was written, and
which record files it wrote (gitmem.recall.timeline keeps what it finds).

"Written" is a commit's *effective time*: the latest of its committer time and its parents'
effective times. It is computed from the commit graph alone, so every clone agrees, and it
never runs backwards along history. Versions are ordered by (effective time, generation,
commit id); see docs/time-travel.md for the argument and its cost.

An event is (record id, path, blob or None for a deletion, commit, time, generation). A
non-merge commit has one per path its diff against the parent touches. A merge has one per
path whose blob differs from some parent's, with the merge's blob: from the merge's time on the
view is the merge's tree, whichever side a conflict went to. A record that came in through the
merge still counts as written when it was written on its own device: that commit is in history
too, and the merge only repeats the same blob later.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.store.reader import RECORDS_DIR

if TYPE_CHECKING:
    from gitmem.store.git import GitRepo

__all__ = ["Event", "is_record", "walk"]

Event = tuple[str, str, str | None, str, int, int]  # id, path, blob, commit, time, generation


def walk(
    repo: GitRepo, head: str | None, known: dict[str, tuple[int, int]]
) -> tuple[list[tuple[str, int, int]], list[Event]]:
    """The commits from `head` not in `known` (commit -> effective time, generation), parents
    first, with their effective time and generation, and the events they hold."""
    order: list[tuple[str, int, tuple[str, ...]]] = []
    stack = [head] if head is not None and head not in known else []
    info: dict[str, tuple[int, tuple[str, ...]]] = {}
    done: set[str] = set()
    while stack:
        oid = stack[-1]
        if oid in done:
            stack.pop()
            continue
        if oid not in info:
            c = repo.commit(oid)
            info[oid] = (int(c.committed.timestamp()), c.parents)
        waiting = [p for p in info[oid][1] if p not in known and p not in done]
        if waiting:
            stack.extend(waiting)
            continue
        stack.pop()
        done.add(oid)
        order.append((oid, *info[oid]))
    commits: list[tuple[str, int, int]] = []
    events: list[Event] = []
    stamps = dict(known)
    for oid, committed, parents in order:
        t = max([committed, *(stamps[p][0] for p in parents)])
        gen = 1 + max((stamps[p][1] for p in parents), default=0)
        stamps[oid] = (t, gen)
        commits.append((oid, t, gen))
        for path, blob in _touched(repo, oid, parents):
            events.append((Path(path).stem, path, blob, oid, t, gen))
    return commits, events


def _touched(repo: GitRepo, oid: str, parents: Sequence[str]) -> list[tuple[str, str | None]]:
    """(path, new blob) of the records a commit wrote: its diff against its parent; for a
    merge, every path that differs from any parent, with the merge's blob."""
    if len(parents) <= 1:
        base = parents[0] if parents else None
        return [(c.path, c.new) for c in repo.changed(base, oid, RECORDS_DIR) if is_record(c.path)]
    diffs = [
        {c.path: c.new for c in repo.changed(p, oid, RECORDS_DIR) if is_record(c.path)}
        for p in parents
    ]
    merged = {path: blob for d in diffs for path, blob in d.items()}
    return sorted(merged.items())


def is_record(path: str) -> bool:
    return path.startswith(RECORDS_DIR + "/") and path.endswith(".md")
