"""`gitmem hook EVENT`: the agent host's lifecycle hooks (Claude Code, Codex).

An entry point, dispatched by gitmem/__main__.py before typer or anything heavy is imported.
It reads the host's JSON on stdin, does its event's work, and prints nothing but the host's
JSON on stdout. It fails open: it always exits 0, gives up after a hard timeout
(`hooks.timeout`, default 8 s), and writes problems to `<store>/.gitmem/hooks.log` (kept under
256 KiB), never to the agent's screen. Without a store it does nothing at all.

The no-op path (a tool use that wrote nothing: most calls) is decided from the payload alone,
before the store is looked up, and imports json, os and signal only: not even pathlib or
typing. Everything past it (finding the store, config.toml, the events' work in
gitmem.hooks.events) loads afterwards; a write of anything but Markdown under a watched dir (a
code edit: the commonest call with work to do) is noted with gitmem.agents.notes alone, still
without pathlib, typing or tomllib. docs/hooks.md explains each event.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

# A constant rather than typing's: importing typing (and pathlib) would cost the no-op path
# ~15 ms. mypy honours the name; the annotations are strings.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import IO, Any

    from gitmem.agents.settings import HookSettings

__all__ = ["EVENTS", "HOSTS", "main", "written_paths"]

# kebab-case name -> the hosts' spelling (Claude Code and Codex share it).
EVENTS = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "post-tool-use": "PostToolUse",
    "pre-compact": "PreCompact",
    "stop": "Stop",
    "session-end": "SessionEnd",
}
_BY_HOST_NAME = {v.lower(): k for k, v in EVENTS.items()}
HOSTS = ("claude-code", "codex")
STDIN_TIMEOUT = 2.0  # seconds to wait for the payload (hosts write it at once, then close)
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "apply_patch"})
DEBUG_MODULES = "GITMEM_HOOK_DEBUG_MODULES"  # set: log the heavy modules this run imported
HEAVY = ("pygit2", "tantivy", "numpy", "model2vec", "typer", "rich", "mcp", "yaml")


class _Timeout(BaseException):
    """Raised by the alarm; a BaseException so that no `except Exception` swallows it."""


def _parse_args(argv: list[str]) -> tuple[str, str, str | None]:
    """(event as given, --host, --store); unknown flags are ignored: fail open."""
    event, host, store = "", "", None
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg in ("--host", "--store") and rest:
            value = rest.pop(0)
            host, store = (value, store) if arg == "--host" else (host, value)
        elif arg.startswith("--host="):
            host = arg.split("=", 1)[1]
        elif arg.startswith("--store="):
            store = arg.split("=", 1)[1]
        elif not event and not arg.startswith("-"):
            event = arg
    return event, host, store


def event_name(given: str) -> str:
    """kebab-case for either spelling ("" when unknown)."""
    if given in EVENTS:
        return given
    return _BY_HOST_NAME.get(given.replace("-", "").replace("_", "").lower(), "")


def _host(flag: str, payload: Mapping[str, Any]) -> str:
    if flag in HOSTS:
        return flag
    # Codex sends a turn id on turn-scoped events and names its tools apply_patch/shell.
    if "turn_id" in payload or payload.get("tool_name") in ("apply_patch", "shell"):
        return "codex"
    return "claude-code"


def main(argv: list[str], env: Mapping[str, str], stdin: IO[bytes], stdout: IO[str]) -> int:
    """Run one hook. Always 0."""
    started = time.monotonic()
    if env.get("GITMEM_HOOKS", "").strip().lower() in ("off", "0", "no", "false"):
        return 0  # a distiller's own session (gitmem.capture.runner), or asked by a person
    given, host_flag, store_flag = _parse_args(argv)
    event = event_name(given)
    got: dict[str, Any] | str | BaseException | None = None  # None: stdin not read yet
    if event == "post-tool-use":
        # The no-op path, before the store is looked up. Reading stdin first changes nothing a
        # host sees: without a store the hook still does nothing.
        got = _read(stdin)
        if isinstance(got, dict) and not written_paths(got):
            if env.get(DEBUG_MODULES):
                loaded = _heavy_loaded()  # the no-op path's, not the lookup's below
                root = _store(store_flag, env)
                if root is not None:
                    _log(root, f"{event}: heavy modules loaded: {loaded}")
            return 0
    root = _store(store_flag, env)
    if root is None:
        return 0
    if not event:
        _log(root, f'unknown hook event "{given}"; known: {", ".join(EVENTS)}')
        return 0
    from gitmem.agents import settings as hooksettings

    limit = STDIN_TIMEOUT  # config.toml is read after stdin, which a broken host may not close
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        try:
            if got is None:
                signal.setitimer(signal.ITIMER_REAL, limit)
                got = _parse(stdin.read())
            if isinstance(got, BaseException):  # stopped the early read: reported as if just now
                raise got
            if isinstance(got, str):
                _log(root, f"{event}: {got}")
                return 0
            settings, problems = hooksettings.hook_settings(root)
            for problem in problems:
                _log(root, problem)
            if event in {event_name(d) or d for d in settings.disabled}:  # either spelling
                return 0
            limit = settings.timeout
            signal.setitimer(signal.ITIMER_REAL, max(0.01, started + limit - time.monotonic()))
            written = tuple(written_paths(got)) if event == "post-tool-use" else ()
            if written and _noted(root, got, env, written, settings):
                return 0
            from pathlib import Path

            from gitmem.hooks.events import HANDLERS, Hook

            hook = Hook(
                event=event,
                host=_host(host_flag, got),
                root=Path(root),
                payload=got,
                written=written,
                settings=settings,
                env=env,
                started=started,
            )
            context = HANDLERS[event](hook)
            if context:
                name = EVENTS[event]
                out = {"hookSpecificOutput": {"hookEventName": name, "additionalContext": context}}
                stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
                stdout.flush()
        finally:  # disarmed before the handlers below run: the alarm cannot escape them
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Timeout:
        _log(root, f"{event}: gave up after the {limit:g} s hook timeout")
    except BaseException as exc:  # fail open: the agent must never see this
        _log(root, f"{event}: {type(exc).__name__}: {exc}")
    finally:
        signal.signal(signal.SIGALRM, previous)
        if env.get(DEBUG_MODULES):
            _log(root, f"{event}: heavy modules loaded: {_heavy_loaded()}")
    return 0


def _store(flag: str | None, env: Mapping[str, str]) -> str | None:
    """The store's root; None when there is none (no store, no action)."""
    from gitmem.store import location

    try:
        root = location.store_dir(flag, env)
        return root if location.is_store(root) else None
    except Exception:  # an unreadable path, an unknown ~user: no store, no action
        return None


def _noted(
    root: str,
    payload: Mapping[str, Any],
    env: Mapping[str, str],
    written: tuple[str, ...],
    settings: HookSettings,
) -> bool:
    """PostToolUse of files that are not Markdown under a watched dir (code, mostly): note
    them for the session record, as gitmem.hooks.events.post_tool_use would, without loading it
    (pathlib, typing). False, having done nothing, when the indexer has work."""
    from gitmem.agents import notes

    cwd = str(payload.get("cwd") or env.get("PWD") or ".")  # as Hook.cwd and Hook.session
    relative = notes.project_paths(cwd, written)
    if any(notes.watched_markdown(r, settings.any_watched()) for r in relative):
        return False
    session = str(payload.get("session_id") or "unknown")
    notes.note_files(os.path.join(root, ".gitmem"), session, [r for r in relative if r])
    return True


def _log(root: str, message: str) -> None:
    from gitmem.hooks.events import log

    log(root, message)


def _heavy_loaded() -> str:
    return ",".join(m for m in HEAVY if m in sys.modules) or "none"


def _read(stdin: IO[bytes]) -> dict[str, Any] | str | BaseException:
    """The payload, within STDIN_TIMEOUT; or a message for the log, or what stopped the read
    (the alarm: a host that never closes stdin), for main to report once the store is known."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, STDIN_TIMEOUT)
        try:
            raw = stdin.read()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except BaseException as exc:  # fail open
        return exc
    finally:
        signal.signal(signal.SIGALRM, previous)
    return _parse(raw)


def _parse(raw: bytes) -> dict[str, Any] | str:
    """The payload, or why it is none (a line for the log)."""
    try:
        payload = json.loads(raw or b"{}")
    except ValueError as exc:
        return f"stdin is not JSON ({exc}); did nothing"
    if not isinstance(payload, dict):
        return "stdin is not a JSON object; did nothing"
    return payload


def _alarm(signum: int, frame: object) -> None:
    raise _Timeout


def written_paths(payload: Mapping[str, Any]) -> list[str]:
    """Files a write tool wrote, as the payload names them."""
    tool = str(payload.get("tool_name") or "")
    if tool not in WRITE_TOOLS:
        return []
    data = payload.get("tool_input")
    if not isinstance(data, dict):
        return []
    if tool == "apply_patch":  # Codex: "*** Add File: path" / "*** Update File: path"
        patch = str(data.get("command") or data.get("input") or data.get("patch") or "")
        marks = ("*** Add File: ", "*** Update File: ", "*** Move to: ")
        return [ln.split(": ", 1)[1].strip() for ln in patch.splitlines() if ln.startswith(marks)]
    path = data.get("file_path") or data.get("notebook_path") or data.get("path")
    return [str(path)] if path else []


def run() -> None:
    """`python -m gitmem hook ...` lands here (gitmem/__main__.py). Exit 0 whatever happens:
    main fails open itself, and this is the last guard for what it does before its own."""
    try:
        code = main(sys.argv[2:], os.environ, sys.stdin.buffer, sys.stdout)
    except BaseException:  # a hook must never fail the agent
        code = 0
    sys.exit(code)
