"""A memory store: a git repository of records, where every write is exactly one commit.

`Store.open(path)` gives reads (get, records, history, export) and writes (record, supersede,
forget, amend, replace_text, import_records, write_batch, commit_pending,
add_shipped_schema). Every write validates first, runs the secret guard, then commits under
the store's write lock; refused input raises before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from gitmem.errors import GitmemError, RecordInvalid, UsageError
from gitmem.store import schema, writes
from gitmem.store.commit import Committer, exclusively
from gitmem.store.config import load_config, template_files
from gitmem.store.git import GitRepo
from gitmem.store.reader import CACHE_DIR
from gitmem.store.record import Record
from gitmem.store.recordfile import dump, parse
from gitmem.store.writes import SecretPolicy

if TYPE_CHECKING:
    from gitmem.store.batch import Draft
    from gitmem.store.history import Version

__all__ = ["Store", "WriteResult"]


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


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


class Store(Committer):
    """An opened store: its reads (gitmem.store.reader) and its writes, each one commit
    (gitmem.store.commit)."""

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
        files = template_files()
        exclude = repo.git_dir / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with exclude.open("a", encoding="utf-8") as handle:
            handle.write(f"{CACHE_DIR}/\n")
        who = writes.author(agent, repo.config_identity())
        repo.commit_files(
            files,
            writes.message("init", "", "init: a new gitmem store", "", agent, raw_subject=True),
            who,
            repo.config_identity() or who,
            repo.head(),
        )
        return cls(repo, load_config(root)), True

    def history(self, id_or_prefix: str) -> list[Version]:
        from gitmem.store.history import record_history  # as the CLI's history command: late

        return record_history(self, id_or_prefix)

    # --- writing -----------------------------------------------------------------------------

    @exclusively
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
        new = writes.new_record(
            self,
            type_,
            body,
            title,
            abstract,
            tags,
            agent,
            scope,
            source,
            weight,
            links,
            fields,
            moment,
        )
        new, redactions = writes.guard_secrets(new, secrets)
        writes.check(self, new)
        return self._write(
            {new.path: new},
            "record",
            new,
            agent,
            redactions=redactions,
        )

    @exclusively
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
        new = writes.new_record(
            self,
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
        new, redactions = writes.guard_secrets(new, secrets)
        writes.check(self, new)
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

    @exclusively
    def forget(self, id_or_prefix: str, *, reason: str, agent: str = "") -> WriteResult:
        """Remove a record from the current tree; history keeps it."""
        if not reason.strip():
            raise UsageError("forget needs --reason: say why, for the audit trail in git log")
        old = self.get(id_or_prefix)
        return self._write({old.path: None}, "forget", old, agent, detail=reason.strip())

    @exclusively
    def amend(
        self,
        id_or_prefix: str,
        changes: Mapping[str, Any],
        *,
        agent: str = "",
        secrets: SecretPolicy = "refuse",
        now: datetime | None = None,
        operation: str = "amend",
    ) -> WriteResult:
        """Change fields of a record in place (title, tags, weight, the type's fields, ...);
        `operation` names the change in the commit (a task's transition, an ack)."""
        from gitmem.store.amend import apply_changes

        old = self.get(id_or_prefix)
        new = apply_changes(old, changes, self.schemas.get(old.type))
        if new == old:
            return WriteResult(None, (old,), operation)
        new = new.with_(updated=max((now or _now()).replace(microsecond=0), old.updated))
        new, redactions = writes.guard_secrets(new, secrets)
        writes.check(self, new, previous=old)
        return self._write({new.path: new}, operation, new, agent, redactions=redactions)

    @exclusively
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
        new, redactions = writes.guard_secrets(new, secrets)
        writes.check(self, new, previous=old)
        changes: dict[str, Record | None] = {new.path: new}
        if new.path != old.path:
            changes[old.path] = None
        return self._write(changes, "edit", new, agent, redactions=redactions)

    @exclusively
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
        message = writes.message("import", "", subject, "", agent, trailers, raw_subject=True)
        commit = self._commit(plan.changes, message, agent, head)
        return WriteResult(commit, plan.records, "import", plan.redactions)

    @exclusively
    def write_batch(
        self,
        drafts: Sequence[Draft],
        *,
        subject: str,
        agent: str = "",
        trailers: Mapping[str, str] | None = None,
        secrets: SecretPolicy = "refuse",
        now: datetime | None = None,
    ) -> WriteResult:
        """New records (each superseding the record its draft names, if any) as one commit:
        a captured span (gitmem.capture). Nothing is written unless every draft passes."""
        from gitmem.store.batch import plan_batch

        agent = agent.strip() or self.default_agent()
        moment = (now or _now()).replace(microsecond=0)
        changes, created, redactions = plan_batch(self, drafts, agent, secrets, moment)
        if not created:
            return WriteResult(None, (), "capture")
        extra = {"Gitmem-Count": str(len(created)), **(trailers or {})}
        text = writes.message("capture", "", subject, "", agent, extra, raw_subject=True)
        files = {p: dump(r).encode("utf-8") for p, r in changes.items()}
        return WriteResult(self._commit(files, text, agent, None), created, "capture", redactions)

    @exclusively
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
        text = writes.message("edit", "", subject, "", agent, trailers, raw_subject=True)
        commit = self._commit(files, text, agent, self.repo.head(), check_dirty=False)
        return WriteResult(commit, records, "edit")

    @contextmanager
    def shipped_schema_on_trial(self, type_: str) -> Iterator[bool]:
        """Whether this store was made before `type_` shipped (no `schemas/<type>.toml`). If
        so, within the block the shipped schema is loaded without being written, so that
        records of the type can be checked before anything is committed; add_shipped_schema
        commits it with the first write that needs it. If nothing did by the block's end, the
        store's schemas are as they were (a refused batch leaves no trace, not even in this
        object)."""
        path = f"schemas/{type_}.toml"
        if (self.root / path).exists() or type_ in self.schemas:
            yield False
            return
        before = self.schemas
        shipped = schema.shipped_schema(self.root / path, template_files()[path])
        self.schemas = {**before, type_: shipped}
        try:
            yield True
        finally:
            if not (self.root / path).exists():
                self.schemas = before

    @exclusively
    def add_shipped_schema(self, type_: str, *, agent: str = "") -> str | None:
        """Add the shipped `schemas/<type>.toml` to a store made before that type shipped (one
        commit; None when the store has it). The work graph's `entity` type (issue 19)."""
        path = f"schemas/{type_}.toml"
        if (self.root / path).exists():
            return None
        data = template_files()[path]
        agent = agent.strip() or self.default_agent()
        text = writes.message("schema", "", f"schema: add {type_}", "", agent, raw_subject=True)
        commit = self._commit({path: data}, text, agent, self.repo.head())
        self.schemas = schema.load_schemas(self.root / "schemas")
        return commit

    # --- a record write's commit (the lock and the commit itself: gitmem.store.commit) -------

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
        message = writes.message(
            operation, subject_record.type, subject_record.title, detail, agent, trailers
        )
        files = {p: (None if r is None else dump(r).encode("utf-8")) for p, r in changes.items()}
        commit = self._commit(files, message, agent, None)
        written = tuple(r for r in changes.values() if r is not None) or (subject_record,)
        return WriteResult(commit, written, operation, redactions)
