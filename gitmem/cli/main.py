"""The full CLI as a process sees it: the app with every command registered, and the one place
where what escapes a command becomes an exit code.

The command modules register on gitmem.cli.app's `app` when imported; this module imports them
all, so the app (and the command modules) never import upwards.
"""

from collections.abc import Sequence

import typer

from gitmem.cli import display
from gitmem.cli.app import app

# The command modules register on `app` when imported, in this order: the order of
# `gitmem --help` and docs/cli.md.
# isort: off
from gitmem.cli import writes, reads, checks, search, agents, remote, travel, purge  # noqa: F401
from gitmem.cli import capture, insight  # noqa: F401
from gitmem.cli import graph  # noqa: F401  (issue 19: entity, graph)
from gitmem.cli import coord, tasks, handoff  # noqa: F401  (handoff joins graph's group)
from gitmem.cli import consolidate  # noqa: F401

# isort: on
from gitmem.errors import (
    EXIT_BUG,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    bug_message,
    failure,
)

__all__ = ["app", "run"]


def run(argv: Sequence[str]) -> int:
    """Run the CLI; return the exit code instead of exiting.

    typer's standalone mode prints usage errors and exits 2 itself; everything else that
    escapes a command is translated here, and only here. Output that cannot be written is
    gitmem.__main__'s to report: its streams raise what no `except` here meets.
    """
    try:
        command = typer.main.get_command(app)
        command.main(args=list(argv), prog_name="gitmem", standalone_mode=True)
    except SystemExit as exc:
        if _raised_from(exc, KeyboardInterrupt):  # typer makes it a silent exit 130
            display.error("interrupted")
            return EXIT_INTERRUPTED
        broken = _raised_from(exc, BrokenPipeError)
        if broken is not None:  # typer makes any EPIPE a silent exit 1; not stdout's (above)
            display.error(bug_message(broken))
            return EXIT_BUG
        code = exc.code
        return code if isinstance(code, int) else (EXIT_OK if code is None else EXIT_USAGE)
    except KeyboardInterrupt:
        display.error("interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:  # refused, the machine refused, or a bug (exit 3): errors.failure
        message, code = failure(exc)
        display.error(message)
        return code
    return EXIT_OK


def _raised_from(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The exception of `kind` that `exc` was raised from or while handling, if any."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, kind):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None
