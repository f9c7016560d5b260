"""`gitmem task start|update|suspend|resume|done|fail|list|current`: tasks with a lifecycle,
every transition one commit (docs/coord.md).

Commands register on a `task` group of the shared `app` (gitmem.cli.app); gitmem.cli.main
imports this module. No `from __future__ import annotations` here, as in gitmem.cli.app.
"""

from typing import Annotated

import typer

from gitmem.cli import display
from gitmem.cli.app import JsonOpt, StoreOpt, app
from gitmem.cli.coord import AgentOpt, coord_for
from gitmem.coord.answers import current_json, task_json, tasks_json
from gitmem.coord.tasks import OPEN, STATES
from gitmem.store.record import Record

__all__ = ["task_app"]

task_app = typer.Typer(
    help="Tasks an agent holds: start, update, suspend, resume, done, fail; list, current.",
    no_args_is_help=True,
)
app.add_typer(task_app, name="task")

IdArg = Annotated[str, typer.Argument(metavar="ID", help="The task's id (or a unique prefix).")]


def _line(record: Record) -> str:
    j = task_json(record)
    note = f"  — {j['note']}" if j["note"] else ""
    project = f" [{j['project']}]" if j["project"] else ""
    return f"{j['id']}  {j['state']:<9}  {j['owner']}{project}  {j['title']}{note}"


def _show(record: Record, commit: str | None, as_json: bool, done: str) -> None:
    if as_json:
        display.json_out(task_json(record, commit))
        return
    short = f" (commit {commit[:12]})" if commit else ""
    display.say(f"{done} {record.id}: {task_json(record)['state']}{short}")


@task_app.command("start")
def start(
    title: Annotated[str, typer.Argument(metavar="TITLE", help="What the work is, in one line.")],
    body: Annotated[str, typer.Option("--body", "-b", help="A longer description.")] = "",
    project: Annotated[str, typer.Option("--project", help="The project it belongs to.")] = "",
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Start a new task, active and held by you (one commit)."""
    result = coord_for(store, agent).task_start(title, body=body, project=project)
    _show(result.record, result.commit, as_json, "started")


def _transition(verb: str, done: str, note_help: str) -> None:
    def command(
        task_id: IdArg,
        note: Annotated[str, typer.Argument(metavar="NOTE", help=note_help)] = "",
        agent: AgentOpt = None,
        as_json: JsonOpt = False,
        store: StoreOpt = None,
    ) -> None:
        result = coord_for(store, agent).task(verb, task_id, note)
        _show(result.record, result.commit, as_json, done)

    command.__doc__ = {
        "update": "Note progress on an active or suspended task (one commit).",
        "suspend": "Put an active task aside (one commit); resume it later.",
        "resume": "Take a suspended task up again; you hold it now (one commit).",
        "done": "Finish a task (one commit); it cannot change after that.",
        "fail": "Give a task up as failed (one commit); say why in NOTE.",
    }[verb]
    task_app.command(verb)(command)


_transition("update", "updated", "What changed (required).")
_transition("suspend", "suspended", "Why it is put aside.")
_transition("resume", "resumed", "A note.")
_transition("done", "finished", "What came of it.")
_transition("fail", "failed", "Why it failed.")


@task_app.command("list")
def list_(
    state: Annotated[
        list[str] | None,
        typer.Option("--state", help=f"{' | '.join(STATES)}; repeatable. Default: open ones."),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every task, finished ones too.")] = False,
    owner: Annotated[str, typer.Option("--owner", help="Only this agent's.")] = "",
    project: Annotated[str, typer.Option("--project", help="Only this project's.")] = "",
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Tasks, most recently changed first: by default the open ones (active, suspended)."""
    states: tuple[str, ...] = () if all_ else tuple(state or OPEN)
    found = coord_for(store, None).tasks(states=states, owner=owner, project=project)
    if as_json:
        display.json_out(tasks_json(found))
        return
    if not found:
        display.say("no tasks" if all_ else "no open tasks")
    for record in found:
        display.say(_line(record))


@task_app.command("current")
def current(agent: AgentOpt = None, as_json: JsonOpt = False, store: StoreOpt = None) -> None:
    """Your active task, the one you changed last (none: exit 0, and says so)."""
    coord = coord_for(store, agent)
    found = coord.current_task()
    if as_json:
        display.json_out(current_json(coord.agent, found))
        return
    display.say(_line(found) if found else f"no active task for {coord.agent}")
