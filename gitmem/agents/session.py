"""Agent sessions: one record per session, and a local archive of its transcript.

While a session runs, the hooks keep a small state file per session in the store's cache
(`.gitmem/sessions/<id>.json`: start time, project, host, the files it touched, the record
that describes it). PreCompact, Stop and SessionEnd turn that state into a `context` record
tagged `session` and `project:<id>`: written once, then updated in place (one commit each
time, and none when nothing changed, since Stop fires after every turn).

The raw transcript is copied to `.gitmem/transcripts/` (never into git: transcripts are big
and full of things nobody meant to keep) with secrets redacted. Transcripts are JSON lines
that only grow, so each run appends what is new since the last one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.agents.notes import safe_name, session_file
from gitmem.agents.project import project_tag
from gitmem.atomic import replace_file
from gitmem.coord.sessiontag import SESSION_TAG

if TYPE_CHECKING:
    from gitmem.store.store import Store

__all__ = [
    "SessionState",
    "archive_path",
    "archive_transcript",
    "load_state",
    "save_state",
    "write_session_record",
]

SUMMARY_MAX = 1200  # characters of the host's summary kept in the record
FILES_MAX = 200  # files listed in one session record


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class SessionState:
    session: str
    host: str = ""
    project: str = ""
    started: str = ""  # ISO time, UTC
    files: tuple[str, ...] = ()
    record: str = ""  # the session's record id, once written
    written: str = ""  # hash of what the record last said
    transcript_offset: int = 0
    summary: str = ""  # the host's latest summary (events without one keep it)


def _state_path(cache: Path, session: str) -> Path:
    return session_file(cache, session, ".json")


def load_state(cache: Path, session: str) -> SessionState:
    path = _state_path(cache, session)
    files = _touched(cache, session)  # noted by PostToolUse even when SessionStart never ran
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raw = None
    if not isinstance(raw, dict):
        return SessionState(session, files=tuple(dict.fromkeys(files)))
    return SessionState(
        session=session,
        host=str(raw.get("host", "")),
        project=str(raw.get("project", "")),
        started=str(raw.get("started", "")),
        files=tuple(dict.fromkeys([*map(str, raw.get("files", [])), *files])),
        record=str(raw.get("record", "")),
        written=str(raw.get("written", "")),
        transcript_offset=int(raw.get("transcript_offset", 0) or 0),
        summary=str(raw.get("summary", "")),
    )


def save_state(cache: Path, state: SessionState) -> None:
    path = _state_path(cache, state.session)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "session": state.session,
        "host": state.host,
        "project": state.project,
        "started": state.started,
        "files": list(state.files),
        "record": state.record,
        "written": state.written,
        "transcript_offset": state.transcript_offset,
        "summary": state.summary,
    }
    replace_file(path, json.dumps(data, indent=1))  # hooks of one session may overlap


def _touched(cache: Path, session: str) -> list[str]:
    """The files PostToolUse noted (notes.note_files)."""
    try:
        text = session_file(cache, session, ".files").read_text(encoding="utf-8")
    except OSError:
        return []
    return [line for line in text.splitlines() if line]


def _hash(parts: tuple[str, ...] | list[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:16]


def _body(state: SessionState, ended: datetime, summary: str) -> str:
    lines = [
        f"Agent session `{state.session}` ({state.host or 'unknown host'})"
        + (f" in project {state.project}." if state.project else "."),
        "",
        f"- started: {state.started or 'unknown'}",
        f"- last activity: {_iso(ended)}",
    ]
    if state.files:
        lines += ["", "## Files touched", ""]
        lines += [f"- {p}" for p in state.files[:FILES_MAX]]
        if len(state.files) > FILES_MAX:
            lines.append(f"- … and {len(state.files) - FILES_MAX} more")
    if summary:
        lines += ["", "## Summary", "", summary]
    return "\n".join(lines) + "\n"


def _abstract(state: SessionState, summary: str) -> str:
    first = next((ln.strip() for ln in summary.splitlines() if ln.strip()), "")
    if first:
        return first[:237] + "…" if len(first) > 240 else first
    if state.files:
        names = ", ".join(Path(p).name for p in state.files[:5])
        more = f" and {len(state.files) - 5} more" if len(state.files) > 5 else ""
        return f"Touched {len(state.files)} file{'s' * (len(state.files) != 1)}: {names}{more}"
    return "No files touched."


def write_session_record(
    store: Store,
    state: SessionState,
    *,
    summary: str = "",
    summary_changes: bool = True,
    now: datetime | None = None,
) -> SessionState:
    """Write or update the session's record (one commit), unless nothing changed; with
    `summary_changes` False a new summary alone does not count as a change (Stop fires after
    every turn: a commit per turn would be noise). Returns the new state (remember it with
    save_state)."""
    from gitmem.errors import NotFound
    from gitmem.store.recordfile import dump

    moment = (now or datetime.now(UTC)).replace(microsecond=0)
    summary = summary.strip()[:SUMMARY_MAX]
    digest = f"{_hash(state.files)}:{_hash([summary])}"
    files_same = state.written.split(":")[0] == digest.split(":")[0]
    if state.record and (digest == state.written or (files_same and not summary_changes)):
        return state
    day = (state.started or _iso(moment))[:10]
    title = f"Session {day}" + (f" in {state.project}" if state.project else "")
    body = _body(state, moment, summary)
    abstract = _abstract(state, summary)
    agent = state.host or "agent"
    if state.record:
        try:
            old = store.get(state.record)
        except NotFound:
            old = None
        if old is not None and old.id == state.record:
            new = old.with_(title=title, abstract=abstract, body=body, updated=moment)
            store.replace_text(old.id, dump(new), agent=agent, secrets="redact", now=moment)
            return replace(state, written=digest)
    tags = [SESSION_TAG, state.host] + ([project_tag(state.project)] if state.project else [])
    result = store.record(
        "context",
        body,
        title=title,
        abstract=abstract,
        tags=[t for t in tags if t],
        agent=agent,
        scope="agent",
        source=f"{state.host or 'agent'} session {state.session}",
        fields={"project": state.project} if state.project else None,
        secrets="redact",
        now=moment,
    )
    return replace(state, record=result.record.id, written=digest)


def archive_path(cache: Path, state: SessionState) -> Path:
    """Where the session's transcript is archived (gitmem.capture reads it from there)."""
    folder = cache / "transcripts" / safe_name(state.project or "no-project")
    return folder / f"{safe_name(state.session)}.jsonl"


PIECE = 8 << 20  # bytes of transcript read, redacted and appended at a time


def archive_transcript(
    cache: Path,
    state: SessionState,
    transcript: Path,
    *,
    deadline: float | None = None,
    piece: int = PIECE,
) -> SessionState:
    """Append the transcript's new lines, secrets redacted, to the local archive: a piece of
    `piece` bytes at a time (a 200 MB transcript is never read whole), stopping between
    pieces once `deadline` (time.monotonic) has passed; the next run goes on from there."""
    import time

    from gitmem.store import guard

    try:
        size = transcript.stat().st_size
    except OSError:
        return state
    offset = state.transcript_offset if state.transcript_offset <= size else 0
    if offset == size:
        return state
    target = archive_path(cache, state)
    target.parent.mkdir(parents=True, exist_ok=True)
    with transcript.open("rb") as handle:
        handle.seek(offset)
        while offset < size and (deadline is None or time.monotonic() < deadline):
            chunk = handle.read(min(piece, size - offset))
            complete = chunk.rfind(b"\n") + 1  # a line still being written waits for a later run
            while complete == 0 and offset + len(chunk) < size:  # a line longer than a piece
                more = handle.read(min(piece, size - offset - len(chunk)))
                chunk += more
                complete = chunk.rfind(b"\n") + 1
            if complete == 0:
                break
            text, _ = guard.redact(chunk[:complete].decode("utf-8", "replace"))
            with target.open("w" if offset == 0 else "a", encoding="utf-8") as out:
                out.write(text)
            offset += complete
            handle.seek(offset)
    return replace(state, transcript_offset=offset)
