"""`gitmem graph handoff`: what a new session, perhaps on another device, needs to pick up
the work — as JSON and as a short text (docs/coord.md).

Every part is read from HEAD (and presence from the refs the last sync fetched) for a window
of the last N hours: recent sessions and log entries, recent decisions, the messages for this
agent it has not seen or acknowledged, the tasks in progress, the agents active. The two
entity parts, "entities_updated" and "blockers", are the work graph's (gitmem.graph):
`graph_part` below is the one place they join.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from gitmem.coord import messages, presence, sessions, tasks
from gitmem.coord.answers import brief_json, message_json, presence_json, session_json, task_json
from gitmem.coord.records import months_since, of_type, updated_since, utc_now
from gitmem.errors import UsageError
from gitmem.store.record import format_time

if TYPE_CHECKING:
    from gitmem.store.store import Store

__all__ = ["GRAPH_KEYS", "SESSION_PARTS", "graph_part", "handoff", "render"]

GRAPH_KEYS = ("entities_updated", "blockers")
LIST_MAX = 20  # entries of each part: a handoff is read, not searched


def graph_part(store: Store, since: datetime, now: datetime) -> dict[str, Any]:
    """The work graph's part of the handoff: entities updated since `since`, the blockers at
    `now` (gitmem.graph.handoff; coord sits above graph in LAYERS)."""
    from gitmem.graph.handoff import graph_part as part

    return part(store, since, now=now)


def handoff(
    store: Store, me: str, device: str, *, hours: float = 24.0, now: datetime | None = None
) -> dict[str, Any]:
    """The handoff for `me` on `device`: the last `hours` hours. Reads only; marks no
    message read (the inbox does that)."""
    if not 0 < hours <= 24 * 366:
        raise UsageError(f"hours must be more than 0 and at most {24 * 366} (a year), not {hours}")
    moment = now or utc_now()
    since = moment - timedelta(hours=hours)
    decisions = [
        r
        for r in of_type(store, "decision", months_since(since, moment), keep=updated_since(since))
        if r.updated >= since
    ]
    decisions.sort(key=lambda r: (r.updated, r.id), reverse=True)
    unread = messages.inbox(store, me, unread=True, mark=False)
    open_tasks = tasks.list_tasks(store)
    seen = [p for p in presence.agents(store, device) if p.last >= since]
    part = graph_part(store, since, moment)
    return {
        "agent": me,
        "device": device,
        "since": format_time(since),
        "until": format_time(moment),
        "hours": hours,
        **{key: part.get(key, [])[:LIST_MAX] for key in GRAPH_KEYS},  # newest, longest first
        "sessions": [
            session_json(s) for s in sessions.sessions(store, last=moment - since, now=moment)
        ][:LIST_MAX],
        "decisions": [brief_json(r) for r in decisions[:LIST_MAX]],
        "messages": [message_json(m) for m in unread[:LIST_MAX]],
        "tasks": [task_json(r) for r in open_tasks[:LIST_MAX]],
        "agents": [presence_json(p, moment) for p in seen[:LIST_MAX]],
    }


def _task_line(entry: dict[str, Any]) -> str:
    note = f" — {entry['note']}" if entry["note"] else ""
    return f"- [{entry['state']}] {entry['title']} ({entry['owner']}, {entry['id']}){note}"


def _message_line(entry: dict[str, Any]) -> str:
    return (
        f"- {entry['priority']} {entry['type']} from {entry['from']}: {entry['subject']} "
        f"({entry['id']})"
    )


def _agent_line(entry: dict[str, Any]) -> str:
    now = "active" if entry["active"] else f"last seen {entry['last_seen']}"
    return f"- {entry['agent']} on {entry['device']}: {now}"


def _blocker_line(entry: dict[str, Any]) -> str:
    """An entity of `gitmem graph blockers --json`: how long, and the first links of its chain."""
    days = entry.get("blocked_days")
    since = f" for {days:g} days" if days is not None else ""
    chain = [link.get("title") or link.get("key", "") for link in entry.get("chain", [])[:3]]
    by = f" by {' ← '.join(chain)}" if chain else ""
    return f"- {entry['title']} ({entry['id']}) [{entry.get('state', '')}] blocked{since}{by}"


def _dated_line(entry: dict[str, Any]) -> str:
    """A decision, a session or an entity: when, what, its id."""
    title = entry.get("title") or entry.get("id", "")
    state = f" [{entry['state']}]" if entry.get("state") else ""
    return f"- {(entry.get('updated') or '')[:16]} {title}{state} ({entry.get('id', '')})"


_LINES = {
    "messages": _message_line,
    "tasks": _task_line,
    "blockers": _blocker_line,
    "agents": _agent_line,
}


_HEADINGS = (
    ("messages", "Unread messages"),
    ("tasks", "Tasks in progress"),
    ("blockers", "Active blockers"),
    ("entities_updated", "Entities updated"),
    ("decisions", "Recent decisions"),
    ("sessions", "Recent sessions"),
    ("agents", "Agents active"),
)


ALL_PARTS = tuple(key for key, _ in _HEADINGS)
# What SessionStart's block adds (hooks.handoff_bytes): its own block already has the last
# session and the latest writes.
SESSION_PARTS = ("messages", "tasks", "blockers", "entities_updated", "agents")


def render(
    data: dict[str, Any],
    budget: int = 0,
    parts: tuple[str, ...] = ALL_PARTS,
    empty: str = "Nothing happened in this window.",
) -> str:
    """The handoff's `parts` as short Markdown; within `budget` bytes when given (whole lines
    only); when none has anything, `empty` below the heading ("" says nothing at all)."""
    lines = [f"# Handoff for {data['agent']} on {data['device']} (since {data['since']})"]
    for key, heading in _HEADINGS:
        entries = data.get(key) or []
        if entries and key in parts:
            show = _LINES.get(key, _dated_line)
            lines += ["", f"## {heading}", ""] + [show(e) for e in entries]
    if len(lines) == 1:
        if not empty:
            return ""
        lines += ["", empty]
    text = "\n".join(lines) + "\n"
    if budget and len(text.encode("utf-8")) > budget:
        kept: list[str] = []
        size = 0
        for line in lines:
            size += len(line.encode("utf-8")) + 1
            if size > budget:
                break
            kept.append(line)
        text = "\n".join(kept) + "\n" if kept else ""
    return text
