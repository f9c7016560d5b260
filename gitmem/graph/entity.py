"""An entity: one watched Markdown file, read into a frozen value, and its record form.

An entity's id is stable: its readable part is `<type>-<slug>`, its suffix six letters of a
hash of (namespace, type, slug), the namespace being the project (or, without one, the
agent). Indexing the same file again gives the same id, so the record is updated in place.
Its edges are kept as the *keys* (slugs) of their targets, resolved when the graph is read
(gitmem.graph.model): a file may name an entity that is indexed later, or never (dangling).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from gitmem.store.record import ABSTRACT_MAX, Record, format_time, slugify

if TYPE_CHECKING:
    from gitmem.graph.frontmatter import Frontmatter

__all__ = [
    "EDGE_FIELDS",
    "ENTITY_TYPE",
    "Entity",
    "edge_key",
    "entity_id",
    "from_record",
    "read_entity",
    "to_record",
]

ENTITY_TYPE = "entity"  # the record type (store-template/schemas/entity.toml)
INDEXER_VERSION = "1"  # part of the content hash: a new reading re-indexes every file
# Record field -> frontmatter keys it is read from. `parent` is the initiative.
EDGE_FIELDS = ("parent", "blocked_by", "depends_on", "links_to")
_WIKI = re.compile(r"\[\[([^\[\]\n]{1,200})\]\]")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_BODY_MAX = 60_000  # of the store's 64 KiB body limit, with room for the note
_TYPE_MAX = 32


@dataclass(frozen=True)
class Entity:
    """What the graph knows of one file."""

    id: str
    key: str  # the slug other files name it by
    type: str  # plan, task, initiative, ... (frontmatter `type`, else "document")
    title: str
    state: str  # frontmatter `status`, lower case ("" when none)
    path: str  # the file, relative to its project's root
    project: str
    sha: str  # of the file's bytes and the indexer's version: unchanged files are skipped
    format: str  # yaml, toml, json, none
    body: str
    abstract: str = ""
    parent: str = ""
    blocked_by: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    links_to: tuple[str, ...] = ()  # frontmatter `links` and the body's [[wiki links]]
    problem: str = ""  # malformed frontmatter: indexed anyway, reported
    updated: datetime | None = None  # its record's (None: read from a file, not written yet)

    def summary(self) -> dict[str, Any]:
        """What the graph's answers show of it (JSON-ready)."""
        return {
            "id": self.id,
            "type": self.type,
            "title": self.title,
            "state": self.state,
            "path": self.path,
            "project": self.project,
            "updated": None if self.updated is None else format_time(self.updated),
        }

    def edges(self) -> list[tuple[str, str]]:
        """(relation, target key) of every edge, in field order."""
        out = [("parent", self.parent)] if self.parent else []
        for name in EDGE_FIELDS[1:]:
            out.extend((name, key) for key in getattr(self, name))
        return out


def content_hash(data: bytes) -> str:
    return hashlib.sha256(INDEXER_VERSION.encode() + b"\0" + data).hexdigest()


def edge_key(target: str) -> str:
    """The key a file names another by: `[[Fix login|the fix]]`, `tasks/fix-login.md`,
    `Fix login` and `fix-login` all give `fix-login`."""
    text = target.strip()
    if text.startswith("[[") and text.endswith("]]"):
        text = text[2:-2]
    text = text.split("|", 1)[0].split("#", 1)[0].strip()
    name = PurePosixPath(text).name if "/" in text else text
    if name.lower().endswith(".md"):
        name = name[:-3]
    return slugify(name, fallback="") if name else ""


def entity_id(namespace: str, type_: str, key: str) -> str:
    digest = hashlib.sha256(f"{namespace}\n{type_}\n{key}".encode()).digest()
    alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
    suffix = "".join(alphabet[b & 31] for b in digest[:6])
    readable = slugify(f"{type_} {key}", fallback=type_)
    return f"{readable}-{suffix}"


def read_entity(
    data: bytes, path: str, *, project: str, namespace: str, text: str | None = None
) -> Entity:
    """The entity a file's bytes describe (`path`: relative to its project's root). Raises
    RecordInvalid for a frontmatter bomb; malformed frontmatter is the entity's `problem`."""
    # Only indexing reads files: the graph's queries (a handoff) need not import
    # python-frontmatter and its YAML (~15 ms).
    from gitmem.graph.frontmatter import read_frontmatter

    source = data.decode("utf-8") if text is None else text
    front = read_frontmatter(source)
    fields = front.fields
    stem = PurePosixPath(path).stem
    key = edge_key(_one(fields, "slug") or _one(fields, "id") or stem) or slugify(stem)
    type_ = slugify(_one(fields, "type") or _one(fields, "kind") or "document", "document")
    type_ = type_.replace("-", "_")[:_TYPE_MAX].strip("_") or "document"
    body = _strip(front.body)
    title = _line(_one(fields, "title") or _heading(body) or stem)[:200]
    wiki = [m.group(1) for m in _WIKI.finditer(_FENCE.sub("", body))]
    return Entity(
        id=entity_id(namespace, type_, key),
        key=key,
        type=type_,
        title=title or key,
        state=_line(_one(fields, "status") or _one(fields, "state")).lower()[:64],
        path=path,
        project=project,
        sha=content_hash(data),
        format=front.format,
        body=body,
        abstract=_line(_one(fields, "description") or _one(fields, "summary") or _prose(body)),
        parent=next(iter(_keys(fields, "initiative", "parent")), ""),
        blocked_by=tuple(_keys(fields, "blocked_by", "blocked-by")),
        depends_on=tuple(_keys(fields, "depends_on", "depends-on")),
        links_to=tuple(
            dict.fromkeys([*_keys(fields, "links"), *filter(None, map(edge_key, wiki))])
        ),
        problem=front.problem or _shape_problem(front),
    )


def to_record(entity: Entity, created: datetime, updated: datetime, agent: str) -> Record:
    """The entity's record: type `entity`, its graph facts as fields, the file's body."""
    body = entity.body
    if len(body.encode("utf-8")) > _BODY_MAX:
        body = body.encode("utf-8")[:_BODY_MAX].decode("utf-8", "ignore")
        body += f"\n\n(cut at {_BODY_MAX} bytes; the whole text is in {entity.path})\n"
    if not body.strip():
        body = f"{entity.title}\n"
    if body.lstrip("\ufeff \t\r\n").split("\n", 1)[0].rstrip() == "---":
        body = f"{entity.title}\n\n{body}"
    tags = ["entity", f"entity:{entity.type}"]
    if entity.project:
        tags.append(f"project:{entity.project}")  # as gitmem.agents.project.project_tag
    fields: dict[str, str | tuple[str, ...]] = {
        "entity_type": entity.type,
        "key": entity.key,
        "state": entity.state,
        "path": entity.path,
        "project": entity.project,
        "sha": entity.sha,
        "format": entity.format,
        "parent": entity.parent,
        "blocked_by": entity.blocked_by,
        "depends_on": entity.depends_on,
        "links_to": entity.links_to,
    }
    return Record(
        id=entity.id,
        type=ENTITY_TYPE,
        title=entity.title,
        body=body,
        created=created,
        updated=updated,
        abstract=entity.abstract[:ABSTRACT_MAX],
        tags=tuple(tags),
        agent=agent,
        source=entity.path,
    ).with_(fields={k: v for k, v in fields.items() if v not in ("", ())})


def from_record(record: Record) -> Entity:
    """The entity an `entity` record holds (its body as stored)."""
    extra = record.extra

    def one(name: str) -> str:
        value = extra.get(name, "")
        return value if isinstance(value, str) else ", ".join(value)

    def many(name: str) -> tuple[str, ...]:
        value = extra.get(name, ())
        return (value,) if isinstance(value, str) and value else tuple(value) if value else ()

    return Entity(
        id=record.id,
        key=one("key"),
        type=one("entity_type"),
        title=record.title,
        state=one("state"),
        path=one("path"),
        project=one("project"),
        sha=one("sha"),
        format=one("format"),
        body=record.body,
        abstract=record.abstract,
        parent=one("parent"),
        blocked_by=many("blocked_by"),
        depends_on=many("depends_on"),
        links_to=many("links_to"),
        updated=record.updated,
    )


def _one(fields: Mapping[str, Any], name: str) -> str:
    value = fields.get(name)
    if isinstance(value, list):
        value = next((v for v in value if isinstance(v, str)), "")
    return value.strip() if isinstance(value, str) else ""


def _keys(fields: Mapping[str, Any], *names: str) -> list[str]:
    """Target keys named by any of the fields, a scalar or a list (a comma-separated scalar
    is a list too), in order, without repeats or empties."""
    out: list[str] = []
    for name in names:
        for item in _flat(fields.get(name)):
            parts = [item] if item.strip().startswith("[[") else item.split(",")
            out.extend(k for k in map(edge_key, parts) if k)
    return list(dict.fromkeys(out))


def _flat(value: Any) -> list[str]:
    """Text items of a scalar or a (nested) list: YAML reads `blocked_by: [[Auth]]`, a wiki
    link written as flow YAML, as a list in a list."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for v in value for item in _flat(v)]
    return []


def _shape_problem(front: Frontmatter) -> str:
    """Fields a graph reads whose shape it could not use (a mapping where text was wanted)."""
    bad = sorted(
        name
        for name in ("title", "type", "status", "initiative", "blocked_by", "depends_on", "links")
        if isinstance(front.fields.get(name), dict)
    )
    return f"frontmatter: {', '.join(bad)} should be text or a list, not a mapping" if bad else ""


def _strip(body: str) -> str:
    return body.lstrip("\r\n")


def _line(text: str) -> str:
    return " ".join(text.split())


def _heading(body: str) -> str:
    for line in body.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return ""


def _prose(body: str) -> str:
    for line in body.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith(("#", "```", "---", "|", "<", "- [")):
            text = _line(stripped)
            return text if len(text) <= ABSTRACT_MAX else text[: ABSTRACT_MAX - 1] + "…"
    return ""
