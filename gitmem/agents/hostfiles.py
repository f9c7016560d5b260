"""Reading and rewriting the agent hosts' settings files for `gitmem setup`: a file is
rewritten only when its content changes, after copying the old one to `<file>.gitmem-backup`;
one that fails to parse stops setup before anything is written."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitmem.atomic import replace_file
from gitmem.errors import GitmemError

__all__ = ["BACKUP_SUFFIX", "NAME", "Change", "dump_json", "read", "read_json", "strip_block"]

NAME = "gitmem"  # gitmem's own name in the hosts' files: its MCP server, its skill's folder
BACKUP_SUFFIX = ".gitmem-backup"


@dataclass(frozen=True)
class Change:
    path: Path
    action: str  # "created", "updated", "removed", "unchanged"
    backup: Path | None = None


def read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise GitmemError(
            f"cannot read {path} ({exc}); fix or move it, then run setup again"
        ) from exc


def read_json(path: Path) -> dict[str, Any]:
    text = read(path)
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


def write(path: Path, new: str | None) -> Change:
    """Write `new` (None: remove the file) if it differs, backing up content it replaces."""
    old = read(path)
    if old == new:
        return Change(path, "unchanged")
    if new is None:  # only ever a file that holds nothing but gitmem's own entries
        path.unlink()
        if path.parent.name == NAME and not any(path.parent.iterdir()):
            path.parent.rmdir()  # the skill's folder
        return Change(path, "removed")
    backup = None
    if old is not None:
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, new, mode=None if old is None else path.stat().st_mode & 0o7777)
    return Change(path, "created" if old is None else "updated", backup)


def dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def strip_block(text: str, begin: str, end: str) -> str:
    """`text` without the marked block and the blank line install put before it."""
    start = text.find(begin)
    stop = text.find(end, start)
    if start < 0 or stop < 0:
        return text
    before, after = text[:start].rstrip("\n"), text[stop + len(end) :].lstrip("\n")
    joined = before + "\n" if before else ""
    return joined + ("\n" + after if joined and after else after)
