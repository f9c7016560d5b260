"""The commands that write the memory: init, then record, supersede, forget, amend, edit,
import and commit, each one git commit (docs/cli.md).

Commands register on the shared `app` of gitmem.cli.app; gitmem.cli.main imports this module.
No `from __future__ import annotations` here, as in gitmem.cli.app.
"""

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from gitmem.api import Store
from gitmem.cli import display
from gitmem.cli.app import JsonOpt, StoreOpt, app, open_store
from gitmem.cli.writeinput import (
    body_text,
    parse_fields,
    read_text,
    record_new,
    report_write,
    secret_policy,
    split_tags,
    stdin_text,
)
from gitmem.errors import GitmemError, RecordInvalid, UsageError
from gitmem.store.config import resolve_store_path
from gitmem.store.views import render

__all__ = ["amend", "commit", "edit", "forget", "import_", "init", "record", "supersede"]

AgentOpt = Annotated[
    str | None,
    typer.Option("--agent", help="Who writes: default $GITMEM_AGENT, else git user.name."),
]
RedactOpt = Annotated[
    bool, typer.Option("--redact", help="Replace secrets with [REDACTED:kind] and commit.")
]
AllowOpt = Annotated[
    bool, typer.Option("--allow-secret", help="Commit even if the secret guard objects.")
]
TitleOpt = Annotated[str, typer.Option("--title", "-t", help="One-line title.")]
AbstractOpt = Annotated[str, typer.Option("--abstract", "-a", help="One line, ≤ 240 characters.")]
TagsOpt = Annotated[
    list[str] | None, typer.Option("--tags", help="Comma-separated tags; repeatable.")
]
ScopeOpt = Annotated[str, typer.Option("--scope", help="shared | agent | private.")]
SourceOpt = Annotated[str, typer.Option("--source", help="Where this came from (file, URL, ...).")]
FieldOpt = Annotated[
    list[str] | None, typer.Option("--field", "-f", help="A type field: K=V; repeatable.")
]
LinkOpt = Annotated[list[str] | None, typer.Option("--link", help="Related record id; repeatable.")]
BodyFileOpt = Annotated[
    Path | None, typer.Option("--body-file", help="Read the body from a file.", dir_okay=False)
]
WeightOpt = Annotated[float, typer.Option("--weight", help="Importance, 0 to 10.", min=0, max=10)]
BodyArg = Annotated[str | None, typer.Argument(help="Body text, or - for stdin.")]


def _agent(flag: str | None) -> str:
    return (flag or os.environ.get("GITMEM_AGENT", "")).strip()


@app.command()
def init(
    path: Annotated[str | None, typer.Argument(help="Where to create the store.")] = None,
    store: StoreOpt = None,
) -> None:
    """Create a store: lay down the template and make the first commit."""
    target = resolve_store_path(path or store, os.environ)
    opened, created = Store.init(target, agent=_agent(None) or "gitmem")
    if created:
        display.say(f"created a gitmem store at {opened.root}")
    else:
        display.say(f"{opened.root} is already a gitmem store; nothing changed")


@app.command()
def record(
    type_: Annotated[str, typer.Argument(metavar="TYPE", help="decision, pattern, fact, ...")],
    body: BodyArg = None,
    title: TitleOpt = "",
    abstract: AbstractOpt = "",
    tags: TagsOpt = None,
    scope: ScopeOpt = "shared",
    agent: AgentOpt = None,
    source: SourceOpt = "",
    field: FieldOpt = None,
    link: LinkOpt = None,
    body_file: BodyFileOpt = None,
    weight: WeightOpt = 1.0,
    redact: RedactOpt = False,
    allow_secret: AllowOpt = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Remember something new: one record, one commit."""
    record_new(
        open_store(store),
        type_,
        body,
        body_file,
        title=title,
        abstract=abstract,
        tags=tags,
        agent=_agent(agent),
        scope=scope,
        source=source,
        weight=weight,
        links=link or [],
        fields=field,
        redact=redact,
        allow_secret=allow_secret,
        as_json=as_json,
    )


@app.command()
def supersede(
    old_id: Annotated[str, typer.Argument(help="The record this one replaces (id or prefix).")],
    body: BodyArg = None,
    title: TitleOpt = "",
    type_: Annotated[str | None, typer.Option("--type", help="Default: the old type.")] = None,
    abstract: AbstractOpt = "",
    tags: TagsOpt = None,
    agent: AgentOpt = None,
    source: SourceOpt = "",
    field: FieldOpt = None,
    link: LinkOpt = None,
    body_file: BodyFileOpt = None,
    redact: RedactOpt = False,
    allow_secret: AllowOpt = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Replace a record with a new one; the old one is kept, marked superseded."""
    opened = open_store(store)
    policy = secret_policy(redact, allow_secret)
    if not title.strip():
        raise UsageError("the new record needs a title: pass --title")
    old = opened.get(old_id)
    result = opened.supersede(
        old.id,
        body_text(body, body_file),
        title=title,
        type_=type_,
        abstract=abstract,
        tags=split_tags(tags) if tags else None,
        agent=_agent(agent),
        source=source,
        links=link or [],
        fields=parse_fields(field, opened, type_ or old.type),
        secrets=policy,
    )
    report_write(result, as_json, opened)


@app.command()
def forget(
    record_id: Annotated[str, typer.Argument(metavar="ID")],
    reason: Annotated[str, typer.Option("--reason", help="Why (kept in git log).")] = "",
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Remove a record from the current memory; git history keeps it."""
    opened = open_store(store)
    report_write(opened.forget(record_id, reason=reason, agent=_agent(agent)), as_json, opened)


@app.command()
def amend(
    record_id: Annotated[str, typer.Argument(metavar="ID")],
    field: FieldOpt = None,
    agent: AgentOpt = None,
    redact: RedactOpt = False,
    allow_secret: AllowOpt = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Change fields in place: --field title=..., --field tags=a,b, --field K= clears K."""
    opened = open_store(store)
    if not field:
        raise UsageError("nothing to amend: pass --field K=V (K= clears a field)")
    changes: dict[str, Any] = {}
    for item in field:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f'--field wants K=V, got "{item}"')
        changes[key.strip()] = value
    result = opened.amend(
        record_id, changes, agent=_agent(agent), secrets=secret_policy(redact, allow_secret)
    )
    report_write(result, as_json, opened)


@app.command()
def edit(
    record_id: Annotated[str, typer.Argument(metavar="ID")],
    agent: AgentOpt = None,
    store: StoreOpt = None,
) -> None:
    """Open a record in $EDITOR; validate and commit it when the editor closes."""
    opened = open_store(store)
    current = opened.get(record_id)
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    original = render(current, "full")
    with tempfile.NamedTemporaryFile(
        "w", suffix=".md", prefix=f"{current.id}-", delete=False, encoding="utf-8"
    ) as handle:
        handle.write(original)
        draft = Path(handle.name)
    code = subprocess.call(f'{editor} "{draft}"', shell=True)
    if code != 0:
        raise GitmemError(f"the editor exited with {code}; nothing was committed (draft: {draft})")
    text = read_text(draft)
    if text == original:
        draft.unlink()
        display.say(f"{current.id}: no change")
        return
    try:
        result = opened.replace_text(current.id, text, agent=_agent(agent))
    except GitmemError as exc:
        raise type(exc)(f"{exc} — your text is kept in {draft}") from exc
    draft.unlink()
    report_write(result, False, opened)


@app.command(name="import")
def import_(
    file: Annotated[str, typer.Argument(help="A JSONL export, or - for stdin.")],
    agent: AgentOpt = None,
    redact: RedactOpt = False,
    allow_secret: AllowOpt = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Import records from JSONL: all validated first, then one commit."""
    opened = open_store(store)
    text = stdin_text() if file == "-" else read_text(Path(file))
    items = list(_jsonl(text, file))
    result = opened.import_records(
        items,
        agent=_agent(agent),
        source_name="stdin" if file == "-" else Path(file).name,
        secrets=secret_policy(redact, allow_secret),
    )
    report_write(result, as_json, opened)


def _jsonl(text: str, name: str) -> Iterator[Any]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as exc:
            raise RecordInvalid(
                f"{name} line {number}: not JSON ({exc.msg}); nothing was imported"
            ) from exc


@app.command()
def commit(
    message: Annotated[str, typer.Option("--message", "-m", help="Commit subject.")] = "",
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Validate and commit record files edited by hand."""
    opened = open_store(store)
    result = opened.commit_pending(agent=_agent(agent), message=message)
    if result.commit is None and not as_json:
        display.say("nothing to commit: no record file was edited")
        return
    report_write(result, as_json, opened)
