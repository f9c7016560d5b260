"""CLI commands for sync: `gitmem remote`, `gitmem clone`, `gitmem sync`. See docs/sync.md.

Commands register on the shared `app` of gitmem.cli.app; gitmem.cli.main imports this module.
"""

import os
from typing import Annotated

import typer

from gitmem.cli import display
from gitmem.cli.app import JsonOpt, StoreOpt, app, open_store
from gitmem.store.config import resolve_store_path
from gitmem.sync.gitcli import shown_url

__all__ = ["app"]

TimeoutOpt = Annotated[
    float,
    typer.Option("--timeout", min=1, help="Give up after this many seconds (nothing is lost)."),
]
RemoteOpt = Annotated[str, typer.Option("--name", help="The remote's name.")]
UrlArg = Annotated[str, typer.Argument(help="ssh or https URL, or a path to a repository.")]

remote_app = typer.Typer(help="The git remote this store syncs with.", no_args_is_help=True)
app.add_typer(remote_app, name="remote")


@remote_app.command("add")
def remote_add(url: UrlArg, name: RemoteOpt = "origin", store: StoreOpt = None) -> None:
    """Add the remote this store syncs with (then run: gitmem sync)."""
    from gitmem.sync.gitcli import set_remote

    set_remote(open_store(store).root, name, url, os.environ, add=True)
    display.say(f"remote {name} is {shown_url(url)}; send and receive memories with: gitmem sync")


@remote_app.command("set")
def remote_set(url: UrlArg, name: RemoteOpt = "origin", store: StoreOpt = None) -> None:
    """Point the remote at another URL (adds it if there is none)."""
    from gitmem.sync.gitcli import set_remote

    set_remote(open_store(store).root, name, url, os.environ, add=False)
    display.say(f"remote {name} is now {shown_url(url)}")


@remote_app.command("show")
def remote_show(
    name: RemoteOpt = "origin", as_json: JsonOpt = False, store: StoreOpt = None
) -> None:
    """The remote's URL and how far this store is ahead or behind it (as last fetched)."""
    from gitmem.sync.gitcli import remote_url
    from gitmem.sync.state import sync_status

    opened = open_store(store)
    url = remote_url(opened.root, name, os.environ)
    report = {"url": None if url is None else shown_url(url), **sync_status(opened, name)}
    if as_json:
        display.json_out(report)
        return
    if report["url"] is None:
        display.say(f"no remote {name}; add one with: gitmem remote add URL")
        return
    display.say(f"{name}  {report['url']}")
    for line in display.sync_lines(report):
        display.say(line)


@app.command()
def clone(
    url: Annotated[str, typer.Argument(help="Where the memory is: ssh, https or a path.")],
    path: Annotated[
        str | None, typer.Argument(help="Where to put it. Default: the default store.")
    ] = None,
    timeout: TimeoutOpt = 300.0,
) -> None:
    """Put an existing memory on this machine; recall works at once (the index builds on
    first use)."""
    from gitmem.sync.clone import clone as clone_store

    target = resolve_store_path(path, os.environ)
    root = clone_store(url, target, os.environ, timeout=timeout)
    display.say(f"cloned {shown_url(url)} into {root}; sync with: gitmem sync --store {root}")


@app.command()
def sync(
    timeout: TimeoutOpt = 60.0,
    name: RemoteOpt = "origin",
    no_index: Annotated[
        bool, typer.Option("--no-index", help="Leave the index for the next recall.")
    ] = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Fetch, merge, push, then let the index catch up. Never prompts; bounded by --timeout;
    exits 0 when synced or when there is no remote."""
    from gitmem.sync.sync import sync as run_sync

    result = run_sync(
        open_store(store), os.environ, remote=name, timeout=timeout, index=not no_index
    )
    if as_json:
        display.json_out(result.to_dict())
        return
    if result.url is None:
        display.say(
            f"no remote {name} configured; nothing to sync — add one with: gitmem remote add URL"
        )
        return
    display.say(
        f"synced with {name} ({result.url}): received {result.incoming} change(s), "
        f"sent {result.outgoing} commit(s)"
    )
    for conflict in result.conflicts:
        display.notice(conflict.note)
    for note in result.notes:
        display.notice(note)
    if result.index == "behind":
        display.say("the search index catches up on the next recall")
