"""A process started detached: its own session, no terminal, output to a file or /dev/null.

The one place gitmem starts a process it does not wait for: the index catch-up after a write
(gitmem.cli.background), and from the hooks (gitmem.hooks.events) the indexer of a written
Markdown file, the push after a session's writes and the distillation.
With os.posix_spawn rather than subprocess: importing subprocess costs a `gitmem record`
process ~6 ms of its 250 ms budget, and a hook ~10 ms of its 150. The descriptors Python and
libgit2 open are close-on-exec, so the child holds none of the parent's files (or locks).
Standard library only, at module level and below (a light module: docs/architecture.md).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's import would cost the hook path ~10 ms
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["start_detached"]


def start_detached(args: Sequence[str], env: Mapping[str, str], output: str = os.devnull) -> bool:
    """Start `args` (args[0] an executable path) in a new session with stdin from /dev/null
    and stdout and stderr appended to `output`; whether it started. Never raises: what starts
    it has done its own work and must not fail by this."""
    try:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, output, flags, 0o644),
            (os.POSIX_SPAWN_DUP2, 1, 2),
        ]
        os.posix_spawn(args[0], list(args), dict(env), file_actions=actions, setsid=True)
    except Exception:
        return False
    return True
