"""Where a store is, and what its config.toml says.

The library never reads the environment itself: entry points pass the variables in.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.errors import GitmemError
from gitmem.store.location import store_path

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

__all__ = [
    "STORE_FORMAT",
    "Config",
    "load_config",
    "resolve_store_path",
    "template_files",
]

STORE_FORMAT = 1
CONFIG_NAME = "config.toml"
# The static model shipped inside gitmem (gitmem/models/minilm-256/): semantic recall with no
# download (docs/search.md, "The embedding model").
DEFAULT_MODEL = "builtin:minilm-256"
# What `gitmem init` wrote before gitmem shipped a model: a hub id, stands for DEFAULT_MODEL
# while it is not downloaded (gitmem.index.model.configured_model).
FORMER_DEFAULT_MODEL = "minishlab/potion-base-8M"


@dataclass(frozen=True)
class Config:
    format: int = STORE_FORMAT
    max_body_bytes: int = 65536
    model: str = DEFAULT_MODEL


def resolve_store_path(flag: str | None, env: Mapping[str, str]) -> Path:
    """--store, then GITMEM_STORE, then $XDG_DATA_HOME/gitmem/store, then
    ~/.local/share/gitmem/store (written once, in the hook path's stdlib-only module)."""
    return store_path(flag, env)


def load_config(root: Path) -> Config:
    path = root / CONFIG_NAME
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GitmemError(
            f"{path} is missing, so {root} is not a gitmem store — "
            f'run "gitmem init {root}" to make it one'
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise GitmemError(f"{path} is not valid TOML ({exc}); fix the file") from exc
    store = raw.get("store", {})
    limits = raw.get("limits", {})
    index = raw.get("index", {})
    fmt = store.get("format", STORE_FORMAT)
    if not isinstance(fmt, int) or fmt > STORE_FORMAT:
        raise GitmemError(
            f"{path} says store format {fmt!r}, newer than this gitmem understands "
            f"({STORE_FORMAT}); upgrade gitmem"
        )
    max_body = limits.get("max_body_bytes", Config.max_body_bytes)
    if not isinstance(max_body, int) or max_body <= 0:
        raise GitmemError(f"{path}: limits.max_body_bytes must be a positive whole number")
    model = index.get("model", DEFAULT_MODEL)
    if not isinstance(model, str):
        raise GitmemError(
            f'{path}: index.model must be text ("builtin:NAME", a hub id, a directory, or "none")'
        )
    return Config(format=fmt, max_body_bytes=max_body, model=model)


def template_files() -> dict[str, bytes]:
    """path -> content of every file of the store template, what `gitmem init` commits."""
    files: dict[str, bytes] = {}
    _collect(_template_root(), "", files)
    return files


def _template_root() -> Traversable:
    """The store template: shipped in the wheel as gitmem.store_template; in a source
    checkout (an editable install) it is store-template/ beside the package."""
    source = Path(__file__).resolve().parents[2] / "store-template"
    if source.is_dir():
        return source
    from importlib import resources  # here: a recall (gitmem.cli.quickrecall) never needs it

    return resources.files("gitmem.store_template")


def _collect(node: Traversable, prefix: str, out: dict[str, bytes]) -> None:
    for child in node.iterdir():
        name = f"{prefix}{child.name}"
        if child.name in ("__pycache__", "__init__.py"):
            continue
        if child.is_dir():
            _collect(child, name + "/", out)
        else:
            out[name] = child.read_bytes()
