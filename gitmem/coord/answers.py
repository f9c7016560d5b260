"""The JSON answers of the coordination commands, shared by `gitmem ... --json` and the MCP
server's tools so both say the same (schemas in docs/coord.md)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from gitmem.coord.messages import Message
from gitmem.coord.presence import Presence
from gitmem.coord.sessions import Session
from gitmem.coord.tasks import state_of
from gitmem.store.record import Record, format_time

__all__ = [
    "agents_json",
    "brief_json",
    "current_json",
    "inbox_json",
    "log_json",
    "message_json",
    "presence_json",
    "session_json",
    "sessions_json",
    "task_json",
    "tasks_json",
]


def _field(record: Record, name: str) -> str:
    value = record.extra.get(name, "")
    return value if isinstance(value, str) else ",".join(value)


def message_json(message: Message) -> dict[str, Any]:
    """`gitmem send/reply/ack/inbox --json`: one message."""
    r = message.record
    return {
        "id": r.id,
        "from": r.agent,
        "to": _field(r, "to"),
        "type": _field(r, "kind") or "info",
        "priority": _field(r, "priority") or "normal",
        "subject": r.title,
        "body": r.body,
        "thread": message.thread,
        "reply_to": _field(r, "reply_to"),
        "device": _field(r, "device"),
        "sent": format_time(r.created),
        "acked_by": list(message.acked_by),
        "read": message.read,
        "commit": message.commit,
    }


def task_json(record: Record, commit: str | None = None) -> dict[str, Any]:
    """`gitmem task ... --json`: one task, its log in the body."""
    return {
        "id": record.id,
        "title": record.title,
        "state": state_of(record),
        "owner": _field(record, "owner") or record.agent,
        "project": _field(record, "project"),
        "device": _field(record, "device"),
        "note": _field(record, "note"),
        "created": format_time(record.created),
        "updated": format_time(record.updated),
        "body": record.body,
        "commit": commit,
    }


def session_json(session: Session) -> dict[str, Any]:
    """`gitmem sessions/log --json`: one entry."""
    r = session.record
    return {
        "id": r.id,
        "kind": session.kind,
        "action": session.action,
        "agent": r.agent,
        "device": session.device,
        "project": _field(r, "project"),
        "title": r.title,
        "abstract": r.abstract,
        "created": format_time(r.created),
        "updated": format_time(r.updated),
    }


def brief_json(record: Record) -> dict[str, Any]:
    """A record in a handoff: enough to decide whether to open it."""
    return {
        "id": record.id,
        "type": record.type,
        "title": record.title,
        "abstract": record.abstract,
        "agent": record.agent,
        "updated": format_time(record.updated),
    }


def presence_json(presence: Presence, now: datetime) -> dict[str, Any]:
    """`gitmem agents/heartbeat --json`: one agent on one device."""
    return presence.to_dict(now)


def inbox_json(agent: str, messages: Sequence[Message]) -> dict[str, Any]:
    """`gitmem inbox --json`."""
    return {"agent": agent, "messages": [message_json(m) for m in messages]}


def tasks_json(records: Sequence[Record]) -> dict[str, Any]:
    """`gitmem task list --json`."""
    return {"tasks": [task_json(r) for r in records]}


def current_json(agent: str, record: Record | None) -> dict[str, Any]:
    """`gitmem task current --json`."""
    return {"agent": agent, "task": None if record is None else task_json(record)}


def log_json(session: Session, commit: str | None) -> dict[str, Any]:
    """`gitmem log --json`."""
    return {**session_json(session), "commit": commit}


def sessions_json(sessions: Sequence[Session]) -> dict[str, Any]:
    """`gitmem sessions --json`."""
    return {"sessions": [session_json(s) for s in sessions]}


def agents_json(presences: Sequence[Presence], now: datetime) -> dict[str, Any]:
    """`gitmem agents --json`."""
    return {"agents": [p.to_dict(now) for p in presences]}
