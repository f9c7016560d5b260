"""After a CLI write, the search index catches up in a detached process (gitmem.cli.background),
so the next recall finds it current; the write itself never waits for it nor fails by it."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitmem.cli import background
from gitmem.index.stamp import catalog_stamp
from gitmem.store.gitfiles import head_commit


def _head(root: Path) -> str | None:
    return head_commit(root / ".git")


def _wait_current(root: Path, seconds: float = 90.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if catalog_stamp(root) == _head(root) and not _running(root):
            return True
        time.sleep(0.1)
    return False


def _running(root: Path) -> bool:
    """Whether a catch-up holds its lock."""
    path = root / ".gitmem" / "catchup.lock"
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _cli(root: Path, *args: str, background_index: str = "on") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GITMEM_STORE": str(root), "GITMEM_BACKGROUND_INDEX": background_index}
    return subprocess.run(
        [sys.executable, "-m", "gitmem", *args], capture_output=True, text=True, env=env
    )


def test_a_record_leaves_the_index_current_without_a_recall(store_path: Path) -> None:
    done = _cli(store_path, "record", "fact", "Webhooks retry with backoff.", "--title", "Retry")
    assert done.returncode == 0, done.stderr
    assert _wait_current(store_path)
    recall = _cli(store_path, "recall", "webhooks backoff", "--json")
    assert recall.returncode == 0
    assert "Retry" in recall.stdout
    assert "catching up" not in recall.stderr and "building" not in recall.stderr


def test_writes_in_a_row_end_with_the_index_at_the_last_one(store_path: Path) -> None:
    for i in range(6):
        done = _cli(store_path, "record", "fact", f"Fact {i} body.", "--title", f"Fact {i}")
        assert done.returncode == 0, done.stderr
    assert _wait_current(store_path)
    assert catalog_stamp(store_path) == _head(store_path)


def test_off_starts_nothing(store_path: Path) -> None:
    done = _cli(store_path, "record", "fact", "Body.", "--title", "T", background_index="off")
    assert done.returncode == 0, done.stderr
    time.sleep(1.0)  # what a started catch-up would need to take its lock
    assert not (store_path / ".gitmem" / "catchup.lock").exists()
    assert catalog_stamp(store_path) != _head(store_path)


def test_a_second_catch_up_leaves_at_once_while_one_runs(store_path: Path) -> None:
    (store_path / ".gitmem").mkdir(exist_ok=True)
    fd = os.open(store_path / ".gitmem" / "catchup.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        began = time.monotonic()
        assert background.main([str(store_path)]) == 0
        assert time.monotonic() - began < 5
        assert catalog_stamp(store_path) is None  # it built nothing
    finally:
        os.close(fd)


def test_a_catch_up_that_cannot_start_does_not_fail_the_write(
    store_path: Path,
    gm,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("GITMEM_BACKGROUND_INDEX", "on")

    monkeypatch.setattr(sys, "executable", str(store_path / "no-such-python"))  # spawn fails
    done = gm("record", "fact", "Body.", "--title", "Still written")
    assert done.code == 0, done.err
    assert done.err == ""
    assert (
        "Still written"
        in subprocess.run(
            ["git", "-C", str(store_path), "log", "-1", "--format=%s"],
            capture_output=True,
            text=True,
        ).stdout
    )


def test_a_catch_up_of_a_damaged_store_ends_quietly(tmp_path: Path) -> None:
    assert background.main([str(tmp_path / "no-store-here")]) == 0
