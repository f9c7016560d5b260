"""The coordination commands: send, inbox, reply, ack (messages), log and sessions (the
session log), heartbeat and agents (presence); docs/coord.md. The task commands are
gitmem.cli.tasks, `graph handoff` gitmem.cli.handoff.

Commands register on the shared `app` of gitmem.cli.app; gitmem.cli.main imports this module.
No `from __future__ import annotations` here, as in gitmem.cli.app.
"""

import os
from typing import Annotated

import typer

from gitmem.cli import display
from gitmem.cli.app import JsonOpt, StoreOpt, app, open_store
from gitmem.coord.answers import (
    agents_json,
    inbox_json,
    log_json,
    message_json,
    presence_json,
    session_json,
    sessions_json,
)
from gitmem.coord.coord import Coord
from gitmem.coord.messages import BROADCAST, KINDS, PRIORITIES, Message
from gitmem.coord.presence import device_name
from gitmem.coord.records import utc_now

__all__ = [
    "AgentOpt",
    "ack",
    "agents",
    "coord_for",
    "heartbeat",
    "inbox",
    "log",
    "reply",
    "send",
    "sessions",
]

AgentOpt = Annotated[
    str | None,
    typer.Option("--agent", help="Who you are: default $GITMEM_AGENT, else git user.name."),
]
ProjectOpt = Annotated[str, typer.Option("--project", help="The project it belongs to.")]


def coord_for(store: str | None, agent: str | None) -> Coord:
    """The store's coordination as this agent ($GITMEM_AGENT) on this device ($GITMEM_DEVICE,
    else the host name)."""
    who = (agent or os.environ.get("GITMEM_AGENT", "")).strip()
    return open_store(store).coord(who, device_name(os.environ))


def _short(commit: str | None) -> str:
    return f" (commit {commit[:12]})" if commit else ""


def _message_line(m: Message, me: str, sent: bool) -> str:
    j = message_json(m)
    mark = " " if sent or m.read or me in m.acked_by else "*"
    acked = f"  acked by {', '.join(m.acked_by)}" if m.acked_by else ""
    return (
        f"{mark} {j['id']}  {j['sent'][:16]}  {j['priority']} {j['type']} from {j['from']} "
        f"to {j['to']}: {j['subject']}{acked}"
    )


@app.command()
def send(
    to: Annotated[str, typer.Argument(metavar="TO", help="An agent's name, or * for every agent.")],
    kind: Annotated[str, typer.Argument(metavar="TYPE", help=" | ".join(KINDS[:-1]) + ".")],
    body: Annotated[str, typer.Argument(help="The message.")],
    subject: Annotated[
        str, typer.Option("--subject", "-s", help="One line; default: the body's first.")
    ] = "",
    priority: Annotated[
        str, typer.Option("--priority", help=" | ".join(PRIORITIES) + ".")
    ] = "normal",
    thread: Annotated[
        str, typer.Option("--thread", help="A message id: continue its thread.")
    ] = "",
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Leave a message for another agent (one commit; it travels at the next sync)."""
    coord = coord_for(store, agent)
    if to.strip() != BROADCAST and to.strip() not in coord.known_agents():
        display.notice(
            f'no agent named "{to.strip()}" is known here yet (none has synced a record, '
            'a message or a heartbeat); sent anyway — check the name with "gitmem agents"'
        )
    sent = coord.send(to, kind, body, subject=subject, priority=priority, thread=thread)
    if as_json:
        display.json_out(message_json(sent))
        return
    display.say(f"sent {sent.id} to {to.strip()}{_short(sent.commit)}")


@app.command()
def inbox(
    unread: Annotated[
        bool, typer.Option("--unread", help="Only messages not yet seen here nor acknowledged.")
    ] = False,
    sent: Annotated[
        bool, typer.Option("--sent", help="The messages you sent, and who acknowledged them.")
    ] = False,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="At most this many; 0: all.", min=0)
    ] = 0,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Your messages, newest first (* marks the unread); those shown count as read here."""
    coord = coord_for(store, agent)
    found = coord.inbox(unread=unread, sent=sent, limit=limit)
    if as_json:
        display.json_out(inbox_json(coord.agent, found))
        return
    if not found:
        what = "sent messages" if sent else ("unread messages" if unread else "messages")
        display.say(f"no {what} for {coord.agent}")
        return
    for m in found:
        display.say(_message_line(m, coord.agent, sent))


@app.command()
def reply(
    message_id: Annotated[str, typer.Argument(metavar="ID", help="The message to answer.")],
    body: Annotated[str, typer.Argument(help="The answer.")],
    priority: Annotated[
        str, typer.Option("--priority", help=" | ".join(PRIORITIES) + ".")
    ] = "normal",
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Answer a message: a new message to its sender, in the same thread (one commit)."""
    answer = coord_for(store, agent).reply(message_id, body, priority=priority)
    if as_json:
        display.json_out(message_json(answer))
        return
    j = message_json(answer)
    display.say(f"replied {j['id']} to {j['to']} in thread {j['thread']}{_short(answer.commit)}")


@app.command()
def ack(
    message_id: Annotated[str, typer.Argument(metavar="ID", help="The message to acknowledge.")],
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Acknowledge a message for you (one commit: the sender sees it after the next sync)."""
    coord = coord_for(store, agent)
    done = coord.ack(message_id)
    if as_json:
        display.json_out(message_json(done))
        return
    if done.commit is None:
        display.say(f"{done.id} was already acknowledged by {coord.agent}; nothing written")
    else:
        display.say(f"acknowledged {done.id}{_short(done.commit)}")


@app.command()
def log(
    action: Annotated[str, typer.Argument(metavar="ACTION", help="One word: fixed, reviewed, ...")],
    summary: Annotated[str, typer.Argument(metavar="SUMMARY", help="What you did, in a sentence.")],
    files: Annotated[
        list[str] | None, typer.Option("--files", help="A file it touched; repeatable.")
    ] = None,
    project: ProjectOpt = "",
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Add an entry to the session log (one commit; `gitmem sessions` lists it)."""
    entry, commit = coord_for(store, agent).log(action, summary, files=files or (), project=project)
    if as_json:
        display.json_out(log_json(entry, commit))
        return
    display.say(f"logged {entry.record.id}{_short(commit)}")


@app.command()
def sessions(
    last: Annotated[str, typer.Option("--last", help="How far back: 7d, 12h, 2w.")] = "7d",
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="At most this many; 0: all.", min=0)
    ] = 0,
    agent: Annotated[str, typer.Option("--agent", help="Only this agent's.")] = "",
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Recent agent sessions and log entries, newest first."""
    from gitmem.recall.timeparse import parse_duration

    span = parse_duration(last)
    found = coord_for(store, None).sessions(last=span, agent=agent, limit=limit)
    if as_json:
        display.json_out(sessions_json(found))
        return
    if not found:
        display.say(f"no sessions in the last {last}")
        return
    for s in found:
        j = session_json(s)
        what = f"{j['kind']}/{j['action']}" if j["action"] else j["kind"]
        where = f" on {j['device']}" if j["device"] else ""
        display.say(f"{j['updated'][:16]}  {j['agent']}{where}  {what}  {j['title']}  ({j['id']})")


@app.command()
def heartbeat(
    project: ProjectOpt = "",
    note: Annotated[str, typer.Option("--note", help="What you are doing, in a few words.")] = "",
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Say you are active here now: local only, no commit (sync shares it; docs/coord.md)."""
    seen = coord_for(store, agent).heartbeat(project=project, note=note)
    if as_json:
        display.json_out(presence_json(seen, seen.last))
        return
    display.say(
        f"{seen.agent} on {seen.device}: active since {presence_json(seen, seen.last)['since']}"
    )


@app.command()
def agents(
    agent: Annotated[str, typer.Option("--agent", help="Only this agent.")] = "",
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Who was active when, on which device (this device now; others as of the last sync)."""
    found = coord_for(store, None).agents(agent=agent)
    now = utc_now()
    if as_json:
        display.json_out(agents_json(found, now))
        return
    if not found:
        display.say("no agent has sent a heartbeat yet (gitmem heartbeat; sync to see others)")
        return
    for p in found:
        j = presence_json(p, now)
        state = f"active since {j['since']}" if j["active"] else f"last seen {j['last_seen']}"
        extra = "".join(f"  {v}" for v in (j["project"], j["note"]) if v)
        display.say(f"{p.agent} on {p.device}: {state}{extra}")
