"""Where the store and the model cache are, by --store and the environment: the standard
library only, for the hook path and the fast recall path (a light module: docs/architecture.md)."""

from __future__ import annotations

import os

# A constant rather than typing's: the hook path must not import typing (~10 ms). mypy
# honours the name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    StrPath = str | os.PathLike[str]

__all__ = ["is_store", "model_cache", "store_dir", "store_path"]


def store_path(flag: str | None, env: Mapping[str, str]) -> Path:
    """--store, then GITMEM_STORE, then $XDG_DATA_HOME/gitmem/store, then
    ~/.local/share/gitmem/store. gitmem.store.config.resolve_store_path is this function; it lives
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
