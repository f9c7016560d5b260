"""Per-type record schemas: read from a store's ``schemas/<type>.toml`` and checked against records.

A record's own fields arrive as YAML strings (or lists of strings), never converted, so each
check here parses the text itself and says what to write instead. The file format is
documented in docs/schemas.md.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from gitmem.errors import GitmemError, UsageError
from gitmem.store.record import BASE_FIELDS, FIELD_RE, TYPE_RE, FieldValue, Record

__all__ = ["KINDS", "FieldSpec", "Schema", "check_record", "coerce", "load_schemas"]

KINDS = ("text", "int", "float", "bool", "date", "datetime", "list", "enum")
# "body" is not a frontmatter key but recordfile.parse treats it as one, so a field cannot use it.
_RESERVED = frozenset(BASE_FIELDS) | {"body"}
_SCHEMA_KEYS = frozenset({"type", "description", "additional_fields", "fields", "key"})
_FIELD_KEYS = frozenset({"kind", "required", "choices", "description"})

# Each kind's accepted text, and what to write instead. The pattern pins the shape (int() alone
# takes " 1_0 ", fromisoformat takes 20260301 or no zone); the parser rejects impossible values.
_SHAPES: dict[str, tuple[re.Pattern[str], Callable[[str], object], str]] = {
    "int": (re.compile(r"^[+-]?[0-9]+$"), int, "write a whole number, e.g. 3"),
    "float": (
        re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"),
        float,
        "write a number, e.g. 0.5",
    ),
    "bool": (re.compile(r"^(?:true|false)$"), str, "write true or false (lower case)"),
    "date": (
        re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"),
        date.fromisoformat,
        "write YYYY-MM-DD, e.g. 2026-03-01",
    ),
    "datetime": (
        re.compile(
            r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?"
            r"(?:Z|[+-][0-9]{2}:[0-9]{2})$"
        ),
        datetime.fromisoformat,
        "write ISO-8601 with Z or an offset, e.g. 2026-03-01T14:30:00Z",
    ),
}


@dataclass(frozen=True)
class FieldSpec:
    """One field a type adds to the base record."""

    name: str
    kind: str
    required: bool = False
    choices: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class Schema:
    """What a record of one type may and must carry beyond the base fields."""

    type: str
    description: str
    fields: tuple[FieldSpec, ...]
    additional_fields: bool = True
    # Fields whose values together name one current record (an upsert by capture:
    # gitmem.capture.upsert; docs/schemas.md). Empty: records of this type have no key.
    key: tuple[str, ...] = ()

    def field(self, name: str) -> FieldSpec | None:
        return next((spec for spec in self.fields if spec.name == name), None)


# --- loading --------------------------------------------------------------------------------


def shipped_schema(path: Path, content: bytes) -> Schema:
    """A schema the package ships (`path` as it would stand in the store, `content` its
    bytes), loaded without being written."""
    return _load_file(path, content)


def load_schemas(schemas_dir: Path) -> dict[str, Schema]:
    """Every ``<type>.toml`` in ``schemas_dir``, by type. Raises GitmemError for a bad file."""
    if not schemas_dir.is_dir():
        raise GitmemError(
            f"no schemas directory at {schemas_dir} — restore it from git "
            "(git checkout -- schemas) or create it with one <type>.toml per record type"
        )
    schemas: dict[str, Schema] = {}
    for path in sorted(schemas_dir.glob("*.toml")):
        if path.is_file():
            schema = _load_file(path)
            schemas[schema.type] = schema
    return schemas


def _load_file(path: Path, content: bytes | None = None) -> Schema:
    """The schema in `path` (or `content`, the file's bytes, when given: a shipped schema
    not yet written to the store)."""

    def fail(problem: str) -> GitmemError:
        return GitmemError(f"schema {path}: {problem}")

    try:
        raw = path.read_bytes() if content is None else content
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise fail(f"cannot be read ({exc}) — make it a readable UTF-8 text file") from exc
    except tomllib.TOMLDecodeError as exc:
        raise fail(f"is not valid TOML ({exc}) — fix the syntax") from exc
    type_ = path.name.removesuffix(".toml")
    if not TYPE_RE.match(type_):
        raise fail("the file name must be <type>.toml with a lower-case type, e.g. decision.toml")
    unknown = set(data) - _SCHEMA_KEYS
    if unknown:
        raise fail(f"unknown key {_listing(unknown)} — the keys are {_listing(_SCHEMA_KEYS)}")
    if data.get("type") != type_:
        found = f"type = {data['type']!r}" if "type" in data else "type is missing"
        raise fail(f'{found} — write type = "{type_}" to match the file name')
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise fail('description is missing — add description = "what this type is for"')
    additional = data.get("additional_fields", True)
    if not isinstance(additional, bool):
        raise fail("additional_fields must be true or false")
    table = data.get("fields", {})
    if not isinstance(table, dict):
        raise fail("fields must be tables, e.g. [fields.rationale]")
    specs = tuple(_field_spec(name, spec, fail) for name, spec in table.items())
    key = data.get("key", [])
    if not isinstance(key, list) or not all(isinstance(k, str) for k in key):
        raise fail('key must be a list of field names, e.g. key = ["project", "subject"]')
    names = {spec.name for spec in specs}
    for name in key:
        if name not in names:
            raise fail(f"key names {name!r}, which is not a field here — add [fields.{name}]")
        if next(s for s in specs if s.name == name).kind == "list":
            raise fail(f"key field {name!r} is a list; a key field holds one value")
    if len(set(key)) != len(key):
        raise fail("key names a field twice")
    return Schema(type_, description.strip(), specs, additional, tuple(key))


def _field_spec(name: str, data: Any, fail: Callable[[str], GitmemError]) -> FieldSpec:
    where = f"[fields.{name}]"
    if not FIELD_RE.match(name):
        raise fail(f"{where}: field names are lower-case letters, digits and '_'")
    if name in _RESERVED:
        raise fail(f"{where}: {name!r} is a base field of every record — pick another name")
    if not isinstance(data, dict):
        raise fail(f"{where} must be a table with kind = ...")
    unknown = set(data) - _FIELD_KEYS
    if unknown:
        raise fail(f"{where}: unknown key {_listing(unknown)} — use {_listing(_FIELD_KEYS)}")
    kind = data.get("kind", "text")
    if kind not in KINDS:
        raise fail(f"{where}: kind {kind!r} is not one of {_listing(KINDS)}")
    required = data.get("required", False)
    if not isinstance(required, bool):
        raise fail(f"{where}: required must be true or false")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise fail(f"{where}: description must be text")
    choices = data.get("choices")
    if kind == "enum":
        texts = isinstance(choices, list) and all(isinstance(c, str) and c.strip() for c in choices)
        if not texts or not choices or len(set(choices)) != len(choices):
            raise fail(f'{where}: an enum needs choices = ["a", "b", ...], distinct and non-empty')
    elif choices is not None:
        raise fail(f'{where}: choices only apply to kind = "enum" — remove them or change kind')
    return FieldSpec(name, kind, required, tuple(choices or ()), description)


def _listing(names: Iterable[str]) -> str:
    return ", ".join(sorted(names))


# --- checking -------------------------------------------------------------------------------


def check_record(record: Record, schemas: Mapping[str, Schema]) -> list[str]:
    """Problems with ``record``'s type and own fields, each "field: what is wrong — how to fix"."""
    schema = schemas.get(record.type)
    if schema is None:
        known = _listing(schemas) or "none"
        return [
            f"type: no schema for {record.type!r} (known types: {known}) — use one of those, "
            f"or add schemas/{record.type}.toml to define it"
        ]
    values = record.extra
    problems: list[str] = []
    for spec in schema.fields:
        value = values.get(spec.name)
        if value is None or value == "" or value == ():
            if spec.required:
                about = f" ({spec.description.rstrip('.')})" if spec.description else ""
                problems.append(
                    f"{spec.name}: missing — {schema.type} records require it{about}; "
                    f"add {spec.name}: <value>"
                )
            continue
        problem = _value_problem(spec, value, schema.type)
        if problem:
            problems.append(f"{spec.name}: {problem}")
    if not schema.additional_fields:
        allowed = _listing(spec.name for spec in schema.fields) or "none"
        for name, _ in record.fields:
            if schema.field(name) is None:
                problems.append(
                    f"{name}: not a field of {schema.type} records (allowed: {allowed}) — "
                    f"remove it, or set additional_fields = true in schemas/{schema.type}.toml"
                )
    return problems


def _value_problem(spec: FieldSpec, value: FieldValue, type_: str) -> str:
    if spec.kind == "list":
        if isinstance(value, tuple):
            return ""
        return f"is text, but {type_} records take a list here — write [a, b] or '- item' lines"
    if isinstance(value, tuple):
        return f"is a list, but {type_} records take one {spec.kind} value here — write one value"
    if spec.kind == "enum" and value not in spec.choices:
        return f"{value!r} is not one of {', '.join(spec.choices)} — use one of those"
    if spec.kind in _SHAPES and not _parses(spec.kind, value):
        return f"{value!r} is not a valid {spec.kind} — {_SHAPES[spec.kind][2]}"
    return ""


def _parses(kind: str, value: str) -> bool:
    pattern, parse, _ = _SHAPES[kind]
    if pattern.match(value) is None:
        return False
    try:
        parsed = parse(value)
    except ValueError:  # right shape, impossible value: 2026-02-30, 25:00
        return False
    return not isinstance(parsed, float) or math.isfinite(parsed)


# --- command line ---------------------------------------------------------------------------


def coerce(schema: Schema | None, name: str, raw: str) -> FieldValue:
    """The stored form of a ``--field NAME=VALUE``: a list kind splits on commas, else raw text."""
    if name in _RESERVED:
        raise UsageError(
            f"--field {name}: {name!r} is a base field with its own option — "
            "use that option instead (see --help)"
        )
    if not FIELD_RE.match(name):
        raise UsageError(
            f"--field {name}: field names are lower-case letters, digits and '_', e.g. decided_on"
        )
    spec = schema.field(name) if schema is not None else None
    if spec is not None and spec.kind == "list":
        return tuple(item.strip() for item in raw.split(",") if item.strip())
    return raw
