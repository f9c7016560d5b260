"""The context block's text: which records it names, in which sections, laid out within a
byte budget.

`render` picks from the items it is given (a record, as the block needs it: `Item`): the
newest session record, the latest writes, then the most important ones, ranked by weight,
recency and project (`SQL_SCORE` is the same key for SQLite, which gitmem.agents.context uses
to ask the catalog for no more candidates than `render` could pick); `render_ranked` lays out
a recall's ranking as it is (UserPromptSubmit). Where the items come from (the catalog, what
git says changed since, the latest commits) is gitmem.agents.context.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from gitmem.agents.project import TAG_PREFIX, project_tag
from gitmem.coord.sessiontag import SESSION_TAG

__all__ = ["DEFAULT_BUDGET", "RECENT", "SQL_SCORE", "Block", "Item", "render", "render_ranked"]

DEFAULT_BUDGET = 8192
RECENT = 5  # latest writes shown
HALF_LIFE_DAYS = 90.0  # importance halves its recency share every quarter
LINE_MAX = 320  # bytes of one line, so one long abstract cannot eat the budget

_HOW = (
    "Each line is [record id] (type) title — abstract. Open one with `gitmem read ID` "
    "(MCP: read); record what you learn with `gitmem record` (MCP: record).\n"
)


class Item(NamedTuple):
    """What the block needs of a record (a NamedTuple: SessionStart builds 10k of them)."""

    id: str
    type: str
    title: str
    abstract: str
    tags: tuple[str, ...]
    updated: int  # Unix seconds
    weight: float


@dataclass(frozen=True)
class Block:
    text: str  # "" when the store has nothing to say
    ids: tuple[str, ...]  # the records it names, in order
    project: str
    source: str  # "index", "index+git" (catalog behind HEAD), "git" (no catalog), "recall"

    @property
    def bytes(self) -> int:
        return len(self.text.encode("utf-8"))

    def to_dict(self) -> dict[str, object]:
        return {
            "project": self.project,
            "bytes": self.bytes,
            "ids": list(self.ids),
            "source": self.source,
            "text": self.text,
        }


def _importance(item: Item, now: float, tag: str) -> float:
    return _score(item.weight, item.updated, bool(tag) and tag in item.tags, now)


def _score(weight: float, updated: int, mine: bool, now: float) -> float:
    age_days = max(0.0, (now - updated) / 86400.0)
    recency = 0.3 + 0.7 * math.pow(0.5, age_days / HALF_LIFE_DAYS)
    return min(max(weight, 0.25), 4.0) * recency * (1.5 if mine else 1.0)


# _score in SQL, the same operations in the same order (parameters: now, the project's tag), so
# that SQLite ranks the catalog without a Python call per record.
SQL_SCORE = (
    "min(max(weight, 0.25), 4.0) * (0.3 + 0.7 * pow(0.5, max(0.0, (? - updated) / 86400.0) / "
    f"{HALF_LIFE_DAYS!r})) * (CASE WHEN instr(tags, ?) > 0 THEN 1.5 ELSE 1.0 END)"
)


def _belongs(item: Item, tag: str) -> bool:
    """This project's records and the ones tagged with no project at all (preferences that
    hold everywhere); other projects' records stay out."""
    if not tag:
        return True
    return tag in item.tags or not any(t.startswith(TAG_PREFIX) for t in item.tags)


def _day(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d")


def _line(item: Item, dated: bool) -> str:
    when = f", {_day(item.updated)}" if dated else ""
    text = f"- [{item.id}] ({item.type}{when}) {' '.join(item.title.split())}"
    abstract = " ".join(item.abstract.split())
    if abstract and abstract != item.title:
        text += f" — {abstract}"
    encoded = text.encode("utf-8")
    if len(encoded) > LINE_MAX:
        text = encoded[: LINE_MAX - 3].decode("utf-8", "ignore").rstrip() + "…"
    return text + "\n"


def _newest_first(item: Item) -> tuple[int, str]:
    return -item.updated, item.id


def render(
    items: dict[str, Item] | Iterable[Item],
    *,
    project: str = "",
    budget: int = DEFAULT_BUDGET,
    now: datetime | None = None,
    source: str = "index",
) -> Block:
    """Lay out the block from `items` within `budget` bytes (UTF-8)."""
    pool = list(items.values()) if isinstance(items, dict) else list(items)
    tag = project_tag(project)
    mine = [i for i in pool if _belongs(i, tag)]
    if not mine:
        return Block("", (), project, source)
    moment = (now or datetime.now(UTC)).timestamp()
    sessions = heapq.nsmallest(1, (i for i in mine if SESSION_TAG in i.tags), key=_newest_first)
    others = [i for i in mine if SESSION_TAG not in i.tags]
    recent = heapq.nsmallest(RECENT, others, key=_newest_first)
    shown = {i.id for i in recent}
    # No more lines than the budget could hold (a line is at least ~40 bytes): at 10k records
    # a partial selection saves sorting them all.
    important = heapq.nsmallest(
        budget // 40 + 1,
        (i for i in others if i.id not in shown),
        key=lambda i: (-_importance(i, moment, tag), i.id),
    )
    where = f" for project {project}" if project else ""
    sections = [
        ("Last session", sessions, True),
        ("Latest writes", recent, True),
        ("Important", important, False),
    ]
    text, ids = _lay_out(f"# gitmem: memories{where}\n{_HOW}", sections, budget)
    return Block(text, ids, project, source)


def render_ranked(items: Iterable[Item], *, title: str, budget: int) -> Block:
    """`items` in the order given (a recall's ranking, best first) under `title`, within
    `budget` bytes: what UserPromptSubmit injects."""
    text, ids = _lay_out(f"# gitmem: {title}\n{_HOW}", [("Related", list(items), True)], budget)
    return Block(text, ids, "", "recall")


def _lay_out(
    head: str, sections: list[tuple[str, list[Item], bool]], budget: int
) -> tuple[str, tuple[str, ...]]:
    """The text and the ids it names: whole lines, section by section, until the next line
    would pass the budget. ("", ()) when no line fits."""
    out = [head]
    used = len(head.encode("utf-8"))
    ids: list[str] = []
    for title, group, dated in sections:
        heading = f"\n## {title}\n"
        lines: list[str] = []
        for item in group:
            line = _line(item, dated)
            cost = len(line.encode("utf-8")) + (0 if lines else len(heading.encode("utf-8")))
            if used + cost > budget:
                break
            lines.append(line)
            ids.append(item.id)
            used += cost
        if lines:
            out.append(heading)
            out.extend(lines)
    return ("".join(out), tuple(ids)) if ids else ("", ())
