"""A memory store: a git repository of records, where every write is exactly one commit.

`Store.open(path)` gives reads (get, records, history, export) and writes (record, supersede,
forget, amend, replace_text, import_records, commit_pending). Every write validates first,
runs the secret guard, then commits under the store's write lock; refused input raises before
anything is written.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Concatenate, Literal, ParamSpec, Self, TypeVar

from gitmem.atomic import TEMP_PREFIX
from gitmem.errors import (
    GitmemError,
    NotFound,
    RecordInvalid,
    SecretFound,
    StoreMissing,
    UsageError,
)
from gitmem.store import schema
from gitmem.store.config import Config, load_config, template_root
from gitmem.store.git import GitRepo, Identity, PathStatus
from gitmem.store.lock import Journal, write_lock
from gitmem.store.record import (
    Record,
    body_problems,
    dump,
    make_id,
    parse,
)
from gitmem.store.record import (
    format_problems as check_format,
)

__all__ = ["RECORDS_DIR", "SecretPolicy", "Store", "Version", "WriteResult"]

RECORDS_DIR = "records"
CACHE_DIR = ".gitmem"
SecretPolicy = Literal["refuse", "redact", "allow"]
LOCK_TIMEOUT = 60.0


@dataclass(frozen=True)
class WriteResult:
    """What a write did: the commit it made (None when there was nothing to do)."""

    commit: str | None
    records: tuple[Record, ...]
    operation: str
    redactions: tuple[str, ...] = ()

    @property
    def record(self) -> Record:
        return self.records[0]


@dataclass(frozen=True)
class Version:
    """One version of a record in history."""

    commit: str
    time: datetime
    operation: str
    agent: str
    record: Record | None  # None where the commit removed it (forget)
    changed: tuple[str, ...]  # fields that differ from the previous version


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _exclusively(
    method: Callable[Concatenate[Store, _P], _R],
) -> Callable[Concatenate[Store, _P], _R]:
    """Run a write method under the store's write lock, from reading to committing."""

    @functools.wraps(method)
    def wrapper(self: Store, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._exclusive():
            return method(self, *args, **kwargs)

    return wrapper


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


class Store:
    """An opened store. Cheap to keep open: it caches what it has read, per HEAD."""

    def __init__(self, repo: GitRepo, config: Config) -> None:
        self.repo = repo
        self.root = repo.root
        self.config = config
        self.schemas = schema.load_schemas(self.root / "schemas")
        self._catalog: dict[str, str] | None = None  # id -> path at _catalog_head
        self._catalog_head: str | None = None
        self._begin: Callable[[str | None, list[str]], None] | None = None  # lock held

    # --- opening -----------------------------------------------------------------------------

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

    @classmethod
    def init(cls, root: Path | str, agent: str = "gitmem") -> tuple[Self, bool]:
        """Lay down the template and make the first commit. (store, created)."""
        root = Path(root).expanduser()
        if (root / ".git").exists() and (root / "config.toml").exists():
            return cls.open(root), False
        if root.exists() and any(p.name != ".git" for p in root.iterdir()):
            raise GitmemError(
                f"{root} exists and is not empty; gitmem init wants a new or empty directory"
            )
        root.mkdir(parents=True, exist_ok=True)
        repo = GitRepo.open(root) if (root / ".git").exists() else GitRepo.init(root)
        files: dict[str, bytes] = {}
        _collect_template(template_root(), "", files)
        exclude = repo.git_dir / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with exclude.open("a", encoding="utf-8") as handle:
            handle.write(f"{CACHE_DIR}/\n")
        who = _author(agent, repo.config_identity())
        repo.commit_files(
            files,
            _message("init", "", "init: a new gitmem store", "", agent, raw_subject=True),
            who,
            repo.config_identity() or who,
            repo.head(),
        )
        return cls(repo, load_config(root)), True

    @property
    def cache_dir(self) -> Path:
        return self.root / CACHE_DIR

    # --- reading -----------------------------------------------------------------------------

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

    def history(self, id_or_prefix: str) -> list[Version]:
        from gitmem.store.history import record_history

        return record_history(self, id_or_prefix)

    def export(self) -> Iterator[dict[str, Any]]:
        for record in self.records():
            yield record.to_dict()

    # --- writing -----------------------------------------------------------------------------

    @_exclusively
    def record(
        self,
        type_: str,
        body: str,
        *,
        title: str,
        abstract: str = "",
        tags: Sequence[str] = (),
        agent: str = "",
        scope: str = "shared",
        source: str = "",
        weight: float = 1.0,
        links: Sequence[str] = (),
        fields: Mapping[str, str | Sequence[str]] | None = None,
        secrets: SecretPolicy = "refuse",
        now: datetime | None = None,
    ) -> WriteResult:
        moment = (now or _now()).replace(microsecond=0)
        new = self._new_record(
            type_, body, title, abstract, tags, agent, scope, source, weight, links, fields, moment
        )
        new, redactions = self.guard(new, secrets)
        self.check(new)
        return self._write(
            {new.path: new},
            "record",
            new,
            agent,
            redactions=redactions,
        )

    @_exclusively
    def supersede(
        self,
        old_id: str,
        body: str,
        *,
        title: str,
        type_: str | None = None,
        abstract: str = "",
        tags: Sequence[str] | None = None,
        agent: str = "",
        scope: str | None = None,
        source: str = "",
        weight: float | None = None,
        links: Sequence[str] = (),
        fields: Mapping[str, str | Sequence[str]] | None = None,
        secrets: SecretPolicy = "refuse",
        now: datetime | None = None,
    ) -> WriteResult:
        """A new record that replaces `old_id`; the old one is kept, marked superseded."""
        moment = (now or _now()).replace(microsecond=0)
        old = self.get(old_id)
        if scope == "private" and old.scope != "private":
            raise GitmemError(
                f"{old.id} is {old.scope}; a private record cannot supersede it (its new "
                "superseded_by would name the private record on every device) — supersede it "
                "with a shared record, or record the private one separately"
            )
        if old.status == "superseded":
            raise GitmemError(
                f"{old.id} is already superseded by {old.superseded_by or 'another record'}; "
                "supersede that one instead"
            )
        new = self._new_record(
            type_ or old.type,
            body,
            title,
            abstract,
            old.tags if tags is None else tags,
            agent,
            scope or old.scope,
            source,
            old.weight if weight is None else weight,
            links,
            fields,
            moment,
        ).with_(supersedes=(old.id,))
        new, redactions = self.guard(new, secrets)
        self.check(new)
        retired = old.with_(
            status="superseded", superseded_by=new.id, updated=max(moment, old.updated)
        )
        return self._write(
            {new.path: new, retired.path: retired},
            "supersede",
            new,
            agent,
            extra_trailers={"Gitmem-Supersedes": old.id},
            redactions=redactions,
        )

    @_exclusively
    def forget(self, id_or_prefix: str, *, reason: str, agent: str = "") -> WriteResult:
        """Remove a record from the current tree; history keeps it."""
        if not reason.strip():
            raise UsageError("forget needs --reason: say why, for the audit trail in git log")
        old = self.get(id_or_prefix)
        return self._write({old.path: None}, "forget", old, agent, detail=reason.strip())

    @_exclusively
    def amend(
        self,
        id_or_prefix: str,
        changes: Mapping[str, Any],
        *,
        agent: str = "",
        secrets: SecretPolicy = "refuse",
        now: datetime | None = None,
    ) -> WriteResult:
        """Change fields of a record in place (title, tags, weight, the type's fields, ...)."""
        from gitmem.store.amend import apply_changes

        old = self.get(id_or_prefix)
        new = apply_changes(old, changes, self.schemas.get(old.type))
        if new == old:
            return WriteResult(None, (old,), "amend")
        new = new.with_(updated=max((now or _now()).replace(microsecond=0), old.updated))
        new, redactions = self.guard(new, secrets)
        self.check(new, previous=old)
        return self._write({new.path: new}, "amend", new, agent, redactions=redactions)

    @_exclusively
    def replace_text(
        self,
        id_or_prefix: str,
        text: str,
        *,
        agent: str = "",
        secrets: SecretPolicy = "refuse",
        now: datetime | None = None,
    ) -> WriteResult:
        """Replace a record by the full text of its file (what `gitmem edit` saves)."""
        old = self.get(id_or_prefix)
        new = parse(text)
        if new.id != old.id or new.created != old.created:
            raise RecordInvalid(
                f"{old.id}: id and created cannot change in an edit; "
                "record a new memory and supersede this one instead"
            )
        if new == old:
            return WriteResult(None, (old,), "edit")
        if new.updated == old.updated:
            new = new.with_(updated=max((now or _now()).replace(microsecond=0), old.updated))
        new, redactions = self.guard(new, secrets)
        self.check(new, previous=old)
        changes: dict[str, Record | None] = {new.path: new}
        if new.path != old.path:
            changes[old.path] = None
        return self._write(changes, "edit", new, agent, redactions=redactions)

    @_exclusively
    def import_records(
        self,
        items: Iterable[Mapping[str, Any]],
        *,
        agent: str = "",
        source_name: str = "",
        secrets: SecretPolicy = "refuse",
    ) -> WriteResult:
        from gitmem.store.transfer import plan_import

        plan = plan_import(self, items, secrets)
        if not plan.changes:
            return WriteResult(None, plan.records, "import")
        head = self.repo.head()
        agent = agent.strip() or self.default_agent()
        count = len(plan.changes)
        subject = f"import: {count} record{'s' if count != 1 else ''}"
        if source_name:
            subject += f" from {source_name}"
        trailers = {"Gitmem-Count": str(count)}
        message = _message("import", "", subject, "", agent, trailers, raw_subject=True)
        commit = self._commit(plan.changes, message, agent, head)
        return WriteResult(commit, plan.records, "import", plan.redactions)

    @_exclusively
    def commit_pending(self, *, agent: str = "", message: str = "") -> WriteResult:
        """Validate and commit a person's edits to record files (`gitmem commit`)."""
        from gitmem.store.transfer import plan_pending

        pending = self.pending()
        if not pending:
            return WriteResult(None, (), "edit")
        files, records = plan_pending(self, pending)
        agent = agent.strip() or self.default_agent()
        count = len(files)
        subject = message.strip() or f"edit: {count} record{'s' if count != 1 else ''} by hand"
        ids = sorted(Path(p).stem for p in files)
        trailers = {"Gitmem-Count": str(count)}
        if len(ids) == 1:
            trailers = {"Gitmem-Record": ids[0]}
        text = _message("edit", "", subject, "", agent, trailers, raw_subject=True)
        commit = self._commit(files, text, agent, self.repo.head(), check_dirty=False)
        return WriteResult(commit, records, "edit")

    # --- write machinery ---------------------------------------------------------------------

    def _new_record(
        self,
        type_: str,
        body: str,
        title: str,
        abstract: str,
        tags: Sequence[str],
        agent: str,
        scope: str,
        source: str,
        weight: float,
        links: Sequence[str],
        fields: Mapping[str, str | Sequence[str]] | None,
        moment: datetime,
    ) -> Record:
        if type_ not in self.schemas:
            known = ", ".join(sorted(self.schemas))
            raise RecordInvalid(
                f'unknown record type "{type_}"; known types: {known} — '
                f"or add schemas/{type_}.toml to the store"
            )
        if not title.strip():
            raise RecordInvalid("a record needs a title: pass --title")
        problems = body_problems(body, self.config.max_body_bytes)
        if problems:
            raise RecordInvalid("; ".join(problems), tuple(problems))
        resolved_links = tuple(self.resolve(link) for link in links)
        record_id = make_id(title, fallback=type_)
        while record_id in self.catalog():  # 30 random bits: practically never loops
            record_id = make_id(title, fallback=type_)
        return Record(
            id=record_id,
            type=type_,
            title=title.strip(),
            body=body,
            created=moment,
            updated=moment,
            abstract=abstract.strip() or _abstract_from(body),
            tags=tuple(dict.fromkeys(t.strip() for t in tags if t.strip())),
            agent=agent.strip() or self.default_agent(),
            scope=scope,
            source=source,
            weight=weight,
            links=resolved_links,
        ).with_(fields=dict(fields or {}))

    def guard(self, record: Record, policy: SecretPolicy) -> tuple[Record, tuple[str, ...]]:
        """Refuse (or redact, or allow) credentials anywhere in the record's file text."""
        if policy == "allow":
            return record, ()
        from gitmem.store import guard  # its patterns compile on import: only writes need them

        findings = guard.scan(dump(record))
        if not findings:
            return record, ()
        if policy == "redact":
            redacted, kinds = _redact_fields(record)
            if not guard.scan(dump(redacted)):
                return redacted, kinds
            findings = guard.scan(dump(redacted))
        # One line per secret: the abstract may repeat the body's first line, secret included.
        same: dict[tuple[str, str], list[guard.Finding]] = {}
        for finding in findings:
            same.setdefault((finding.kind, finding.preview), []).append(finding)
        lines = tuple(
            guard.describe(group[0], f"{record.path}: ")
            + (f" (again on line {', '.join(str(f.line) for f in group[1:])})" if group[1:] else "")
            for group in same.values()
        )
        raise SecretFound(
            f"{len(lines)} possible secret{'s' if len(lines) > 1 else ''} in "
            f'"{record.title}", refused before anything reached git (history keeps secrets '
            "forever): " + "; ".join(lines),
            lines,
        )

    def check(
        self,
        record: Record,
        known: Mapping[str, str] | None = None,
        previous: Record | None = None,
    ) -> None:
        """Raise RecordInvalid unless the record fits its schema and the body rules, and the
        links it adds (to `previous`, its last version) point at records in `known` (id ->
        path; default: HEAD's). Links already there may name a forgotten record."""
        problems = check_format(record) + schema.check_record(record, self.schemas)
        catalog = self.catalog() if known is None else known
        kept = set() if previous is None else {*previous.links, *previous.supersedes}
        for target in (*record.links, *record.supersedes):
            if target not in catalog and target != record.id and target not in kept:
                problems.append(f"links: {target} points at no record")
            elif record.scope != "private" and target not in kept and _is_private(self, target):
                # The id names the private title, and this record leaves the device on sync.
                problems.append(
                    f"links: {target} is private; a {record.scope} record cannot name it"
                )
        problems.extend(body_problems(record.body, self.config.max_body_bytes))
        if problems:
            raise RecordInvalid(
                f"{record.id or record.title}: " + "; ".join(problems), tuple(problems)
            )

    def _write(
        self,
        changes: Mapping[str, Record | None],
        operation: str,
        subject_record: Record,
        agent: str,
        *,
        detail: str = "",
        extra_trailers: Mapping[str, str] | None = None,
        redactions: tuple[str, ...] = (),
    ) -> WriteResult:
        agent = agent.strip() or self.default_agent()
        trailers = {"Gitmem-Record": subject_record.id, **(extra_trailers or {})}
        message = _message(
            operation, subject_record.type, subject_record.title, detail, agent, trailers
        )
        files = {p: (None if r is None else dump(r).encode("utf-8")) for p, r in changes.items()}
        commit = self._commit(files, message, agent, None)
        written = tuple(r for r in changes.values() if r is not None) or (subject_record,)
        return WriteResult(commit, written, operation, redactions)

    @contextmanager
    def _exclusive(self, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
        """Hold the store's write lock (re-entrant within this object). Each write reads the
        record it changes and commits inside one hold, so concurrent writers cannot lose each
        other's changes."""
        if self._begin is not None:
            yield
            return
        with write_lock(self.repo.git_dir, timeout, self._recover) as begin:
            self._begin = begin
            try:
                yield
            finally:
                self._begin = None

    def _commit(
        self,
        files: Mapping[str, bytes | None],
        message: str,
        agent: str,
        expected: str | None,
        *,
        check_dirty: bool = True,
        merged: Sequence[str] = (),
    ) -> str:
        index_lock = self.repo.git_dir / "index.lock"
        with self._exclusive():
            assert self._begin is not None
            if index_lock.exists():
                raise GitmemError(
                    f"git is busy in this store ({index_lock} exists); if no git command is "
                    "running there, remove that file and try again"
                )
            if check_dirty:
                for path in files:
                    if self.repo.is_dirty(path):
                        raise GitmemError(
                            f"{path} has uncommitted edits; commit them first with "
                            '"gitmem commit" (or discard them with git restore)'
                        )
            head = self.repo.head()
            if expected is not None and head != expected:
                raise GitmemError("the store changed while preparing this write; run it again")
            self._begin(head, list(files))
            who = _author(agent, self.repo.config_identity())
            new = self.repo.commit_files(
                files, message, who, self.repo.config_identity() or who, head, merged
            )
        self._follow(head, new, files)
        return new

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

    def _recover(self, journal: Journal) -> None:
        head = self.repo.head()
        if head is not None and head != journal.parent and journal.paths:
            self.repo.checkout_paths(head, list(journal.paths))
        for path in journal.paths:  # what the dead writer left half-written beside them
            for tmp in (self.root / path).parent.glob(f"{TEMP_PREFIX}*"):
                tmp.unlink(missing_ok=True)


# --- helpers ------------------------------------------------------------------------------


def _is_private(store: Store, record_id: str) -> bool:
    target = store.previous(record_id)
    return target is not None and target.scope == "private"


def _redact_fields(record: Record) -> tuple[Record, tuple[str, ...]]:
    """Redact field by field, so that a redacted value stays one YAML value."""
    from gitmem.store import guard

    kinds: list[str] = []

    def clean(text: str) -> str:
        new, found = guard.redact(text)
        kinds.extend(f.kind for f in found)
        return new

    fields = {
        key: tuple(clean(v) for v in value) if isinstance(value, tuple) else clean(value)
        for key, value in record.fields
    }
    redacted = record.with_(
        title=clean(record.title),
        abstract=clean(record.abstract),
        source=clean(record.source),
        body=clean(record.body),
        tags=tuple(clean(t) for t in record.tags),
        fields=fields,
    )
    return redacted, tuple(kinds)


def _collect_template(node: Traversable, prefix: str, out: dict[str, bytes]) -> None:
    for child in node.iterdir():
        name = f"{prefix}{child.name}"
        if child.name in ("__pycache__", "__init__.py"):
            continue
        if child.is_dir():
            _collect_template(child, name + "/", out)
        else:
            out[name] = child.read_bytes()


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


def _abstract_from(body: str) -> str:
    """The body's first line of prose, cut to the abstract limit at a word boundary."""
    for line in body.splitlines():
        text = line.strip().lstrip("#>*- ").strip()
        if text and not text.startswith("```"):
            if len(text) <= 240:
                return text
            return text[:239].rsplit(" ", 1)[0] + "…"
    return ""


def _author(agent: str, configured: Identity | None) -> Identity:
    name = agent.strip() or (configured.name if configured else "gitmem")
    if configured is not None and configured.name == name:
        return configured
    email_local = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name) or "agent"
    return Identity(name, f"{email_local}@gitmem.invalid")


def _message(
    operation: str,
    type_: str,
    title: str,
    detail: str,
    agent: str,
    trailers: Mapping[str, str] | None = None,
    *,
    raw_subject: bool = False,
) -> str:
    """`op(type): title`, an optional paragraph, then trailers programs can parse."""
    title_line = " ".join(title.split())
    if len(title_line) > 72:
        title_line = title_line[:71].rsplit(" ", 1)[0] + "…"
    subject = title_line if raw_subject else f"{operation}({type_}): {title_line}"
    lines = [subject, ""]
    if detail:
        lines += [detail, ""]
    lines.append(f"Gitmem-Operation: {operation}")
    for key, value in (trailers or {}).items():
        lines.append(f"{key}: {value}")
    lines.append(f"Gitmem-Agent: {agent.strip() or 'unknown'}")
    return "\n".join(lines) + "\n"
