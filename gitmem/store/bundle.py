"""Several records, and store files beside them, changed in one commit: what accepting a
consolidation proposal writes (the records it changes and the proposal file that records the
decision), so that reverting the commit undoes the whole decision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from gitmem.errors import GitmemError, UsageError
from gitmem.store import writes
from gitmem.store.reader import RECORDS_DIR
from gitmem.store.record import Record
from gitmem.store.recordfile import dump

if TYPE_CHECKING:
    from gitmem.store.store import Store, WriteResult

__all__ = ["write_bundle"]

Change = tuple[Record | None, Record | None]  # (the version read, the new one; None: removed)


def write_bundle(
    store: Store,
    records: Sequence[Change],
    files: Mapping[str, bytes | None],
    *,
    operation: str,
    subject: str,
    detail: str = "",
    trailers: Mapping[str, str] | None = None,
    agent: str = "",
) -> WriteResult:
    """One commit of `records` and `files` (paths outside records/). Each new record is
    checked as every write checks it; a record that changed since it was read refuses the
    whole write, so a decision never lands on a version nobody saw."""
    from gitmem.store.store import WriteResult

    if any(path.startswith(RECORDS_DIR + "/") for path in files):
        raise UsageError("record files are written as records, not as plain files")
    with store._exclusive():
        changes: dict[str, bytes | None] = dict(files)
        written: list[Record] = []
        for old, new in records:
            either = old or new
            if either is None:
                continue
            rid = either.id
            if old is not None and store.previous(rid) != old:
                raise GitmemError(f"{rid} changed since it was read; run the command again")
            if new is None:
                if old is not None:
                    changes[old.path] = None
                continue
            writes.check(store, new, previous=old)
            if old is not None and old.path != new.path:
                changes[old.path] = None
            changes[new.path] = dump(new).encode("utf-8")
            written.append(new)
        who = agent.strip() or store.default_agent()
        message = writes.message(operation, "", subject, detail, who, trailers, raw_subject=True)
        commit = store._commit(changes, message, who, None)
    return WriteResult(commit, tuple(written), operation)
