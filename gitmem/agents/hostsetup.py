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
caller (the CLI reads HOME and the current directory).
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gitmem.atomic import replace_file
from gitmem.errors import GitmemError, UsageError

__all__ = [
    "HOSTS",
    "Change",
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
SERVER = "gitmem"
BACKUP_SUFFIX = ".gitmem-backup"
HOOK_TIMEOUT = 10  # seconds the host allows; the hook gives up by itself after 8
TOML_BEGIN = "# >>> gitmem: managed by `gitmem setup`; remove with `gitmem setup --uninstall`"
TOML_END = "# <<< gitmem"
MD_BEGIN = "<!-- gitmem:begin (managed by `gitmem setup`) -->"
MD_END = "<!-- gitmem:end -->"
_OURS = re.compile(  # the store is a word or, with spaces in it, a quoted one (see _quote)
    r"gitmem\S*\s+hook\s+[a-z-]+(\s+--store\s+('(?:[^']|'\\'')*'|\S+))?"
    r"\s+--host\s+(claude-code|codex)\s*$"
)

# event (host spelling) -> matcher ("" for none), per host.
EVENTS: dict[Host, dict[str, str]] = {
    "claude-code": {
        "SessionStart": "",
        "UserPromptSubmit": "",
        "PostToolUse": "Write|Edit|MultiEdit",
        "PreCompact": "",
        "Stop": "",
        "SessionEnd": "",
    },
    "codex": {  # Codex has no SessionEnd; its file writes are the apply_patch tool
        "SessionStart": "",
        "UserPromptSubmit": "",
        "PostToolUse": "apply_patch",
        "PreCompact": "",
        "Stop": "",
    },
}

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


@dataclass(frozen=True)
class Target:
    host: Host
    scope: Scope
    hooks: Path
    mcp: Path
    guide: Path


@dataclass(frozen=True)
class Change:
    path: Path
    action: str  # "created", "updated", "removed", "unchanged"
    backup: Path | None = None


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


# --- files -------------------------------------------------------------------------------------


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise GitmemError(
            f"cannot read {path} ({exc}); fix or move it, then run setup again"
        ) from exc


def _json(path: Path) -> dict[str, Any]:
    text = _read(path)
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise GitmemError(
            f"{path} is not valid JSON ({exc}); gitmem changes nothing in it — fix it and run "
            "setup again"
        ) from exc
    if not isinstance(data, dict):
        raise GitmemError(f"{path} does not hold a JSON object; gitmem changes nothing in it")
    return data


def _write(path: Path, new: str | None) -> Change:
    """Write `new` (None: remove the file) if it differs, backing up content it replaces."""
    old = _read(path)
    if old == new:
        return Change(path, "unchanged")
    if new is None:  # only ever a file that holds nothing but gitmem's own entries
        path.unlink()
        if path.parent.name == SERVER and not any(path.parent.iterdir()):
            path.parent.rmdir()  # the skill's folder
        return Change(path, "removed")
    backup = None
    if old is not None:
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, new, mode=None if old is None else path.stat().st_mode & 0o7777)
    return Change(path, "created" if old is None else "updated", backup)


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# --- hooks -------------------------------------------------------------------------------------


def _ours(handler: Any) -> bool:
    return isinstance(handler, dict) and bool(_OURS.search(str(handler.get("command", ""))))


def _without_ours(hooks: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            out[event] = groups
            continue
        kept = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                kept.append(group)
                continue
            left = [h for h in handlers if not _ours(h)]
            if left or not handlers:
                kept.append({**group, "hooks": left} if len(left) != len(handlers) else group)
        if kept or not groups:
            out[event] = kept
    return out


def _kebab(event: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"-\1", event).lower()


def _hook_file(t: Target, command: Sequence[str] | None, store: Path | None) -> str | None:
    data = _json(t.hooks)
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise GitmemError(f'{t.hooks}: "hooks" is not an object; gitmem changes nothing in it')
    hooks = _without_ours(hooks)
    if command is not None:
        base = " ".join(_quote(part) for part in command)
        where = f" --store {_quote(str(store))}" if store else ""
        for event, matcher in EVENTS[t.host].items():
            handler = {
                "type": "command",
                "command": f"{base} hook {_kebab(event)}{where} --host {t.host}",
                "timeout": HOOK_TIMEOUT,
            }
            group: dict[str, Any] = {"matcher": matcher} if matcher else {}
            group["hooks"] = [handler]
            hooks.setdefault(event, []).append(group)
    if hooks:
        data["hooks"] = hooks
    else:
        data.pop("hooks", None)
    if not data and _read(t.hooks) is None:
        return None
    return _dump(data)


def _quote(part: str) -> str:
    return part if re.fullmatch(r"[\w@%+=:,./-]+", part) else "'" + part.replace("'", "'\\''") + "'"


# --- MCP server --------------------------------------------------------------------------------


def _mcp_args(command: Sequence[str], store: Path | None) -> list[str]:
    return [*command[1:], "mcp", *(["--store", str(store)] if store else [])]


def _mcp_json(t: Target, command: Sequence[str] | None, store: Path | None) -> str | None:
    data = _json(t.mcp)
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise GitmemError(f'{t.mcp}: "mcpServers" is not an object; gitmem changes nothing in it')
    servers = {k: v for k, v in servers.items() if k != SERVER}
    if command is not None:
        args = _mcp_args(command, store)
        servers[SERVER] = {"type": "stdio", "command": command[0], "args": args}
    if servers:
        data["mcpServers"] = servers
    else:
        data.pop("mcpServers", None)
    if not data and _read(t.mcp) is None:
        return None
    return _dump(data)


def _strip_block(text: str, begin: str, end: str) -> str:
    """`text` without the marked block and the blank line install put before it."""
    start = text.find(begin)
    stop = text.find(end, start)
    if start < 0 or stop < 0:
        return text
    before, after = text[:start].rstrip("\n"), text[stop + len(end) :].lstrip("\n")
    joined = before + "\n" if before else ""
    return joined + ("\n" + after if joined and after else after)


def _mcp_toml(t: Target, command: Sequence[str] | None, store: Path | None) -> str | None:
    old = _read(t.mcp)
    text = _strip_block(old or "", TOML_BEGIN, TOML_END)
    if text.strip() == "":
        text = ""
    if command is not None:
        try:
            existing = tomllib.loads(text).get("mcp_servers", {})
        except tomllib.TOMLDecodeError as exc:
            raise GitmemError(
                f"{t.mcp} is not valid TOML ({exc}); gitmem changes nothing in it"
            ) from exc
        if SERVER not in existing:
            args = ", ".join(json.dumps(a) for a in _mcp_args(command, store))
            block = (
                f"{TOML_BEGIN}\n[mcp_servers.{SERVER}]\n"
                f"command = {json.dumps(command[0])}\nargs = [{args}]\n{TOML_END}\n"
            )
            text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + block
            try:
                tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:  # e.g. `mcp_servers = { ... }`, inline
                raise GitmemError(
                    f"{t.mcp}: cannot add [mcp_servers.{SERVER}] beside how the file writes "
                    f"mcp_servers ({exc}); write mcp_servers as [mcp_servers.NAME] tables, or "
                    "add the gitmem server yourself, then run setup again"
                ) from exc
    if old is None and not text:
        return None
    return text


def _mcp_toml_present(t: Target) -> bool:
    try:
        servers = tomllib.loads(_read(t.mcp) or "").get("mcp_servers", {})
    except tomllib.TOMLDecodeError as exc:
        raise GitmemError(f"{t.mcp} is not valid TOML ({exc}); Codex cannot read it") from exc
    return isinstance(servers, dict) and SERVER in servers


# --- guide -------------------------------------------------------------------------------------

SKILL = f"""---
name: gitmem
description: Long-term memory shared across sessions and devices. Use it to recall decisions, \
conventions and lessons before working, and to record new ones.
---
{MD_BEGIN}
# gitmem memory

{GUIDE}{MD_END}
"""


def _guide(t: Target, add: bool) -> str | None:
    old = _read(t.guide)
    if t.host == "claude-code":  # the skill file is wholly ours
        if old is not None and MD_BEGIN not in old:
            raise GitmemError(f"{t.guide} exists and is not gitmem's; move it and run setup again")
        return SKILL if add else None
    text = _strip_block(old or "", MD_BEGIN, MD_END)
    if add:
        section = f"{MD_BEGIN}\n## Memory (gitmem)\n\n{GUIDE}{MD_END}\n"
        text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + section
    if old is None and not text.strip():
        return None
    return text if text.strip() else None


# --- operations --------------------------------------------------------------------------------


def install(t: Target, command: Sequence[str], store: Path | None = None) -> list[Change]:
    """Merge gitmem's hooks, MCP server and guide into the host's files. Idempotent.
    `command` runs gitmem; `store`, when given, is passed to every hook and the server."""
    if not command:
        raise UsageError("setup needs the command that runs gitmem")
    # Compute every new text first, so a file we cannot parse stops the run before any write.
    plans = [
        (t.hooks, _hook_file(t, command, store)),
        (t.mcp, (_mcp_toml if t.host == "codex" else _mcp_json)(t, command, store)),
        (t.guide, _guide(t, True)),
    ]
    return [_write(path, text) for path, text in plans]


def uninstall(t: Target) -> list[Change]:
    """Take out exactly what install added; files that held only that are removed."""
    plans = [
        (t.hooks, _hook_file(t, None, None)),
        (t.mcp, (_mcp_toml if t.host == "codex" else _mcp_json)(t, None, None)),
        (t.guide, _guide(t, False)),
    ]
    out = []
    for path, text in plans:
        if text is not None and text.strip() in ("", "{}"):
            text = None if _created_by_us(path) else text
        out.append(_write(path, text))
    return out


def _created_by_us(path: Path) -> bool:
    """An emptied file was ours alone unless a backup says it existed before gitmem."""
    return not path.with_name(path.name + BACKUP_SUFFIX).exists()


def check(t: Target) -> Status:
    problems: list[str] = []
    found: set[str] = set()
    try:
        hooks = _json(t.hooks).get("hooks", {})
        for event, groups in hooks.items() if isinstance(hooks, dict) else ():
            for group in groups if isinstance(groups, list) else ():
                handlers = group.get("hooks", []) if isinstance(group, dict) else []
                if any(_ours(h) for h in handlers if isinstance(handlers, list)):
                    found.add(event)
    except GitmemError as exc:
        problems.append(str(exc))
    try:
        mcp = (
            _mcp_toml_present(t)
            if t.host == "codex"
            else SERVER in _json(t.mcp).get("mcpServers", {})
        )
    except GitmemError as exc:
        problems.append(str(exc))
        mcp = False
    guide = MD_BEGIN in (_read(t.guide) or "")
    wanted = list(EVENTS[t.host])
    return Status(
        tuple(e for e in wanted if e in found),
        tuple(e for e in wanted if e not in found),
        mcp,
        guide,
        tuple(problems),
    )
