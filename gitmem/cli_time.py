"""CLI commands for time travel: `gitmem diff`.

The --as-of options live on the core commands in cli.py. See docs/time-travel.md.

Commands register on the shared `app` of gitmem.cli, which imports this module at its end.
"""

from __future__ import annotations

from gitmem.cli import app

__all__ = ["app"]
