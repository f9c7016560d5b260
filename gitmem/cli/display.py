"""Human output for the CLI, through rich (the only module that imports it).

Listings stay one line per item, so they read well in a terminal and in an agent's context,
and grep well in both. Colour only appears on a terminal; anywhere else (an agent, a pipe)
the markup is stripped and rich is never imported, which saves every command ~40 ms.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from gitmem.store.record import Record, format_time

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from rich.console import Console

    from gitmem.recall.recall import Result
    from gitmem.store.history import Version
    from gitmem.store.store import WriteResult
    from gitmem.store.validate import Problem

__all__ = [
    "error",
    "history_table",
    "json_out",
    "problems",
    "raw",
    "recall",
    "record_table",
    "say",
    "stats",
    "status",
    "sync_lines",
    "write_result",
]

_consoles: dict[bool, Console] = {}


def _console(stderr: bool = False) -> Console:
    """rich is imported on first output: most commands print a line or two, and a command's
    start-up time is what an agent waits for."""
    if stderr not in _consoles:
        from rich.console import Console

        _consoles[stderr] = Console(stderr=stderr, highlight=False, soft_wrap=True)
    return _consoles[stderr]


_TAG = re.compile(r"(?<!\\)\[/?[a-z ]*\]")


def escape(text: str) -> str:
    return text.replace("[", r"\[")


def _print(markup: str, stderr: bool = False) -> None:
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        _console(stderr).print(markup)
    else:
        stream.write(_TAG.sub("", markup).replace(r"\[", "[") + "\n")


def say(message: str) -> None:
    _print(escape(message))


def raw(text: str) -> None:
    sys.stdout.write(text)


def error(message: str) -> None:
    _print(f"[bold red]gitmem:[/] {escape(message)}", stderr=True)


def notice(message: str) -> None:
    _print(f"[yellow]gitmem:[/] {escape(message)}", stderr=True)


@contextmanager
def progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on a terminal's stderr; nothing elsewhere."""
    if not sys.stderr.isatty():
        yield lambda done, total: None
        return
    from rich.progress import Progress

    console = _console(True)

    with Progress(console=console, transient=True) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total or None)


_STATUS = {"superseded": " [yellow]\\[superseded][/]"}  # how a hit's status shows, if at all


def hits(result: Result, explain: bool) -> None:
    if not result.hits:
        say("no memories match")
        return
    for rank, h in enumerate(result.hits, start=1):
        day = time.strftime("%Y-%m-%d", time.gmtime(h.created))
        _print(
            f"{rank:>2}. [cyan]{escape(h.id)}[/]  {escape(h.type)}  {day}  {h.score:.4f}  "
            f"{escape(h.title)}{_STATUS.get(h.status, '')}  [dim]{escape(h.path)}[/]"
        )
        if explain:
            k = f"#{h.keyword_rank}" if h.keyword_rank else "-"
            s = f"#{h.semantic_rank}" if h.semantic_rank else "-"
            bm25 = "" if h.keyword is None else f" (bm25 {h.keyword:.3f}"
            if bm25:
                bm25 += ")" if h.context is None else f", context {h.context:.3f})"
            say(
                f"    keyword {k}{bm25} · semantic {s} · prior ×{h.prior:.3f}"
                f" · fused {h.fused:.5f} · decay {h.decay:.3f} · weight {h.weight:.3f}"
            )


def recall(query: str, result: Result, *, as_json: bool, explain: bool) -> None:
    """What `gitmem recall` prints: each notice once on stderr, then the hits or their JSON.
    The full CLI and its fast path (gitmem.cli.quickrecall) both print through here."""
    from gitmem.recall.options import result_json

    for line in dict.fromkeys(result.notices):
        notice(line)
    if as_json:
        json_out(result_json(query, result))
    else:
        hits(result, explain)


def json_out(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def write_result(result: WriteResult) -> None:
    if result.commit is None:
        say(f"{result.operation}: nothing changed")
        return
    short = result.commit[:10]
    verb = {
        "record": "recorded",
        "supersede": "superseded",
        "forget": "forgot",
        "amend": "amended",
        "edit": "committed",
        "import": "imported",
    }.get(result.operation, result.operation)
    if result.operation in ("import", "edit") and len(result.records) != 1:
        say(f"{verb} {len(result.records)} records in commit {short}")
    elif result.operation == "supersede":
        new = result.records[0]
        say(f"{verb} {', '.join(new.supersedes)} with {new.id} in commit {short}")
        say(f"  {new.path}")
    else:
        r = result.record
        say(f"{verb} {r.type} {r.id} in commit {short}")
        if result.operation != "forget":
            say(f"  {r.path}")
    for kind in result.redactions:
        say(f"  redacted a {kind}")


def record_table(records: Sequence[Record]) -> None:
    if not records:
        say("no records match")
        return
    for r in records:
        mark = " [dim](superseded)[/]" if r.status == "superseded" else ""
        day = format_time(r.created)[:10]
        _print(f"[cyan]{escape(r.id)}[/]  {escape(r.type)}  {day}  {escape(r.title)}{mark}")


def history_table(versions: Sequence[Version]) -> None:
    for v in versions:
        when = v.time.strftime("%Y-%m-%d %H:%M:%SZ")
        what = ", ".join(v.changed) if v.changed else ("removed" if v.record is None else "")
        _print(
            f"{when}  [yellow]{v.commit[:10]}[/]  {escape(v.operation):<9}  "
            f"{escape(v.agent)}  {escape(what)}"
        )


def status(report: dict[str, Any]) -> None:
    say(f"store     {report['store']}")
    say(f"branch    {report['branch']} at {(report['head'] or '(no commits)')[:10]}")
    kinds = ", ".join(f"{k} {n}" for k, n in report["by_type"].items()) or "none"
    say(f"records   {report['records']} ({kinds})")
    index = report["index"]
    line = index["state"]
    if index.get("commit"):
        line += f" at {index['commit'][:10]}, {index['records']} records"
        line += f", {index['vectors']} vectors, {index['bytes'] / 1e6:.1f} MB"
    say(f"index     {line}")
    if report["model_problem"]:
        say(f"model     {report['model']} (not in use: semantic search is off)")
        say(f"          {report['model_problem']}")
    elif report.get("model_notice"):
        say(f"model     {report['model']} (not on this machine: the built-in model stands in)")
        say(f"          {report['model_notice']}")
    else:
        say(f"model     {report['model']}")
    pending = report["pending"]
    if pending:
        say(f"uncommitted edits ({len(pending)}) — check and commit them with: gitmem commit")
        for item in pending:
            say(f"  {item['state']:<9} {item['path']}")
    for problem in report.get("problems", []):
        error(problem)


def problems(found: Sequence[Problem]) -> None:
    for p in found:
        style = "red" if p.level == "error" else "yellow"
        _print(f"[{style}]{p.level}[/] {escape(p.path)}: {escape(p.message)}")
    errors = sum(p.level == "error" for p in found)
    warnings = len(found) - errors
    say(
        f"{errors} error{'s' if errors != 1 else ''}, "
        f"{warnings} warning{'s' if warnings != 1 else ''}"
    )


def sync_lines(report: dict[str, Any]) -> list[str]:
    """The human lines of the sync part of `gitmem status` and `gitmem remote show`."""
    if not report.get("remote"):
        return ["sync      no remote (add one with: gitmem remote add URL)"]
    if report.get("tracking") is None:
        return [f"sync      {report['remote']}: never fetched — run: gitmem sync"]
    last = report.get("last_sync")
    when = f"last sync {last[:16].replace('T', ' ')} UTC" if last else "no sync from here yet"
    ahead, behind = report["ahead"], report["behind"]
    return [
        f"sync      {report['remote']}: {ahead} write{'s' if ahead != 1 else ''} not pushed yet, "
        f"{behind} remote commit{'s' if behind != 1 else ''} not merged yet ({when})"
    ]


def stats(report: dict[str, Any]) -> None:
    """`gitmem stats`: rich tables on a terminal, aligned plain text anywhere else."""
    records, history = report["records"], report["history"]
    window = f" (writes since {report['since'][:10]})" if report["since"] else ""
    say(f"store     {report['store']}{window}")
    say(f"records   {records['total']} ({records['active']} active)")
    ops = ", ".join(f"{k} {n}" for k, n in history["by_operation"].items()) or "none"
    say(f"writes    {history['commits']} commits: {ops}")
    sections: list[tuple[str, list[tuple[str, int]]]] = [
        (name, list(records[f"by_{name}"].items()))
        for name in ("type", "agent", "scope", "status", "project")
    ]
    sections.append(("tag", [(tag, n) for tag, n in report["top_tags"]]))
    weeks = report["growth"][-8:]
    sections.append(("week", [(w["week"], w["added"]) for w in weeks]))
    for name, rows in sections:
        _count_table(name, rows)
    for line in sync_lines(report["sync"]):
        say(line)
    say(f"index     {report['index']['state']}")
    recall, graph, proposals = report["recall"], report["graph"], report["proposals"]
    say(f"recall    {recall['note']}; {recall['never_recalled']} active never recalled")
    say(
        f"graph     {graph['entities']} entities, {graph['blocked']} blocked, "
        f"{graph['dangling']} dangling edges"
    )
    decided = ", ".join(f"{n} {status}" for status, n in proposals["decided"].items())
    say(f"proposals {proposals['pending']} pending" + (f" ({decided} decided)" if decided else ""))


def _count_table(name: str, rows: list[tuple[str, int]]) -> None:
    if not rows:
        return
    if sys.stdout.isatty():
        from rich.table import Table

        table = Table(title=f"by {name}", title_justify="left", min_width=30)
        table.add_column(name)
        table.add_column("records", justify="right")
        for key, n in rows:
            table.add_row(key, str(n))
        _console().print(table)
        return
    width = max(len(key) for key, _ in rows)
    say(f"by {name}:")
    for key, n in rows:
        say(f"  {key:<{width}}  {n:>7}")


def capture_lines(capture: dict[str, Any]) -> list[str]:
    """`gitmem status`'s capture part: sessions waiting for distillation, the last failures."""
    waiting = capture["waiting"]
    if not capture["sessions"]:
        return []
    lines = [f"capture   {capture['records']} records from {capture['sessions']} sessions"]
    if waiting:
        lines.append(f"          {len(waiting)} waiting for distillation (gitmem distill):")
        lines += [f"            {w['session']} ({w['bytes']} bytes new)" for w in waiting]
    for failure in capture["failures"]:
        lines.append(
            f"          failed {failure['time']} {failure['session']}: {failure['reason']}"
        )
    return lines
