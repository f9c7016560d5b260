"""The versions of one record, read from git history."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from gitmem.errors import NotFound, RecordInvalid, UsageError
from gitmem.store.gitread import Commit
from gitmem.store.reader import Reader
from gitmem.store.record import Record
from gitmem.store.recordfile import parse

__all__ = ["Version", "changed_fields", "find_path", "record_history"]


@dataclass(frozen=True)
class Version:
    """One version of a record in history."""

    commit: str
    time: datetime
    operation: str
    agent: str
    record: Record | None  # None where the commit removed it (forget)
    changed: tuple[str, ...]  # fields that differ from the previous version


def find_path(store: Reader, prefix: str) -> tuple[str, str]:
    """(id, path) for a record at HEAD, or else one that history remembers (forgotten)."""
    try:
        rid = store.resolve(prefix)
        return rid, store.catalog()[rid]
    except NotFound:
        pass
    found: dict[str, str] = {}
    for commit in store.repo.walk(store.head()):
        parent = commit.parents[0] if commit.parents else None
        for change in store.repo.diff(parent, commit.id):
            stem = Path(change.path).stem
            if change.path.startswith("records/") and stem.startswith(prefix):
                found.setdefault(stem, change.path)
    if not found:
        raise NotFound(f'no record with id "{prefix}", now or in history')
    if len(found) > 1:
        raise UsageError(f'"{prefix}" is ambiguous; it matches {", ".join(sorted(found))}')
    ((rid, path),) = found.items()
    return rid, path


def record_history(store: Reader, prefix: str) -> list[Version]:
    """Every version of the record, oldest first."""
    _, path = find_path(store, prefix)
    repo = store.repo
    # An edit may change a record's type, and so its directory; its month (from `created`)
    # and file name never change. Look for it under every type's directory.
    _, _, month, name = path.split("/")
    types = sorted({*store.schemas, path.split("/")[1]})
    places = [f"records/{t}/{month}/{name}" for t in types]

    def version_at(commit_id: str) -> str | None:
        for place in places:
            blob = repo.entry_id(commit_id, place)
            if blob is not None:
                return blob
        return None

    hits: list[tuple[Commit, str | None]] = []
    for commit in repo.walk(store.head()):
        current = version_at(commit.id)
        before = [version_at(p) for p in commit.parents] or [None]
        if all(current != b for b in before):
            hits.append((commit, current))
    versions: list[Version] = []
    previous: Record | None = None
    for commit, blob in reversed(hits):
        record = None if blob is None else _parse_or_none(repo.blob(blob))
        trailers = commit.trailers()
        versions.append(
            Version(
                commit=commit.id,
                time=commit.committed,
                operation=trailers.get("Gitmem-Operation", "git"),
                agent=trailers.get("Gitmem-Agent", commit.author.name),
                record=record,
                changed=changed_fields(previous, record),
            )
        )
        previous = record
    return versions


def _parse_or_none(data: bytes) -> Record | None:
    try:
        return parse(data.decode("utf-8"))
    except (UnicodeDecodeError, RecordInvalid):
        return None


def changed_fields(old: Record | None, new: Record | None) -> tuple[str, ...]:
    """Names of the fields that differ, in file order (body last)."""
    if old is None or new is None:
        return ()
    a, b = old.to_dict(), new.to_dict()
    return tuple(k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k))
