"""Messages between agents: send, inbox, reply, ack (docs/coord.md).

A message is a `message` record (store-template/schemas/message.toml): the sender is its
agent, the recipient its `to` field (an agent's name, or `*` for every agent). Sending is one
commit; so is an acknowledgement, which adds the recipient to `acked_by`, so that the sender
sees it after the next sync. Whether a message was shown is kept per device
(gitmem.coord.readstate), not committed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from gitmem.coord import readstate
from gitmem.coord.records import Keep, fetch, field_has, need_schema, of_type, utc_now
from gitmem.errors import GitmemError, UsageError
from gitmem.store.record import Record
from gitmem.store.recordfile import parse

if TYPE_CHECKING:
    from gitmem.store.store import Store

__all__ = [
    "BROADCAST",
    "KINDS",
    "PRIORITIES",
    "Message",
    "ack",
    "acks",
    "inbox",
    "reply",
    "send",
    "sent",
]

TYPE = "message"
BROADCAST = "*"
KINDS = ("info", "question", "request", "handoff", "alert", "reply")
PRIORITIES = ("low", "normal", "high", "urgent")
_LISTING = "gitmem inbox"
_NAME_RE = re.compile(r"^[^\s,*][^\n\r,]{0,63}$")


@dataclass(frozen=True)
class Message:
    """A message as the inbox shows it: the record, who acknowledged it, whether it was
    shown on this device."""

    record: Record
    acked_by: tuple[str, ...]
    read: bool
    commit: str | None = None  # the commit that wrote it, for a message just written

    @property
    def id(self) -> str:
        return self.record.id

    def field(self, name: str, default: str = "") -> str:
        value = self.record.extra.get(name, default)
        return value if isinstance(value, str) else ",".join(value)

    @property
    def thread(self) -> str:
        return self.field("thread") or self.record.id


def check_recipient(to: str) -> str:
    name = to.strip()
    if name != BROADCAST and not _NAME_RE.match(name):
        raise UsageError(
            f"\"{to}\" names no recipient: give an agent's name (as its records' agent field "
            'says; "gitmem agents" lists them) or * for every agent'
        )
    return name


def _title(subject: str, body: str) -> str:
    if subject.strip():
        return subject.strip()
    first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
    return first if len(first) <= 72 else first[:71].rsplit(" ", 1)[0] + "…"


def send(
    store: Store,
    sender: str,
    to: str,
    kind: str,
    body: str,
    *,
    subject: str = "",
    priority: str = "normal",
    thread: str = "",
    reply_to: str = "",
    device: str = "",
    now: datetime | None = None,
) -> Message:
    """Write one message (one commit). Refuses an empty body, an unknown kind or priority,
    a thread that is no message; the secret guard refuses credentials like any record's."""
    recipient = check_recipient(to)
    if kind not in KINDS:
        raise UsageError(f'unknown message type "{kind}" — use one of {", ".join(KINDS)}')
    if priority not in PRIORITIES:
        raise UsageError(f'unknown priority "{priority}" — use one of {", ".join(PRIORITIES)}')
    if not body.strip():
        raise UsageError("a message needs a body: say what you want the recipient to know")
    need_schema(store, TYPE, sender)
    if thread:
        thread = _thread_of(fetch(store, thread, TYPE, "message", _LISTING))
    fields = {"to": recipient, "kind": kind, "priority": priority}
    fields.update({k: v for k, v in (("thread", thread), ("reply_to", reply_to)) if v})
    if device:
        fields["device"] = device
    result = store.record(
        TYPE,
        body,
        title=_title(subject, body),
        agent=sender,
        links=[reply_to] if reply_to else (),
        fields=fields,
        now=now or utc_now(),
    )
    return Message(result.record, (), False, result.commit)


def _thread_of(record: Record) -> str:
    thread = record.extra.get("thread", "")
    return thread if isinstance(thread, str) and thread else record.id


def acks(store: Store, record: Record) -> tuple[str, ...]:
    """Who acknowledged `record`: its acked_by, and that of every version a sync merge kept
    beside it (`<id>-<blob>`, superseded by it: two devices acknowledging at once)."""
    found = list(_acked(record))
    folder = record.path.rsplit("/", 1)[0]
    for path, blob in store.repo.files(store.head(), folder):
        name = path.rsplit("/", 1)[1]
        if name.startswith(f"{record.id}-") and name != f"{record.id}.md":
            try:
                other = parse(store.repo.blob(blob).decode("utf-8"))
            except (UnicodeDecodeError, GitmemError):
                continue
            if other.superseded_by == record.id:
                found.extend(_acked(other))
    return tuple(dict.fromkeys(found))


def _acked(record: Record) -> tuple[str, ...]:
    value = record.extra.get("acked_by", ())
    return (value,) if isinstance(value, str) else value


def _for(record: Record, me: str) -> bool:
    to = record.extra.get("to", "")
    return to == me or (to == BROADCAST and record.agent != me)


def _listing(store: Store, keep: Keep, me: str) -> list[Message]:
    """The current messages `keep` lets through, each with its acks (its own and those of
    the versions a merge kept beside it, found in the same listing), newest first."""
    everything = of_type(store, TYPE, keep=keep, superseded=True)
    copies: dict[str, list[Record]] = {}
    for record in everything:
        if record.status == "superseded" and record.superseded_by:
            copies.setdefault(record.superseded_by, []).append(record)
    shown = readstate.read_ids(store.cache_dir, me)
    out = []
    for record in everything:
        if record.status != "superseded":
            acked = [*_acked(record), *(a for c in copies.get(record.id, ()) for a in _acked(c))]
            out.append(Message(record, tuple(dict.fromkeys(acked)), record.id in shown))
    out.sort(key=lambda m: (m.record.created, m.id), reverse=True)
    return out


def inbox(
    store: Store, me: str, *, unread: bool = False, mark: bool = True, limit: int = 0
) -> list[Message]:
    """The messages for `me` (to it, or to * from someone else), newest first; `unread`:
    only those neither shown on this device nor acknowledged by `me`. Those returned are
    marked shown (`mark`)."""
    found = [
        m
        for m in _listing(store, field_has("to", me, written=(f'"{BROADCAST}"'.encode(),)), me)
        if _for(m.record, me)
    ]
    if unread:
        found = [m for m in found if not m.read and me not in m.acked_by]
    if limit:
        found = found[:limit]
    if mark:
        readstate.mark_read(store.cache_dir, me, (m.id for m in found))
    return found


def sent(store: Store, me: str, *, limit: int = 0) -> list[Message]:
    """The messages `me` sent, newest first, with who acknowledged each."""
    found = [m for m in _listing(store, field_has("agent", me), me) if m.record.agent == me]
    return found[:limit] if limit else found


def reply(
    store: Store,
    me: str,
    message_id: str,
    body: str,
    *,
    priority: str = "normal",
    device: str = "",
    now: datetime | None = None,
) -> Message:
    """Answer a message: a new message to its sender (or, for one's own, to its recipient)
    in the same thread, linked to it."""
    original = fetch(store, message_id, TYPE, "message", _LISTING)
    to = original.agent if original.agent != me else str(original.extra.get("to", ""))
    title = original.title if original.title.startswith("Re: ") else f"Re: {original.title}"
    answer = send(
        store,
        me,
        to,
        "reply",
        body,
        subject=title,
        priority=priority,
        thread=_thread_of(original),
        reply_to=original.id,
        device=device,
        now=now,
    )
    readstate.mark_read(store.cache_dir, me, [original.id])
    return answer


def ack(store: Store, me: str, message_id: str, *, now: datetime | None = None) -> Message:
    """Acknowledge a message for `me`: one commit adding `me` to acked_by; none when `me`
    already did. Refuses a message that is not for `me`."""
    record = fetch(store, message_id, TYPE, "message", _LISTING)
    if not _for(record, me):
        to = record.extra.get("to", "")
        raise GitmemError(
            f"{record.id} is for {to}, not for you ({me}) — only its recipient acknowledges it; "
            "if you are that agent, pass --agent (or set GITMEM_AGENT)"
        )
    already = acks(store, record)
    if me in already:
        return Message(record, already, True)
    result = store.amend(
        record.id,
        {"acked_by": [*_acked(record), me]},
        agent=me,
        now=now or utc_now(),
        operation="ack",
    )
    readstate.mark_read(store.cache_dir, me, [record.id])
    return Message(result.record, (*already, me), True, result.commit)
