"""The capture commands: distill (archived sessions into records) and trace (a captured
record back to its transcript messages); docs/capture.md.

Commands register on the shared `app` of gitmem.cli.app; gitmem.cli.main imports this module.
No `from __future__ import annotations` here, as in gitmem.cli.app.
"""

import contextlib
import os
import time
from typing import Annotated

import typer

from gitmem.capture.distill import DistillReport, SpanReport
from gitmem.capture.report import distill_json, trace_json
from gitmem.cli import display
from gitmem.cli.app import JsonOpt, StoreOpt, app, open_store

__all__ = ["distill", "trace"]


def _span_line(span: SpanReport, dry_run: bool) -> str:
    head = f"session {span.session} lines {span.lines}: "
    if span.problem:
        return head + f"failed, kept for the next try — {span.problem}"
    verb = "would write" if dry_run else "wrote"
    said = f"{verb} {len(span.written)}"
    if span.superseded:
        said += f" (superseding {', '.join(span.superseded)})"
    if span.duplicates:
        said += f", {span.duplicates} duplicate{'s' * (span.duplicates != 1)} left out"
    if span.dropped:
        said += f", dropped: {'; '.join(span.dropped)}"
    if span.commit:
        said += f" in {span.commit[:10]}"
    return head + said


def _say_report(report: DistillReport, dry_run: bool, stamp: bool, sweep: bool) -> None:
    prefix = time.strftime("%Y-%m-%dT%H:%M:%SZ distill: ", time.gmtime()) if stamp else ""
    for span in report.spans:
        display.say(prefix + _span_line(span, dry_run))
    for note in report.notes:
        display.say(prefix + note)
    if not stamp:  # a turn's end that waits for more is not worth a line in hooks.log
        for note in report.waiting:
            display.say(note)
    if not report.spans and not report.notes and not report.waiting and not stamp:
        if sweep:
            display.say(
                "nothing due: no session has a retry due, spans left over, or has gone quiet "
                '("gitmem distill" takes every waiting session now)'
            )
        else:
            display.say("nothing to distill: every archived session is distilled up to its end")


@app.command()
def distill(
    session: Annotated[
        str | None, typer.Option("--session", help="Only this session (default: all waiting).")
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="From the start of the transcript, not the watermark (the sessions asked for: "
            "never those --sweep takes).",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Ask the distiller, write nothing, move nothing.")
    ] = False,
    sweep: Annotated[
        bool,
        typer.Option(
            "--sweep",
            help="Only the sessions whose turn has come (a failed span due for a retry, spans "
            "left by an earlier run, a session gone quiet), after --session if given.",
        ),
    ] = False,
    trigger: Annotated[str, typer.Option("--trigger", hidden=True)] = "",
    background: Annotated[bool, typer.Option("--background", hidden=True)] = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Turn archived session transcripts into records, as the hooks do when a session ends."""
    if background:
        with contextlib.suppress(OSError):
            os.nice(10)  # the agent's own work comes first
    report = open_store(store).distill(
        dict(os.environ), session, force=force, dry_run=dry_run, trigger=trigger, sweep=sweep
    )
    if as_json:
        display.json_out(distill_json(report))
        return
    _say_report(report, dry_run, background, sweep)


@app.command()
def trace(
    record_id: Annotated[str, typer.Argument(metavar="ID")],
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """The transcript messages a captured record came from (redacted as archived)."""
    found = open_store(store).trace(record_id)
    if as_json:
        display.json_out(trace_json(found))
        return
    if found.problem:
        display.say(found.problem)
        return
    display.say(f"{found.record}: session {found.session}, lines {found.first}-{found.last}")
    for message in found.messages:
        display.raw(f"\n[{message.line}] {message.role}:\n{message.text}\n")
