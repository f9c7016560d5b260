"""`gitmem graph handoff`: what a new session needs to pick up the work (docs/coord.md).

The `graph` group is created here because the work graph's commands (gitmem.cli.graph, the
graph wing's) are on another branch. MERGE POINT (issue 19): once both land, drop the two
lines that make `graph_app` below and import the graph wing's group instead
(`from gitmem.cli.graph import graph_app`), and import this module after it in cli/main.py.

Commands register on the shared `app` of gitmem.cli.app; gitmem.cli.main imports this module.
No `from __future__ import annotations` here, as in gitmem.cli.app.
"""

from typing import Annotated

import typer

from gitmem.cli import display
from gitmem.cli.app import JsonOpt, StoreOpt, app
from gitmem.cli.coord import AgentOpt, coord_for
from gitmem.coord.handoff import render

__all__ = ["graph_app", "handoff"]

graph_app = typer.Typer(help="The work graph: entities, blockers, handoff.", no_args_is_help=True)
app.add_typer(graph_app, name="graph")


@graph_app.command("handoff")
def handoff(
    hours: Annotated[float, typer.Option("--hours", help="The window, in hours.")] = 24.0,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """What a new session needs: unread messages, open tasks, blockers, entities and
    decisions updated, recent sessions and agents, for the last N hours."""
    data = coord_for(store, agent).handoff(hours=hours)
    if as_json:
        display.json_out(data)
        return
    display.raw(render(data))
