"""The coordination records of a store, read straight from the tree at HEAD.

Messages and tasks live under `records/message/` and `records/task/`, sessions and decisions
under their type's directory, one folder per month of creation (gitmem.store.record.
record_path). Coordination asks for one type, often for recent months only, so it lists just
those folders and parses just those files: no search index, no model, and a 10k-record store
costs what its few coordination records cost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from gitmem.errors import NotFound, RecordInvalid
from gitmem.store.reader import RECORDS_DIR, Reader
from gitmem.store.record import Record
from gitmem.store.recordfile import parse

if TYPE_CHECKING:
    from gitmem.store.store import Store

__all__ = [
    "Keep",
    "fetch",
    "field_has",
    "months_since",
    "need_schema",
    "of_type",
    "updated_since",
    "utc_now",
]

Keep = Callable[[bytes], bool]
_ESCAPED = ('"', "\\")  # characters a YAML double-quoted scalar writes escaped


def utc_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def months_since(since: datetime, now: datetime) -> list[str]:
    """The `YYYY-MM` folders that can hold records created from one month before `since` to
    `now`: a record created in the month before may have been updated since (a session that
    ran across a month's end)."""
    start = (since.astimezone(UTC).replace(day=1) - timedelta(days=1)).replace(day=1)
    months: list[str] = []
    year, month = start.year, start.month
    end = (now.year, now.month)
    while (year, month) <= end:
        months.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return months


def of_type(
    store: Reader,
    type_: str,
    months: Iterable[str] | None = None,
    *,
    keep: Keep | None = None,
    superseded: bool = False,
) -> list[Record]:
    """Every current record of `type_` at HEAD (with `superseded`, the superseded ones too),
    in path order; only those created in `months` (`YYYY-MM`) when given, and only files
    whose bytes `keep` accepts (a cheap test before the parse, which costs ~0.4 ms a record:
    it may let through what the caller then drops, never drop what it wants). Files that do
    not parse are skipped, as Reader.records does (`gitmem validate` reports them)."""
    head = store.head()
    base = f"{RECORDS_DIR}/{type_}"
    folders = [base] if months is None else [f"{base}/{m}" for m in sorted(set(months))]
    found: list[Record] = []
    for folder in folders:
        for path, blob in store.repo.files(head, folder):
            if not path.endswith(".md"):
                continue
            data = store.repo.blob(blob)
            if keep is not None and not keep(data):
                continue
            try:
                record = parse(data.decode("utf-8"))
            except (UnicodeDecodeError, RecordInvalid):
                continue
            if superseded or record.status != "superseded":
                found.append(record)
    return found


def field_has(name: str, *words: str, written: tuple[bytes, ...] = ()) -> Keep:
    """A `keep` test: the first `name:` line holds one of `words` (as UTF-8) or of `written`
    (values as the file spells them, quotes included), or there is no such line (the parse
    decides). A word YAML would write escaped (a quote, a backslash, a control character)
    cannot be matched as bytes: then every file is kept."""
    key = f"\n{name}: ".encode("ascii")
    if any(ch in _ESCAPED or ord(ch) < 32 for w in words for ch in w):
        return lambda data: True
    needles = [w.encode("utf-8") for w in words if w] + list(written)

    def keep(data: bytes) -> bool:
        at = data.find(key)
        if at < 0:
            return True
        end = data.find(b"\n", at + len(key))
        line = data[at + len(key) : end if end >= 0 else len(data)]
        return any(n in line for n in needles)

    return keep


def updated_since(since: datetime) -> Keep:
    """A `keep` test: the frontmatter's `updated:` is at or after `since`. gitmem writes it
    as YYYY-MM-DDTHH:MM:SSZ, which sorts as text; a file where it looks otherwise is kept
    (the parse decides)."""
    mark = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ").encode("ascii")

    def keep(data: bytes) -> bool:
        at = data.find(b"\nupdated: ")
        value = data[at + 10 : at + 30] if at >= 0 else b""
        if len(value) != 20 or value[4:5] != b"-" or value[19:20] != b"Z":
            return True
        return value >= mark

    return keep


def fetch(store: Reader, id_or_prefix: str, type_: str, noun: str, listing: str) -> Record:
    """The record `id_or_prefix` names, which must be of `type_`; NotFound names the command
    that lists the right ids."""
    try:
        record = store.get(id_or_prefix)
    except NotFound:
        raise NotFound(f'no {noun} with id "{id_or_prefix}" — list them with "{listing}"') from None
    if record.type != type_:
        raise NotFound(
            f'{record.id} is a {record.type} record, not a {noun} — list {noun}s with "{listing}"'
        )
    return record


def need_schema(store: Store, type_: str, agent: str) -> None:
    """A store made before `type_` records shipped gets the shipped schema first, in its own
    commit (Store.add_shipped_schema, as the work graph's `entity` does): no flag day."""
    if type_ not in store.schemas:
        store.add_shipped_schema(type_, agent=agent)
