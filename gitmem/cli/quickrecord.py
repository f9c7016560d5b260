"""`gitmem record` without the full CLI, when it understands the command line exactly.

`gitmem record` is one process per memory, with a budget of 0.25 s (DESIGN.md), and the full
CLI spends a good part of it on what a write never uses: typer and the command modules
(~45-90 ms), the search layer (gitmem.api, gitmem.index.embedding). So `python -m gitmem record`
comes here first (gitmem/__main__.py, QUICK_PATHS), and this module:

- decides from the arguments alone, before anything is read or written, whether it parses
  them exactly as typer would: the options of `gitmem record` as `--opt VALUE`,
  `--opt=VALUE` or `-t VALUE`, flags, a type and an optional body, `--` before a body that
  starts with a dash. Anything else is the full CLI's, which answers as it always has:
  --help, an option or spelling this parser does not know, a value starting with a dash, a
  weight written other than in plain digits or outside 0-10, a body file that is not a
  readable regular file (typer refuses some of those itself), shell completion;
- otherwise opens the store and runs gitmem.cli.app's own record command body
  (gitmem.cli.writeinput.record_new: the checks in the order a user meets them, the same
  Store.record with its validation, secret guard and single commit, the same report). From then
  on the command is this module's: every error is reported here with the message and exit
  code gitmem.cli.app.run gives it, never handed to the full CLI to run again, so nothing is
  written twice. An interrupt, and output that cannot be written, are gitmem.__main__'s, as
  for the full CLI.

tests/test_quickrecord.py runs a matrix of options, inputs and errors both ways comparing
output, exit codes and the commit made.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gitmem.cli import display
from gitmem.cli.argsplit import split
from gitmem.cli.writeinput import record_new
from gitmem.errors import EXIT_OK, failure
from gitmem.store.config import resolve_store_path
from gitmem.store.store import Store

__all__ = ["Request", "parse", "run"]

# Options of `gitmem record` (gitmem/cli/app.py) this parser takes, by the name the CLI gives them.
_VALUED = {
    "--title": "title",
    "-t": "title",
    "--abstract": "abstract",
    "-a": "abstract",
    "--tags": "tags",
    "--scope": "scope",
    "--agent": "agent",
    "--source": "source",
    "--field": "field",
    "-f": "field",
    "--link": "link",
    "--body-file": "body_file",
    "--weight": "weight",
    "--store": "store",
}
_REPEATED = ("tags", "field", "link")
_FLAGS = {"--redact": "redact", "--allow-secret": "allow_secret", "--json": "json"}
_WEIGHT = re.compile(r"[0-9]{1,6}(?:\.[0-9]{1,6})?")
_COMPLETION = "_GITMEM_COMPLETE"  # set, typer answers shell completion instead of the command


@dataclass(frozen=True)
class Request:
    """A record as the command line asked for it."""

    type: str
    body: str | None
    values: Mapping[str, str]  # the last of each single-valued option
    tags: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    flags: frozenset[str] = frozenset()


def parse(argv: Sequence[str]) -> Request | None:
    """The request, or None where typer might read `argv` otherwise or refuse it (the full CLI
    then does both itself). Stricter than typer on purpose: `-tTitle`, `--title -x`, a weight
    of `1e0` are all left to it."""
    parts = split(argv, _VALUED, _FLAGS, _REPEATED)
    if parts is None:
        return None  # --help, a typo, -tTitle, --json=yes, a value starting with a dash
    values, repeated, positional = parts.values, parts.repeated, parts.positional
    if not 1 <= len(positional) <= 2:
        return None
    weight = values.get("weight")
    if weight is not None and not (_WEIGHT.fullmatch(weight) and float(weight) <= 10):
        return None
    return Request(
        positional[0],
        positional[1] if len(positional) == 2 else None,
        values,
        tuple(repeated["tags"]),
        tuple(repeated["field"]),
        tuple(repeated["link"]),
        parts.flags,
    )


def run(argv: Sequence[str], env: Mapping[str, str]) -> int | None:
    """Answer `gitmem record ARGV`: the exit code, or None when the full CLI must answer (then
    nothing has been read, written or printed)."""
    request = parse(argv)
    if request is None or not _answerable(request, env):
        return None
    # From here on the command is this module's, whatever happens.
    try:
        _record(request, env)
    except Exception as exc:  # as gitmem.cli.app.run
        message, code = failure(exc)
        display.error(message)
        return code
    return EXIT_OK


def _answerable(request: Request, env: Mapping[str, str]) -> bool:
    """What typer checks, or does instead, before the command runs: left to it."""
    if _COMPLETION in env or sys.stdin is None:
        return False
    body_file = request.values.get("body_file")
    return body_file is None or _readable_file(body_file)


def _readable_file(path: str) -> bool:
    """typer refuses a --body-file that is a directory or unreadable, and gitmem.cli.app fails on
    one that is not there in several ways: only a readable regular file is taken here."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) and os.access(path, os.R_OK)


def _record(request: Request, env: Mapping[str, str]) -> None:
    """gitmem.cli.app's record command, in its order."""
    values = request.values
    body_file = values.get("body_file")
    record_new(
        Store.open(resolve_store_path(values.get("store"), env)),
        request.type,
        request.body,
        None if body_file is None else Path(body_file),
        title=values.get("title", ""),
        abstract=values.get("abstract", ""),
        tags=list(request.tags),
        agent=(values.get("agent") or env.get("GITMEM_AGENT", "")).strip(),
        scope=values.get("scope", "shared"),
        source=values.get("source", ""),
        weight=float(values.get("weight", "1.0")),
        links=list(request.links),
        fields=list(request.fields),
        redact="redact" in request.flags,
        allow_secret="allow_secret" in request.flags,
        as_json="json" in request.flags,
    )
