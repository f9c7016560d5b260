"""The hooks and sync: SessionStart pulls what another device wrote before building the
block; SessionEnd pushes the session in the background."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from conftest import git
from hookkit import hook_process, log_text, make_project, payload

from gitmem.store.store import Store


@pytest.fixture
def two_devices(store_path: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The store (this device), a bare remote, and a second clone (the other device)."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(store_path), str(remote)], check=True)
    git(store_path, "remote", "add", "origin", str(remote))
    git(store_path, "fetch", "-q", "origin")
    git(store_path, "branch", "-q", "--set-upstream-to=origin/main", "main")
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    return store_path, other


def test_session_start_pulls_before_it_tells(
    two_devices: tuple[Path, Path], tmp_path: Path
) -> None:
    here, other = two_devices
    written = Store.open(other).record("decision", "Ship on Tuesdays.", title="Release day")
    git(other, "push", "-q", "origin", "main")
    project = make_project(tmp_path / "work")
    done = hook_process("session-start", payload("claude-code/session_start", project), here)
    assert done.returncode == 0, log_text(here)
    assert f"[{written.record.id}]" in done.stdout, log_text(here)
    assert Store.open(here).get(written.record.id).title == "Release day"


def test_session_end_pushes_in_the_background(
    two_devices: tuple[Path, Path], tmp_path: Path
) -> None:
    here, _ = two_devices
    project = make_project(tmp_path / "work")
    hook_process("post-tool-use", payload("claude-code/post_tool_use_edit", project), here)
    started = time.monotonic()
    done = hook_process("session-end", payload("claude-code/session_end", project), here)
    assert done.returncode == 0 and done.stdout == ""
    head = git(here, "rev-parse", "HEAD").strip()
    remote = here.parent / "remote.git"
    while time.monotonic() - started < 30:
        if git(remote, "rev-parse", "main").strip() == head:
            break
        time.sleep(0.2)
    assert git(remote, "rev-parse", "main").strip() == head, log_text(here)
