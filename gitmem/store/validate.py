"""`gitmem validate`: every problem in the record files of a work tree, file by file."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gitmem.errors import RecordInvalid
from gitmem.store.reader import RECORDS_DIR
from gitmem.store.record import Record
from gitmem.store.recordfile import parse
from gitmem.store.schema import check_record
from gitmem.store.store import Store
from gitmem.store.textrules import body_problems
from gitmem.store.worktree import LINK_FIX, linked_part, links_under

__all__ = ["Problem", "validate_files"]


@dataclass(frozen=True)
class Problem:
    path: str
    message: str
    level: str = "error"  # error | warning


def validate_files(store: Store, paths: Sequence[Path]) -> list[Problem]:
    """Problems in `paths` (default: every record file in the work tree).

    Links are checked against every record in the work tree; a link to a record that is not
    there is a warning, since forgetting a record does not rewrite the ones that mention it.
    """
    records_root = store.root / RECORDS_DIR
    problems: list[Problem] = []
    links = set(links_under(records_root)) if not paths else set()
    for link in sorted(links):
        problems.append(Problem(_relative(store, link) or str(link), _LINKED))
    every = [
        path
        for path in (sorted(records_root.rglob("*.md")) if records_root.exists() else [])
        if _link_in(store, path) is None
    ]
    targets = []
    for path in paths:
        linked = _link_in(store, path)
        if linked is None:
            targets.append(path)
        else:
            problems.append(Problem(linked, _LINKED))
    targets = targets if paths else every
    parsed: dict[Path, Record] = {}
    known: set[str] = set()
    for path in set(every) | set(targets):
        try:
            parsed[path] = parse(path.read_bytes().decode("utf-8"))
            known.add(parsed[path].id)
        except (UnicodeDecodeError, RecordInvalid, OSError):
            continue
    private = {r.id for r in parsed.values() if r.scope == "private"}
    claims: dict[str, list[Path]] = {}  # only files at their own place claim an id
    for path, parsed_record in parsed.items():
        if _shown(store, path) == parsed_record.path:
            claims.setdefault(parsed_record.id, []).append(path)
    for path in sorted(targets):
        shown = _shown(store, path)
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(Problem(shown, f"not UTF-8 text (byte {exc.start}); save it as UTF-8"))
            continue
        except OSError as exc:
            problems.append(Problem(shown, f"cannot read: {exc.strerror}"))
            continue
        try:
            record = parse(text)
        except RecordInvalid as exc:
            problems.extend(Problem(shown, p) for p in exc.problems or (str(exc),))
            continue
        for message in check_record(record, store.schemas):
            problems.append(Problem(shown, message))
        for message in body_problems(record.body, store.config.max_body_bytes):
            problems.append(Problem(shown, message))
        if shown != record.path and shown.startswith(RECORDS_DIR + "/"):
            problems.append(
                Problem(
                    shown,
                    f"id/path: id, type and created place this record at {record.path}; "
                    "move the file there or fix the frontmatter",
                )
            )
        others = [_shown(store, o) for o in claims.get(record.id, ()) if o != path]
        if others and shown == record.path:
            problems.append(
                Problem(
                    shown,
                    f"id: {record.id} is also claimed by {', '.join(sorted(others))}; keep one "
                    "file per id (delete the copy, or give it a new id) — until then search "
                    "leaves the id out",
                )
            )
        problems.extend(
            Problem(shown, m, level) for m, level in _references(record, known, private)
        )
    return problems


def _references(record: Record, known: set[str], private: set[str]) -> list[tuple[str, str]]:
    """A reference to no record is a warning (forgetting a record does not rewrite the ones
    that name it); a record that leaves the device naming a private one is an error: the id
    carries the private title's slug to every device on sync."""
    out: list[tuple[str, str]] = []
    named = [("links", t) for t in record.links] + [("supersedes", t) for t in record.supersedes]
    if record.superseded_by:
        named.append(("superseded_by", record.superseded_by))
    for key, target in named:
        if target not in known:
            out.append((f"{key}: {target} points at no record", "warning"))
        elif target in private and record.scope != "private" and target != record.id:
            out.append(
                (
                    f"{key}: {target} is private, and this {record.scope} record would carry "
                    "its id (a slug of its title) to every device on sync — remove the "
                    "reference, or make this record private too",
                    "error",
                )
            )
    return out


_LINKED = (
    f"a symbolic link; gitmem reads regular files only, never what a link points at — {LINK_FIX}"
)


def _relative(store: Store, path: Path) -> str | None:
    """`path` relative to the store root, without resolving links; None when outside."""
    absolute = Path(os.path.abspath(path))
    for root in (store.root, store.root.resolve()):
        if absolute.is_relative_to(root):
            return absolute.relative_to(root).as_posix()
    return None


def _link_in(store: Store, path: Path) -> str | None:
    """The part of `path` that is a symbolic link (a directory on the way, or the file)."""
    relative = _relative(store, path)
    if relative is None:
        return str(path) if path.is_symlink() else None
    return linked_part(store.root, relative)


def _shown(store: Store, path: Path) -> str:
    try:
        return path.resolve().relative_to(store.root).as_posix()
    except ValueError:
        return str(path)
