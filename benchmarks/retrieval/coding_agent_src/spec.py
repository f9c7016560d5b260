"""Small builders the content modules use to declare records and queries.

Records and queries refer to each other by *key* (a short stable handle such as
``pay-sessions-redis``); make_dataset.py turns keys into record ids.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

TYPES = ("decision", "pattern", "context", "fact", "preference", "procedure", "lesson", "reference")
CATEGORIES = ("exact-id", "paraphrase", "temporal", "current", "multi", "old-fact")


@dataclass(frozen=True)
class RecordSpec:
    key: str
    type: str
    when: str  # "YYYY-MM-DD" or "YYYY-MM-DD HH:MM" (UTC)
    title: str
    abstract: str
    body: str
    project: str
    tags: tuple[str, ...]
    agent: str
    source: str
    weight: float
    links: tuple[str, ...]
    supersedes: str
    updated: str


@dataclass(frozen=True)
class QuerySpec:
    category: str
    query: str
    gold: tuple[str, ...]
    now: str = ""  # "YYYY-MM-DD HH:MM" (UTC) or ""
    ident: str = ""  # exact-id: the identifier that must occur verbatim in exactly the gold
    cluster: tuple[str, ...] = ()  # temporal: similar records the gold must be the newest of


def _words(value: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(value.split())
    return tuple(value)


@dataclass
class Project:
    """Collects the records of one project; ``agents`` is the pool of default authors."""

    name: str
    agents: tuple[str, ...]
    records: list[RecordSpec] = field(default_factory=list)

    def add(
        self,
        key: str,
        type_: str,
        when: str,
        title: str,
        abstract: str,
        body: str,
        *,
        tags: str | tuple[str, ...] = (),
        agent: str = "",
        source: str = "",
        weight: float = 1.0,
        links: str | tuple[str, ...] = (),
        supersedes: str = "",
        updated: str = "",
    ) -> None:
        if type_ not in TYPES:
            raise ValueError(f"{key}: unknown type {type_!r}")
        self.records.append(
            RecordSpec(
                key=key,
                type=type_,
                when=when,
                title=title,
                abstract=abstract,
                body=textwrap.dedent(body).strip("\n"),
                project=self.name,
                tags=_words(tags),
                agent=agent,
                source=source,
                weight=weight,
                links=_words(links),
                supersedes=supersedes,
                updated=updated,
            )
        )


def q(
    category: str,
    query: str,
    gold: str | tuple[str, ...],
    *,
    now: str = "",
    ident: str = "",
    cluster: str | tuple[str, ...] = (),
) -> QuerySpec:
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r}")
    return QuerySpec(category, query, _words(gold), now, ident, _words(cluster))
