"""Turning `--field K=V` style changes into a new version of a record."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gitmem.errors import UsageError
from gitmem.store.record import Record
from gitmem.store.schema import Schema, coerce

__all__ = ["FIXED_FIELDS", "apply_changes"]

# Fields a person may not amend: identity and the supersede chain have their own commands.
FIXED_FIELDS = frozenset({"id", "type", "created", "updated", "supersedes", "superseded_by"})
_TEXT_FIELDS = ("title", "abstract", "agent", "scope", "source", "status")
_LIST_FIELDS = ("tags", "links")


def _as_list(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, Sequence):
        return tuple(str(part).strip() for part in value if str(part).strip())
    raise UsageError(f"expected a list or comma-separated text, got {value!r}")


def apply_changes(record: Record, changes: Mapping[str, Any], type_schema: Schema | None) -> Record:
    """The record with `changes` applied; an empty value clears a type field."""
    updates: dict[str, Any] = {}
    fields = dict(record.fields)
    for key, value in changes.items():
        if key in FIXED_FIELDS:
            raise UsageError(
                f"{key} cannot be amended; record a new memory and use "
                '"gitmem supersede" to replace this one'
            )
        if key == "body":
            updates["body"] = str(value)
        elif key in _TEXT_FIELDS:
            updates[key] = "" if value is None else str(value).strip()
        elif key in _LIST_FIELDS:
            updates[key] = _as_list(value)
        elif key == "weight":
            try:
                updates["weight"] = float(value)
            except (TypeError, ValueError):
                raise UsageError(f"weight: {value!r} is not a number (0 to 10)") from None
        elif value is None or value == "":
            fields.pop(key, None)
        elif isinstance(value, str):
            fields[key] = coerce(type_schema, key, value)
        else:
            fields[key] = tuple(str(v) for v in value)
    return record.with_(fields=fields, **updates)
