"""CLI commands for agents: `gitmem setup`, `gitmem context`, `gitmem mcp`.

`gitmem hook` is dispatched by __main__ before typer loads. See docs/hooks.md.

Commands register on the shared `app` of gitmem.cli, which imports this module at its end.
"""

from __future__ import annotations

from gitmem.cli import app

__all__ = ["app"]
