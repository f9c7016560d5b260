"""Reading an archived transcript (gitmem.agents.session keeps it, redacted, in the store's
cache) as messages, from a watermark on, without reading the file whole.

Two hosts' JSON lines are understood (docs/capture.md): Claude Code's (`type` user/assistant,
`message.content` a string or blocks: text, tool_use, tool_result, thinking) and Codex's
rollout lines (`type` response_item/event_msg with a `payload`: message, function_call,
function_call_output, reasoning). Lines that are neither are skipped; a line that is not
JSON is counted, and a last line without its newline (still being written) is left for later.
A message's place is its line number in the archive, 1-based: what provenance names.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["LINE_LIMIT", "Message", "Span", "message_of", "read_lines", "read_span"]

LINE_LIMIT = 1 << 20  # bytes of one line read; a longer line is skipped (a pasted blob)


@dataclass(frozen=True)
class Message:
    line: int
    role: str  # user | assistant | tool
    text: str


@dataclass(frozen=True)
class Span:
    """The messages between two watermarks: lines first..last, ending at byte `end`."""

    first: int
    last: int
    end: int
    messages: tuple[Message, ...]
    unreadable: int  # lines that were not JSON (or too long)
    complete: bool  # False: cut at the size cap, more follows


def read_lines(path: Path, offset: int, line: int) -> Iterator[tuple[int, int, bytes | None]]:
    """(line number, byte offset after it, the line or None when unreadable) from `offset`,
    whose line number is `line` + 1, up to the last complete line."""
    with path.open("rb") as handle:
        handle.seek(offset)
        while True:
            raw = handle.readline(LINE_LIMIT)
            if not raw:
                return
            if raw.endswith(b"\n"):
                line += 1
                yield line, handle.tell(), raw
                continue
            while True:  # no newline: a line too long to read (skipped in pieces) or the last
                more = handle.readline(LINE_LIMIT)
                if not more:
                    return  # the last line, without its newline: not complete yet
                if more.endswith(b"\n"):
                    break
            line += 1
            yield line, handle.tell(), None


def read_span(path: Path, offset: int, line: int, *, max_chars: int, message_chars: int) -> Span:
    """The messages from the watermark (`offset`, after line `line`) on, until `max_chars` of
    message text (at least one line is taken)."""
    messages: list[Message] = []
    unreadable = 0
    used = 0
    last, end = line, offset
    for number, after, raw in read_lines(path, offset, line):
        if raw is not None:
            try:
                found = message_of(json.loads(raw))
            except ValueError:
                found = None
                unreadable += 1
        else:
            found, unreadable = None, unreadable + 1
        if found is not None:
            role, text = found
            text = text if len(text) <= message_chars else text[:message_chars] + " […]"
            if messages and used + len(text) > max_chars:
                return Span(line + 1, last, end, tuple(messages), unreadable, False)
            messages.append(Message(number, role, text))
            used += len(text)
        last, end = number, after
    return Span(line + 1, last, end, tuple(messages), unreadable, True)


def message_of(data: Any) -> tuple[str, str] | None:
    """(role, text) of one transcript line of either host; None for lines that say nothing
    (metadata, snapshots, token counts, encrypted reasoning)."""
    if not isinstance(data, dict):
        return None
    kind = data.get("type")
    if kind in ("user", "assistant") and isinstance(data.get("message"), dict):
        return _claude(kind, data["message"])
    payload = data.get("payload")
    if kind == "response_item" and isinstance(payload, dict):
        return _codex(payload)
    if kind == "summary" and isinstance(data.get("summary"), str):
        return "assistant", f"[summary] {data['summary']}"
    return None


def _claude(kind: str, message: dict[str, Any]) -> tuple[str, str] | None:
    content = message.get("content")
    if isinstance(content, str):
        return (kind, content) if content.strip() else None
    if not isinstance(content, list):
        return None
    parts: list[str] = []
    role = kind
    for block in content:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif btype == "tool_use":
            parts.append(f"[tool {block.get('name', '?')}] {_short(block.get('input'))}")
        elif btype == "tool_result":
            role = "tool"
            parts.append(f"[result] {_flat(block.get('content'))}")
    text = "\n".join(p for p in parts if p.strip())
    return (role, text) if text else None


def _codex(payload: dict[str, Any]) -> tuple[str, str] | None:
    ptype = payload.get("type")
    if ptype == "message":
        role = str(payload.get("role") or "")
        if role not in ("user", "assistant"):
            return None  # developer and system prompts: the host's, not the session's
        text = _flat(payload.get("content"))
        if role == "user" and text.lstrip().startswith(("<environment_context>", "<user_instr")):
            return None
        return (role, text) if text.strip() else None
    if ptype in ("function_call", "custom_tool_call", "local_shell_call"):
        args = payload.get("arguments", payload.get("input", payload.get("action")))
        return "assistant", f"[tool {payload.get('name', ptype)}] {_short(args)}"
    if ptype in ("function_call_output", "custom_tool_call_output"):
        return "tool", f"[result] {_flat(payload.get('output'))}"
    return None


def _flat(content: Any) -> str:
    """Text of a content value: a string, a list of text blocks, or JSON with an output."""
    if isinstance(content, str):
        if content.startswith("{"):
            try:
                inner = json.loads(content)
            except ValueError:
                return content
            if isinstance(inner, dict) and isinstance(inner.get("output"), str):
                return str(inner["output"])
        return content
    if isinstance(content, list):
        texts = [
            str(b.get("text")) for b in content if isinstance(b, dict) and b.get("text") is not None
        ]
        return "\n".join(texts)
    if isinstance(content, dict) and "text" in content:
        return str(content["text"])
    return ""


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 300 else text[:300] + " […]"
