"""CLI commands for sync: `gitmem remote`, `gitmem clone`, `gitmem sync`. See docs/sync.md.

Commands register on the shared `app` of gitmem.cli, which imports this module at its end.
"""

from __future__ import annotations

from gitmem.cli import app

__all__ = ["app"]
