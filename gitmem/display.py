"""Human output for the CLI, through rich (the only module that imports it).

Listings stay one line per item, so they read well in a terminal and in an agent's context,
and grep well in both; colour only appears on a terminal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gitmem.record import Record, format_time

if TYPE_CHECKING:
    from rich.console import Console

    from gitmem.store import Version, WriteResult
    from gitmem.validate import Problem

__all__ = [
    "error",
    "history_table",
    "json_out",
    "problems",
    "raw",
    "record_table",
    "say",
    "status",
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


def escape(text: str) -> str:
    return text.replace("[", r"\[")


def say(message: str) -> None:
    _console().print(escape(message))


def raw(text: str) -> None:
    _console().file.write(text)


def error(message: str) -> None:
    _console(True).print(f"[bold red]gitmem:[/] {escape(message)}")


def json_out(data: Any) -> None:
    _console().file.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


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
        _console().print(
            f"[cyan]{escape(r.id)}[/]  {escape(r.type)}  {day}  {escape(r.title)}{mark}"
        )


def history_table(versions: Sequence[Version]) -> None:
    for v in versions:
        when = v.time.strftime("%Y-%m-%d %H:%M:%SZ")
        what = ", ".join(v.changed) if v.changed else ("removed" if v.record is None else "")
        _console().print(
            f"{when}  [yellow]{v.commit[:10]}[/]  {escape(v.operation):<9}  "
            f"{escape(v.agent)}  {escape(what)}"
        )


def status(report: dict[str, Any]) -> None:
    say(f"store     {report['store']}")
    say(f"branch    {report['branch']} at {(report['head'] or '(no commits)')[:10]}")
    kinds = ", ".join(f"{k} {n}" for k, n in report["by_type"].items()) or "none"
    say(f"records   {report['records']} ({kinds}); {report['superseded']} superseded")
    for key in ("index", "model"):
        if key in report:
            say(f"{key:<9} {report[key]}")
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
        _console().print(f"[{style}]{p.level}[/] {escape(p.path)}: {escape(p.message)}")
    errors = sum(p.level == "error" for p in found)
    warnings = len(found) - errors
    say(f"{errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}")
