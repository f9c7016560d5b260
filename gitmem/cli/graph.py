"""CLI commands of the work graph: `gitmem entity index-file|index-all|reconcile` and
`gitmem graph search|related|blockers|diff` (docs/graph.md).

The project is the repository around the current directory (or --project-dir), its id as
the hooks find it, and its watched directories the store's `hooks.watch` (or its own list in
`hooks.watch_projects`). Commands register
on the shared `app` of gitmem.cli.app; gitmem.cli.main imports this module.
"""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gitmem.cli import display
from gitmem.cli.app import JsonOpt, StoreOpt, app, open_store
from gitmem.errors import GitmemError

if TYPE_CHECKING:
    from gitmem.api import Store
    from gitmem.graph.indexer import Watched
    from gitmem.graph.view import Indexed

__all__ = ["entity_app", "graph_app"]

entity_app = typer.Typer(
    help="Entities: watched Markdown files (plans, tasks, ...) as records of the work graph.",
    no_args_is_help=True,
)
graph_app = typer.Typer(
    help="Query the work graph: search, related, blockers, diff, handoff.", no_args_is_help=True
)
app.add_typer(entity_app, name="entity")
app.add_typer(graph_app, name="graph")

ProjectDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--project-dir",
        help="The project's directory (default: the current one); its repository root holds "
        "the watched directories.",
        file_okay=False,
    ),
]
AgentOpt = Annotated[
    str | None,
    typer.Option("--agent", help="Who writes: default $GITMEM_AGENT, else git user.name."),
]


def _where(store: "Store", project_dir: Path | None) -> "Watched":
    from gitmem.agents.entities import watched_around

    where, problems = watched_around(store.root, Path(os.path.abspath(project_dir or Path.cwd())))
    for problem in problems:
        display.notice(problem)
    return where


def _agent(flag: str | None) -> str:
    return (flag or os.environ.get("GITMEM_AGENT", "")).strip()


def _wrote(store: "Store", commits: bool) -> None:
    """After a write, catch the search index up in the background (gitmem.cli.background)."""
    if commits:
        from gitmem.cli.background import catch_up_later

        catch_up_later(store.root, os.environ)


def _show_index(done: "Indexed") -> None:
    report = done.report
    for f in report.files:
        if f.action == "skipped":
            display.notice(f"{f.path}: skipped — {f.note}")
        elif f.note:
            display.notice(f"{f.path}: indexed, but {f.note}")
    for edge in done.dangling:
        display.notice(f"{edge.source}: {edge.rel} {edge.key} names no entity (dangling, kept)")
    counts = ", ".join(f"{report.count(a)} {a}" for a in ("new", "updated", "unchanged", "skipped"))
    commit = f" in {report.commit[:12]}" if report.commit else ""
    display.say(f"entities: {counts}{commit}")


@entity_app.command("index-file")
def index_file(
    path: Annotated[Path, typer.Argument(help="A Markdown file under a watched directory.")],
    project_dir: ProjectDirOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Index one watched Markdown file as an entity (one commit; nothing when unchanged).

    A file that cannot be an entity (outside the watched directories, binary, over 1 MiB, a
    frontmatter bomb, a symbolic link loop, an id another record holds) is refused, exit 1.
    """
    opened = open_store(store)
    where = _where(opened, project_dir or Path(os.path.abspath(path)).parent)
    done = opened.graph.index_file(Path(os.path.abspath(path)), where, agent=_agent(agent))
    _wrote(opened, done.report.commit is not None)
    if done.refusal():
        raise GitmemError(done.refusal())
    if as_json:
        display.json_out(done.to_dict())
        return
    _show_index(done)


@entity_app.command("index-all")
def index_all(
    directory: Annotated[
        Path | None,
        typer.Argument(
            metavar="[DIR]", help="Only this directory (inside a watched one); default: all."
        ),
    ] = None,
    project_dir: ProjectDirOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Index every Markdown file of the watched directories, in one commit. Unchanged files
    are skipped (content hash); files that cannot be entities are reported and skipped."""
    opened = open_store(store)
    where = _where(opened, project_dir)
    done = opened.graph.index_all(where, directory, agent=_agent(agent))
    _wrote(opened, done.report.commit is not None)
    if as_json:
        display.json_out(done.to_dict())
        return
    _show_index(done)


@entity_app.command()
def reconcile(
    prune: Annotated[
        bool, typer.Option("--prune", help="Take dangling edges out of the entity records.")
    ] = False,
    project_dir: ProjectDirOpt = None,
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Forget entities whose file is gone (and the old `document` references), and list the
    dangling edges (or, with --prune, remove them). History keeps everything forgotten."""
    opened = open_store(store)
    report = opened.graph.reconcile(_where(opened, project_dir), prune=prune, agent=_agent(agent))
    _wrote(opened, bool(report.commits))
    if as_json:
        display.json_out(report.to_dict())
        return
    for item in report.forgotten:
        display.say(f"forgot {item['id']}  ({item['path']} is gone)")
    for item in report.retired:
        display.say(f"forgot {item['id']}  (old document reference of {item['path']})")
    verb = "pruned" if report.pruned else "dangling"
    for edge in report.dangling:
        display.say(f"{verb}: {edge.source} {edge.rel} {edge.key}")
    if not (report.forgotten or report.retired or report.dangling):
        display.say("nothing to reconcile")


def _split(values: list[str] | None) -> tuple[str, ...]:
    return tuple(v.strip() for item in values or () for v in item.split(",") if v.strip())


@graph_app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for, in words.")],
    types: Annotated[
        list[str] | None,
        typer.Option("--types", help="Entity types, comma-separated (plan,task); repeatable."),
    ] = None,
    days: Annotated[
        float | None, typer.Option("--days", help="Only entities updated in the last N days.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many hits.")] = 10,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Hybrid search over entities only, weighted toward meaning (docs/graph.md)."""
    found = open_store(store).graph.search(query, types=_split(types), days=days, limit=limit)
    if as_json:
        display.json_out(found.to_dict())
        return
    for notice in found.notices:
        display.notice(notice)
    if not found.hits:
        display.say("no entities found")
    for hit in found.hits:
        state = f" [{hit['state']}]" if hit["state"] else ""
        display.say(f"{hit['id']}  {hit['type']}  {hit['title']}{state}  {hit['path']}")


@graph_app.command()
def related(
    entity_id: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="An entity's or any record's id, or a unique prefix of it."
        ),
    ],
    depth: Annotated[int, typer.Option("--depth", help="1, 2 or 3 edges away.")] = 1,
    rel_type: Annotated[
        list[str] | None,
        typer.Option(
            "--rel-type",
            help="Only these relations: parent, blocked_by, depends_on, links_to (and a "
            "record's supersedes, superseded_by); repeatable.",
        ),
    ] = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Entities (and records) within DEPTH edges of ID, both directions; cycles end there.

    ID may be any record: its neighbours are what its `links` and `supersedes` name and the
    entities that name it, and the walk goes on through those entities."""
    found = open_store(store).graph.related(entity_id, depth, _split(rel_type))
    data = found.to_dict()
    if as_json:
        display.json_out(data)
        return
    origin = data["entity"]
    display.say(f"{origin['id']}  {origin['type']}  {origin['title']}")
    for item in data["related"]:
        arrow = "→" if item["direction"] == "out" else "←"
        state = f" [{item['state']}]" if item.get("state") else ""
        display.say(
            f"{'  ' * item['depth']}{arrow} {item['rel']}  {item['id']}  {item['title']}{state}"
        )
    for edge in data["dangling"]:
        display.say(f"  → {edge['rel']}  {edge['key']}  (dangling)")


@graph_app.command()
def blockers(
    stale_days: Annotated[
        float, typer.Option("--stale-days", help="Only those not updated for N days.")
    ] = 0,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Blocked or waiting entities, longest blocked first, each with its chain of blockers
    and how long it has been blocked (from history)."""
    data = open_store(store).graph.blockers(stale_days).to_dict()
    if as_json:
        display.json_out(data)
        return
    if not data["blockers"]:
        display.say("nothing is blocked")
    for item in data["blockers"]:
        days = item["blocked_days"]
        since = f"blocked {days:g} days" if days is not None else "blocked"
        display.say(f"{item['id']}  {item['title']}  [{item['state'] or 'blocked'}]  {since}")
        for link in item["chain"]:
            name = link["id"] or f"{link['key']} (dangling)"
            mark = " (cycle)" if link["cycle"] else ""
            state = f" [{link['state']}]" if link["state"] else ""
            display.say(f"{'  ' * link['depth']}← {name}  {link['title']}{state}{mark}")


@graph_app.command("diff")
def graph_diff(
    start: Annotated[
        str, typer.Argument(metavar="FROM", help="A time, a span like 7d, or a commit.")
    ],
    end: Annotated[
        str | None, typer.Argument(metavar="TO", help="The same forms; default: now.")
    ] = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """How the graph moved between two times or commits: new entities, status changes,
    newly blocked, completed, removed (from git history)."""
    data = open_store(store).graph.diff(start, end).to_dict()
    if as_json:
        display.json_out(data)
        return
    display.say(f"from {data['from']['time']} to {data['to']['time']}")
    sections: list[tuple[str, str, Any]] = [
        ("new", "+", lambda i: ""),
        ("status_changes", "~", lambda i: f"  {i['old_state'] or '(none)'} → {i['state']}"),
        ("newly_blocked", "!", lambda i: f"  by {', '.join(i['blocked_by']) or i['state']}"),
        ("completed", "✓", lambda i: ""),
        ("removed", "-", lambda i: ""),
    ]
    empty = True
    for name, mark, extra in sections:
        if data[name]:
            empty = False
            display.say(f"{name.replace('_', ' ')} ({len(data[name])})")
            for item in data[name]:
                display.say(f"  {mark} {item['id']}  {item['title']}{extra(item)}")
    if empty:
        display.say("no changes")
