"""Capture from the hooks (issue 20): a session's Stop or SessionEnd starts the distillation
detached, as a host runs the hook (a new process), and the hook returns without waiting for
it; the default distiller is the host's own CLI found on PATH; a schema's key is checked."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from capturekit import (
    CLAUDE_SESSION,
    LESSON_ANSWER,
    TRANSCRIPTS,
    archive,
    configure,
    fake_distiller,
    prompts,
)
from conftest import assert_clean, git
from hookkit import hook_process, log_text, make_project, payload

from gitmem.api import Store
from gitmem.capture.report import capture_status
from gitmem.errors import GitmemError
from gitmem.store.schema import load_schemas


def _start_sweeps(store: Path, host: str, project: Path, source: str) -> None:
    """Another session of `host` starts (capture on): its SessionStart's detached sweep writes
    the one record the fake distiller answers, from the session `source` names."""
    start = payload(f"{host}/session_start", project, session_id=f"next-{host}-session")
    done = hook_process("session-start", start, store, env={"GITMEM_CAPTURE": "on"})
    assert done.returncode == 0
    ids = _captured(store)
    assert len(ids) == 1, log_text(store)
    assert Store.open(store).get(ids[0]).source == source


def _captured(store: Path, seconds: float = 90.0) -> list[str]:
    """Ids of captured records, once the detached distillation has written them."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = [r.id for r in Store.open(store).records() if r.source.startswith("transcript:")]
        if found:
            return found
        time.sleep(0.2)
    return []


def _session_end(tmp_path: Path, store: Path, env: dict[str, str]) -> tuple[float, str]:
    project = make_project(tmp_path / "project")
    transcript = tmp_path / "t.jsonl"
    shutil.copy(TRANSCRIPTS / "claude-code.jsonl", transcript)
    started = time.monotonic()
    done = hook_process(
        "session-end", payload("claude-code/session_end", project, transcript), store, env=env
    )
    assert done.returncode == 0 and done.stdout == ""
    return time.monotonic() - started, done.stderr


def test_session_end_starts_the_distillation_detached(tmp_path: Path, store_path: Path) -> None:
    # The distiller takes 4 s; the hook must not wait for it.
    script = fake_distiller(tmp_path, LESSON_ANSWER, code="time.sleep(4)")
    configure(store_path, script)
    took, _ = _session_end(tmp_path, store_path, {"GITMEM_CAPTURE": "on"})
    assert took < 4.0  # it returned before the distiller could have answered
    ids = _captured(store_path)
    assert len(ids) == 1, log_text(store_path)
    assert Store.open(store_path).get(ids[0]).source == f"transcript:{CLAUDE_SESSION}#1-7"
    (sent,) = prompts(tmp_path)
    assert "[2] user: The job queue keeps losing jobs" in sent
    deadline = time.monotonic() + 30
    while git(store_path, "status", "--porcelain") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert_clean(store_path)


def test_the_default_distiller_is_the_hosts_cli_on_path(tmp_path: Path, store_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = fake_distiller(tmp_path, LESSON_ANSWER, name="claude")
    claude = bin_dir / "claude"
    claude.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n')
    claude.chmod(0o755)
    configure(store_path, None)  # command = "": the host's
    env = {"GITMEM_CAPTURE": "on", "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    _session_end(tmp_path, store_path, env)
    assert len(_captured(store_path)) == 1, log_text(store_path)
    (sent,) = prompts(tmp_path, "claude")
    assert "Answer with JSON only" in sent


def test_off_starts_nothing_but_notes_the_session(tmp_path: Path, store_path: Path, gm) -> None:  # type: ignore[no-untyped-def]
    script = fake_distiller(tmp_path, LESSON_ANSWER)
    configure(store_path, script)
    _session_end(tmp_path, store_path, {"GITMEM_CAPTURE": "off"})
    time.sleep(1.0)
    assert prompts(tmp_path) == []
    status = json.loads(gm("status", "--json").out)["capture"]
    assert [w["session"] for w in status["waiting"]] == [CLAUDE_SESSION]
    assert len(json.loads(gm("distill", "--json").out)["spans"][0]["written"]) == 1


def test_gitmem_hooks_off_makes_every_hook_do_nothing(tmp_path: Path, store_path: Path) -> None:
    head = git(store_path, "rev-parse", "HEAD")
    _session_end(tmp_path, store_path, {"GITMEM_CAPTURE": "on", "GITMEM_HOOKS": "off"})
    assert git(store_path, "rev-parse", "HEAD") == head
    assert not (store_path / ".gitmem" / "transcripts").exists()
    assert not (store_path / ".gitmem" / "capture").exists()


def _schema(tmp_path: Path, text: str) -> None:
    folder = tmp_path / "schemas"
    folder.mkdir(exist_ok=True)
    (folder / "thing.toml").write_text(
        'type = "thing"\ndescription = "A thing."\n' + text, encoding="utf-8"
    )
    load_schemas(folder)


def test_a_schema_key_names_fields_of_its_own() -> None:
    shipped = load_schemas(Path(__file__).resolve().parents[1] / "store-template" / "schemas")
    assert shipped["decision"].key == ("project", "subject")
    assert all(not s.key for t, s in shipped.items() if t != "decision")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('key = "name"\n[fields.name]\nkind = "text"\n', "key must be a list of field names"),
        ('key = ["name"]\n', "key names 'name', which is not a field here"),
        ('key = ["tags"]\n[fields.tags]\nkind = "list"\n', "is a base field"),
        ('key = ["xs"]\n[fields.xs]\nkind = "list"\n', "key field 'xs' is a list"),
        ('key = ["a", "a"]\n[fields.a]\nkind = "text"\n', "key names a field twice"),
    ],
)
def test_a_wrong_schema_key_is_refused(tmp_path: Path, text: str, said: str) -> None:
    with pytest.raises(GitmemError, match=said.replace("(", r"\(")):
        _schema(tmp_path, text)


def _until(found: Callable[[], object], seconds: float = 90.0) -> object:
    """What `found` returns once it returns something (the detached run is slow to start on
    a busy machine); None after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.2)
    return None


def test_a_session_that_failed_at_its_end_is_distilled_at_the_next_start(
    tmp_path: Path, store_path: Path
) -> None:
    # The distiller is not logged in when the session ends: the span fails, nothing is lost.
    down = "sys.stderr.write('not logged in'); sys.exit(1)"
    configure(store_path, fake_distiller(tmp_path, {"records": []}, code=down), retry_after=0)
    _session_end(tmp_path, store_path, {"GITMEM_CAPTURE": "on"})
    said = "lines 1-7: failed, kept for the next try — the distiller exited 1: not logged in"
    assert _until(lambda: said in log_text(store_path)), log_text(store_path)
    assert capture_status(store_path / ".gitmem")["failures"][0]["reason"].endswith("logged in")
    # Logged in now. Another session starts: its SessionStart sweeps the one left behind.
    configure(store_path, fake_distiller(tmp_path, LESSON_ANSWER, name="up"))
    project = tmp_path / "project" / "widget"
    _start_sweeps(store_path, "claude-code", project, f"transcript:{CLAUDE_SESSION}#1-7")
    assert len(prompts(tmp_path, "up")) == 1
    assert _until(lambda: not capture_status(store_path / ".gitmem")["failures"])


def test_a_codex_sessions_tail_is_captured_once_it_has_gone_quiet(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    # Codex has no SessionEnd, and its Stop waits for 10 new messages: 7 would never go.
    configure(store_path, fake_distiller(tmp_path, LESSON_ANSWER), quiet=60)
    project = make_project(tmp_path / "project")
    transcript = tmp_path / "rollout.jsonl"
    shutil.copy(TRANSCRIPTS / "codex.jsonl", transcript)
    stop = hook_process("stop", payload("codex/stop", project, transcript), store_path)
    assert stop.returncode == 0  # conftest's GITMEM_CAPTURE=off: archived and noted only
    session = "019d036d-c7fa-72d2-b6fd-78878bfe34e4"
    waits = json.loads(gm("distill", "--session", session, "--trigger", "stop", "--json").out)
    assert waits["spans"] == [] and "waits for more" in waits["waiting"][0]
    swept = json.loads(gm("distill", "--sweep", "--trigger", "session-start", "--json").out)
    assert swept["spans"] == []  # still going on: left to its own Stop
    (archived,) = (store_path / ".gitmem" / "transcripts").rglob("*.jsonl")
    hour_ago = time.time() - 3600
    os.utime(archived, (hour_ago, hour_ago))
    _start_sweeps(store_path, "codex", project, f"transcript:{session}#1-11")
    (sent,) = prompts(tmp_path)
    assert "[10] assistant: Retries were counted twice" in sent


_SPAWNS: list[list[str]] = []


def _spawn_watch(event: str, args: tuple[object, ...]) -> None:
    """Note each process this test process spawns, and stop it from starting (the hook then
    logs that it could not start the distillation)."""
    if event == "os.posix_spawn" and _SPAWNS and _SPAWNS[0] == ["watching"]:
        _SPAWNS.append([str(a) for a in args[1]])  # type: ignore[attr-defined]
        raise OSError("not started by the test")


def test_capture_off_in_config_spawns_nothing_at_stop(
    tmp_path: Path, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not _SPAWNS:
        sys.addaudithook(_spawn_watch)  # cannot be removed: it acts only while watching
    _SPAWNS[:] = [["watching"]]
    monkeypatch.setenv("GITMEM_CAPTURE", "on")
    try:
        configure(store_path, None, enabled=False)
        archive(tmp_path, store_path)  # the Stop hook, in this process
        off = _SPAWNS[1:]
        configure(store_path, None, enabled=True)
        archive(tmp_path, store_path, extra="{}\n")
        on = _SPAWNS[1:]
    finally:
        _SPAWNS[:] = [["done"]]
    assert off == []
    assert "capture is off" not in log_text(store_path)
    assert [a[2:4] for a in on] == [["gitmem", "distill"]]  # the same Stop, capture on
    assert "could not start the distillation" in log_text(store_path)
