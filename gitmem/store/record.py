"""A memory record: the frozen value, its id and its path, and what makes one valid.

Its file form (Markdown with YAML frontmatter) is gitmem.store.recordfile; the loosely typed
values that form or a JSON import gives are converted here, once, at the boundary
(`from_mapping`), and every record is checked by the same rules (`format_problems`).
"""

from __future__ import annotations

import math
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from gitmem.errors import RecordInvalid
from gitmem.store.textrules import bad_character

__all__ = [
    "BASE_FIELDS",
    "ID_RE",
    "SCOPES",
    "STATUSES",
    "FieldValue",
    "Record",
    "format_problems",
    "format_time",
    "make_id",
    "parse_time",
    "record_path",
    "slugify",
]

FieldValue = str | tuple[str, ...]

SCOPES = ("shared", "agent", "private")
STATUSES = ("active", "superseded")
# Frontmatter keys every record has, in the order they are written.
BASE_FIELDS = (
    "id",
    "type",
    "title",
    "abstract",
    "tags",
    "agent",
    "scope",
    "source",
    "created",
    "updated",
    "weight",
    "links",
    "supersedes",
    "superseded_by",
    "status",
)
_LIST_FIELDS = frozenset({"tags", "links", "supersedes"})
ABSTRACT_MAX = 240
WEIGHT_MIN, WEIGHT_MAX = 0.0, 10.0

ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
TYPE_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
FIELD_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_SUFFIX_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case
_SUFFIX_LEN = 6
_SLUG_MAX = 48


@dataclass(frozen=True)
class Record:
    """One memory. Immutable; change it with ``dataclasses.replace`` or ``Record.with_``."""

    id: str
    type: str
    title: str
    body: str
    created: datetime
    updated: datetime
    abstract: str = ""
    tags: tuple[str, ...] = ()
    agent: str = ""
    scope: str = "shared"
    source: str = ""
    weight: float = 1.0
    links: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    superseded_by: str = ""
    status: str = "active"
    # The type's own fields, as YAML gave them (strings or lists of strings), sorted by key.
    fields: tuple[tuple[str, FieldValue], ...] = field(default=())

    @property
    def path(self) -> str:
        return record_path(self.type, self.created, self.id)

    @property
    def extra(self) -> dict[str, FieldValue]:
        return dict(self.fields)

    def with_(self, **changes: Any) -> Record:
        if "fields" in changes and isinstance(changes["fields"], Mapping):
            changes["fields"] = _sorted_fields(changes["fields"])
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready data, in file order, with the body last."""
        data: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "title": self.title,
            "abstract": self.abstract,
            "tags": list(self.tags),
            "agent": self.agent,
            "scope": self.scope,
            "source": self.source,
            "created": format_time(self.created),
            "updated": format_time(self.updated),
            "weight": self.weight,
            "links": list(self.links),
            "supersedes": list(self.supersedes),
            "superseded_by": self.superseded_by,
            "status": self.status,
        }
        for key, value in self.fields:
            data[key] = list(value) if isinstance(value, tuple) else value
        data["body"] = self.body
        return data


def _sorted_fields(values: Mapping[str, Any]) -> tuple[tuple[str, FieldValue], ...]:
    out: list[tuple[str, FieldValue]] = []
    for key in sorted(values):
        value = values[key]
        out.append(
            (key, tuple(str(v) for v in value) if isinstance(value, list | tuple) else str(value))
        )
    return tuple(out)


# --- time -----------------------------------------------------------------------------------


def format_time(moment: datetime) -> str:
    m = moment if moment.tzinfo is UTC else moment.astimezone(UTC)
    return f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}Z"


def parse_time(text: str) -> datetime:
    """An ISO-8601 date or datetime; naive values are UTC. Raises ValueError."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).replace(microsecond=0)


# --- ids and paths --------------------------------------------------------------------------


def slugify(title: str, fallback: str = "record") -> str:
    """Lower-case ASCII words joined by '-', at most 48 characters, cut at a word boundary."""
    folded = unicodedata.normalize("NFKD", title.casefold())  # ß -> ss, é -> e + accent
    ascii_text = folded.encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > _SLUG_MAX:
            break
        slug = candidate
    if not slug and words:
        slug = words[0][:_SLUG_MAX]
    return slug or fallback


def make_id(title: str, fallback: str = "record") -> str:
    """A readable slug plus 30 random bits, so two offline devices never pick the same id."""
    # 32 letters: the low five bits of each random byte pick one, uniformly (and without
    # `secrets`, whose import loads hmac and OpenSSL's hashlib into every `gitmem record`).
    suffix = "".join(_SUFFIX_ALPHABET[b & 31] for b in os.urandom(_SUFFIX_LEN))
    return f"{slugify(title, fallback)}-{suffix}"


def record_path(type_: str, created: datetime, record_id: str) -> str:
    """records/<type>/<YYYY-MM>/<id>.md: a person finds things by kind and month, and a
    directory only grows with one month's writes of one type, never with the whole store."""
    month = created.astimezone(UTC).strftime("%Y-%m")
    return f"records/{type_}/{month}/{record_id}.md"


def from_mapping(data: Mapping[str, Any], body: str) -> Record:
    """Build a Record from loosely typed data (YAML strings or JSON values)."""
    problems: list[str] = []

    def text(key: str, required: bool = False) -> str:
        value = data.get(key, "")
        if value is None:
            value = ""
        if isinstance(value, bool | int | float):
            value = str(value).lower() if isinstance(value, bool) else str(value)
        if not isinstance(value, str):
            problems.append(f"{key}: expected text, got a {type(value).__name__}")
            return ""
        if required and not value.strip():
            problems.append(f"{key}: required")
        return value

    def strings(key: str) -> tuple[str, ...]:
        value = data.get(key, [])
        if value in (None, ""):
            return ()
        if isinstance(value, str):
            return (value,)
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            problems.append(f"{key}: expected a list of text")
            return ()
        return tuple(value)

    def moment(key: str, default: datetime | None) -> datetime:
        raw = data.get(key)
        if isinstance(raw, datetime):
            return raw.astimezone(UTC).replace(microsecond=0)
        if raw in (None, ""):
            if default is None:
                problems.append(f"{key}: required (UTC ISO-8601, e.g. 2026-11-30T20:01:16Z)")
                return datetime(1970, 1, 1, tzinfo=UTC)
            return default
        try:
            return parse_time(str(raw))
        except ValueError:
            problems.append(f"{key}: {raw!r} is not an ISO-8601 date (e.g. 2026-11-30T20:01:16Z)")
            return datetime(1970, 1, 1, tzinfo=UTC)

    record_id = text("id", required=True)
    type_ = text("type", required=True)
    title = text("title", required=True)
    created = moment("created", None)
    updated = moment("updated", created)
    weight_raw = data.get("weight", 1.0)
    try:
        weight = float(weight_raw if weight_raw not in (None, "") else 1.0)
        if not math.isfinite(weight):
            raise ValueError
    except (TypeError, ValueError):
        problems.append(f"weight: {weight_raw!r} is not a number")
        weight = 1.0
    extras = {k: v for k, v in data.items() if k not in BASE_FIELDS and k != "body"}
    fields: dict[str, FieldValue] = {}
    for key, value in extras.items():
        if not isinstance(key, str) or not FIELD_RE.match(key):
            problems.append(f"{key}: field names are lower-case letters, digits and '_'")
        elif isinstance(value, list | tuple):
            fields[key] = tuple(str(v) for v in value)
        elif isinstance(value, dict):
            problems.append(f"{key}: nested mappings are not supported; use text or a list")
        else:
            fields[key] = "" if value is None else str(value)
    record = Record(
        id=record_id,
        type=type_,
        title=title,
        body=body,
        created=created,
        updated=updated,
        abstract=text("abstract"),
        tags=strings("tags"),
        agent=text("agent"),
        scope=text("scope") or "shared",
        source=text("source"),
        weight=weight,
        links=strings("links"),
        supersedes=strings("supersedes"),
        superseded_by=text("superseded_by"),
        status=text("status") or "active",
        fields=_sorted_fields(fields),
    )
    problems.extend(format_problems(record))
    if problems:
        raise RecordInvalid("record is not valid: " + "; ".join(problems), tuple(problems))
    return record


def format_problems(record: Record) -> list[str]:
    """Format problems that need no schema: shapes, enums, lengths, text hygiene."""
    problems: list[str] = []
    if record.id and not ID_RE.match(record.id):
        problems.append(
            f"id: {record.id!r} must be lower-case letters and digits joined by '-' "
            "(no '/', '..' or spaces)"
        )
    if len(record.id) > 80:
        problems.append("id: longer than 80 characters")
    if record.type and not TYPE_RE.match(record.type):
        problems.append(f"type: {record.type!r} must be a lower-case word")
    for key in ("title", "abstract", "agent", "source", "superseded_by"):
        value = getattr(record, key)
        if "\n" in value or "\r" in value:
            problems.append(f"{key}: must be a single line")
    if len(record.title) > 200:
        problems.append("title: longer than 200 characters; put detail in the abstract or body")
    if len(record.abstract) > ABSTRACT_MAX:
        problems.append(
            f"abstract: {len(record.abstract)} characters, the limit is {ABSTRACT_MAX}; shorten it"
        )
    if record.scope not in SCOPES:
        problems.append(f"scope: {record.scope!r} is not one of {', '.join(SCOPES)}")
    if record.status not in STATUSES:
        problems.append(f"status: {record.status!r} is not one of {', '.join(STATUSES)}")
    if not WEIGHT_MIN <= record.weight <= WEIGHT_MAX:
        problems.append(f"weight: {record.weight} is outside {WEIGHT_MIN:g}..{WEIGHT_MAX:g}")
    for key in ("links", "supersedes"):
        for target in getattr(record, key):
            if not ID_RE.match(target):
                problems.append(f"{key}: {target!r} is not a record id")
    if record.superseded_by and not ID_RE.match(record.superseded_by):
        problems.append(f"superseded_by: {record.superseded_by!r} is not a record id")
    for tag in record.tags:
        if not tag.strip() or "\n" in tag or "," in tag:
            problems.append(f"tags: {tag!r} must be a non-empty word without commas or newlines")
    for key, value in _texts(record):
        problem = bad_character(value, lines=key == "body", bidi=key != "body")
        if problem:
            problems.append(f"{key}: {problem}")
    if record.created > record.updated:
        problems.append("updated: earlier than created")
    return problems


def _texts(record: Record) -> Iterable[tuple[str, str]]:
    yield "title", record.title
    yield "abstract", record.abstract
    yield "agent", record.agent
    yield "source", record.source
    for tag in record.tags:
        yield "tags", tag
    yield "body", record.body
    for key, value in record.fields:
        for item in value if isinstance(value, tuple) else (value,):
            yield key, item
