"""The guide that tells an agent when to recall and when to record: Claude Code's gitmem skill
(a file wholly gitmem's), or a marked section of Codex's AGENTS.md (the rest is the user's)."""

from __future__ import annotations

from pathlib import Path

from gitmem.agents.hostfiles import read, strip_block
from gitmem.errors import GitmemError

__all__ = ["GUIDE", "guide_file", "has_guide"]

MD_BEGIN = "<!-- gitmem:begin (managed by `gitmem setup`) -->"
MD_END = "<!-- gitmem:end -->"

GUIDE = """\
gitmem is this machine's long-term memory: a git repository of short Markdown records shared
by every agent session and synced between devices.

When to recall (`recall` MCP tool, or `gitmem recall "words"`):
- before starting a task, for decisions, conventions and lessons about the code you touch;
- when something fails in a way that might have happened before.
The session starts with a block of the most important memories; each line names a record id:
open one with `read` (or `gitmem read ID`).

When to record (`record` MCP tool, or `gitmem record TYPE --title ... "body"`):
- a decision and its reason (decision), a convention (pattern), a fact worth not
  rediscovering (fact), a lesson learned the hard way (lesson), a preference (preference);
- one idea per record, a clear title, a one-line abstract; never secrets (they are refused).
When a memory is wrong or outdated, `supersede` it (history keeps the old one); `forget` only
what should never have been written.
"""

SKILL = f"""---
name: gitmem
description: Long-term memory shared across sessions and devices. Use it to recall decisions, \
conventions and lessons before working, and to record new ones.
---
{MD_BEGIN}
# gitmem memory

{GUIDE}{MD_END}
"""


def guide_file(path: Path, host: str, add: bool) -> str | None:
    """The guide file's new text, with the guide (`add`) or without it; None: no file."""
    old = read(path)
    if host == "claude-code":  # the skill file is wholly ours
        if old is not None and MD_BEGIN not in old:
            raise GitmemError(f"{path} exists and is not gitmem's; move it and run setup again")
        return SKILL if add else None
    text = strip_block(old or "", MD_BEGIN, MD_END)
    if add:
        section = f"{MD_BEGIN}\n## Memory (gitmem)\n\n{GUIDE}{MD_END}\n"
        text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + section
    if old is None and not text.strip():
        return None
    return text if text.strip() else None


def has_guide(path: Path) -> bool:
    return MD_BEGIN in (read(path) or "")
