"""The one entity indexer: watched Markdown files in, `entity` records out, in one commit.

`gitmem entity index-file`, `gitmem entity index-all` and the PostToolUse hook all call
`index_files` (index-all after `watched_files`). Each file is checked on its own: a file that
cannot be an entity (outside the watched directories, a symbolic link loop, too large,
binary, a frontmatter bomb, an id another record holds) is skipped with a line naming it and
why, and the others are written; a file whose content hash matches its record is left alone.
What is written goes through the store's import path: validated, guarded against secrets, and
committed as one commit for the whole batch (nothing when nothing changed).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.errors import RecordInvalid, SecretFound
from gitmem.graph.entity import ENTITY_TYPE, Entity, read_entity, to_record
from gitmem.store import writes
from gitmem.store.record import Record

if TYPE_CHECKING:
    from gitmem.store.store import Store

__all__ = [
    "MARKDOWN",
    "MAX_FILE_BYTES",
    "FileOutcome",
    "IndexReport",
    "Watched",
    "index_files",
    "watched_files",
]

MAX_FILE_BYTES = 1 << 20  # an entity file larger than 1 MiB is refused
MARKDOWN = (".md", ".markdown")
_SKIP_DIRS = frozenset({".git", ".gitmem", "node_modules", ".venv", "__pycache__"})


@dataclass(frozen=True)
class Watched:
    """Where a project's entity files are: its repository root, its id, and the watched
    directories relative to the root (`.` for all of it)."""

    root: Path
    project: str
    watch: tuple[str, ...]

    def covers(self, relative: str) -> bool:
        return any(w == "." or relative == w or relative.startswith(w + "/") for w in self.watch)


@dataclass(frozen=True)
class FileOutcome:
    """What happened to one file: action new, updated, unchanged or skipped; `note` says why
    it was skipped, or what was wrong with frontmatter that still indexed."""

    path: str
    action: str
    id: str = ""
    note: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "action": self.action, "id": self.id, "note": self.note}


@dataclass(frozen=True)
class IndexReport:
    commit: str | None
    files: tuple[FileOutcome, ...]

    def count(self, action: str) -> int:
        return sum(1 for f in self.files if f.action == action)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(f.id for f in self.files if f.id and f.action != "skipped")


def watched_files(where: Watched, directory: Path | None = None) -> list[Path]:
    """Every Markdown file under the watched directories (or under `directory`, which must be
    inside one of them), in path order. Directory links are not followed (no loops); file
    links are listed, and checked like any file by `index_files`."""
    root = Path(os.path.abspath(where.root))
    tops = [root / w if w != "." else root for w in where.watch]
    if directory is not None:
        start = Path(os.path.abspath(directory))
        relative = _relative(start, root)
        if relative is not None and relative != "." and where.covers(relative):
            tops = [start]
        else:
            tops = [t for t in tops if relative is not None and _inside(start, t)]
            if not tops:
                raise RecordInvalid(
                    f"{directory}: outside the watched directories "
                    f"({', '.join(where.watch) or 'none'}) of {root} — give one of them, or "
                    "add it to hooks.watch (or hooks.watch_projects) in config.toml"
                )
    found: set[Path] = set()
    for top in tops:
        found.update(_walk(top))
    return sorted(found)


def index_files(
    store: Store,
    paths: Iterable[Path],
    where: Watched,
    *,
    agent: str = "",
    namespace: str = "",
    now: datetime | None = None,
) -> IndexReport:
    """Index `paths` (absolute, or relative to the project root) as entities of `where`'s
    project, in one commit. `namespace` names the id's owner when there is no project (the
    agent)."""
    moment = (now or datetime.now(UTC)).replace(microsecond=0)
    agent = agent.strip() or store.default_agent()
    # A store from before the work graph: files are checked against the shipped schema, which
    # is committed only when an entity is written, so a refused batch writes nothing.
    with store.shipped_schema_on_trial(ENTITY_TYPE) as lacking:
        return _index(store, paths, where, agent, namespace, moment, lacking)


def _index(
    store: Store,
    paths: Iterable[Path],
    where: Watched,
    agent: str,
    namespace: str,
    moment: datetime,
    lacking: bool,
) -> IndexReport:
    space = where.project or namespace or f"agent:{agent}"
    catalog = dict(store.catalog())  # as before this batch: the store's own dict follows writes
    outcomes: list[FileOutcome] = []
    records: list[Record] = []
    claimed: dict[str, str] = {}  # id -> the path that claimed it in this batch
    for raw in paths:
        path = raw if raw.is_absolute() else where.root / raw
        try:
            relative, data = _read(path, where)
            entity = read_entity(data, relative, project=where.project, namespace=space)
        except _Skip as exc:
            outcomes.append(FileOutcome(_shown(path, where), "skipped", note=str(exc)))
            continue
        except (RecordInvalid, UnicodeDecodeError) as exc:
            outcomes.append(FileOutcome(_shown(path, where), "skipped", note=_reason(exc)))
            continue
        outcome, record = _plan(store, entity, catalog, claimed, agent, moment)
        outcomes.append(outcome)
        if record is not None:
            records.append(record)
            claimed[record.id] = entity.path
    commit = None
    if records:
        if lacking:
            store.add_shipped_schema(ENTITY_TYPE, agent=agent)
        result = store.import_records(
            (r.to_dict() for r in records),
            agent=agent,
            source_name=f"entity index of {where.project or space}",
            secrets="allow",  # guarded file by file in _plan
        )
        commit = result.commit
        _retire_replaced(store, records, catalog, agent)
    return IndexReport(commit, tuple(outcomes))


def _retire_replaced(
    store: Store, written: list[Record], catalog: dict[str, str], agent: str
) -> None:
    """A file whose type (or slug) changed has a new id: forget the entity its path had (one
    commit each, after the batch; history keeps it). Found among the ids that carry the new
    entity's key, so no other record is read; `entity reconcile` catches any this misses."""
    new = [r for r in written if r.id not in catalog]
    if not new:
        return
    entities = [rid for rid, path in catalog.items() if path.startswith(f"records/{ENTITY_TYPE}/")]
    for record in new:
        key, path, project = (record.extra.get(k, "") for k in ("key", "path", "project"))
        for rid in entities:
            if rid == record.id or f"-{key}-" not in f"-{rid}":
                continue
            old = store.previous(rid)
            if old is None or (old.extra.get("path"), old.extra.get("project", "")) != (
                path,
                project,
            ):
                continue
            store.forget(rid, reason=f"entity index: {path} is {record.id} now", agent=agent)


class _Skip(Exception):
    """A file that cannot become an entity; its text says why."""


def _read(path: Path, where: Watched) -> tuple[str, bytes]:
    """(path relative to the root, bytes) of a file the graph may read, else _Skip."""
    root = Path(os.path.abspath(where.root))
    relative = _relative(Path(os.path.abspath(path)), root)
    if relative is None or not where.covers(relative):
        raise _Skip(
            f"outside the watched directories ({', '.join(where.watch) or 'none'}) of {root}; "
            "move it there, or add its directory to hooks.watch in the store's config.toml"
        )
    try:
        real = path.resolve(strict=True)
    except RuntimeError:  # Python 3.11 reports a loop so; later ones raise OSError(ELOOP)
        raise _Skip("a symbolic link loop; fix or remove the link") from None
    except OSError as exc:
        if exc.errno == 40:  # ELOOP
            raise _Skip("a symbolic link loop; fix or remove the link") from None
        raise _Skip(f"cannot be read ({exc.strerror or exc}); is the path right?") from None
    real_relative = _relative(real, root.resolve())
    if real_relative is None or not where.covers(real_relative):
        raise _Skip(
            f"a link to {real}, outside the watched directories; index the file where it is"
        )
    if not real.is_file():
        raise _Skip("not a regular file")
    size = real.stat().st_size
    if size > MAX_FILE_BYTES:
        raise _Skip(
            f"{size} bytes, over the {MAX_FILE_BYTES // (1 << 20)} MiB an entity file may have; "
            "split it into smaller files"
        )
    data = real.read_bytes()[: MAX_FILE_BYTES + 1]
    if b"\0" in data:
        at = data.index(b"\0")
        raise _Skip(f"binary content (a NUL byte at offset {at}); not Markdown")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Skip(f"not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    return relative, data


def _plan(
    store: Store,
    entity: Entity,
    catalog: dict[str, str],
    claimed: dict[str, str],
    agent: str,
    moment: datetime,
) -> tuple[FileOutcome, Record | None]:
    shown = entity.path
    if entity.id in claimed:
        return FileOutcome(
            shown, "skipped", entity.id, f"same id as {claimed[entity.id]} (same type and slug)"
        ), None
    old: Record | None = None
    where = catalog.get(entity.id)
    if where is not None:
        kind = where.split("/")[1]
        if kind != ENTITY_TYPE:
            return FileOutcome(
                shown, "skipped", entity.id, f"its id {entity.id} is a {kind} record's"
            ), None
        old = store.previous(entity.id)
        if old is not None and old.extra.get("path") not in (None, entity.path):
            other = old.extra.get("path")
            return FileOutcome(
                shown,
                "skipped",
                entity.id,
                f"its id {entity.id} is taken by {other} (same type and slug); give one of "
                "them another slug: in its frontmatter",
            ), None
        if old is not None and old.extra.get("sha") == entity.sha:
            return FileOutcome(shown, "unchanged", entity.id, entity.problem), None
    created = old.created if old is not None else moment
    record = to_record(entity, created, max(moment, created), agent)
    if old is not None:
        record = record.with_(agent=old.agent or agent, weight=old.weight, scope=old.scope)
    try:
        record, _ = writes.guard_secrets(record, "redact")
        writes.check(store, record, catalog, previous=old)
    except (RecordInvalid, SecretFound) as exc:
        return FileOutcome(shown, "skipped", entity.id, _reason(exc)), None
    action = "updated" if old is not None else "new"
    return FileOutcome(shown, action, entity.id, entity.problem), record


def _reason(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte {exc.start}); save it as UTF-8"
    return " ".join(str(exc).split())


def _shown(path: Path, where: Watched) -> str:
    relative = _relative(Path(os.path.abspath(path)), Path(os.path.abspath(where.root)))
    return relative if relative is not None else str(path)


def _relative(path: Path, root: Path) -> str | None:
    try:
        relative = path.relative_to(root).as_posix()
    except ValueError:
        return None
    return relative or "."


def _inside(parent: Path, child: Path) -> bool:
    return child == parent or parent in child.parents


def _walk(top: Path) -> Iterator[Path]:
    for base, dirs, files in os.walk(top, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in files:
            if name.lower().endswith(MARKDOWN):
                yield Path(base) / name
