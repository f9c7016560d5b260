"""The search commands: recall (one query or a batch), rebuild, doctor, the model and eval.

Commands register on the shared `app` of gitmem.cli.app; gitmem.cli.main imports this module.
"""

import json
import os
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from gitmem.cli import display
from gitmem.cli.app import AsOfOpt, JsonOpt, StoreOpt, app, open_store, show_notices
from gitmem.cli.writeinput import read_text, split_tags, stdin_text
from gitmem.errors import UsageError
from gitmem.store.config import DEFAULT_MODEL

__all__ = ["eval_", "recall"]


@app.command()
def recall(
    query: Annotated[str | None, typer.Argument(help="What to look for, in any words.")] = None,
    mode: Annotated[str, typer.Option("--mode", help="hybrid | keyword | semantic.")] = "hybrid",
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=1000)] = 10,
    type_: Annotated[list[str] | None, typer.Option("--type", help="Only these types.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Has this tag.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Written by.")] = None,
    scope: Annotated[str | None, typer.Option("--scope")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Created at or after.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Created at or before.")] = None,
    include_superseded: Annotated[
        bool, typer.Option("--include-superseded", help="Also superseded records.")
    ] = False,
    now: Annotated[str | None, typer.Option("--now", help="Reference time for decay.")] = None,
    fusion: Annotated[str, typer.Option("--fusion", help="rrf | linear.")] = "",
    explain: Annotated[bool, typer.Option("--explain", help="Show how each hit scored.")] = False,
    batch: Annotated[
        Path | None, typer.Option("--batch", help="JSONL of queries in; JSONL results out.")
    ] = None,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Find memories: a short ranked list (open one with `gitmem read ID`)."""
    from gitmem.recall.options import recall_options, result_json

    opened = open_store(store)
    base = recall_options(  # the types are checked by Store.recall, which knows the index
        dict(
            mode=mode,
            limit=limit,
            type=type_ or [],
            tag=split_tags(tag),
            agent=agent,
            scope=scope,
            since=since,
            until=until,
            include_superseded=include_superseded,
            now=now,
            fusion=fusion,
        ),
        os.environ,
    )
    if batch is not None:
        if query is not None:
            raise UsageError("--batch reads its queries from the file; drop the query argument")
        if explain:
            raise UsageError("--batch writes JSON lines, which carry what --explain shows; drop it")
        text = read_text(batch) if str(batch) != "-" else stdin_text()
        types = None if as_of else opened.record_types()  # a past type is not checked
        asked = _batch_lines(text, str(batch), _batch_defaults(base), types)  # all, before any
        said: set[str] = set()
        for line, options in asked:
            result = opened.recall(
                line, options=options, limit=options.limit, mode=options.mode, as_of=as_of
            )
            show_notices(result.notices, said)
            display.raw(json.dumps(result_json(line, result), ensure_ascii=False) + "\n")
        return
    if query is None or not query.strip():
        raise UsageError("recall needs a query (or --batch FILE)")
    if explain:
        base = replace(base, explain=True)
    result = opened.recall(query, options=base, limit=base.limit, mode=base.mode, as_of=as_of)
    display.recall(query, result, as_json=as_json, explain=explain)


def _batch_lines(
    text: str, name: str, defaults: dict[str, Any], types: Collection[str] | None
) -> list[tuple[str, Any]]:
    """Each line's query and options, every line checked before any is answered: a bad line
    is refused with its number and nothing is written."""
    from gitmem.recall.options import recall_options

    asked = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{name} line {number}"
        try:
            line = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{where}: not JSON ({exc.msg}); nothing was searched") from exc
        if not isinstance(line, dict):
            raise UsageError(f'{where}: each line is an object, {{"query": "...", ...}}')
        query = line.get("query")
        if not isinstance(query, str) or not query.strip():
            raise UsageError(f'{where}: needs a "query" with some text in it')
        try:
            options = recall_options({**defaults, **line}, os.environ, types=types)
        except UsageError as exc:
            raise UsageError(f"{where}: {exc}") from exc
        asked.append((query, options))
    return asked


def _batch_defaults(options: Any) -> dict[str, Any]:
    flt = options.filter
    return dict(
        mode=options.mode,
        limit=options.limit,
        type=list(flt.types),
        tag=list(flt.tags),
        agent=flt.agent or None,
        scope=flt.scope or None,
        fusion=options.fusion,
        include_superseded=flt.include_superseded,
        since=flt.since,
        until=flt.until,
        now=options.now,
    )


_WAIT_GRAPH_HELP = (
    "With a large index (200k vectors or more, the scale extra installed): build its vector"
    " graph before returning instead of in the background; exit 1 if it could not be built."
)


@app.command()
def rebuild(
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    wait_graph: Annotated[bool, typer.Option("--wait-graph", help=_WAIT_GRAPH_HELP)] = False,
) -> None:
    """Build the search index again from HEAD (it is a cache: this loses nothing).

    A large index's vector graph is then built by a detached low-priority process ("graph":
    "building" in --json; "failed", with "graph_failure", when its last attempt failed);
    recalls rank exactly until it is saved."""
    opened = open_store(store)
    if opened.model_problem:
        display.notice(f"building without semantic search: {opened.model_problem}")
    with display.progress("indexing records") as advance:
        stats = opened.rebuild(progress=advance, wait_graph=wait_graph)
    failed = stats["graph_failure"]
    if failed is not None:
        display.notice(
            f"the vector graph could not be built: {failed['message']}; recalls rank exactly"
            " (gitmem doctor says when it is tried again)"
        )
    if as_json:
        display.json_out(stats)
    if failed is not None and wait_graph:
        raise typer.Exit(1)
    if as_json:
        return
    display.say(
        f"indexed {stats['records']} records at {(stats['commit'] or '-')[:10]}"
        f" ({stats['vectors']} vectors, {stats['bytes'] / 1e6:.1f} MB)"
    )
    if stats["graph"] == "building":
        display.say(
            "building the vector graph in the background; recalls rank exactly until it is"
            " saved (gitmem rebuild --wait-graph waits for it)"
        )


@app.command()
def doctor(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Check the store, the index and the model; say what is wrong and how to fix it."""
    from gitmem.insight.status import diagnose

    report = diagnose(open_store(store))
    if as_json:
        display.json_out(report)
    else:
        display.status(report)
    if report["problems"]:
        raise typer.Exit(1)


model_app = typer.Typer(help="Embedding models for semantic search.", no_args_is_help=True)
app.add_typer(model_app, name="model")


@model_app.command("build")
def model_build(
    source: Annotated[Path, typer.Option("--from", help="A sentence-transformers model dir.")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the static model.")],
    dims: Annotated[int, typer.Option("--dims", min=8, max=4096)] = 256,
) -> None:
    """Distil a static model from a local sentence-transformers model (no network)."""
    from gitmem.index import modelbuild

    info = modelbuild.distill(source, out, dims=dims)
    display.say(f"built {info.name}: {info.dim} dimensions at {info.path}")
    display.say(f'use it with index.model = "{info.path}" in the store\'s config.toml')


@model_app.command("fetch")
def model_fetch(
    spec: Annotated[str | None, typer.Argument(help="Hub id; default: the store's model.")] = None,
    store: StoreOpt = None,
) -> None:
    """Download the embedding model once (the only command that uses the network)."""
    from gitmem.index import embedding

    name = spec or open_store(store).config.model
    loaded = embedding.load(name, offline=False)
    if loaded is None:
        raise UsageError(f'"{name}" names no model')
    display.say(f"{name}: {loaded.info.dim} dimensions, cached at {loaded.info.path}")


@app.command(name="eval")
def eval_(
    dataset: Annotated[Path, typer.Argument(help="A folder with records.jsonl, queries.jsonl.")],
    model: Annotated[
        str,
        typer.Option(
            "--model",
            help="A model directory or name (as index.model takes it); none: keyword only.",
        ),
    ] = DEFAULT_MODEL,
    output: Annotated[Path | None, typer.Option("--json", help="Write the figures here.")] = None,
    resamples: Annotated[int, typer.Option("--resamples", min=100)] = 1000,
) -> None:
    """Measure recall quality on a dataset: R@k, MRR, NDCG@10 by category and mode."""
    from gitmem.evaluate import evaluate, format_report

    report = evaluate(dataset, model=model, resamples=resamples, progress=display.say)
    display.raw(format_report(report))
    if output is not None:
        output.write_text(json.dumps(report, indent=2) + "\n")
