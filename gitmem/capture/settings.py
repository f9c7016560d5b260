"""The `[capture]` table of a store's config.toml (docs/capture.md), parsed once into a frozen
value; a wrong value is refused with the key, what it must be and the default."""

from __future__ import annotations

import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

from gitmem.errors import GitmemError

__all__ = ["HOST_COMMANDS", "CaptureSettings", "capture_settings"]

# The host agents' own non-interactive CLIs: each reads the prompt on stdin and prints the answer.
HOST_COMMANDS: dict[str, tuple[str, ...]] = {
    "claude-code": ("claude", "-p"),
    "codex": ("codex", "exec", "-"),
}


@dataclass(frozen=True)
class CaptureSettings:
    enabled: bool = True
    command: tuple[str, ...] = ()  # empty: the session's host's own CLI (HOST_COMMANDS)
    timeout: float = 300.0  # seconds the distiller may take for one span
    secrets: str = "redact"  # redact | refuse (a record with a secret is dropped)
    max_records: int = 30  # records taken from one answer; the rest are dropped, logged
    span_chars: int = 120_000  # transcript text sent in one prompt; more makes another span
    message_chars: int = 2_000  # one message's text, cut beyond this
    related: int = 8  # existing memories sent with each span (found by recall)
    min_messages: int = 10  # at Stop (every turn), wait until this many new messages
    spans_per_run: int = 4  # spans one run distills; the rest waits for the next boundary
    retry_after: float = 600.0  # seconds a failed span waits for an automatic try; doubles
    quiet: float = 1800.0  # seconds without new transcript: distilled to its end at a sweep
    scope: str = "shared"  # scope of captured records
    prompt: str = "prompts/distill.md"  # the prompt file, in the store


_INTS = ("max_records", "span_chars", "message_chars", "related", "min_messages", "spans_per_run")


def capture_settings(root: Path) -> CaptureSettings:
    """The store's `[capture]` settings (defaults for what it does not say)."""
    path = root / "config.toml"
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8")).get("capture", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise GitmemError(f"{path} cannot be read ({exc}); fix the file") from exc
    if not isinstance(raw, dict):
        raise GitmemError(f"{path}: [capture] must be a table")
    default = CaptureSettings()
    values: dict[str, object] = {}

    def bad(key: str, what: str) -> GitmemError:
        shown = getattr(default, key)
        return GitmemError(f"{path}: capture.{key} must be {what} (default {shown!r})")

    for key, value in raw.items():
        if key == "enabled":
            if not isinstance(value, bool):
                raise bad(key, "true or false")
        elif key == "command":
            if isinstance(value, str):
                value = tuple(shlex.split(value))
            elif isinstance(value, list) and all(isinstance(v, str) for v in value):
                value = tuple(value)
            else:
                raise bad(key, 'a command line, e.g. "claude -p", or a list of words')
        elif key in ("timeout", "quiet"):
            if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
                raise bad(key, "a positive number of seconds")
            value = float(value)
        elif key == "retry_after":
            if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
                raise bad(key, "a number of seconds, 0 or more")
            value = float(value)
        elif key == "secrets":
            if value not in ("redact", "refuse"):
                raise bad(key, '"redact" or "refuse"')
        elif key == "scope":
            if value not in ("shared", "agent", "private"):
                raise bad(key, '"shared", "agent" or "private"')
        elif key == "prompt":
            if not isinstance(value, str) or not value.strip():
                raise bad(key, "a path inside the store")
        elif key in _INTS:
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise bad(key, "a whole number, 1 or more")
        else:
            known = ", ".join(sorted(CaptureSettings.__dataclass_fields__))
            raise GitmemError(f"{path}: capture.{key} is not a setting; the settings are {known}")
        values[key] = value
    return CaptureSettings(**values)  # type: ignore[arg-type]
