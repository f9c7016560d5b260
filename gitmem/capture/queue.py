"""What capture remembers per session, in the store's cache (`.gitmem/capture/`): where the
archived transcript is, the watermark (the byte and line distilled up to), the last
failures and when the next automatic try of a failed span is due. Git never sees it;
deleting it makes the next run distill every archive again, which de-duplication turns into
nothing new (docs/capture.md).

A state file sits beside where the archive sits: `transcripts/<project>/<name>.jsonl` has
`capture/<project>/<name>.json`, so both take the archive's safe file name.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from gitmem.atomic import replace_file

__all__ = [
    "FAILURES_KEPT",
    "Failure",
    "SessionQueue",
    "enqueue",
    "find",
    "held",
    "load_all",
    "save",
]

FOLDER = "capture"
FAILURES_KEPT = 5


@dataclass(frozen=True)
class Failure:
    time: str  # ISO, UTC
    span: str  # lines, "12-40"
    reason: str


@dataclass(frozen=True)
class SessionQueue:
    session: str
    host: str
    archive: str  # relative to the cache: transcripts/<project>/<name>.jsonl
    offset: int = 0  # bytes of the archive distilled
    line: int = 0  # lines of the archive distilled
    attempts: int = 0  # failed tries of the span at the watermark
    spans: int = 0  # spans distilled
    records: int = 0  # records written
    failures: tuple[Failure, ...] = ()
    retry: str = ""  # ISO, UTC: a failed span waits for this before an automatic try
    more: bool = False  # the last run stopped at capture.spans_per_run with more left

    def archive_path(self, cache: Path) -> Path:
        return cache / self.archive

    def waiting(self, cache: Path) -> int:
        """Bytes of the archive not distilled yet."""
        try:
            return max(0, self.archive_path(cache).stat().st_size - self.offset)
        except OSError:
            return 0

    def failed(self, failure: Failure, *, counts: bool, retry: str) -> SessionQueue:
        """With `failure` noted (the same span and reason as the last replaces it) and the
        next automatic try at `retry`; `counts` toward the skip limit, or not (no distiller
        on PATH: nothing was tried)."""
        last = self.failures[-1] if self.failures else None
        same = last is not None and (last.span, last.reason) == (failure.span, failure.reason)
        kept = (*(self.failures[:-1] if same else self.failures), failure)[-FAILURES_KEPT:]
        attempts = self.attempts + 1 if counts else self.attempts
        return replace(self, attempts=attempts, failures=kept, retry=retry)


def _state_path(cache: Path, archive: str) -> Path:
    relative = Path(archive).relative_to("transcripts")
    return cache / FOLDER / relative.with_suffix(".json")


def enqueue(cache: Path, session: str, host: str, archive: Path) -> SessionQueue:
    """Note (or refresh) a session whose transcript is archived at `archive`."""
    relative = archive.relative_to(cache).as_posix()
    found = _load(_state_path(cache, relative))  # beside the archive: no scan of the others
    if found is None or found.session != session:
        state = SessionQueue(session=session, host=host, archive=relative)
    elif host and found.host != host:
        state = replace(found, host=host)
    else:
        return found  # unchanged: not written, so a running distillation's watermark stands
    save(cache, state)
    return state


def save(cache: Path, state: SessionQueue) -> None:
    path = _state_path(cache, state.archive)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = asdict(state)
    replace_file(path, json.dumps(data, indent=1))


def load_all(cache: Path) -> list[SessionQueue]:
    """Every session capture knows, oldest file first."""
    found: list[SessionQueue] = []
    folder = cache / FOLDER
    paths = sorted(folder.glob("*/*.json"), key=lambda p: (p.stat().st_mtime, p.name))
    for path in paths:
        state = _load(path)
        if state is not None:
            found.append(state)
    return found


def find(cache: Path, session: str) -> SessionQueue | None:
    return next((s for s in load_all(cache) if s.session == session), None)


def _load(path: Path) -> SessionQueue | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        failures = tuple(Failure(**f) for f in raw.pop("failures", []))
        state = SessionQueue(**raw, failures=failures)
    except (OSError, ValueError, TypeError):
        return None  # a damaged file: the cache is disposable; the archive is still there
    return state if state.archive.startswith("transcripts/") else None


@contextmanager
def held(cache: Path, state: SessionQueue) -> Iterator[bool]:
    """A non-blocking lock on one session's distillation: True when this process holds it
    (another run of the same session leaves at once)."""
    path = _state_path(cache, state.archive).with_suffix(".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
