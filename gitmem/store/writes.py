"""The steps of a write before it commits: build the new record, guard it against secrets,
check it, and word the commit.

Each step takes the store's read side (gitmem.store.reader) or nothing of the store at all, so
that the Store's write methods and the bulk writes (gitmem.store.transfer) share them without
importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Literal

from gitmem.errors import RecordInvalid, SecretFound
from gitmem.store import schema
from gitmem.store.gitread import Identity
from gitmem.store.reader import Reader
from gitmem.store.record import Record, format_problems, make_id
from gitmem.store.recordfile import dump
from gitmem.store.textrules import body_problems, strip_bidi

__all__ = ["SecretPolicy", "author", "check", "guard_secrets", "message", "new_record"]

SecretPolicy = Literal["refuse", "redact", "allow"]


def new_record(
    store: Reader,
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
    if type_ not in store.schemas:
        known = ", ".join(sorted(store.schemas))
        raise RecordInvalid(
            f'unknown record type "{type_}"; known types: {known} — '
            f"or add schemas/{type_}.toml to the store"
        )
    if not title.strip():
        raise RecordInvalid("a record needs a title: pass --title")
    problems = body_problems(body, store.config.max_body_bytes)
    if problems:
        raise RecordInvalid("; ".join(problems), tuple(problems))
    resolved_links = tuple(store.resolve(link) for link in links)
    record_id = make_id(title, fallback=type_)
    while record_id in store.catalog():  # 30 random bits: practically never loops
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
        agent=agent.strip() or store.default_agent(),
        scope=scope,
        source=source,
        weight=weight,
        links=resolved_links,
    ).with_(fields=dict(fields or {}))


def guard_secrets(record: Record, policy: SecretPolicy) -> tuple[Record, tuple[str, ...]]:
    """Refuse (or redact, or allow) credentials anywhere in the record's file text."""
    if policy == "allow":
        return record, ()
    from gitmem.store import guard  # its patterns compile on import: only writes need them

    text = dump(record)
    findings = guard.scan(text)
    if not findings:
        return record, ()
    if policy == "redact":
        redacted, kinds = _redact_fields(record)
        if not guard.scan(dump(redacted)):
            return redacted, kinds
        text = dump(redacted)
        findings = guard.scan(text)
    # One line per secret: the abstract may repeat the body's first line, secret included.
    same: dict[tuple[str, str], list[guard.Finding]] = {}
    for finding in findings:
        same.setdefault((finding.kind, finding.preview), []).append(finding)
    lines = tuple(
        guard.describe(group[0], f"{record.path}: ", text)
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
    store: Reader,
    record: Record,
    known: Mapping[str, str] | None = None,
    previous: Record | None = None,
) -> None:
    """Raise RecordInvalid unless the record fits its schema and the body rules, and the
    links it adds (to `previous`, its last version) point at records in `known` (id ->
    path; default: HEAD's). Links already there may name a forgotten record."""
    problems = format_problems(record) + schema.check_record(record, store.schemas)
    catalog = store.catalog() if known is None else known
    kept = set() if previous is None else {*previous.links, *previous.supersedes}
    for target in (*record.links, *record.supersedes):
        if target not in catalog and target != record.id and target not in kept:
            problems.append(f"links: {target} points at no record")
        elif record.scope != "private" and target not in kept and _is_private(store, target):
            # The id names the private title, and this record leaves the device on sync.
            problems.append(f"links: {target} is private; a {record.scope} record cannot name it")
    if record.scope == "private" and (previous is None or previous.scope != "private"):
        problems.extend(
            _named_problem(record.id, other, key)
            for other, key in store.named_by(record.id)
            if other.scope != "private" and (known is None or other.id in known)
        )
    problems.extend(body_problems(record.body, store.config.max_body_bytes))
    if problems:
        raise RecordInvalid(f"{record.id or record.title}: " + "; ".join(problems), tuple(problems))


def author(agent: str, configured: Identity | None) -> Identity:
    name = agent.strip() or (configured.name if configured else "gitmem")
    if configured is not None and configured.name == name:
        return configured
    email_local = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name) or "agent"
    return Identity(name, f"{email_local}@gitmem.invalid")


def message(
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


def _named_problem(record_id: str, other: Record, key: str) -> str:
    """Why a record cannot become private while `other`, which leaves the device, names it:
    its id carries its title's slug (issue 26)."""
    if key == "superseded_by":
        return (
            f"scope: {record_id} replaced the {other.scope} record {other.id}, whose "
            "superseded_by names it on every device, so it cannot be private — record the "
            "private text as a new memory instead"
        )
    fix = (
        f"remove it there first (gitmem amend {other.id} --field links=...), or record the "
        "private text as a new memory"
        if key == "links"
        else "record the private text as a new memory instead"
    )
    return (
        f"scope: the {other.scope} record {other.id} names {record_id} in its {key} on every "
        f"device, so it cannot be private — {fix}"
    )


def _is_private(store: Reader, record_id: str) -> bool:
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


def _abstract_from(body: str) -> str:
    """The body's first line of prose, cut to the abstract limit at a word boundary."""
    for line in body.splitlines():
        text = strip_bidi(line).strip().lstrip("#>*- ").strip()
        if text and not text.startswith("```"):
            if len(text) <= 240:
                return text
            return text[:239].rsplit(" ", 1)[0] + "…"
    return ""
