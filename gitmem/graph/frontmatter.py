"""Frontmatter of the Markdown files people and agents write (the work graph's entity files),
in whatever shape it comes: YAML between `---`, TOML between `+++`, JSON, or none.

The one importer of python-frontmatter: its handlers find and split the frontmatter, and its
detection picks the shape. What each handler *loads* is ours:
- YAML goes through the record reader's loader (gitmem.store.recordfile.load_yaml): every
  scalar stays text, and anchors, aliases and deep nesting are refused, as for records.
- TOML goes through the standard library's `tomllib`. python-frontmatter's own TOML handler
  needs the `toml` package (unmaintained, TOML 0.5, and one more dependency to vet) and is
  absent without it; tomllib is strict TOML 1.0 and already here.
- JSON through `json`, depth checked like YAML's.
TOML and JSON values are turned into text the way YAML's are left (`true`, `3`, an ISO date),
so an entity reads the same whichever shape its frontmatter had.

A frontmatter bomb raises RecordInvalid (the file is refused); frontmatter that is merely
malformed (bad syntax, not a mapping, never closed) gives an empty mapping and a `problem`,
and the file still becomes an entity.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any

import frontmatter
from frontmatter.default_handlers import BaseHandler, JSONHandler, YAMLHandler

from gitmem.errors import RecordInvalid
from gitmem.store.recordfile import MAX_DEPTH, load_yaml

__all__ = ["Frontmatter", "read_frontmatter"]


@dataclass(frozen=True)
class Frontmatter:
    """A file split: its fields (scalars as text, lists of text, nested mappings), its body,
    the shape the frontmatter had, and what was wrong with it ("" when nothing)."""

    fields: dict[str, Any]
    body: str
    format: str  # "yaml", "toml", "json" or "none"
    problem: str = ""


class _Yaml(YAMLHandler):
    def load(self, fm: str, **kwargs: object) -> Any:
        return load_yaml(fm)


class _Toml(BaseHandler):
    FM_BOUNDARY = re.compile(r"^\+{3,}\s*$", re.MULTILINE)
    START_DELIMITER = END_DELIMITER = "+++"

    def load(self, fm: str, **kwargs: object) -> Any:
        try:
            return tomllib.loads(fm)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(str(exc)) from exc


class _Json(JSONHandler):
    def load(self, fm: str, **kwargs: object) -> Any:
        try:
            return json.loads(fm)
        except RecursionError:
            raise RecordInvalid(
                "frontmatter: JSON nested without bound; a field is text or a list of text"
            ) from None


_HANDLERS: tuple[tuple[str, BaseHandler], ...] = (
    ("yaml", _Yaml()),
    ("toml", _Toml()),
    ("json", _Json()),
)


def read_frontmatter(text: str) -> Frontmatter:
    """Split and read `text`'s frontmatter. Raises RecordInvalid for a bomb (anchors and
    aliases, or nesting deeper than the record reader allows)."""
    text = text.lstrip("\ufeff")
    found = frontmatter.detect_format(text, [handler for _, handler in _HANDLERS])
    if found is None:
        return Frontmatter({}, text, "none")
    shape = next(name for name, handler in _HANDLERS if handler is found)
    try:
        front, body = found.split(text)
    except ValueError:
        closing = {"yaml": "---", "toml": "+++", "json": "}"}[shape]
        return Frontmatter({}, text, shape, f"frontmatter opened but never closed with {closing}")
    try:
        data = found.load(front)
    except ValueError as exc:  # bad syntax (YAML's, TOML's, JSON's all are ValueErrors)
        reason = " ".join(str(exc).split())[:200]
        return Frontmatter({}, body, shape, f"frontmatter is not valid {shape.upper()}: {reason}")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return Frontmatter({}, body, shape, "frontmatter is not a mapping of field: value")
    if _depth(data) > MAX_DEPTH:
        raise RecordInvalid(
            f"frontmatter: nested more than {MAX_DEPTH} levels deep; a field is text or a list"
        )
    fields = {str(key): _text(value) for key, value in data.items()}
    return Frontmatter(fields, body, shape)


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def _text(value: Any) -> Any:
    """TOML's and JSON's typed values as the text YAML would have left them."""
    if isinstance(value, dict):
        return {str(k): _text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_text(v) for v in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return str(value)
