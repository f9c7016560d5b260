"""A record's file form: Markdown with YAML frontmatter, written and read deterministically.

The format is pinned in docs/record-format.md. YAML is read with PyYAML's BaseLoader so that
no value is silently converted (``yes``, ``2026-01-01``, ``1e3`` all stay strings); the typed
fields are converted once, at the boundary (gitmem.store.record.from_mapping).
"""

from __future__ import annotations

import functools
import re
from datetime import datetime
from typing import Any

from gitmem.errors import RecordInvalid
from gitmem.store.record import Record, format_time, from_mapping

__all__ = ["MAX_DEPTH", "dump", "load_yaml", "parse", "split"]


# --- YAML emission ---------------------------------------------------------------------------
# Our own emitter, not yaml.dump: it is ~50x faster (imports of 10k records) and its output
# depends on nothing but this code, so every machine writes a record byte for byte the same.
# Plain scalars are used where they are unambiguous for any YAML 1.1 reader; everything else
# is double-quoted with escapes.

# The emitter's patterns are strings, compiled (and cached) by `re` on first use: compiled at
# import they cost every command, a recall included, ~5 ms.
_PLAIN = r"^[A-Za-z0-9_(][A-Za-z0-9_ .,/@+()'=<>^$%&*!?;:~`|\\-]*$"
_FLOW_UNSAFE = frozenset(",[]{}:?")
_RESERVED = (
    r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF"
    r"|null|Null|NULL|~|=|<<)$"
    r"|^[-+]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?$"  # numbers, ".", "1.", "1e3"
    r"|^[-+]?0[xob]|^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$"  # hex, sexagesimal
    r"|^[-+]?\.(?:inf|Inf|INF|nan|NaN|NAN)$"
    r"|^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"  # anything date-like
)
_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\x85": "\\N",
    "\u2028": "\\L",
    "\u2029": "\\P",
    "\ufeff": "\\uFEFF",
}
_NEEDS_ESCAPE = '[\\\\"\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\ufeff\\ud800-\\udfff\\ufffe\\uffff]'


def _quote(text: str) -> str:
    def escape(match: re.Match[str]) -> str:
        ch = match.group()
        if ch in _ESCAPES:
            return _ESCAPES[ch]
        code = ord(ch)
        return f"\\x{code:02X}" if code <= 0xFF else f"\\u{code:04X}"

    return '"' + re.sub(_NEEDS_ESCAPE, escape, text) + '"'


@functools.lru_cache(maxsize=8192)
def _scalar(text: str, in_flow: bool = False) -> str:
    plain = (
        re.match(_PLAIN, text) is not None
        and not text.endswith((" ", ":"))
        and ": " not in text
        and " #" not in text
        and not re.match(_RESERVED, text)
        and not (in_flow and any(ch in _FLOW_UNSAFE for ch in text))
    )
    return text if plain else _quote(text)


def _value(value: Any) -> str:
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_scalar(str(v), in_flow=True) for v in value) + "]"
    text = str(value)
    return _scalar(text) if text else '""'


def dump(record: Record) -> str:
    """The file text: fixed key order, deterministic quoting, UTC timestamps, body untouched."""
    r = record
    lines = [
        "---",
        f"id: {_value(r.id)}",
        f"type: {_value(r.type)}",
        f"title: {_value(r.title)}",
        f"abstract: {_value(r.abstract)}",
        f"tags: {_value(r.tags)}",
        f"agent: {_value(r.agent)}",
        f"scope: {_value(r.scope)}",
        f"source: {_value(r.source)}",
        f"created: {format_time(r.created)}",
        f"updated: {format_time(r.updated)}",
        f"weight: {float(r.weight)!r}",
        f"links: {_value(r.links)}",
        f"supersedes: {_value(r.supersedes)}",
        f"superseded_by: {_value(r.superseded_by)}",
        f"status: {_value(r.status)}",
    ]
    lines.extend(f"{key}: {_value(value)}" for key, value in r.fields)
    return "\n".join(lines) + "\n---\n\n" + r.body


_OPEN_RE = re.compile(r"\A---[ \t]*\r?\n")
_CLOSE_RE = re.compile(r"^---[ \t]*\r?$", re.MULTILINE)


def split(text: str) -> tuple[str, str]:
    """(frontmatter YAML, body). The one blank line ``dump`` puts after the fence is dropped."""
    if text.startswith("\ufeff"):
        raise RecordInvalid(
            "starts with a byte-order mark (U+FEFF) before the opening '---'; "
            "save the file as UTF-8 without a BOM"
        )
    opening = _OPEN_RE.match(text)
    if opening is None:
        raise RecordInvalid("no frontmatter: the file must start with a '---' line")
    closing = _CLOSE_RE.search(text, opening.end())
    if closing is None:
        raise RecordInvalid("frontmatter is not closed: add a '---' line after the YAML")
    front = text[opening.end() : closing.start()]
    rest = text[closing.end() :]
    for newline in ("\r\n", "\n"):
        if rest.startswith(newline):
            rest = rest[len(newline) :]
            break
    for newline in ("\r\n", "\n"):
        if rest.startswith(newline):
            rest = rest[len(newline) :]
            break
    return front, rest


def parse(text: str) -> Record:
    """Parse a record file. Raises RecordInvalid listing every problem found."""
    front, body = split(text)
    try:
        data = _fast_load(front)
        if data is None:
            data = load_yaml(front)
    except ValueError as exc:
        raise RecordInvalid(f"frontmatter is not valid YAML: {exc}".replace("\n", " ")) from exc
    if not isinstance(data, dict):
        raise RecordInvalid("frontmatter must be a YAML mapping of field: value")
    if "body" in data:
        raise RecordInvalid(
            "body: not a frontmatter field; the body is the text after the closing '---'"
        )
    return from_mapping(data, body)


# --- reading what dump wrote, without YAML ------------------------------------------------
# Frontmatter exactly as `dump` writes it is read here, ~20x faster than PyYAML (an index
# rebuild parses every record). Anything else (a person's comments, block lists, other
# quoting) returns None and goes to PyYAML. A value is accepted only in the form our emitter
# would write it, so both readers give the same answer (a property test checks this).

_FAST_LINE = re.compile(r"([a-z][a-z0-9_]*): (.*)")
_FAST_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
_FAST_FLOAT = re.compile(r"-?\d+\.\d+(?:e[-+]\d+)?|-?\d+e[-+]\d+|inf|nan")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_UNESCAPES = {
    "\\": "\\",
    '"': '"',
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "N": "\x85",
    "L": "\u2028",
    "P": "\u2029",
}
_ESCAPE_SEQ = re.compile(r"\\(x[0-9A-F]{2}|u[0-9A-F]{4}|.)")


def _fast_load(front: str) -> dict[str, Any] | None:
    data: dict[str, Any] = {}
    for line in front.split("\n"):
        if not line:
            continue
        match = _FAST_LINE.fullmatch(line)
        if match is None or match.group(1) in data:
            return None
        key, raw = match.groups()
        if key in ("created", "updated"):
            value: Any = raw if _FAST_TIME.fullmatch(raw) else None
        elif key == "weight":
            value = raw if _FAST_FLOAT.fullmatch(raw) else None
        elif raw.startswith("["):
            value = _fast_list(raw)
        else:
            value = _fast_scalar(raw, in_flow=False)
        if value is None:
            return None
        data[key] = value
    return data


@functools.lru_cache(maxsize=4096)  # types, agents, scopes, tags: the same few, again and again
def _fast_scalar(raw: str, *, in_flow: bool) -> str | None:
    if raw.startswith('"'):
        match = _QUOTED.fullmatch(raw)
        if match is None:
            return None
        try:
            text = _ESCAPE_SEQ.sub(_unescape, match.group(1))
        except KeyError:
            return None
        return text if _quote(text) == raw or (text == "" and raw == '""') else None
    return raw if raw and _scalar(raw, in_flow) == raw else None


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if len(code) > 1:
        return chr(int(code[1:], 16))
    return _UNESCAPES[code]


def _fast_list(raw: str) -> list[str] | None:
    if raw == "[]":
        return []
    if not raw.endswith("]"):
        return None
    items: list[str] = []
    rest = raw[1:-1]
    while True:
        if rest.startswith('"'):
            match = _QUOTED.match(rest)
            if match is None:
                return None
            piece, rest = rest[: match.end()], rest[match.end() :]
        else:
            piece, _, tail = rest.partition(", ")
            rest = ", " + tail if _ else ""
        value = _fast_scalar(piece, in_flow=True)
        if value is None:
            return None
        items.append(value)
        if not rest:
            return items
        if not rest.startswith(", "):
            return None
        rest = rest[2:]


def load_yaml(text: str) -> Any:
    """YAML with every scalar left as text, anchors, aliases and deep nesting refused
    (RecordInvalid; other bad YAML is ValueError): record frontmatter, and the work graph's
    entity files (gitmem.graph.frontmatter), whose bombs are refused the same way.

    PyYAML loads on first use: writing a record (our own emitter) never needs it, and the
    import costs a command ~25 ms. libyaml's parser is used when present (10x faster); both
    read our canonical output identically."""
    import yaml

    try:
        return yaml.load(text, Loader=_loader())
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from exc


# Anchors and aliases are refused as the document is composed, before anything is built from
# it: ten nested anchors of nine aliases each in 600 bytes expand to 9^10 values once a reader
# turns them into text (issue 26: 13 GB in `validate`, MemoryError in recall and sync). No
# record needs them, and gitmem never writes them. Depth is bounded too: Python's composer
# recurses, and libyaml alone allows 1,000 levels.
MAX_DEPTH = 16


@functools.cache
def _loader(libyaml: bool = True) -> type:
    """BaseLoader's reading (every scalar text) with the refusing composer; libyaml's parser
    when present and asked for, PyYAML's own otherwise (both are tested)."""
    import yaml
    from yaml.constructor import BaseConstructor
    from yaml.events import AliasEvent, CollectionStartEvent
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.resolver import BaseResolver
    from yaml.scanner import Scanner

    parsing: tuple[type, ...] = (Reader, Scanner, Parser)
    native: Any = None
    if libyaml and yaml.__with_libyaml__:
        from yaml import cyaml

        native = cyaml.CParser  # type: ignore[attr-defined]
        parsing = (native,)

    class Composer(yaml.composer.Composer):
        depth = 0

        def compose_node(self: Any, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            if isinstance(event, AliasEvent) or event.anchor is not None:
                alias = isinstance(event, AliasEvent)
                raise RecordInvalid(
                    f"frontmatter: a YAML {'alias' if alias else 'anchor'} "
                    f"({'*' if alias else '&'}{event.anchor}) at {_where(event)}; record "
                    "frontmatter refuses anchors and aliases (they can expand without bound) "
                    "— write the values out"
                )
            if isinstance(event, CollectionStartEvent):
                if self.depth >= MAX_DEPTH:
                    raise RecordInvalid(
                        f"frontmatter: nested more than {MAX_DEPTH} levels deep at "
                        f"{_where(event)}; a field is text or a flow list of text"
                    )
                self.depth += 1
                try:
                    return super().compose_node(parent, index)
                finally:
                    self.depth -= 1
            return super().compose_node(parent, index)

    class Loader(Composer, *parsing, BaseConstructor, BaseResolver):  # type: ignore[misc]
        def __init__(self, stream: str) -> None:
            if native is not None:
                native.__init__(self, stream)
            else:
                Reader.__init__(self, stream)
                Scanner.__init__(self)
                Parser.__init__(self)
            Composer.__init__(self)
            BaseConstructor.__init__(self)
            BaseResolver.__init__(self)

    return Loader


def _where(event: Any) -> str:
    """Where in the file: the frontmatter starts on its second line."""
    mark = event.start_mark
    return f"line {mark.line + 2}, column {mark.column + 1}"
