"""Tasks with a lifecycle: start, update, suspend, resume, done, fail (docs/coord.md).

A task is a `task` record (store-template/schemas/task.toml) whose `state` field says where it
is. Every transition is one commit (operation `task-<verb>`), adds a line to the body's log,
and is refused, with nothing written, when the task's state does not allow it:

    start ──► active ──update──► active
                │  ▲
         suspend│  │resume             done / fail from active or suspended;
                ▼  │                   done and failed are final
             suspended
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from gitmem.coord.records import fetch, field_has, need_schema, of_type, utc_now
from gitmem.errors import GitmemError, UsageError
from gitmem.store.record import Record, format_time

if TYPE_CHECKING:
    from gitmem.store.store import Store, WriteResult

__all__ = ["OPEN", "STATES", "TRANSITIONS", "current", "list_tasks", "start", "transition"]

TYPE = "task"
STATES = ("active", "suspended", "done", "failed")
OPEN = ("active", "suspended")
LOG_HEADING = "## Log"
_LISTING = "gitmem task list --all"


@dataclass(frozen=True)
class Transition:
    verb: str  # as the command says it
    done: str  # as the log line says it
    sources: tuple[str, ...]  # the states it may leave
    target: str | None  # the state it enters (None: stays)


TRANSITIONS: Mapping[str, Transition] = {
    t.verb: t
    for t in (
        Transition("update", "updated", OPEN, None),
        Transition("suspend", "suspended", ("active",), "suspended"),
        Transition("resume", "resumed", ("suspended",), "active"),
        Transition("done", "done", OPEN, "done"),
        Transition("fail", "failed", OPEN, "failed"),
    )
}


def state_of(record: Record) -> str:
    value = record.extra.get("state", "")
    return value if isinstance(value, str) else ""


def _log_line(moment: datetime, verb: str, agent: str, device: str, note: str) -> str:
    where = f" on {device}" if device else ""
    text = " ".join(note.split())
    return f"- {format_time(moment)} {verb} by {agent}{where}" + (f": {text}" if text else "")


def start(
    store: Store,
    me: str,
    title: str,
    *,
    body: str = "",
    project: str = "",
    device: str = "",
    tags: tuple[str, ...] = (),
    now: datetime | None = None,
) -> WriteResult:
    """A new task, active, held by `me` (one commit)."""
    if not title.strip():
        raise UsageError("a task needs a title: say what the work is, in one line")
    need_schema(store, TYPE, me)
    moment = now or utc_now()
    description = body.strip()
    text = (description + "\n\n" if description else "") + LOG_HEADING + "\n\n"
    text += _log_line(moment, "started", me, device, "") + "\n"
    fields = {"state": "active", "owner": me}
    fields.update({k: v for k, v in (("project", project), ("device", device)) if v})
    return store.record(TYPE, text, title=title, agent=me, tags=tags, fields=fields, now=moment)


def transition(
    store: Store,
    me: str,
    task_id: str,
    verb: str,
    *,
    note: str = "",
    device: str = "",
    now: datetime | None = None,
) -> WriteResult:
    """Move a task along its lifecycle (one commit); GitmemError, nothing written, when its
    state does not allow `verb`."""
    step = TRANSITIONS.get(verb)
    if step is None:
        raise UsageError(f'unknown task transition "{verb}" — use one of {", ".join(TRANSITIONS)}')
    record = fetch(store, task_id, TYPE, "task", _LISTING)
    state = state_of(record)
    if state not in step.sources:
        allowed = [v for v, t in TRANSITIONS.items() if state in t.sources]
        then = (
            f"it allows {', '.join(allowed)}"
            if allowed
            else 'it is finished; start a new task with "gitmem task start"'
        )
        raise GitmemError(
            f"task {record.id} is {state or 'in no state'}: cannot {verb} it — {then}"
        )
    if verb == "update" and not note.strip():
        raise UsageError("task update needs a note: say what changed")
    moment = now or utc_now()
    body = record.body.rstrip("\n")
    if LOG_HEADING not in body:
        body += "\n\n" + LOG_HEADING + "\n"
    body += "\n" + _log_line(moment, step.done, me, device, note) + "\n"
    changes: dict[str, object] = {"body": body, "note": " ".join(note.split())}
    if step.target is not None:
        changes["state"] = step.target
    if verb == "resume":
        changes["owner"] = me  # whoever resumes it holds it now
    if device:
        changes["device"] = device
    return store.amend(record.id, changes, agent=me, now=moment, operation=f"task-{verb}")


def list_tasks(
    store: Store, *, states: tuple[str, ...] = OPEN, owner: str = "", project: str = ""
) -> list[Record]:
    """Tasks in `states` (empty: any), most recently updated first."""
    for state in states:
        if state not in STATES:
            raise UsageError(f'unknown task state "{state}" — use one of {", ".join(STATES)}')
    keep = field_has("state", *states) if states else None
    found = [
        r
        for r in of_type(store, TYPE, keep=keep)
        if (not states or state_of(r) in states)
        and (not owner or r.extra.get("owner", r.agent) == owner)
        and (not project or r.extra.get("project", "") == project)
    ]
    found.sort(key=lambda r: (r.updated, r.id), reverse=True)
    return found


def current(store: Store, me: str) -> Record | None:
    """The active task `me` touched last, if any."""
    found = list_tasks(store, states=("active",), owner=me)
    return found[0] if found else None
