"""The checks a pre-commit hook runs: validate (record files against the format and the
store's schemas) and guard (any file, for secrets). Each exits 1 on what it finds.

Commands register on the shared `app` of gitmem.cli.app; gitmem.cli.main imports this module.
No `from __future__ import annotations` here, as in gitmem.cli.app.
"""

import os
from pathlib import Path
from typing import Annotated

import typer

from gitmem.api import Store
from gitmem.cli import display
from gitmem.cli.app import JsonOpt, StoreOpt, app
from gitmem.cli.writeinput import read_text
from gitmem.store.config import resolve_store_path

__all__ = ["guard", "validate"]


@app.command()
def validate(
    paths: Annotated[list[Path] | None, typer.Argument(help="Record files; default: all.")] = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Check record files against the format and the store's schemas (a pre-commit hook)."""
    from gitmem.store.validate import validate_files

    root = _root_for(paths, store)
    # Not resolved: a link must be seen as one (store.validate refuses it), not as its target.
    problems = validate_files(Store.open(root), [p.absolute() for p in paths or []])
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
    start = Path(os.path.abspath(paths[0])).parent  # not resolved: the link, not its target
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists() and (candidate / "config.toml").exists():
            return candidate
    return resolve_store_path(None, os.environ)
