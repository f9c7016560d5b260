"""The prompt sent to the distiller: the store's prompt file (editable; `prompts/distill.md`
by default), then the record types it may write, the existing memories the span most likely
touches (found by recall), and the span's messages. What is sent is docs/capture.md's list."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from gitmem.capture.transcript import Message
from gitmem.errors import GitmemError
from gitmem.store.record import Record
from gitmem.store.schema import Schema

__all__ = ["build_prompt", "prompt_text", "retry_prompt"]


def prompt_text(root: Path, relative: str) -> str:
    """The store's prompt file; the shipped one when the store has none (an older store)."""
    try:
        return (root / relative).read_text(encoding="utf-8")
    except FileNotFoundError:
        from gitmem.store.config import template_files

        shipped = template_files().get("prompts/distill.md")
        if shipped is None:
            raise GitmemError(f"no prompt file at {root / relative}; restore it") from None
        return shipped.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GitmemError(f"{root / relative} cannot be read ({exc}); fix or restore it") from exc


def _types(schemas: Mapping[str, Schema]) -> list[str]:
    lines = ["## Record types", ""]
    for schema in schemas.values():
        fields = ", ".join(
            f"{f.name} ({f.kind}{': ' + '|'.join(f.choices) if f.choices else ''}"
            f"{', required' if f.required else ''})"
            for f in schema.fields
        )
        key = f"; key: {' + '.join(schema.key)}" if schema.key else ""
        lines.append(f"- {schema.type}: {schema.description} Fields: {fields or 'none'}{key}")
    return lines


def _related(records: Sequence[Record]) -> list[str]:
    lines = ["", "## Existing memories", ""]
    if not records:
        return [*lines, "(none found)"]
    for r in records:
        keyed = ", ".join(f"{k}={v}" for k, v in r.fields if isinstance(v, str) and len(v) < 80)
        lines.append(
            f"- {r.id} [{r.type}] {r.title}: {r.abstract}" + (f" ({keyed})" if keyed else "")
        )
    return lines


def build_prompt(
    instructions: str,
    schemas: Mapping[str, Schema],
    related: Sequence[Record],
    messages: Sequence[Message],
    project: str = "",
) -> str:
    lines = [instructions.rstrip(), "", *_types(schemas), *_related(related), ""]
    lines += ["## Transcript" + (f" (project {project})" if project else ""), ""]
    lines += [f"[{m.line}] {m.role}: {m.text}" for m in messages]
    return "\n".join(lines) + "\n"


def retry_prompt(prompt: str, problems: Sequence[str]) -> str:
    """The same prompt once more, with what was wrong with the first answer."""
    listed = "\n".join(f"- {p}" for p in problems[:40])
    return (
        f"{prompt}\n## Your previous answer was refused\n\n{listed}\n\n"
        "Answer again with JSON only, in the shape asked for above.\n"
    )
