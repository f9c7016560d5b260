"""CLI commands for time travel: `gitmem diff`.

The --as-of options live on the read commands (gitmem.cli.reads) and on recall
(gitmem.cli.search). See docs/time-travel.md.

Commands register on the shared `app` of gitmem.cli.app; gitmem.cli.main imports this module.
"""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from gitmem.cli import display
from gitmem.cli.app import JsonOpt, StoreOpt, app, open_store
from gitmem.errors import UsageError

if TYPE_CHECKING:  # the time-travel modules load the index: only `diff` itself needs them
    from gitmem.recall.changes import Changes, Item

__all__ = ["app"]


@app.command()
def diff(
    start: Annotated[
        str | None,
        typer.Argument(metavar="FROM", help="A time, a span like 7d, or a commit id / ref."),
    ] = None,
    end: Annotated[
        str | None, typer.Argument(metavar="TO", help="The same forms; default: now.")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", help="FROM, as in --since 7d; then the one argument, if any, is TO."
        ),
    ] = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """What changed between two times or commits: records added, superseded (old → new),
    forgotten, and changed fields (old and new values) and bodies.

    A bare date means the end of that day: `gitmem diff 2026-03-31 2026-04-30` is April.
    """
    if since is not None and start is not None and end is not None:
        raise UsageError("give FROM and TO, or --since with at most TO, not all three")
    if since is not None:
        start, end = since, start
    if start is None:
        raise UsageError("diff needs FROM (a time, a span like 7d, or a commit) or --since 7d")
    changes = open_store(store).diff(start, end)
    if as_json:
        display.json_out(changes.to_dict())
        return
    _show(changes)


def _show(changes: "Changes") -> None:
    for note in changes.notes:
        display.notice(note)
    display.say(f"from {changes.start.label} to {changes.end.label}")
    if changes.empty:
        display.say("no changes")
        return
    _section("added", changes.added, lambda i: f"+ {_name(i)}")
    _section(
        "superseded",
        changes.superseded,
        lambda i: f"~ {_name(i)}\n    → {i.by or '?'}  {i.by_title}".rstrip(),
    )
    _section("forgotten", changes.forgotten, lambda i: f"- {_name(i)}")
    if changes.changed:
        display.say(f"changed ({len(changes.changed)})")
        for edit in changes.changed:
            display.say(f"  * {_name(edit.record)}")
            for f in edit.fields:
                display.say(f"      {f.field}: {_value(f.old)} → {_value(f.new)}")
            if edit.body_edited:
                display.say("      body edited")


def _section(title: str, items: "tuple[Item, ...]", line: Any) -> None:
    if not items:
        return
    display.say(f"{title} ({len(items)})")
    for item in items:
        display.say("  " + line(item))


def _name(item: "Item") -> str:
    mark = " [superseded]" if item.status == "superseded" else ""
    return f"{item.id}  {item.type}  {item.title}{mark}"


def _value(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "(none)"
    return str(value) or '""'
