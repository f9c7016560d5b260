"""The commands that show the memory as a whole: stats (a terminal or JSON) and report (HTML).

Commands register on the shared `app` of gitmem.cli.app; gitmem.cli.main imports this module.
No `from __future__ import annotations` here, as in gitmem.cli.app.
"""

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from gitmem.cli import display
from gitmem.cli.app import JsonOpt, StoreOpt, app, open_store
from gitmem.errors import UsageError

__all__ = ["report", "stats"]

SinceOpt = Annotated[
    str | None,
    typer.Option("--since", help="Only what was written from then on: 2026-03-01, 30d, 2w."),
]


def _since(text: str | None) -> Any:
    from gitmem.recall.timeparse import parse_moment

    return None if text is None else parse_moment(text)


@app.command()
def stats(since: SinceOpt = None, as_json: JsonOpt = False, store: StoreOpt = None) -> None:
    """Counts by type, agent, scope, project and status; growth per week; top tags; writes by
    kind; sync and index health."""
    from gitmem.insight.stats import store_stats

    moment = _since(since)
    answer = store_stats(open_store(store), moment)
    if as_json:
        display.json_out(answer)
    else:
        display.stats(answer)


@app.command()
def report(
    html: Annotated[
        Path, typer.Option("--html", metavar="OUT.html", help="The file to write (replaced).")
    ],
    since: SinceOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Write a self-contained HTML report (no network; opens from disk in any browser):
    growth by type and agent, decisions and what they replaced, sessions, sync, index."""
    from gitmem.atomic import replace_file
    from gitmem.insight.report import render_report

    moment = _since(since)
    opened = open_store(store)
    out = Path(os.path.abspath(html))
    if out.is_dir():
        raise UsageError(f"{html} is a directory; name the file to write, e.g. {html}/report.html")
    if not out.parent.is_dir():
        raise UsageError(f"{out.parent} does not exist; create it or write the report elsewhere")
    root = Path(os.path.abspath(opened.root))
    if out == root or root in out.parents:
        raise UsageError(
            f"{html} is inside the store, where it would be an untracked file; "
            "write the report outside it (e.g. --html /tmp/gitmem-report.html)"
        )
    page, numbers = render_report(opened, moment)
    replace_file(out, page)
    if as_json:
        display.json_out({"path": str(out), "bytes": len(page.encode()), "stats": numbers})
    else:
        display.say(f"wrote {out} ({len(page.encode()) / 1e3:.0f} kB); open it in a browser")
