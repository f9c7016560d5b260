"""The `gitmem` command line's shared parts: the typer app that every command module registers
its commands on (gitmem.cli.main imports them all), the options most commands take, and how a
command opens its store.

The CLI is a thin layer over the Python API: it reads the environment, argv and stdin and
prints; gitmem.cli.main maps what escapes a command to exit codes: 1 refused, 2 usage, 3 bug,
130 interrupted (gitmem.__main__ adds 120 and 141 for output that cannot be written).

No `from __future__ import annotations` here nor in the command modules: typer reads every
command's annotations at each start, and evaluated ones cost it a third of the time that
strings do.
"""

import os
from collections.abc import Sequence
from typing import Annotated

import typer

from gitmem.api import Store
from gitmem.cli import display
from gitmem.store.config import resolve_store_path
from gitmem.store.location import model_cache

__all__ = ["AsOfOpt", "JsonOpt", "StoreOpt", "app", "open_store", "show_notices"]

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
AsOfOpt = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        metavar="WHEN",
        help="As the memory stood at WHEN: 2026-04-01 (its end), 2026-04-01T09:30+02:00, "
        '"3 days ago", or a commit id / ref (docs/time-travel.md).',
    ),
]


def _version(value: bool) -> None:
    if value:
        from gitmem import __version__

        display.say(f"gitmem {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_version, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Git-native long-term memory for AI coding agents."""


def open_store(store: str | None) -> Store:
    opened = Store.open(resolve_store_path(store, os.environ))
    opened.model_cache = model_cache(os.environ)
    return opened


def show_notices(notices: Sequence[str], said: set[str]) -> None:
    """Say each notice not in `said` yet (a batch of recalls says each once)."""
    for notice in notices:
        if notice not in said:
            said.add(notice)
            display.notice(notice)
