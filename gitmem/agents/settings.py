"""The `[hooks]` table of a store's config.toml, parsed once and cached as JSON: the standard
library only, for the hook path (a light module: docs/architecture.md)."""

from __future__ import annotations

import json
import os

# A constant rather than typing's: the hook path must not import typing (~10 ms). mypy
# honours the name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

    StrPath = str | os.PathLike[str]

__all__ = ["SETTINGS_CACHE", "HookSettings", "hook_settings"]

SETTINGS_CACHE = "hook-settings.json"  # in the store's cache: the `[hooks]` table, parsed
_SETTINGS_VERSION = 1


class HookSettings:
    """The `[hooks]` table of the store's config.toml (docs/hooks.md). A plain class rather
    than a frozen dataclass or a NamedTuple: importing dataclasses or typing costs the
    code-edit hook ~10 ms. Final: mypy keeps it read-only."""

    __slots__ = (
        "archive_transcripts",
        "context_bytes",
        "disabled",
        "handoff_bytes",
        "mirror_auto_memory",
        "prompt_bytes",
        "prompt_recall",
        "sync_timeout",
        "timeout",
        "watch",
        "watch_projects",
    )
    context_bytes: Final[int]  # budget of the SessionStart block
    prompt_recall: Final[bool]  # UserPromptSubmit recall: off unless asked for
    prompt_bytes: Final[int]  # budget of the UserPromptSubmit block
    watch: Final[tuple[str, ...]]  # Markdown under these dirs goes to the indexer
    watch_projects: Final[dict[str, tuple[str, ...]]]  # a project's own dirs instead (by id)
    disabled: Final[frozenset[str]]  # event names to ignore, as written (either spelling)
    sync_timeout: Final[float]  # seconds SessionStart gives `gitmem sync`
    timeout: Final[float]  # hard limit of any hook, seconds
    mirror_auto_memory: Final[bool]
    archive_transcripts: Final[bool]
    handoff_bytes: Final[int]  # of context_bytes, given to the handoff (docs/coord.md); 0: none

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
        handoff_bytes: int = 0,
        watch_projects: dict[str, tuple[str, ...]] | None = None,
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
        self.handoff_bytes = handoff_bytes
        self.watch_projects = watch_projects or {}

    def watched(self, project: str) -> tuple[str, ...]:
        """The watched directories of `project` (an id, as gitmem.agents.project finds it):
        its own list in `[hooks.watch_projects]`, else `watch`."""
        return self.watch_projects.get(project, self.watch)

    def any_watched(self) -> tuple[str, ...]:
        """Every directory some project watches: what the hook's quick check looks under."""
        every = [*self.watch, *(w for dirs in self.watch_projects.values() for w in dirs)]
        return tuple(dict.fromkeys(every))

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

    handoff = pick("handoff_bytes", int, base.handoff_bytes)
    assert isinstance(handoff, int)
    if handoff < 0:
        problems.append("config.toml: hooks.handoff_bytes must be 0 or more; using 0")
        handoff = 0
    watch = pick("watch", list, list(base.watch))
    disabled = pick("disabled", list, [])
    assert isinstance(watch, list) and isinstance(disabled, list)
    per_project = pick("watch_projects", dict, {})
    assert isinstance(per_project, dict)
    projects: dict[str, tuple[str, ...]] = {}
    for name, dirs in per_project.items():
        if not isinstance(dirs, list):
            problems.append(f"config.toml: hooks.watch_projects.{name} must be a list; ignored")
            continue
        projects[str(name)] = _dirs(dirs)
    settings = HookSettings(
        context_bytes=int(positive("context_bytes", base.context_bytes)),
        prompt_recall=bool(pick("prompt_recall", bool, base.prompt_recall)),
        prompt_bytes=int(positive("prompt_bytes", base.prompt_bytes)),
        watch=_dirs(watch),
        disabled=frozenset(str(d) for d in disabled),
        sync_timeout=positive("sync_timeout", base.sync_timeout),
        timeout=positive("timeout", base.timeout),
        mirror_auto_memory=bool(pick("mirror_auto_memory", bool, base.mirror_auto_memory)),
        archive_transcripts=bool(pick("archive_transcripts", bool, base.archive_transcripts)),
        handoff_bytes=handoff,
        watch_projects=projects,
    )
    return settings, problems


def _dirs(values: list[object]) -> tuple[str, ...]:
    return tuple(str(w).strip("/") for w in values if str(w).strip("/"))
