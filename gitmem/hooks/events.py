"""The work of each hook event, past the no-op check of gitmem.hooks.main.

gitmem.hooks.main (the entry point) imports this module only when an event has work to do, so that
the no-op path does not pay for pathlib, typing or these handlers; nor does a PostToolUse that
wrote no Markdown under a watched dir, which gitmem.hooks.main notes with gitmem.agents.notes alone.
Each handler takes the parsed call (`Hook`) and returns the context to inject ("" for none);
the modules that open git, the index or the model load inside the handlers that need them.
docs/hooks.md explains each event.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gitmem.agents import notes
from gitmem.agents import settings as hooksettings
from gitmem.store import gitfiles

if TYPE_CHECKING:
    from gitmem.agents.session import SessionState

__all__ = ["HANDLERS", "LOG_NAME", "Hook", "log"]

LOG_NAME = "hooks.log"
LOG_MAX = 256 * 1024


class Hook(NamedTuple):
    """One hook call, parsed at the boundary (a NamedTuple: dataclasses would cost the code-edit
    path ~14 ms of imports)."""

    event: str  # kebab-case
    host: str
    root: Path  # the store
    payload: Mapping[str, Any]
    written: tuple[str, ...]  # PostToolUse: the files the tool wrote, as the payload names them
    settings: hooksettings.HookSettings
    env: Mapping[str, str]
    started: float

    @property
    def session(self) -> str:
        return str(self.payload.get("session_id") or "unknown")

    @property
    def cwd(self) -> Path:
        return Path(str(self.payload.get("cwd") or self.env.get("PWD") or "."))

    @property
    def cache(self) -> Path:
        return self.root / ".gitmem"

    def deadline(self, reserve: float = 1.0) -> float:
        """A monotonic time to stop starting new work, leaving `reserve` seconds."""
        return self.started + max(0.0, self.settings.timeout - reserve)

    def log(self, message: str) -> None:
        log(self.root, f"{self.event}: {message}")


def log(root: Path | str, message: str) -> None:
    """Append a line to the hook log, rotating it past LOG_MAX. Never raises."""
    try:
        folder = Path(root) / ".gitmem"
        folder.mkdir(exist_ok=True)
        path = folder / LOG_NAME
        try:
            if path.stat().st_size > LOG_MAX:
                os.replace(path, folder / (LOG_NAME + ".1"))
        except FileNotFoundError:
            pass
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with path.open("a", encoding="utf-8") as handle:
            handle.write(f"{stamp} {' '.join(message.split())}\n")
    except OSError:
        pass


def _project(hook: Hook) -> str:
    from gitmem.agents.project import find_project

    return find_project(hook.cwd)


def session_start(hook: Hook) -> str:
    from gitmem.agents.session import SessionState, load_state, save_state

    project = _project(hook)
    state = load_state(hook.cache, hook.session)
    if not state.started:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        state = SessionState(hook.session, host=hook.host, project=project, started=stamp)
        save_state(hook.cache, state)
    _present(hook, project)  # before the sync, which shares it
    if gitfiles.has_remote(hook.root / ".git"):
        _sync(hook, wait=True)
    if hook.settings.mirror_auto_memory and hook.host == "claude-code":
        try:
            _mirror(hook, project)
        except Exception as exc:  # the mirror is extra; the block is what the session needs
            hook.log(f"auto-memory: {type(exc).__name__}: {exc}")
    from gitmem.agents.context import build

    budget = hook.settings.context_bytes
    share = min(hook.settings.handoff_bytes, budget // 2)
    text = build(hook.root, project=project, budget=budget - share).text
    text = text + _handoff(hook, budget - len(text.encode("utf-8"))) if share else text
    _sweep_later(hook)  # last: the block is what the session is waiting for
    return text


def _handoff(hook: Hook, budget: int) -> str:
    """The coordination part of the handoff (gitmem.coord.handoff.SESSION_PARTS) within
    `budget` bytes, when hooks.handoff_bytes asks for one; "" when it fails (logged)."""
    from gitmem.coord.coord import Coord
    from gitmem.coord.handoff import SESSION_PARTS, render
    from gitmem.coord.presence import device_name
    from gitmem.store.store import Store

    agent = hook.env.get("GITMEM_AGENT", "").strip() or hook.host
    try:
        data = Coord(Store.open(hook.root), agent, device_name(hook.env)).handoff()
    except Exception as exc:  # extra, like the mirror: the block is what the session needs
        hook.log(f"handoff: {type(exc).__name__}: {exc}")
        return ""
    return render(data, budget=budget, parts=SESSION_PARTS, empty="")


def _present(hook: Hook, project: str) -> None:
    """A heartbeat for the session's agent ($GITMEM_AGENT, else the host): a cache file, no
    commit (gitmem.coord.presence). Extra, like the mirror: a failure is logged, not raised."""
    from gitmem.coord.presence import device_name, heartbeat

    agent = hook.env.get("GITMEM_AGENT", "").strip() or hook.host
    try:
        heartbeat(hook.cache, agent, device_name(hook.env), project=project)
    except (OSError, ValueError) as exc:
        hook.log(f"presence: {type(exc).__name__}: {exc}")


def _sync(hook: Hook, *, wait: bool) -> None:
    """`gitmem sync` in a child process: waited for (bounded) at SessionStart, detached after
    a session's writes so the agent never waits on the network."""
    timeout = hook.settings.sync_timeout
    command = [sys.executable, "-m", "gitmem", "sync", "--timeout", f"{timeout:g}"]
    # At a session's start the index is left behind: catching it up would load the model, and
    # the context block reads what changed from git (gitmem.agents.context).
    command += ["--store", str(hook.root), *(["--no-index"] if wait else [])]
    # `gitmem sync` runs ssh in batch mode itself, and leaves a store's core.sshCommand alone.
    env = {**hook.env, "GIT_TERMINAL_PROMPT": "0"}
    if not wait:
        from gitmem.detach import start_detached

        if not start_detached(command, env, str(hook.cache / LOG_NAME)):
            hook.log("could not start the background sync; the next SessionStart syncs")
        return
    import subprocess

    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
            timeout=min(timeout + 1.0, max(0.1, hook.deadline(2.0) - time.monotonic())),
        )
    except subprocess.TimeoutExpired:
        hook.log(f"sync took longer than {timeout:g} s; skipped (offline?)")
        return
    if done.returncode != 0:
        hook.log(f"sync failed ({done.returncode}): {done.stderr.strip()[:500]}")


def _mirror(hook: Hook, project: str) -> None:
    from gitmem.agents.automemory import changed_files, memory_dir, mirror

    home = Path(hook.env.get("HOME") or Path.home())
    directory = memory_dir(str(hook.payload.get("transcript_path") or ""), hook.cwd, home)
    changed, gone = changed_files(hook.cache, directory)
    if not changed and not gone:
        return
    from gitmem.store.store import Store

    result = mirror(
        Store.open(hook.root),
        directory,
        project=project,
        agent=hook.host,
        deadline=hook.deadline(3.0),
    )
    for problem in result.problems:
        hook.log(f"auto-memory: {problem}")
    if result.left:
        hook.log(f"auto-memory: {result.left} changed files left for the next session")


def user_prompt_submit(hook: Hook) -> str:
    if not hook.settings.prompt_recall:
        return ""
    prompt = " ".join(str(hook.payload.get("prompt") or "").split())
    if _trivial(prompt):
        return ""
    from gitmem.agents.contextblock import Item, render_ranked
    from gitmem.api import Store

    store = Store.open(hook.root)
    hits = store.recall(prompt[:2000], limit=8).hits
    items = [Item(h.id, h.type, h.title, h.abstract, (), h.updated, h.weight) for h in hits]
    title = "memories related to this prompt"
    return render_ranked(items, title=title, budget=hook.settings.prompt_bytes).text


def _trivial(prompt: str) -> bool:
    """Greetings, one-word answers and slash commands: nothing to recall for."""
    words = prompt.split()
    return len(words) < 3 or len(prompt) < 12 or prompt.startswith("/")


def post_tool_use(hook: Hook) -> str:
    """Note the written files for the session record; index Markdown under watched dirs.
    (gitmem.hooks.main does the noting itself when there is no such Markdown: the common case.)"""
    paths = hook.written
    if not paths:
        return ""
    cwd = hook.cwd
    relative = notes.project_paths(str(cwd), paths)
    notes.note_files(hook.cache, hook.session, [r for r in relative if r])
    watch = hook.settings.watched(_project(hook))
    watched = [
        (cwd / p if not Path(p).is_absolute() else Path(p), r)
        for p, r in zip(paths, relative, strict=True)
        if notes.watched_markdown(r, watch)
    ]
    if not watched:
        return ""
    files = [path for path, _ in watched]
    if _in_background(hook.env) and _index_later(hook.root, cwd, hook.host, files, hook.env):
        return ""
    from gitmem.agents.entities import index_written
    from gitmem.store.store import Store

    report = index_written(
        Store.open(hook.root),
        cwd,
        files,
        hook.settings,
        agent=hook.host,
    )
    for skipped in (f for f in report.files if f.action == "skipped"):
        hook.log(f"{skipped.path} not indexed: {skipped.note}")
    return ""


def _in_background(env: Mapping[str, str]) -> bool:
    return env.get("GITMEM_BACKGROUND_INDEX", "").strip().lower() not in ("off", "0", "no", "false")


def _index_later(
    root: Path, cwd: Path, agent: str, paths: Sequence[Path], env: Mapping[str, str]
) -> bool:
    """Start the detached indexer (gitmem.hooks.indexlater); False when it could not start
    (the hook indexes in its own process then)."""
    from gitmem.detach import start_detached

    args = [sys.executable, "-m", "gitmem.hooks.indexlater", str(root), str(cwd), agent]
    return start_detached([*args, *(str(p) for p in paths)], env)


def session_record(hook: Hook) -> str:
    """PreCompact, Stop, SessionEnd: the session record, the transcript, a background push."""
    from dataclasses import replace

    from gitmem.agents.session import (
        archive_transcript,
        load_state,
        save_state,
        write_session_record,
    )

    state = load_state(hook.cache, hook.session)
    if not state.host:
        state = replace(state, host=hook.host, project=state.project or _project(hook))
    _present(hook, state.project)
    given = str(hook.payload.get("summary") or hook.payload.get("last_assistant_message") or "")
    if given:  # kept: a later event without one (SessionEnd, PreCompact) must not erase it
        state = replace(state, summary=given)
        save_state(hook.cache, state)
    if state.files or state.summary:
        from gitmem.store.store import Store

        before = state.written
        state = write_session_record(
            Store.open(hook.root),
            state,
            summary=state.summary,
            summary_changes=hook.event != "stop",
        )
        save_state(hook.cache, state)
        wrote = state.written != before
        if wrote and hook.event != "pre-compact" and gitfiles.has_remote(hook.root / ".git"):
            _sync(hook, wait=False)
    # After the record: a huge first transcript may use up the time that is left.
    transcript = str(hook.payload.get("transcript_path") or "")
    if transcript and hook.settings.archive_transcripts:
        path = Path(transcript).expanduser()
        state = archive_transcript(hook.cache, state, path, deadline=hook.deadline(2.0))
        save_state(hook.cache, state)
        _distill_later(hook, state)
    return ""


def _distill_later(hook: Hook, state: SessionState) -> None:
    """Note the archived session for capture and start `gitmem distill` on it, detached
    (docs/capture.md): the hook returns at once; the distiller may take minutes. The run
    then sweeps the other sessions whose turn has come (gitmem.capture.sweep)."""
    from gitmem.agents.session import archive_path
    from gitmem.capture.queue import enqueue

    archive = archive_path(hook.cache, state)
    if not archive.is_file():
        return
    enqueue(
        hook.cache, state.session, state.host or hook.host, archive
    )  # `gitmem distill` finds it
    if _capture_on(hook):
        _start_distill(hook, ["--session", state.session])


def _sweep_later(hook: Hook) -> None:
    """At SessionStart: start the sweep of the sessions waiting for capture, detached (a
    distiller that failed at the last SessionEnd, a Codex session gone quiet). Nothing when
    no session was ever noted for capture."""
    if (hook.cache / "capture").is_dir() and _capture_on(hook):
        _start_distill(hook, [])


def _start_distill(hook: Hook, args: list[str]) -> None:
    from gitmem.detach import start_detached

    command = [sys.executable, "-m", "gitmem", "distill", *args, "--sweep"]
    command += ["--store", str(hook.root), "--background", "--trigger", hook.event]
    if not start_detached(command, hook.env, str(hook.cache / LOG_NAME)):
        hook.log("could not start the distillation; the next boundary tries again")


def _capture_on(hook: Hook) -> bool:
    """Whether a distillation may start: not GITMEM_CAPTURE=off, nor `enabled = false`
    under `[capture]` in config.toml. Read cheaply, since Stop comes after every turn:
    tomllib only when the text says `enabled = false` somewhere. A file that cannot be read
    starts the run, which says what is wrong with it in hooks.log."""
    if hook.env.get("GITMEM_CAPTURE", "").strip().lower() in ("off", "0", "no", "false"):
        return False
    try:
        text = (hook.root / "config.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return True
    import re

    if not re.search(r"""\benabled["']?\s*=\s*false\b""", text):
        return True
    import tomllib

    try:
        table = tomllib.loads(text).get("capture")
    except tomllib.TOMLDecodeError:
        return True
    return not (isinstance(table, dict) and table.get("enabled") is False)


HANDLERS: dict[str, Callable[[Hook], str]] = {
    "session-start": session_start,
    "user-prompt-submit": user_prompt_submit,
    "post-tool-use": post_tool_use,
    "pre-compact": session_record,
    "stop": session_record,
    "session-end": session_record,
}
