"""The consolidation commands: sleep, proposals, decide, feedback (docs/consolidation.md).

Commands register on the shared `app` of gitmem.cli.app; gitmem.cli.main imports this module.
No `from __future__ import annotations` here, as in gitmem.cli.app.
"""

import os
from typing import Annotated, Any

import typer

from gitmem.cli import display
from gitmem.cli.app import JsonOpt, StoreOpt, app, open_store
from gitmem.errors import UsageError

__all__ = ["decide", "feedback", "proposals", "sleep"]

AgentOpt = Annotated[
    str | None,
    typer.Option("--agent", help="Who decides: default $GITMEM_AGENT, else git user.name."),
]


def _who(flag: str | None) -> str:
    return (flag or os.environ.get("GITMEM_AGENT", "")).strip()


def _catch_up(root: Any, commits: Any) -> None:
    if any(commits):
        from gitmem.cli.background import catch_up_later

        catch_up_later(root, os.environ)


@app.command()
def sleep(
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Report what would be done and proposed; write nothing."),
    ] = False,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", help="Only pairs with a record written from then on: 30d, 2026-03-01."
        ),
    ] = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Consolidate: find duplicates, contradictions, stale records and missing links; make the
    safe changes (links, weights within bounds) as commits; propose the rest for review."""
    from gitmem.consolidate.answers import sleep_json
    from gitmem.recall.timeparse import parse_moment

    opened = open_store(store)
    moment = None if since is None else parse_moment(since)
    report = opened.consolidation().sleep(dry_run=dry_run, since=moment)
    if as_json:
        display.json_out(sleep_json(report))
    else:
        display.raw(report.text())
    _catch_up(opened.root, report.commits)


@app.command()
def proposals(
    every: Annotated[bool, typer.Option("--all", help="Decided proposals too.")] = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """List what gitmem sleep proposed and nobody has decided yet (with --all, every one)."""
    from gitmem.consolidate.answers import proposals_json

    found = open_store(store).consolidation().proposals(every=every)
    if as_json:
        display.json_out(proposals_json(found))
        return
    if not found:
        display.say('no proposals waiting; "gitmem sleep" makes them')
        return
    for p in found:
        state = "" if p.status == "pending" else f" [{p.status}]"
        display.raw(f"{p.id} {p.kind}{state}: {p.why}\n")
        for rid, title in zip(p.records, p.titles, strict=False):
            display.raw(f"    {rid}  {title}\n")
    display.raw('decide with "gitmem decide ID --accept" or "--reject [--note WHY]"\n')


@app.command()
def decide(
    proposal: Annotated[str, typer.Argument(metavar="ID", help="The proposal (an id prefix).")],
    accept: Annotated[bool, typer.Option("--accept", help="Apply it, as one commit.")] = False,
    reject: Annotated[bool, typer.Option("--reject", help="Never propose it again.")] = False,
    note: Annotated[str, typer.Option("--note", help="Why (kept in the proposal).")] = "",
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Accept or reject a proposal; either way one commit, synced to every device."""
    from gitmem.consolidate.answers import decision_json

    if accept == reject:
        raise UsageError("say --accept or --reject (one of them)")
    opened = open_store(store)
    made = opened.consolidation().decide(proposal, accept=accept, note=note, agent=_who(agent))
    if as_json:
        display.json_out(decision_json(made))
    else:
        display.say(f"{made.proposal.status} {made.proposal.id} ({made.commit[:12]})")
    _catch_up(opened.root, [made.commit])


@app.command()
def feedback(
    record_id: Annotated[str, typer.Argument(metavar="ID")],
    useful: Annotated[bool, typer.Option("--useful", help="Raise its weight a step.")] = False,
    not_useful: Annotated[
        bool, typer.Option("--not-useful", help="Lower its weight a step.")
    ] = False,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Say a recalled record was useful or not: its weight moves one step within bounds."""
    from gitmem.consolidate.answers import feedback_json

    if useful == not_useful:
        raise UsageError("say --useful or --not-useful (one of them)")
    opened = open_store(store)
    result = opened.consolidation().feedback(record_id, useful=useful, agent=_who(agent))
    if as_json:
        display.json_out(feedback_json(result))
    elif result.commit is None:
        display.say(f"{result.record.id}: weight stays {result.before:g} (at its bound)")
    else:
        display.say(f"{result.record.id}: weight {result.before:g} -> {result.record.weight:g}")
    _catch_up(opened.root, [result.commit])
