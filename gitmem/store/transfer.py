"""Bulk writes: importing JSONL exports, and committing a person's edits to record files."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitmem.errors import RecordInvalid, SecretFound
from gitmem.store import guard, writes
from gitmem.store.gitread import PathStatus
from gitmem.store.reader import Reader
from gitmem.store.record import Record, from_mapping
from gitmem.store.recordfile import dump, parse
from gitmem.store.worktree import LINK_FIX, linked_part
from gitmem.store.writes import SecretPolicy

__all__ = ["ImportPlan", "plan_import", "plan_pending"]


@dataclass(frozen=True)
class ImportPlan:
    changes: dict[str, bytes | None]  # path -> file text (None: remove, when a type moved)
    records: tuple[Record, ...]
    redactions: tuple[str, ...]


def plan_import(
    store: Reader, items: Iterable[Mapping[str, Any]], secrets: SecretPolicy
) -> ImportPlan:
    """Validate every item first; only records that differ from HEAD become changes."""
    problems: list[str] = []
    parsed: list[Record] = []
    seen: dict[str, int] = {}
    for number, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            problems.append(f"line {number}: expected a JSON object")
            continue
        body = item.get("body", "")
        if not isinstance(body, str):
            problems.append(f"line {number}: body must be text")
            continue
        try:
            record = from_mapping(item, body)
        except RecordInvalid as exc:
            problems.append(f"line {number}: {exc}")
            continue
        if record.id in seen:
            problems.append(
                f"line {number}: id {record.id} already given on line {seen[record.id]}"
            )
            continue
        seen[record.id] = number
        parsed.append(record)
    if problems:
        raise RecordInvalid(_summary(problems), tuple(problems))
    catalog = dict(store.catalog())
    catalog.update({r.id: r.path for r in parsed})
    guarded: list[Record] = []
    redactions: list[str] = []
    secret_found = False
    for record in parsed:
        try:
            record, found = writes.guard_secrets(record, secrets)
            redactions.extend(found)
            writes.check(store, record, catalog, previous=store.previous(record.id))
        except (RecordInvalid, SecretFound) as exc:
            problems.append(str(exc))
            secret_found = secret_found or isinstance(exc, SecretFound)
            continue
        guarded.append(record)
    if problems:
        error = SecretFound if secret_found else RecordInvalid
        raise error(_summary(problems), tuple(problems))
    head = store.head()
    current = store.catalog()
    changes: dict[str, bytes | None] = {}
    for record in guarded:
        old_path = current.get(record.id)
        text = dump(record).encode("utf-8")
        if old_path == record.path and head and store.repo.blob_at(head, old_path) == text:
            continue
        if old_path is not None and old_path != record.path:
            changes[old_path] = None
        changes[record.path] = text
    return ImportPlan(changes, tuple(guarded), tuple(redactions))


def plan_pending(
    store: Reader, pending: list[PathStatus]
) -> tuple[dict[str, bytes | None], tuple[Record, ...]]:
    """Validate a person's edited record files; the files are committed as they are."""
    problems: list[str] = []
    files: dict[str, bytes | None] = {}
    records: list[Record] = []
    catalog = dict(store.catalog())
    edited: list[tuple[str, Record, bytes]] = []
    secret_found = False
    for item in pending:
        target = store.root / item.path
        linked = linked_part(store.root, item.path)
        if linked is not None:
            problems.append(
                f"{linked}: a symbolic link; gitmem commits regular files only, never a link "
                f"or what it points at — {LINK_FIX}"
            )
            continue
        if item.state == "deleted" or not target.exists():
            files[item.path] = None
            catalog.pop(Path(item.path).stem, None)
            continue
        data = target.read_bytes()
        try:
            text = data.decode("utf-8")
            found = guard.scan(text)
            if found:
                problems.extend(guard.describe(f, f"{item.path}: ") for f in found)
                secret_found = True
                continue
            record = parse(text)
        except UnicodeDecodeError as exc:
            problems.append(f"{item.path}: not UTF-8 text (byte {exc.start}); save it as UTF-8")
            continue
        except RecordInvalid as exc:
            problems.append(f"{item.path}: {exc}")
            continue
        if record.path != item.path:
            problems.append(
                f"{item.path}: id, type and created say this file belongs at {record.path}; "
                "move it there or fix the frontmatter"
            )
            continue
        catalog[record.id] = record.path
        edited.append((item.path, record, data))
    for path, record, data in edited:
        try:
            writes.check(store, record, catalog, previous=store.previous(record.id))
        except RecordInvalid as exc:
            problems.append(str(exc))
            continue
        files[path] = data
        records.append(record)
    if problems:
        error = SecretFound if secret_found else RecordInvalid
        raise error(_summary(problems), tuple(problems))
    return files, tuple(records)


def _summary(problems: list[str]) -> str:
    head = "; ".join(problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return f"nothing was written: {head}{more}"
