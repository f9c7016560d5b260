"""`gitmem purge`: remove a leaked text or a whole record from all of history. See the purge
section of docs/secret-guard.md. CLI only, on purpose: rewriting history is a person's decision,
so neither the MCP server nor the hooks offer it.

Commands register on the shared `app` of gitmem.cli.app; gitmem.cli.main imports this module.
"""

import os
from pathlib import Path
from typing import Annotated

import typer

from gitmem.cli import display
from gitmem.cli.app import JsonOpt, StoreOpt, app, open_store
from gitmem.cli.writeinput import read_text, stdin_text
from gitmem.errors import GitmemError

__all__ = ["purge"]

CONFIRM = "--yes-rewrite-history"


@app.command()
def purge(
    text: Annotated[
        list[str] | None,
        typer.Option("--text", help="A text to remove (repeatable); it stays in shell history."),
    ] = None,
    text_file: Annotated[
        Path | None,
        typer.Option("--text-file", help="Remove this file's whole content ('-': stdin)."),
    ] = None,
    record: Annotated[
        str | None, typer.Option("--record", help="Remove every version of this record (its id).")
    ] = None,
    confirmed: Annotated[
        bool, typer.Option(CONFIRM, help="Rewrite history; required, as it cannot be undone.")
    ] = False,
    remote: Annotated[str, typer.Option("--remote", help="The remote's name.")] = "origin",
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Remove a leaked secret (or a record) from every commit, then say what the remote needs."""
    from gitmem.sync.purge import purge as rewrite

    texts = list(text or [])
    if text_file is not None:
        given = stdin_text() if str(text_file) == "-" else read_text(text_file)
        texts.append(given[:-1] if given.endswith("\n") else given)
    opened = open_store(store)
    if not confirmed:
        raise GitmemError(
            f"purge rewrites the history of {opened.root} from the first commit that holds it: "
            "commit ids change, every clone must be replaced, and it cannot be undone; nothing "
            f"changed — run it again with {CONFIRM}"
        )
    result = rewrite(opened, os.environ, texts=texts, record=record, remote=remote)
    if as_json:
        display.json_out(result.to_dict())
        return
    what = f"the record {record}" if record else "the text"
    files = ", ".join(result.paths) or "commit messages only"
    after = result.head_after[:7] if result.head_after else "none (no commit left)"
    display.say(
        f"purged {what} from history: {result.blobs_changed} version(s) in {files}; "
        f"HEAD was {result.head_before[:7]}, now {after}; the index was rebuilt"
    )
    for step in _next_steps(result.remote, result.url):
        display.say(step)


def _next_steps(remote: str | None, url: str | None) -> list[str]:
    steps = []
    if remote is not None:
        clone = f"gitmem clone {url or 'URL'} PATH"
        steps += [
            f"The remote {remote} ({url}) and every clone of it still hold the old history:",
            f'  1. run "gitmem sync" here next: it replaces the history of {remote} with the '
            "purged one (a forced push, refused if another device pushed since the purge)",
            "  2. on every other device, before it syncs again: move its store aside and "
            f'"{clone}" (copy over any record written there since its last sync); one sync '
            "from an old clone puts the text back",
        ]
    steps.append(
        f"  {'3' if remote else '1'}. revoke or rotate the credential anyway: it was in history, "
        "and any clone, backup or fork made before the purge still has it"
    )
    return steps
