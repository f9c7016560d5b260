"""Several new records, and the records they supersede, as one write: what one distilled span
of a session becomes (gitmem.capture). Planned here, committed by `Store.write_batch`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from gitmem.errors import GitmemError
from gitmem.store import writes
from gitmem.store.reader import Reader
from gitmem.store.record import Record, make_id
from gitmem.store.writes import SecretPolicy

__all__ = ["Draft", "plan_batch"]


@dataclass(frozen=True)
class Draft:
    """A record to write: what `Store.record` takes, and the id it supersedes, if any."""

    type: str
    title: str
    body: str
    abstract: str = ""
    tags: tuple[str, ...] = ()
    fields: Mapping[str, str | Sequence[str]] = field(default_factory=dict)
    source: str = ""
    scope: str = "shared"
    supersedes: str = ""


def plan_batch(
    store: Reader, drafts: Sequence[Draft], agent: str, secrets: SecretPolicy, moment: datetime
) -> tuple[dict[str, Record], tuple[Record, ...], tuple[str, ...]]:
    """(path -> record to write, the new records, the redactions): every draft built, guarded
    and checked as its own write would be; raises (RecordInvalid, SecretFound, GitmemError)
    before anything is written."""
    changes: dict[str, Record] = {}
    created: list[Record] = []
    redactions: list[str] = []
    known = dict(store.catalog())
    retiring: set[str] = set()
    for draft in drafts:
        old = store.get(draft.supersedes) if draft.supersedes else None
        if old is not None and (old.status == "superseded" or old.id in retiring):
            raise GitmemError(
                f"{old.id} is already superseded; supersede the record that replaced it"
            )
        scope = old.scope if old is not None and old.scope == "private" else draft.scope
        new = writes.new_record(
            store,
            draft.type,
            draft.body,
            draft.title,
            draft.abstract,
            draft.tags,
            agent,
            scope,
            draft.source,
            1.0 if old is None else old.weight,
            (),
            draft.fields,
            moment,
        )
        while new.id in known:  # an id another draft of this batch drew: draw again
            new = new.with_(id=make_id(draft.title, fallback=draft.type))
        if old is not None:
            new = new.with_(supersedes=(old.id,))
        new, found = writes.guard_secrets(new, secrets)
        redactions.extend(found)
        known[new.id] = new.path
        writes.check(store, new, known)
        changes[new.path] = new
        created.append(new)
        if old is not None:
            retiring.add(old.id)
            changes[old.path] = old.with_(
                status="superseded", superseded_by=new.id, updated=max(moment, old.updated)
            )
    return changes, tuple(created), tuple(redactions)
