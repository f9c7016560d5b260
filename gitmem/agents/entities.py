"""The entity indexer's entry point: a Markdown document an agent wrote, made known to memory.

For now it does the honest minimum: one `reference` record per document (kind `docs`, url the
document's path inside its project, tags `document` and `project:<id>`), whose body is the
document's outline (its headings). Written once, updated in place when the document changes,
left alone when it did not (content hash in the store's cache, `.gitmem/documents.json`). The
knowledge-graph work builds on this function: extracting entities and links from the text.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.agents.project import project_tag
from gitmem.atomic import replace_file

if TYPE_CHECKING:
    from gitmem.store.store import Store

__all__ = ["IndexedDocument", "index_document", "outline"]

STATE = "documents.json"
TAG = "document"
OUTLINE_MAX = 60  # headings kept


@dataclass(frozen=True)
class IndexedDocument:
    record: str  # the reference record's id
    operation: str  # "record", "edit", or "unchanged"


def outline(text: str) -> tuple[str, list[str]]:
    """(the first heading, the headings as an indented list)."""
    headings: list[str] = []
    title = ""
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("#"):
            continue
        level = len(line) - len(line.lstrip("#"))
        name = line[level:].strip()
        if not name or level > 6:
            continue
        title = title or name
        headings.append("  " * (level - 1) + f"- {name}")
    return title, headings[:OUTLINE_MAX]


def _first_prose(text: str) -> str:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith(("#", "```", "---", "|", "<")):
            return stripped[:237] + "…" if len(stripped) > 240 else stripped
    return ""


def index_document(
    store: Store, path: Path, relative: str, *, project: str = "", agent: str = ""
) -> IndexedDocument | None:
    """Record or update the reference to the document at `path` (`relative`: its path inside
    the project, which is what the record keeps). None when the file cannot be read."""
    from gitmem.errors import NotFound
    from gitmem.store.recordfile import dump

    try:
        data = path.read_bytes()
    except OSError:
        return None
    text = data.decode("utf-8", "replace")
    digest = hashlib.sha256(data).hexdigest()
    key = f"{project}:{relative}"
    state_path = store.cache_dir / STATE
    try:
        state = json.loads(state_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        state = {}
    known = state.get(key, {}) if isinstance(state, dict) else {}
    if known.get("sha") == digest and known.get("id"):
        return IndexedDocument(str(known["id"]), "unchanged")
    heading, headings = outline(text)
    title = heading or Path(relative).name
    where = f" in project {project}" if project else ""
    body = f"Markdown document `{relative}`{where}.\n"
    if headings:
        body += "\n## Outline\n\n" + "\n".join(headings) + "\n"
    abstract = _first_prose(text) or f"The document {relative}"
    old = None
    if known.get("id"):
        try:
            old = store.get(str(known["id"]))
        except NotFound:
            old = None
    if old is not None:
        new = old.with_(title=title, abstract=abstract, body=body)
        result = store.replace_text(old.id, dump(new), agent=agent, secrets="redact")
        done = IndexedDocument(old.id, "edit" if result.commit else "unchanged")
    else:
        result = store.record(
            "reference",
            body,
            title=title,
            abstract=abstract,
            tags=[TAG, project_tag(project)] if project else [TAG],
            agent=agent,
            source=relative,
            fields={"url": relative, "kind": "docs"},
            secrets="redact",
        )
        done = IndexedDocument(result.record.id, "record")
    state = state if isinstance(state, dict) else {}
    state[key] = {"sha": digest, "id": done.record}
    store.cache_dir.mkdir(parents=True, exist_ok=True)
    replace_file(state_path, json.dumps(state, indent=1, sort_keys=True))
    return done
