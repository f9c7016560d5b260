"""`gitmem graph handoff` without the full CLI, when it understands the command line exactly.

A new session asks for its handoff once, at its start, inside the 400 ms a whole process may
take (docs/benchmarks.md, "Coordination"); typer and the command modules alone are ~250 ms of
that here. So `python -m gitmem graph ...` comes here first (gitmem/__main__.py, QUICK_PATHS):
`handoff` with `--hours N` (plain digits, optionally a fraction), `--agent A`, `--store S`
and `--json`, in any order, is answered with the same functions, the same output and the same
exit codes as gitmem.cli.handoff's command; anything else (another graph command, --help, a
spelling this parser does not know) goes to the full CLI, nothing read or printed.
tests/test_coord.py runs both ways and compares.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from gitmem.cli import display
from gitmem.cli.argsplit import split
from gitmem.errors import EXIT_OK, failure

__all__ = ["run"]

_VALUED = {"--hours": "hours", "--agent": "agent", "--store": "store"}
_FLAGS = {"--json": "json"}
_HOURS = re.compile(r"[0-9]{1,6}(?:\.[0-9]{1,6})?")
_COMPLETION = "_GITMEM_COMPLETE"


def run(argv: Sequence[str], env: Mapping[str, str]) -> int | None:
    """Answer `gitmem graph ARGV`: the exit code, or None for the full CLI."""
    parts = split(argv, _VALUED, _FLAGS, ())
    if parts is None or parts.positional != ["handoff"] or _COMPLETION in env:
        return None
    hours = parts.values.get("hours", "24")
    if not _HOURS.fullmatch(hours):
        return None  # typer's to refuse or read
    try:
        from gitmem.coord.coord import Coord
        from gitmem.coord.handoff import render
        from gitmem.coord.presence import device_name
        from gitmem.store.config import resolve_store_path
        from gitmem.store.store import Store

        store = Store.open(resolve_store_path(parts.values.get("store"), env))
        agent = (parts.values.get("agent") or env.get("GITMEM_AGENT", "")).strip()
        data = Coord(store, agent, device_name(env)).handoff(hours=float(hours))
        if "json" in parts.flags:
            display.json_out(data)
        else:
            display.raw(render(data))
    except Exception as exc:  # as gitmem.cli.main.run
        message, code = failure(exc)
        display.error(message)
        return code
    return EXIT_OK
