"""The read side of an opened store: the records at HEAD, found by id or id prefix.

`Reader` is what a store's history, its write steps and its bulk writes need of it, so they
depend on it rather than on the Store, which imports them (gitmem.store.store adds the writes).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Self

from gitmem.errors import NotFound, RecordInvalid, StoreMissing, UsageError
from gitmem.store import schema
from gitmem.store.config import Config, load_config
from gitmem.store.git import GitRepo
from gitmem.store.gitread import PathStatus
from gitmem.store.record import Record
from gitmem.store.recordfile import parse

__all__ = ["CACHE_DIR", "RECORDS_DIR", "Reader"]

RECORDS_DIR = "records"
CACHE_DIR = ".gitmem"


class Reader:
    """An opened store, for reading. Cheap to keep open: it caches what it has read, per HEAD."""

    def __init__(self, repo: GitRepo, config: Config) -> None:
        self.repo = repo
        self.root = repo.root
        self.config = config
        self.schemas = schema.load_schemas(self.root / "schemas")
        self._catalog: dict[str, str] | None = None  # id -> path at _catalog_head
        self._catalog_head: str | None = None

    @classmethod
    def open(cls, root: Path | str) -> Self:
        root = Path(root).expanduser()
        if not root.exists():
            raise StoreMissing(
                f'no gitmem store at {root} — run "gitmem init {root}" or pass --store PATH'
            )
        if not (root / ".git").exists() or not (root / "config.toml").exists():
            raise StoreMissing(
                f"{root} is not a gitmem store (no .git or no config.toml) — "
                f'run "gitmem init {root}" to make it one, or pass --store PATH'
            )
        repo = GitRepo.open(root)
        return cls(repo, load_config(root))

    @property
    def cache_dir(self) -> Path:
        return self.root / CACHE_DIR

    def head(self) -> str | None:
        return self.repo.head()

    def catalog(self) -> dict[str, str]:
        """id -> path of every record at HEAD; kept up to date by diffing from the last HEAD."""
        head = self.repo.head()
        if self._catalog is None:
            self._catalog = {}
            for path, _ in self.repo.files(head, RECORDS_DIR):
                if path.endswith(".md"):  # the stem, as Path(path).stem, 0.1 µs not 1 µs
                    self._catalog[path[path.rfind("/") + 1 : -3]] = path
        elif head != self._catalog_head:
            for change in self.repo.diff(self._catalog_head, head):
                if not (change.path.startswith(RECORDS_DIR + "/") and change.path.endswith(".md")):
                    continue
                rid = Path(change.path).stem
                if change.new is None:
                    if self._catalog.get(rid) == change.path:
                        del self._catalog[rid]
                else:
                    self._catalog[rid] = change.path
        self._catalog_head = head
        return self._catalog

    def _follow(self, old: str | None, new: str, files: Mapping[str, bytes | None]) -> None:
        """Keep the id catalog current after our own commit without diffing trees."""
        if self._catalog is None or self._catalog_head != old:
            return
        for path, data in files.items():
            if path.startswith(RECORDS_DIR + "/") and path.endswith(".md"):
                rid = Path(path).stem
                if data is not None:
                    self._catalog[rid] = path
                elif self._catalog.get(rid) == path:
                    del self._catalog[rid]
        self._catalog_head = new

    def resolve(self, prefix: str) -> str:
        """The full id for a unique id prefix, as git accepts a short hash."""
        _check_id_text(prefix)
        catalog = self.catalog()
        if prefix in catalog:
            return prefix
        matches = sorted(rid for rid in catalog if rid.startswith(prefix))
        if not matches:
            raise NotFound(f'no record with id "{prefix}" — list ids with "gitmem list"')
        if len(matches) > 1:
            shown = ", ".join(matches[:10]) + (" …" if len(matches) > 10 else "")
            raise UsageError(f'"{prefix}" is ambiguous; it matches {shown} — give more of the id')
        return matches[0]

    def get(self, id_or_prefix: str) -> Record:
        rid = self.resolve(id_or_prefix)
        head = self.repo.head()
        assert head is not None
        data = self.repo.blob_at(head, self.catalog()[rid])
        assert data is not None
        return _parse_blob(data, self.catalog()[rid])

    def previous(self, record_id: str) -> Record | None:
        """The version of a record at HEAD, if it has one."""
        path = self.catalog().get(record_id)
        head = self.repo.head()
        data = None if path is None or head is None else self.repo.blob_at(head, path)
        return None if data is None else _parse_blob(data, path or "")

    def named_by(self, record_id: str) -> list[tuple[Record, str]]:
        """Every other record at HEAD that names `record_id` in its links, supersedes or
        superseded_by, with the key. Reads every record blob (only those holding the id's
        bytes are parsed): for the rare write that makes a record private, not for reads."""
        head = self.repo.head()
        needle = record_id.encode("ascii", "replace")
        found: list[tuple[Record, str]] = []
        for path, blob in self.repo.files(head, RECORDS_DIR):
            if not path.endswith(".md") or path.endswith(f"/{record_id}.md"):
                continue
            data = self.repo.blob(blob)
            if needle not in data:
                continue
            try:
                other = _parse_blob(data, path)
            except RecordInvalid:
                continue
            for key in ("links", "supersedes", "superseded_by"):
                value = getattr(other, key)
                if record_id in (value if isinstance(value, tuple) else (value,)):
                    found.append((other, key))
        return found

    def default_agent(self) -> str:
        """Who writes when nobody says: git's user.name, else "unknown"."""
        identity = self.repo.config_identity()
        return identity.name if identity is not None else "unknown"

    def records(self) -> Iterator[Record]:
        """Every record at HEAD, in path order. Files that do not parse are skipped
        (`gitmem validate` reports them)."""
        head = self.repo.head()
        for path, blob in self.repo.files(head, RECORDS_DIR):
            if not path.endswith(".md"):
                continue
            try:
                yield _parse_blob(self.repo.blob(blob), path)
            except RecordInvalid:
                continue

    def pending(self) -> list[PathStatus]:
        """Uncommitted edits a person made to records."""
        return self.repo.status(RECORDS_DIR + "/")

    def export(self) -> Iterator[dict[str, Any]]:
        for record in self.records():
            yield record.to_dict()


def _parse_blob(data: bytes, path: str) -> Record:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordInvalid(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    try:
        return parse(text)
    except RecordInvalid as exc:
        raise RecordInvalid(f"{path}: {exc}", exc.problems) from exc


_PREFIX_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def _check_id_text(text: str) -> None:
    if not text or not _PREFIX_RE.match(text):
        raise UsageError(
            f'"{text}" is not a record id: ids are lower-case letters and digits joined by "-" '
            '(no "/" or ".."); list them with "gitmem list"'
        )
