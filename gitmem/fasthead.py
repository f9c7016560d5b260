"""What the hook path needs to know about a store, read with the standard library only.

A hook runs in every agent session, often several times a minute; importing pygit2, PyYAML or
typer just to learn "is there a store, and has it changed?" would cost more than the answer.
These helpers read the few plain files git and the index keep: `.git/HEAD`, loose refs and
`packed-refs`, `.git/config`, the index catalog's stamp and the `[hooks]` table of the store's
config.toml; and they append the line PostToolUse keeps for each file a session writes.
Anything unusual (a detached HEAD is fine; a reftable repository is not) makes them answer
None, and the caller falls back to the full library.

PostToolUse on a code file (the commonest call with work to do) goes through this module
alone, so it imports neither pathlib nor typing (~20 ms between them): it works on strings
with os.path, takes Paths or strings alike, and its annotations are strings.
"""

from __future__ import annotations

import json
import os
import re

# A constant rather than typing's (see above). mypy honours the name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from pathlib import Path
    from typing import Final

    StrPath = str | os.PathLike[str]

__all__ = [
    "CATALOG",
    "MARKDOWN",
    "SETTINGS_CACHE",
    "HookSettings",
    "blobs",
    "catalog_stamp",
    "changed_paths",
    "has_remote",
    "head_commit",
    "hook_settings",
    "is_store",
    "model_cache",
    "note_files",
    "project_paths",
    "readonly_uri",
    "safe_name",
    "session_file",
    "store_dir",
    "store_path",
    "watched_markdown",
]

CATALOG = ".gitmem/index/catalog.sqlite"  # under the store's root
SETTINGS_CACHE = "hook-settings.json"  # in the store's cache: the `[hooks]` table, parsed
_SETTINGS_VERSION = 1
MARKDOWN = (".md", ".markdown", ".mdx")
_HEX = frozenset("0123456789abcdef")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def store_path(flag: str | None, env: Mapping[str, str]) -> Path:
    """--store, then GITMEM_STORE, then $XDG_DATA_HOME/gitmem/store, then
    ~/.local/share/gitmem/store. gitmem.config.resolve_store_path is this function; it lives
    here because config pulls in importlib.resources, which the hook path must not pay for."""
    from pathlib import Path

    return Path(store_dir(flag, env))


def store_dir(flag: str | None, env: Mapping[str, str]) -> str:
    """store_path as a string, for the hook path. Raises RuntimeError for a ~user that does
    not exist, as pathlib does."""
    if flag:
        return _expand_user(flag)
    from_env = env.get("GITMEM_STORE", "").strip()
    if from_env:
        return _expand_user(from_env)
    data_home = env.get("XDG_DATA_HOME", "").strip()
    if data_home:
        return os.path.join(data_home, "gitmem", "store")
    home = env.get("HOME", "").strip() or _expand_user("~")
    return os.path.join(home, ".local", "share", "gitmem", "store")


def model_cache(env: Mapping[str, str]) -> Path | None:
    """Where hub models are cached as the Hugging Face variables say (HF_HUB_CACHE, else
    $HF_HOME/hub); None: the library's default."""
    from pathlib import Path

    cache = env.get("HF_HUB_CACHE") or (
        os.path.join(env["HF_HOME"], "hub") if env.get("HF_HOME") else ""
    )
    return Path(cache) if cache else None


def _expand_user(path: str) -> str:
    expanded = os.path.expanduser(path)
    if expanded.startswith("~"):
        raise RuntimeError(f"cannot find the home directory of {path.split('/')[0]}")
    return expanded


def is_store(root: StrPath) -> bool:
    return os.path.isdir(os.path.join(root, ".git")) and os.path.isfile(
        os.path.join(root, "config.toml")
    )


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


def readonly_uri(path: Path) -> str:
    """SQLite's URI for opening `path` read-only. A URI ends its path at "?" or "#" and decodes
    "%": a store at `notes#2` would otherwise open (and create) `notes`, read-write."""
    quoted = str(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return f"file:{quoted}?mode=ro"


def catalog_stamp(root: Path) -> str | None:
    """The commit the search index was built from, or None (no index, or unreadable)."""
    import sqlite3

    path = root / CATALOG
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(readonly_uri(path), uri=True)
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


class HookSettings:
    """The `[hooks]` table of the store's config.toml (docs/hooks.md). A plain class rather
    than a frozen dataclass or a NamedTuple: importing dataclasses or typing costs the
    code-edit hook ~10 ms. Final: mypy keeps it read-only."""

    __slots__ = (
        "archive_transcripts",
        "context_bytes",
        "disabled",
        "mirror_auto_memory",
        "prompt_bytes",
        "prompt_recall",
        "sync_timeout",
        "timeout",
        "watch",
    )
    context_bytes: Final[int]  # budget of the SessionStart block
    prompt_recall: Final[bool]  # UserPromptSubmit recall: off unless asked for
    prompt_bytes: Final[int]  # budget of the UserPromptSubmit block
    watch: Final[tuple[str, ...]]  # Markdown under these dirs goes to the indexer
    disabled: Final[frozenset[str]]  # event names to ignore, as written (either spelling)
    sync_timeout: Final[float]  # seconds SessionStart gives `gitmem sync`
    timeout: Final[float]  # hard limit of any hook, seconds
    mirror_auto_memory: Final[bool]
    archive_transcripts: Final[bool]

    def __init__(
        self,
        *,
        context_bytes: int = 8192,
        prompt_recall: bool = False,
        prompt_bytes: int = 1500,
        watch: tuple[str, ...] = ("docs", "notes"),
        disabled: frozenset[str] = frozenset(),
        sync_timeout: float = 3.0,
        timeout: float = 8.0,
        mirror_auto_memory: bool = True,
        archive_transcripts: bool = True,
    ) -> None:
        self.context_bytes = context_bytes
        self.prompt_recall = prompt_recall
        self.prompt_bytes = prompt_bytes
        self.watch = watch
        self.disabled = disabled
        self.sync_timeout = sync_timeout
        self.timeout = timeout
        self.mirror_auto_memory = mirror_auto_memory
        self.archive_transcripts = archive_transcripts

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"HookSettings({fields})"


def hook_settings(root: StrPath) -> tuple[HookSettings, list[str]]:
    """The settings, and problems found (each wrong value falls back to its default)."""
    try:
        with open(os.path.join(root, "config.toml"), encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        return HookSettings(), [f"config.toml unreadable ({exc}); using default hook settings"]
    cache = os.path.join(root, ".gitmem", SETTINGS_CACHE)
    raw = _cached_table(cache, text)
    if raw is None:
        import tomllib  # only when config.toml changed since the cache was written

        try:
            raw = tomllib.loads(text).get("hooks", {})
        except tomllib.TOMLDecodeError as exc:
            return HookSettings(), [f"config.toml unreadable ({exc}); using default hook settings"]
        _cache_table(cache, text, raw)
    if not isinstance(raw, dict):
        return HookSettings(), ["config.toml: [hooks] must be a table"]
    return _settings(raw)


def _cached_table(cache: str, text: str) -> object:
    """The `[hooks]` table parsed from `text` by an earlier run, or None. Keyed by the whole
    text of config.toml, not its mtime: an edit within the clock's granularity cannot fool it,
    and reading a small file costs less than importing tomllib (~10 ms)."""
    try:
        with open(cache, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != _SETTINGS_VERSION:
        return None
    if data.get("config") != text or "hooks" not in data:
        return None
    return data["hooks"]


def _cache_table(cache: str, text: str, raw: object) -> None:
    """Remember the parsed table (atomically: hooks of one session may overlap). Best effort:
    a read-only store, or TOML dates (which JSON cannot hold), just go uncached."""
    try:
        data = json.dumps({"version": _SETTINGS_VERSION, "config": text, "hooks": raw})
    except (TypeError, ValueError):
        return
    from gitmem.atomic import replace_file  # here: a run that finds the table cached skips it

    try:
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        replace_file(cache, data)
    except OSError:
        return


def _settings(raw: dict[str, object]) -> tuple[HookSettings, list[str]]:
    """Validate the table, field by field."""
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


def note_files(cache: StrPath, session: str, paths: list[str]) -> None:
    """Remember files a tool wrote (PostToolUse): an append; gitmem.session reads them."""
    if not paths:
        return
    folder = os.path.join(cache, "sessions")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{safe_name(session)}.files")
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("".join(p.replace("\n", " ") + "\n" for p in paths))


def project_paths(cwd: str, paths: Iterable[str]) -> list[str]:
    """Each path (relative ones to `cwd`) relative to the work tree that contains `cwd` (or to
    `cwd` itself), with `/`; "" for one outside it: not this session's business.
    gitmem.project.repository_root with pathlib's resolve() and relative_to(), on strings."""
    top = _repository_root(cwd) or cwd
    try:
        base = os.path.realpath(top)
    except (ValueError, OSError):
        return ["" for _ in paths]
    prefix = base if base.endswith("/") else base + "/"
    found = []
    for path in paths:
        try:
            full = os.path.realpath(os.path.join(cwd, path))
        except (ValueError, OSError):  # a NUL in the name
            found.append("")
            continue
        found.append(
            "." if full == base else full[len(prefix) :] if full.startswith(prefix) else ""
        )
    return found


def _repository_root(start: str) -> str | None:
    """The nearest of `start` and its parents (lexical ones, as pathlib's `parents`) that has
    a `.git`."""
    root = "/" if start.startswith("/") else ""
    parts = [p for p in start.split("/") if p and p != "."]
    for n in range(len(parts), -1, -1):
        candidate = root + "/".join(parts[:n]) if n else root or "."
        if os.path.exists(os.path.join(candidate, ".git")):
            return candidate
    return None


def watched_markdown(relative: str, watch: tuple[str, ...]) -> bool:
    """Whether a written file (project_paths) is Markdown under a watched dir: the indexer's."""
    if not relative or not relative.lower().endswith(MARKDOWN):
        return False
    return any(w == "." or relative == w or relative.startswith(w + "/") for w in watch)
