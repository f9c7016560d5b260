"""The agent hosts' settings files: add gitmem's hooks, MCP server and guide; take them out.

Claude Code
- hooks: `~/.claude/settings.json` (user) or `<project>/.claude/settings.json` (project);
- MCP server: `~/.claude.json` `mcpServers` (user) or `<project>/.mcp.json` (project);
- guide: a skill, `~/.claude/skills/gitmem/SKILL.md` (or under `<project>/.claude/`).
Codex
- hooks: `~/.codex/hooks.json` (or `<project>/.codex/hooks.json`);
- MCP server: `[mcp_servers.gitmem]` in `~/.codex/config.toml` (or `<project>/.codex/`);
- guide: a marked section of `~/.codex/AGENTS.md` (or `<project>/AGENTS.md`).

Every change is a merge: gitmem's entries are recognised by their command (`... gitmem ...
hook EVENT --host HOST`), by the `gitmem` server name, or by marker lines, and nothing else in
a file is touched. A file is rewritten only when its content changes, after copying the old
one to `<file>.gitmem-backup`. Uninstall removes exactly those entries. Paths come from the
caller (the CLI reads HOME and the current directory). Each kind of entry has its module:
gitmem.agents.hosthooks, hostmcp and hostguide; hostfiles reads and writes the files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gitmem.agents.hostfiles import BACKUP_SUFFIX, Change, write
from gitmem.agents.hostguide import guide_file, has_guide
from gitmem.agents.hosthooks import EVENTS, hook_file, hooked_events
from gitmem.agents.hostmcp import has_server, mcp_file
from gitmem.errors import GitmemError, UsageError

__all__ = [
    "HOSTS",
    "Status",
    "Target",
    "check",
    "install",
    "target",
    "uninstall",
]

Host = Literal["claude-code", "codex"]
Scope = Literal["user", "project"]
HOSTS: tuple[Host, ...] = ("claude-code", "codex")


@dataclass(frozen=True)
class Target:
    host: Host
    scope: Scope
    hooks: Path
    mcp: Path
    guide: Path


@dataclass(frozen=True)
class Status:
    hooks: tuple[str, ...]  # host event names with a gitmem hook
    missing_hooks: tuple[str, ...]
    mcp: bool
    guide: bool
    problems: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.missing_hooks and self.mcp and self.guide and not self.problems


def target(host: str, scope: str, home: Path, project: Path) -> Target:
    if host not in HOSTS:
        raise UsageError(f'--host must be one of {", ".join(HOSTS)}, not "{host}"')
    where: Scope = "user" if scope == "user" else "project"
    if scope != where:
        raise UsageError(f'--scope must be user or project, not "{scope}"')
    user = where == "user"
    if host == "claude-code":
        base = home / ".claude" if user else project / ".claude"
        mcp = home / ".claude.json" if user else project / ".mcp.json"
        skill = base / "skills" / "gitmem" / "SKILL.md"
        return Target("claude-code", where, base / "settings.json", mcp, skill)
    base = home / ".codex" if user else project / ".codex"
    guide = base / "AGENTS.md" if user else project / "AGENTS.md"
    return Target("codex", where, base / "hooks.json", base / "config.toml", guide)


def install(t: Target, command: Sequence[str], store: Path | None = None) -> list[Change]:
    """Merge gitmem's hooks, MCP server and guide into the host's files. Idempotent.
    `command` runs gitmem; `store`, when given, is passed to every hook and the server."""
    if not command:
        raise UsageError("setup needs the command that runs gitmem")
    # Compute every new text first, so a file we cannot parse stops the run before any write.
    plans = [
        (t.hooks, hook_file(t.hooks, t.host, command, store)),
        (t.mcp, mcp_file(t.mcp, t.host, command, store)),
        (t.guide, guide_file(t.guide, t.host, True)),
    ]
    return [write(path, text) for path, text in plans]


def uninstall(t: Target) -> list[Change]:
    """Take out exactly what install added; files that held only that are removed."""
    plans = [
        (t.hooks, hook_file(t.hooks, t.host, None, None)),
        (t.mcp, mcp_file(t.mcp, t.host, None, None)),
        (t.guide, guide_file(t.guide, t.host, False)),
    ]
    out = []
    for path, text in plans:
        if text is not None and text.strip() in ("", "{}"):
            text = None if _created_by_us(path) else text
        out.append(write(path, text))
    return out


def _created_by_us(path: Path) -> bool:
    """An emptied file was ours alone unless a backup says it existed before gitmem."""
    return not path.with_name(path.name + BACKUP_SUFFIX).exists()


def check(t: Target) -> Status:
    problems: list[str] = []
    found: set[str] = set()
    try:
        found = hooked_events(t.hooks)
    except GitmemError as exc:
        problems.append(str(exc))
    try:
        mcp = has_server(t.mcp, t.host)
    except GitmemError as exc:
        problems.append(str(exc))
        mcp = False
    guide = has_guide(t.guide)
    wanted = list(EVENTS[t.host])
    return Status(
        tuple(e for e in wanted if e in found),
        tuple(e for e in wanted if e not in found),
        mcp,
        guide,
        tuple(problems),
    )
