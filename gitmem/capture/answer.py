"""The distiller's answer, parsed at the boundary: JSON (alone, fenced, or inside text; or a
host CLI's JSON envelope with the answer as its `result`) holding `{"records": [...]}`, each
checked as a write would check it (type, title, body rules, the type's schema, a superseded
id that is current), so that the problems can go back to the distiller once."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from gitmem.errors import GitmemError, NotFound, RecordInvalid
from gitmem.store import writes
from gitmem.store.batch import Draft
from gitmem.store.reader import Reader

__all__ = ["Parsed", "parse_answer"]

_KEYS = frozenset({"type", "title", "abstract", "body", "tags", "fields", "supersedes"})


@dataclass(frozen=True)
class Parsed:
    drafts: tuple[Draft, ...]
    problems: tuple[str, ...]  # what to tell the distiller when retrying (empty: accepted)
    dropped: int = 0  # records past the cap


def _json_in(text: str) -> Any:
    """The first JSON object or array in `text`."""
    decoder = json.JSONDecoder()
    stripped = text.strip()
    for start, char in enumerate(stripped):
        if char in "{[":
            try:
                value, _ = decoder.raw_decode(stripped, start)
            except ValueError:
                continue
            return value
    raise ValueError("no JSON object in the answer")


def _records_of(value: Any) -> list[Any] | None:
    if isinstance(value, dict) and "records" not in value and isinstance(value.get("result"), str):
        try:
            value = _json_in(value["result"])  # `claude -p --output-format json`'s envelope
        except ValueError:
            return None
    if isinstance(value, list):
        return value
    if isinstance(value, dict) and isinstance(value.get("records"), list):
        return list(value["records"])
    return None


def parse_answer(text: str, store: Reader, *, cap: int, source: str, scope: str) -> Parsed:
    """Drafts from the answer, or the problems that refused it."""
    try:
        value = _json_in(text)
    except ValueError:
        shown = " ".join(text.split())[:80]
        return Parsed((), (f"the answer is not JSON (it begins {shown!r})",))
    items = _records_of(value)
    if items is None:
        return Parsed((), ('the answer must be {"records": [...]}',))
    dropped = max(0, len(items) - cap)
    drafts: list[Draft] = []
    problems: list[str] = []
    moment = datetime.now(UTC).replace(microsecond=0)
    for number, item in enumerate(items[:cap]):
        where = f"records[{number}]"
        try:
            drafts.append(_draft(item, store, moment, source, scope, where))
        except (RecordInvalid, GitmemError) as exc:
            problems.append(f"{where}: {exc}")
    return Parsed(tuple(drafts), tuple(problems), dropped)


def _text(item: Mapping[str, Any], key: str, where: str) -> str:
    value = item.get(key, "")
    if not isinstance(value, str):
        raise RecordInvalid(f"{key} must be text")
    return value


def _draft(
    item: Any, store: Reader, moment: datetime, source: str, scope: str, where: str
) -> Draft:
    if not isinstance(item, dict):
        raise RecordInvalid("each record must be a JSON object")
    unknown = set(item) - _KEYS
    if unknown:
        raise RecordInvalid(
            f"unknown key {', '.join(sorted(unknown))}; use {', '.join(sorted(_KEYS))}"
        )
    kind = _text(item, "type", where)
    title = " ".join(_text(item, "title", where).split())
    body = _text(item, "body", where).strip()
    abstract = " ".join(_text(item, "abstract", where).split())
    body = body or abstract
    tags = item.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise RecordInvalid("tags must be a list of text")
    fields = item.get("fields", {})
    if not isinstance(fields, dict):
        raise RecordInvalid("fields must be an object of field: value")
    clean: dict[str, str | Sequence[str]] = {}
    for name, value in fields.items():
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            clean[str(name)] = tuple(value)
        elif isinstance(value, str):
            if value.strip():
                clean[str(name)] = value.strip()
        else:
            raise RecordInvalid(f"fields.{name} must be text or a list of text")
    supersedes = _text(item, "supersedes", where).strip()
    if supersedes:
        try:
            old = store.get(supersedes)
        except NotFound:
            raise RecordInvalid(f"supersedes names {supersedes}, which is no record") from None
        if old.status == "superseded":
            raise RecordInvalid(f"supersedes names {old.id}, already superseded")
        supersedes = old.id
    draft = Draft(
        type=kind,
        title=title,
        body=body,
        abstract=abstract,
        tags=tuple(t.strip() for t in tags if t.strip()),
        fields=clean,
        source=source,
        scope=scope,
        supersedes=supersedes,
    )
    record = writes.new_record(
        store,
        kind,
        body,
        title,
        abstract,
        draft.tags,
        "capture",
        scope,
        source,
        1.0,
        (),
        clean,
        moment,
    )
    writes.check(store, record)
    return draft
