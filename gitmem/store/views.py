"""Progressive disclosure: a record at three levels of detail, as plain text.

Below the entry points so that `gitmem read --level` and the MCP `read` tool call the same
function and say the same thing.
"""

from __future__ import annotations

from typing import Any, Literal

from gitmem.store.record import Record, format_time
from gitmem.store.recordfile import dump

__all__ = ["LEVELS", "Level", "headline", "level_json", "render"]

Level = Literal["abstract", "outline", "full"]
LEVELS: tuple[Level, ...] = ("abstract", "outline", "full")
_OUTLINE_LINE = 120


def headline(record: Record) -> str:
    """One line: id, type, date, title."""
    day = format_time(record.created)[:10]
    mark = " [superseded]" if record.status == "superseded" else ""
    return f"{record.id}  {record.type}  {day}  {record.title}{mark}"


def render(record: Record, level: Level) -> str:
    if level == "full":
        return dump(record)
    lines = [headline(record)]
    if record.abstract:
        lines.append(f"  {record.abstract}")
    if level == "abstract":
        return "\n".join(lines) + "\n"
    meta = [f"tags: {', '.join(record.tags) or '-'}", f"agent: {record.agent or '-'}"]
    meta.append(f"updated: {format_time(record.updated)}")
    if record.supersedes:
        meta.append(f"supersedes: {', '.join(record.supersedes)}")
    if record.superseded_by:
        meta.append(f"superseded by: {record.superseded_by}")
    lines.append("  " + " · ".join(meta))
    for key, value in record.fields:
        shown = ", ".join(value) if isinstance(value, tuple) else value
        lines.append(f"  {key}: {_cut(shown)}")
    lines.append("")
    lines.extend(_outline(record.body))
    return "\n".join(lines).rstrip() + "\n"


def level_json(record: Record, level: Level) -> dict[str, Any]:
    """The answer of `gitmem read ID --level L --json` and of the MCP `read` with a level."""
    return {"id": record.id, "level": level, "text": render(record, level)}


def _outline(body: str) -> list[str]:
    """Headings, and the first line of text under each, so a reader can decide to go on."""
    out: list[str] = []
    want_text = True
    in_code = False
    for raw in body.splitlines():
        line = raw.rstrip()
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code or not line.strip():
            continue
        if line.lstrip().startswith("#"):
            out.append(_cut(line.strip()))
            want_text = True
        elif want_text:
            out.append("  " + _cut(line.strip()))
            want_text = False
    return out


def _cut(text: str) -> str:
    return text if len(text) <= _OUTLINE_LINE else text[: _OUTLINE_LINE - 1] + "…"
