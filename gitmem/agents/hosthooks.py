"""gitmem's hooks in a host's hooks file (Claude Code's settings.json, Codex's hooks.json):
one handler per event, recognised by its command (`... gitmem ... hook EVENT --host HOST`),
so that every other hook in the file stays as it was."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gitmem.agents.hostfiles import dump_json, read, read_json
from gitmem.errors import GitmemError

__all__ = ["EVENTS", "hook_file", "hooked_events"]

HOOK_TIMEOUT = 10  # seconds the host allows; the hook gives up by itself after 8
_OURS = re.compile(  # the store is a word or, with spaces in it, a quoted one (see _quote)
    r"gitmem\S*\s+hook\s+[a-z-]+(\s+--store\s+('(?:[^']|'\\'')*'|\S+))?"
    r"\s+--host\s+(claude-code|codex)\s*$"
)

# event (host spelling) -> matcher ("" for none), per host.
EVENTS: dict[str, dict[str, str]] = {
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


def hook_file(
    path: Path, host: str, command: Sequence[str] | None, store: Path | None
) -> str | None:
    """The hooks file's new text: without gitmem's hooks, then (with a `command`) with them
    added; None for a file that does not exist and would hold nothing."""
    data = read_json(path)
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise GitmemError(f'{path}: "hooks" is not an object; gitmem changes nothing in it')
    hooks = _without_ours(hooks)
    if command is not None:
        base = " ".join(_quote(part) for part in command)
        where = f" --store {_quote(str(store))}" if store else ""
        for event, matcher in EVENTS[host].items():
            handler = {
                "type": "command",
                "command": f"{base} hook {_kebab(event)}{where} --host {host}",
                "timeout": HOOK_TIMEOUT,
            }
            group: dict[str, Any] = {"matcher": matcher} if matcher else {}
            group["hooks"] = [handler]
            hooks.setdefault(event, []).append(group)
    if hooks:
        data["hooks"] = hooks
    else:
        data.pop("hooks", None)
    if not data and read(path) is None:
        return None
    return dump_json(data)


def hooked_events(path: Path) -> set[str]:
    """The events (host spelling) that have a gitmem hook in the file."""
    found: set[str] = set()
    hooks = read_json(path).get("hooks", {})
    for event, groups in hooks.items() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            handlers = group.get("hooks", []) if isinstance(group, dict) else []
            if any(_ours(h) for h in handlers if isinstance(handlers, list)):
                found.add(event)
    return found


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


def _quote(part: str) -> str:
    return part if re.fullmatch(r"[\w@%+=:,./-]+", part) else "'" + part.replace("'", "'\\''") + "'"
