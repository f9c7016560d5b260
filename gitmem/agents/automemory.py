"""A mirror of Claude Code's auto-memory files in the store.

Claude Code keeps what it learns about a project in
`~/.claude/projects/<project-slug>/memory/*.md` (one Markdown file per memory, with a small
frontmatter: name, description, type; `MEMORY.md` is its index of them and is not mirrored).
At SessionStart gitmem copies them into the store, so they are versioned, synced and
searchable with everything else:

- only files whose content changed since the last mirror (SHA-256, state kept in the store's
  cache, `.gitmem/automemory.json`), one commit per changed file (the store's rule);
- a new file becomes a record created at the file's modification time (the closest thing to
  its creation time the file system keeps everywhere); a changed one updates that record in
  place, keeping its id and creation time; a deleted file becomes a forget;
- secrets are redacted, not refused: a hook cannot ask anyone.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.agents.project import project_tag
from gitmem.atomic import replace_file

if TYPE_CHECKING:
    from gitmem.store.store import Store

__all__ = ["MirrorResult", "changed_files", "memory_dir", "mirror", "project_slug"]

STATE = "automemory.json"
INDEX_FILE = "MEMORY.md"
TAG = "auto-memory"
# Claude Code's memory types, as gitmem types.
TYPES = {"user": "preference", "feedback": "lesson", "project": "context", "reference": "fact"}


def project_slug(cwd: Path) -> str:
    """Claude Code's folder name for a project: its absolute path, every other character a
    dash."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def memory_dir(transcript: str, cwd: Path, home: Path) -> Path:
    """Where this session's auto-memory lives: beside its transcript when the host says where
    that is, else under ~/.claude/projects/<slug>/."""
    if transcript:
        return Path(transcript).expanduser().parent / "memory"
    return home / ".claude" / "projects" / project_slug(cwd) / "memory"


@dataclass(frozen=True)
class MirrorResult:
    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    forgotten: tuple[str, ...] = ()
    left: int = 0  # changed files not done before the deadline (next session does them)
    problems: tuple[str, ...] = ()  # files the store refused (tried again when they change)


def _load(cache: Path) -> dict[str, dict[str, dict[str, str]]]:
    try:
        raw = json.loads((cache / STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return raw if isinstance(raw, dict) else {}


def _save(cache: Path, state: dict[str, dict[str, dict[str, str]]]) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    replace_file(cache / STATE, json.dumps(state, indent=1, sort_keys=True))


def _files(directory: Path) -> dict[str, Path]:
    try:
        return {
            p.name: p
            for p in sorted(directory.glob("*.md"))
            if p.is_file() and p.name != INDEX_FILE
        }
    except OSError:
        return {}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def changed_files(cache: Path, directory: Path) -> tuple[list[Path], list[str]]:
    """(files new or changed since the last mirror, names of files deleted since): stdlib
    only, so a session where nothing changed never opens the store."""
    known = _load(cache).get(str(directory), {})
    files = _files(directory)
    changed = [p for name, p in files.items() if known.get(name, {}).get("sha") != _digest(p)]
    gone = sorted(name for name in known if name not in files)
    return changed, gone


def _split(text: str) -> tuple[dict[str, str], str]:
    """Frontmatter as plain `key: value` lines (all Claude Code writes), and the body."""
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---", 4)
    if end < 0:
        return {}, text
    meta: dict[str, str] = {}
    for line in text[4:end].splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            meta[key.strip().lower()] = value.strip().strip("\"'")
    return meta, text[end + 4 :].lstrip("\n")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def mirror(
    store: Store,
    directory: Path,
    *,
    project: str = "",
    agent: str = "claude-code",
    deadline: float | None = None,
) -> MirrorResult:
    """Bring the store in line with the auto-memory files in `directory`."""
    from gitmem.errors import GitmemError, NotFound
    from gitmem.store.record import ABSTRACT_MAX

    cache = store.cache_dir
    state = _load(cache)
    known = state.setdefault(str(directory), {})
    changed, gone = changed_files(cache, directory)
    added: list[str] = []
    updated: list[str] = []
    forgotten: list[str] = []
    problems: list[str] = []
    todo = len(changed) + len(gone)
    for name in gone:
        if deadline is not None and time.monotonic() > deadline:
            break
        rid = known.pop(name, {}).get("id", "")
        if rid:
            try:
                store.forget(rid, reason=f"the auto-memory file {name} was deleted", agent=agent)
                forgotten.append(rid)
            except NotFound:
                pass
        _save(cache, state)
        todo -= 1
    for path in changed:
        if deadline is not None and time.monotonic() > deadline:
            break
        data = path.read_bytes()
        meta, body = _split(data.decode("utf-8", "replace"))
        title = _clip(meta.get("name") or path.stem.replace("_", " ").replace("-", " "), 200)
        abstract = _clip(meta.get("description", ""), ABSTRACT_MAX)
        body = body if body.strip() else f"(empty auto-memory file {path.name})\n"
        rid = known.get(path.name, {}).get("id", "")
        try:
            rid, replaced = _write(store, path, meta, (title, abstract, body), rid, project, agent)
        except GitmemError as exc:  # one bad file must not stop the others, nor every session
            problems.append(f"{path.name}: {exc}")
        else:
            (updated if replaced else added).append(rid)
        known[path.name] = {"sha": hashlib.sha256(data).hexdigest(), "id": rid}
        _save(cache, state)
        todo -= 1
    return MirrorResult(tuple(added), tuple(updated), tuple(forgotten), todo, tuple(problems))


def _write(
    store: Store,
    path: Path,
    meta: dict[str, str],
    text: tuple[str, str, str],
    rid: str,
    project: str,
    agent: str,
) -> tuple[str, bool]:
    """Update the file's record in place, or record it anew: (its id, whether it existed)."""
    from gitmem.errors import NotFound
    from gitmem.store.recordfile import dump

    title, abstract, body = text
    old = None
    if rid:
        try:
            old = store.get(rid)
        except NotFound:
            old = None
    if old is not None and old.id == rid:
        now = datetime.now(UTC).replace(microsecond=0)
        new = old.with_(title=title, abstract=abstract or old.abstract, body=body, updated=now)
        store.replace_text(old.id, dump(new), agent=agent, secrets="redact")
        return old.id, True
    created = datetime.fromtimestamp(int(path.stat().st_mtime), UTC)
    result = store.record(
        TYPES.get(meta.get("type", ""), "fact"),
        body,
        title=title,
        abstract=abstract,
        tags=[TAG, project_tag(project)] if project else [TAG],
        agent=agent,
        source=f"{agent} auto-memory {path.name}",
        secrets="redact",
        now=created,
    )
    return result.record.id, False
