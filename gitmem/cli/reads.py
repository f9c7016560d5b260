"""The commands that read the memory: read, list, history, export and status (all but
export and status also as it stood, --as-of); and version.

Commands register on the shared `app` of gitmem.cli.app; gitmem.cli.main imports this module.
No `from __future__ import annotations` here, as in gitmem.cli.app.
"""

import json
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from gitmem import answers
from gitmem.cli import display
from gitmem.cli.app import AsOfOpt, JsonOpt, StoreOpt, app, open_store, show_notices
from gitmem.cli.writeinput import split_tags
from gitmem.errors import UsageError
from gitmem.store.record import Record
from gitmem.store.views import LEVELS, Level, level_json, render

__all__ = ["export", "history", "list_", "read", "status", "version"]


def _usage_exit(message: str) -> NoReturn:
    raise UsageError(message)


@app.command()
def read(
    record_id: Annotated[str, typer.Argument(metavar="ID")],
    level: Annotated[
        str | None,
        typer.Option(
            "--level",
            "-l",
            help="abstract | outline | full (the default); with --json, that text "
            "instead of the record's fields.",
        ),
    ] = None,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Show a record: its abstract, an outline, or the whole file."""
    if level is not None and level not in LEVELS:
        _usage_exit(f'--level must be one of {", ".join(LEVELS)}, not "{level}"')
    found = open_store(store).get(record_id, as_of=as_of)
    chosen: Level = level or "full"
    if as_json:
        shown = answers.record_json(found) if level is None else level_json(found, chosen)
        display.json_out(shown)
        return
    display.raw(render(found, chosen))


@app.command(name="list")
def list_(
    type_: Annotated[str | None, typer.Option("--type", help="Only this type.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Has this tag.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Written by.")] = None,
    scope: Annotated[str | None, typer.Option("--scope")] = None,
    status: Annotated[str, typer.Option("--status", help="active | superseded | all.")] = "active",
    sort: Annotated[
        str, typer.Option("--sort", help="created | updated | title | type.")
    ] = "created",
    reverse: Annotated[
        bool, typer.Option("--reverse", help="Oldest first / A-Z reversed.")
    ] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=0, help="0: no limit.")] = 0,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """List records, newest first."""
    from gitmem.cli.listing import Filters, select

    if status not in ("active", "superseded", "all"):
        _usage_exit(f'--status must be active, superseded or all, not "{status}"')
    if sort not in ("created", "updated", "title", "type"):
        _usage_exit(f'--sort must be created, updated, title or type, not "{sort}"')
    filters = Filters(
        type_=type_, tags=tuple(split_tags(tag)), agent=agent, scope=scope, status=status
    )
    opened = open_store(store)
    chosen = select(opened.records(as_of=as_of), filters, sort=sort, reverse=reverse, limit=limit)
    if as_of is not None:
        travel = opened.time_travel()
        show_notices(travel.notes(travel.moment(as_of)), set())
    if as_json:
        display.json_out([_summary(r) for r in chosen])
        return
    display.record_table(chosen)


def _summary(r: Record) -> dict[str, Any]:
    data = r.to_dict()
    del data["body"]
    return {**data, "path": r.path}


@app.command()
def history(
    record_id: Annotated[str, typer.Argument(metavar="ID")],
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Every version of a record: time, commit, operation, agent, what changed."""
    versions = open_store(store).history(record_id, as_of=as_of)
    if as_json:
        display.json_out(answers.history_json(versions))
        return
    display.history_table(versions)


@app.command()
def export(
    format_: Annotated[str, typer.Option("--format", help="jsonl (the only format).")] = "jsonl",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File; default stdout.")
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Write every record as JSON lines: all that `gitmem import` needs to rebuild the store."""
    if format_ != "jsonl":
        _usage_exit(f'--format must be jsonl, not "{format_}"')
    lines = (
        json.dumps(item, ensure_ascii=False, sort_keys=False) for item in open_store(store).export()
    )
    if output is None:
        for line in lines:
            display.raw(line + "\n")
        return
    with output.open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line + "\n")


@app.command()
def status(as_json: JsonOpt = False, store: StoreOpt = None) -> None:
    """The store: where it is, its HEAD, how many records, edits not yet committed."""
    from gitmem.insight.status import store_status

    report = store_status(open_store(store))
    if as_json:
        display.json_out(report)
        return
    display.status(report)
    for line in display.sync_lines(report["sync"]):
        display.say(line)
    for line in display.capture_lines(report["capture"]):
        display.say(line)


@app.command()
def version(as_json: JsonOpt = False) -> None:
    """gitmem's version; with --json also the store format, the index schema, Python's and
    the libraries' versions (`gitmem --version` prints the first line alone)."""
    from gitmem.insight.status import versions

    report = versions()
    if as_json:
        display.json_out(report)
        return
    display.say(f"gitmem {report['gitmem']}")
    display.say(f"store format {report['store_format']}, index schema {report['index_schema']}")
    display.say(f"Python {report['python']}")
