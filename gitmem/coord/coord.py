"""`store.coord(agent, device)`: the coordination commands for one agent on one device, as the
Python API, the CLI and the MCP server call them (docs/coord.md)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from gitmem.coord import handoff, messages, presence, sessions
from gitmem.coord import tasks as lifecycle
from gitmem.coord.messages import Message
from gitmem.coord.presence import Presence
from gitmem.coord.records import of_type
from gitmem.coord.sessions import Session

if TYPE_CHECKING:
    from gitmem.store.record import Record
    from gitmem.store.store import Store, WriteResult

__all__ = ["Coord"]


class Coord:
    """Messages, tasks, the session log, presence and the handoff, as `agent` on `device`
    (`agent` empty: git's user.name; `device` empty: the host name)."""

    def __init__(self, store: Store, agent: str = "", device: str = "") -> None:
        self.store = store
        self.agent = agent.strip() or store.default_agent()
        self.device = device.strip() or presence.device_name({})

    # --- messages ---------------------------------------------------------------------------

    def known_agents(self) -> set[str]:
        """Everyone a message could be for that this device has heard of: agents seen by
        presence, senders and recipients of messages, task owners."""
        known = {p.agent for p in presence.agents(self.store, self.device)} | {self.agent}
        for record in of_type(self.store, "message"):
            known.update({record.agent, str(record.extra.get("to", ""))})
        for record in lifecycle.list_tasks(self.store, states=()):
            known.update({record.agent, str(record.extra.get("owner", ""))})
        return known - {"", messages.BROADCAST}

    def send(
        self,
        to: str,
        kind: str,
        body: str,
        *,
        subject: str = "",
        priority: str = "normal",
        thread: str = "",
        now: datetime | None = None,
    ) -> Message:
        return messages.send(
            self.store,
            self.agent,
            to,
            kind,
            body,
            subject=subject,
            priority=priority,
            thread=thread,
            device=self.device,
            now=now,
        )

    def inbox(self, *, unread: bool = False, sent: bool = False, limit: int = 0) -> list[Message]:
        if sent:
            return messages.sent(self.store, self.agent, limit=limit)
        return messages.inbox(self.store, self.agent, unread=unread, limit=limit)

    def reply(self, message_id: str, body: str, *, priority: str = "normal") -> Message:
        return messages.reply(
            self.store, self.agent, message_id, body, priority=priority, device=self.device
        )

    def ack(self, message_id: str) -> Message:
        return messages.ack(self.store, self.agent, message_id)

    # --- tasks ------------------------------------------------------------------------------

    def task_start(
        self, title: str, *, body: str = "", project: str = "", tags: Sequence[str] = ()
    ) -> WriteResult:
        return lifecycle.start(
            self.store,
            self.agent,
            title,
            body=body,
            project=project,
            device=self.device,
            tags=tuple(tags),
        )

    def task(self, verb: str, task_id: str, note: str = "") -> WriteResult:
        """update, suspend, resume, done or fail a task."""
        return lifecycle.transition(
            self.store, self.agent, task_id, verb, note=note, device=self.device
        )

    def tasks(
        self, *, states: Sequence[str] = lifecycle.OPEN, owner: str = "", project: str = ""
    ) -> list[Record]:
        return lifecycle.list_tasks(self.store, states=tuple(states), owner=owner, project=project)

    def current_task(self) -> Record | None:
        return lifecycle.current(self.store, self.agent)

    # --- sessions, presence, handoff --------------------------------------------------------

    def log(
        self, action: str, summary: str, *, files: Sequence[str] = (), project: str = ""
    ) -> tuple[Session, str | None]:
        return sessions.log(
            self.store,
            self.agent,
            action,
            summary,
            files=tuple(files),
            project=project,
            device=self.device,
        )

    def sessions(
        self, *, last: timedelta = timedelta(days=7), agent: str = "", limit: int = 0
    ) -> list[Session]:
        return sessions.sessions(self.store, last=last, agent=agent, limit=limit)

    def heartbeat(self, *, project: str = "", note: str = "") -> Presence:
        return presence.heartbeat(
            self.store.cache_dir, self.agent, self.device, project=project, note=note
        )

    def agents(self, *, agent: str = "") -> list[Presence]:
        return presence.agents(self.store, self.device, agent=agent)

    def handoff(self, *, hours: float = 24.0, now: datetime | None = None) -> dict[str, Any]:
        return handoff.handoff(self.store, self.agent, self.device, hours=hours, now=now)
