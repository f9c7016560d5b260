"""What the hook path needs to know about a store, read with the standard library only.

A hook runs in every agent session, often several times a minute; importing pygit2, PyYAML or
typer just to learn "is there a store, and has it changed?" would cost more than the answer.
These helpers read the few plain files git and the index keep: `.git/HEAD`, loose refs and
`packed-refs`, `.git/config`, the index catalog's stamp and the `[hooks]` table of the store's
config.toml; and they append the line PostToolUse keeps for each file a session writes.
Anything unusual (a detached HEAD is fine; a reftable repository is not) makes them answer
None, and the caller falls back to the full library.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "CATALOG",
    "HookSettings",
    "blobs",
    "catalog_stamp",
    "changed_paths",
    "has_remote",
    "head_commit",
    "hook_settings",
    "is_store",
    "note_files",
    "safe_name",
    "session_file",
    "store_path",
]

CATALOG = Path(".gitmem") / "index" / "catalog.sqlite"
_HEX = frozenset("0123456789abcdef")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def store_path(flag: str | None, env: Mapping[str, str]) -> Path:
    """--store, then GITMEM_STORE, then $XDG_DATA_HOME/gitmem/store, then
    ~/.local/share/gitmem/store. gitmem.config.resolve_store_path is this function; it lives
    here because config pulls in importlib.resources, which the hook path must not pay for."""
    if flag:
        return Path(flag).expanduser()
    from_env = env.get("GITMEM_STORE", "").strip()
    if from_env:
        return Path(from_env).expanduser()
    data_home = env.get("XDG_DATA_HOME", "").strip()
    if data_home:
        return Path(data_home) / "gitmem" / "store"
    home = env.get("HOME", "").strip()
    base = Path(home) if home else Path.home()
    return base / ".local" / "share" / "gitmem" / "store"


def is_store(root: Path) -> bool:
    return (root / ".git").is_dir() and (root / "config.toml").is_file()


def _commit_id(text: str) -> str | None:
    text = text.strip()
    return text if len(text) in (40, 64) and set(text) <= _HEX else None


def head_commit(git_dir: Path) -> str | None:
    """The commit HEAD points at, or None (unborn branch, or a layout we do not read)."""
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not head.startswith("ref: "):
        return _commit_id(head)
    ref = head[5:].strip()
    try:
        return _commit_id((git_dir / ref).read_text(encoding="utf-8"))
    except OSError:
        pass
    try:
        packed = (git_dir / "packed-refs").read_text(encoding="utf-8")
    except OSError:
        return None
    for line in packed.splitlines():
        commit, _, name = line.partition(" ")
        if name == ref:
            return _commit_id(commit)
    return None


def has_remote(git_dir: Path) -> bool:
    """Whether .git/config names any remote with a URL (sync has somewhere to go)."""
    try:
        text = (git_dir / "config").read_text(encoding="utf-8")
    except OSError:
        return False
    in_remote = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            in_remote = line.startswith("[remote ")
        elif in_remote and line.replace(" ", "").startswith("url="):
            return True
    return False


def catalog_stamp(root: Path) -> str | None:
    """The commit the search index was built from, or None (no index, or unreadable)."""
    import sqlite3

    path = root / CATALOG
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'commit'").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    return None if row is None else str(row[0])


def _git(root: Path, args: list[str], stdin: bytes = b"", timeout: float = 5.0) -> bytes | None:
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], input=stdin, capture_output=True, timeout=timeout
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def changed_paths(root: Path, old: str, new: str, prefix: str) -> list[tuple[str, str | None]]:
    """(path, new blob id or None when deleted) under `prefix` between two commits, from
    `git diff-tree`: the git command starts in a few milliseconds where importing pygit2 takes
    a hundred. Raises OSError when git cannot answer (not installed, an unknown commit)."""
    out = _git(root, ["diff-tree", "-r", "-z", "--no-renames", old, new, "--", prefix])
    if out is None:
        raise OSError(f"git diff-tree {old[:10]} {new[:10]} failed in {root}")
    parts = out.split(b"\0")
    found: list[tuple[str, str | None]] = []
    for meta, path in zip(parts[0::2], parts[1::2], strict=False):
        fields = meta.decode("ascii").lstrip(":").split(" ")  # modes, ids, status
        if len(fields) != 5:
            break
        found.append((path.decode("utf-8"), None if fields[4] == "D" else fields[3]))
    return found


def blobs(root: Path, ids: list[str]) -> dict[str, bytes]:
    """The contents of blobs, from one `git cat-file --batch`. Raises OSError when git
    cannot answer."""
    if not ids:
        return {}
    out = _git(root, ["cat-file", "--batch"], "".join(f"{i}\n" for i in ids).encode())
    if out is None:
        raise OSError(f"git cat-file failed in {root}")
    found: dict[str, bytes] = {}
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        header = out[at:end].decode("ascii").split(" ")
        at = end + 1
        if len(header) != 3:  # "<id> missing"
            continue
        size = int(header[2])
        found[header[0]] = out[at : at + size]
        at += size + 1
    return found


class HookSettings(NamedTuple):
    """The `[hooks]` table of the store's config.toml (docs/hooks.md). A NamedTuple rather
    than a frozen dataclass: importing dataclasses costs the no-op hook ~14 ms."""

    context_bytes: int = 8192  # budget of the SessionStart block
    prompt_recall: bool = False  # UserPromptSubmit recall: off unless asked for
    prompt_bytes: int = 1500  # budget of the UserPromptSubmit block
    watch: tuple[str, ...] = ("docs", "notes")  # Markdown under these dirs goes to the indexer
    disabled: frozenset[str] = frozenset()  # kebab-case event names to ignore
    sync_timeout: float = 3.0  # seconds SessionStart gives `gitmem sync`
    timeout: float = 8.0  # hard limit of any hook, seconds
    mirror_auto_memory: bool = True
    archive_transcripts: bool = True


def hook_settings(root: Path) -> tuple[HookSettings, list[str]]:
    """The settings, and problems found (each wrong value falls back to its default)."""
    import tomllib  # not on the no-op path

    try:
        raw = tomllib.loads((root / "config.toml").read_text(encoding="utf-8")).get("hooks", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return HookSettings(), [f"config.toml unreadable ({exc}); using default hook settings"]
    if not isinstance(raw, dict):
        return HookSettings(), ["config.toml: [hooks] must be a table"]
    problems: list[str] = []
    base = HookSettings()

    def pick(key: str, kind: type | tuple[type, ...], default: object) -> object:
        value = raw.get(key, default)
        if isinstance(value, bool) and kind is not bool:
            value = None
        if not isinstance(value, kind):
            problems.append(f"config.toml: hooks.{key} has the wrong type; using {default!r}")
            return default
        return value

    def positive(key: str, default: float) -> float:
        value = pick(key, (int, float), default)
        assert isinstance(value, int | float)
        if value <= 0:
            problems.append(f"config.toml: hooks.{key} must be positive; using {default!r}")
            return default
        return float(value)

    watch = pick("watch", list, list(base.watch))
    disabled = pick("disabled", list, [])
    assert isinstance(watch, list) and isinstance(disabled, list)
    settings = HookSettings(
        context_bytes=int(positive("context_bytes", base.context_bytes)),
        prompt_recall=bool(pick("prompt_recall", bool, base.prompt_recall)),
        prompt_bytes=int(positive("prompt_bytes", base.prompt_bytes)),
        watch=tuple(str(w).strip("/") for w in watch if str(w).strip("/")),
        disabled=frozenset(str(d) for d in disabled),
        sync_timeout=positive("sync_timeout", base.sync_timeout),
        timeout=positive("timeout", base.timeout),
        mirror_auto_memory=bool(pick("mirror_auto_memory", bool, base.mirror_auto_memory)),
        archive_transcripts=bool(pick("archive_transcripts", bool, base.archive_transcripts)),
    )
    return settings, problems


# --- the session's note of the files it wrote ---------------------------------------------------
# Here and not in gitmem.session: PostToolUse on a code file (the most common tool use) only
# appends a line, and importing that module (dataclasses, datetime, SQLite) would double its cost.


def safe_name(text: str) -> str:
    """`text` as a file name: letters, digits, `.`, `_` and `-` only, at most 100."""
    return _UNSAFE.sub("-", text)[:100] or "unknown"


def session_file(cache: Path, session: str, suffix: str) -> Path:
    """`<cache>/sessions/<session><suffix>`: a running session's state (gitmem.session)."""
    return cache / "sessions" / f"{safe_name(session)}{suffix}"


def note_files(cache: Path, session: str, paths: list[str]) -> None:
    """Remember files a tool wrote (PostToolUse): an append; gitmem.session reads them."""
    if not paths:
        return
    path = session_file(cache, session, ".files")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(p.replace("\n", " ") + "\n" for p in paths))
