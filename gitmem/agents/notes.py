"""The session's note of the files it wrote, and which of them are watched Markdown: the
standard library only, and neither pathlib nor typing, since PostToolUse on a code file (the
commonest tool use) goes through this module alone (a light module: docs/architecture.md)."""

from __future__ import annotations

import os
import re

# A constant rather than typing's: the hook path must not import typing (~10 ms). mypy
# honours the name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    StrPath = str | os.PathLike[str]

__all__ = [
    "MARKDOWN",
    "note_files",
    "project_paths",
    "safe_name",
    "session_file",
    "watched_markdown",
]

MARKDOWN = (".md", ".markdown", ".mdx")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def safe_name(text: str) -> str:
    """`text` as a file name: letters, digits, `.`, `_` and `-` only, at most 100."""
    return _UNSAFE.sub("-", text)[:100] or "unknown"


def session_file(cache: Path, session: str, suffix: str) -> Path:
    """`<cache>/sessions/<session><suffix>`: a running session's state (gitmem.agents.session)."""
    return cache / "sessions" / f"{safe_name(session)}{suffix}"


def note_files(cache: StrPath, session: str, paths: list[str]) -> None:
    """Remember files a tool wrote (PostToolUse): an append; gitmem.agents.session reads them."""
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
    gitmem.agents.project.repository_root with pathlib's resolve() and relative_to(), on strings."""
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
