"""The PostToolUse hook's entity indexing, done after the hook has answered.

Indexing a watched Markdown file commits, and a commit needs pygit2 (~110-200 ms to import
here) on top of the hook's start: more than the hook's 150 ms budget for a watched file. So
the hook (gitmem.hooks.events) starts `python -m gitmem.hooks.indexlater ROOT CWD AGENT
PATH...` detached (its own session, no terminal, output to /dev/null, a lower priority; with
os.posix_spawn, as the background catch-up of gitmem.cli.background) and returns. The child
runs the one entity indexer (gitmem.agents.entities.index_written) under the store's write
lock, so several of them, or a `gitmem record` at the same time, serialise; files it skips go
to the hook log.
`GITMEM_BACKGROUND_INDEX=off` makes the hook index in its own process instead (the tests do).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Index the files; always 0 (what went wrong goes to the hook log)."""
    from gitmem.agents.entities import index_written
    from gitmem.agents.settings import hook_settings
    from gitmem.hooks.events import log
    from gitmem.store.store import Store

    root, cwd, agent, *paths = argv
    with contextlib.suppress(OSError):
        os.nice(10)  # the agent's own work comes first
    try:
        settings, _ = hook_settings(root)
        store = Store.open(root)
        report = index_written(store, Path(cwd), [Path(p) for p in paths], settings, agent=agent)
    except Exception as exc:  # a background process: nobody to tell but the log
        log(root, f"post-tool-use: indexing {', '.join(paths)} failed: {exc}")
        return 0
    for skipped in (f for f in report.files if f.action == "skipped"):
        log(root, f"post-tool-use: {skipped.path} not indexed: {skipped.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
