"""The `gitmem` command line: a thin layer over the Python API.

The only module that imports typer. It reads the environment, argv and stdin, prints, and
maps GitmemError to exit codes: 1 refused, 2 usage, 3 bug, 130 interrupted (gitmem.__main__
adds 120 and 141 for output that cannot be written).

No `from __future__ import annotations` here: typer reads every command's annotations at
each start, and evaluated ones cost it a third of the time that strings do.
"""

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from gitmem import answers
from gitmem.api import Store
from gitmem.cli import display
from gitmem.cli.views import LEVELS, Level, render
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
from gitmem.errors import (
    GitmemError,
    RecordInvalid,
    UsageError,
)
from gitmem.store.config import resolve_store_path
from gitmem.store.location import model_cache
from gitmem.store.record import Record

__all__ = ["app", "open_store"]

app = typer.Typer(
    name="gitmem",
    help="Git-native long-term memory for AI coding agents.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="Store directory. Default: $GITMEM_STORE, else $XDG_DATA_HOME/gitmem/store.",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (schemas in docs/cli.md).")]
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
AsOfOpt = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        metavar="WHEN",
        help="As the memory stood at WHEN: 2026-04-01 (its end), 2026-04-01T09:30+02:00, "
        '"3 days ago", or a commit id / ref (docs/time-travel.md).',
    ),
]


def open_store(store: str | None) -> Store:
    opened = Store.open(resolve_store_path(store, os.environ))
    opened.model_cache = model_cache(os.environ)
    return opened


def _agent(flag: str | None) -> str:
    return (flag or os.environ.get("GITMEM_AGENT", "")).strip()


def _usage_exit(message: str) -> NoReturn:
    raise UsageError(message)


def _notices(notices: Sequence[str], said: set[str]) -> None:
    for notice in notices:
        if notice not in said:
            said.add(notice)
            display.notice(notice)


# --- store --------------------------------------------------------------------------------


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


# --- writes -------------------------------------------------------------------------------


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
    report_write(result, as_json)


@app.command()
def forget(
    record_id: Annotated[str, typer.Argument(metavar="ID")],
    reason: Annotated[str, typer.Option("--reason", help="Why (kept in git log).")] = "",
    agent: AgentOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Remove a record from the current memory; git history keeps it."""
    report_write(open_store(store).forget(record_id, reason=reason, agent=_agent(agent)), as_json)


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
    report_write(result, as_json)


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
    report_write(result, False)


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
    report_write(result, as_json)


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
    result = open_store(store).commit_pending(agent=_agent(agent), message=message)
    if result.commit is None and not as_json:
        display.say("nothing to commit: no record file was edited")
        return
    report_write(result, as_json)


# --- reads --------------------------------------------------------------------------------


@app.command()
def read(
    record_id: Annotated[str, typer.Argument(metavar="ID")],
    level: Annotated[
        str, typer.Option("--level", "-l", help="abstract | outline | full.")
    ] = "full",
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Show a record: its abstract, an outline, or the whole file."""
    if level not in LEVELS:
        _usage_exit(f'--level must be one of {", ".join(LEVELS)}, not "{level}"')
    found = open_store(store).get(record_id, as_of=as_of)
    if as_json:
        display.json_out(answers.record_json(found))
        return
    chosen: Level = level
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
        _notices(travel.notes(travel.moment(as_of)), set())
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
    from gitmem.status import store_status

    report = store_status(open_store(store))
    if as_json:
        display.json_out(report)
        return
    display.status(report)
    for line in display.sync_lines(report["sync"]):
        display.say(line)


# --- checks -------------------------------------------------------------------------------


@app.command()
def validate(
    paths: Annotated[list[Path] | None, typer.Argument(help="Record files; default: all.")] = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Check record files against the format and the store's schemas (a pre-commit hook)."""
    from gitmem.store.validate import validate_files

    root = _root_for(paths, store)
    problems = validate_files(Store.open(root), [p.resolve() for p in paths or []])
    if as_json:
        display.json_out(
            [{"path": p.path, "problem": p.message, "level": p.level} for p in problems]
        )
    else:
        display.problems(problems)
    if any(p.level == "error" for p in problems):
        raise typer.Exit(1)


@app.command()
def guard(
    paths: Annotated[list[Path], typer.Argument(help="Files to scan for secrets.")],
) -> None:
    """Scan files for credentials; exit 1 if any is found (a pre-commit hook)."""
    from gitmem.store import guard as secret_guard

    found = 0
    for path in paths:
        text = read_text(path)
        for finding in secret_guard.scan(text):
            found += 1
            display.error(secret_guard.describe(finding, f"{path}: "))
    if found:
        raise typer.Exit(1)


def _root_for(paths: list[Path] | None, store: str | None) -> Path:
    if store or not paths:
        return resolve_store_path(store, os.environ)
    start = paths[0].resolve().parent
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists() and (candidate / "config.toml").exists():
            return candidate
    return resolve_store_path(None, os.environ)
