"""`gitmem graph handoff`: what a new session needs to pick up the work (docs/coord.md), on
the work graph's `graph` group (gitmem.cli.graph).

gitmem.cli.main imports this module after gitmem.cli.graph.
No `from __future__ import annotations` here, as in gitmem.cli.app.
"""

from typing import Annotated

import typer

from gitmem.cli import display
from gitmem.cli.app import JsonOpt, StoreOpt
from gitmem.cli.coord import AgentOpt, coord_for
from gitmem.cli.graph import graph_app
from gitmem.coord.handoff import render

__all__ = ["handoff"]


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
