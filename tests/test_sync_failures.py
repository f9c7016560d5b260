"""Sync failures: each gets a clear message and loses nothing. Real remotes: missing paths,
closed and silent ports, an http server that wants a password, a remote hook that refuses,
a history that is not ours, a corrupt ref, a sync killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from conftest import assert_clean, git, snapshot
from test_sync import fact, make_clone, run_sync

from gitmem.api import Store
from gitmem.errors import GitmemError
from gitmem.gitcli import GitFailed
from gitmem.sync import sync, sync_status

pytest_plugins = ["test_sync"]  # its `remote` fixture


def point_at(store: Store, url: str) -> None:
    git(store.root, "remote", "set-url", "origin", url)


def test_missing_path_remote(remote: Path) -> None:
    a = make_clone(remote, "a")
    fact(a, "Stays local")
    before = snapshot(a.root)
    point_at(a, str(remote.parent / "nowhere.git"))
    with pytest.raises(GitFailed) as caught:
        run_sync(a)
    assert caught.value.kind == "not-found"
    assert "nowhere.git" in str(caught.value) and "gitmem remote set URL" in str(caught.value)
    assert snapshot(a.root) == before


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_closed_port_is_unreachable(remote: Path) -> None:
    a = make_clone(remote, "a")
    point_at(a, f"git://127.0.0.1:{_free_port()}/memory.git")
    with pytest.raises(GitFailed) as caught:
        run_sync(a, timeout=20)
    assert caught.value.kind == "unreachable"
    assert "writes stay local commits" in str(caught.value)


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers: a remote that hangs."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1]
    server.close()
    for conn in held:
        conn.close()


def test_slow_remote_is_cut_at_the_timeout(remote: Path, silent_port: int) -> None:
    a = make_clone(remote, "a")
    fact(a, "Waits for a better network")
    head = a.head()
    point_at(a, f"git://127.0.0.1:{silent_port}/memory.git")
    started = time.monotonic()
    with pytest.raises(GitFailed) as caught:
        run_sync(a, timeout=2)
    assert time.monotonic() - started < 6
    assert caught.value.kind == "timeout" and "--timeout" in str(caught.value)
    assert a.head() == head


class _Needs401(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="memory"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_authentication_failure_never_prompts(remote: Path, tmp_path: Path) -> None:
    # A password prompt the user configured: sync must not run it (it would wait on a person).
    asked = tmp_path / "asked"
    askpass = tmp_path / "askpass.sh"
    askpass.write_text(f'#!/bin/sh\ntouch "{asked}"\necho secret\n')
    askpass.chmod(0o755)
    env = {**os.environ, "GIT_ASKPASS": str(askpass), "SSH_ASKPASS": str(askpass)}
    server = HTTPServer(("127.0.0.1", 0), _Needs401)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        a = make_clone(remote, "a")
        point_at(a, f"http://127.0.0.1:{server.server_address[1]}/memory.git")
        with pytest.raises(GitFailed) as caught:
            sync(a, env, timeout=20)
    finally:
        server.shutdown()
    assert caught.value.kind == "authentication"
    assert "credentials" in str(caught.value)
    assert not asked.exists()


def _hook(remote: Path, script: str) -> None:
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\n" + script)
    hook.chmod(0o755)


def test_push_rejected_by_a_remote_hook_shows_its_message(remote: Path) -> None:
    a = make_clone(remote, "a")
    rid = fact(a, "Refused for now")
    _hook(remote, 'echo "policy: memories are frozen this week" >&2\nexit 1\n')
    with pytest.raises(GitFailed) as caught:
        run_sync(a)
    assert caught.value.kind == "rejected"
    assert "policy: memories are frozen this week" in str(caught.value)
    assert rid in a.catalog() and sync_status(a)["ahead"] == 1
    (remote / "hooks" / "pre-receive").unlink()
    assert run_sync(a).outgoing == 1


def test_unrelated_histories_are_refused_and_nothing_changes(remote: Path, tmp_path: Path) -> None:
    other, _ = Store.init(tmp_path / "other", agent="someone-else")
    fact(other, "A different memory")
    git(other.root, "remote", "add", "origin", str(remote))
    before = snapshot(other.root)
    with pytest.raises(GitmemError, match="holds a different memory") as caught:
        run_sync(other)
    assert "gitmem clone" in str(caught.value)
    assert snapshot(other.root) == before


def test_corrupt_tracking_ref_is_repaired(remote: Path) -> None:
    a = make_clone(remote, "a")
    fact(a, "Still syncs")
    (a.repo.git_dir / "refs" / "remotes" / "origin" / "main").write_text("garbage\n")
    result = run_sync(a)
    assert result.outgoing == 1
    assert any("corrupt" in note for note in result.notes)
    assert_clean(a.root)


def _cli(store: Path) -> list[str]:
    return [sys.executable, "-m", "gitmem", "sync", "--store", str(store), "--no-index"]


def test_sync_killed_while_pushing_loses_nothing(remote: Path) -> None:
    a = make_clone(remote, "a")
    ids = [fact(a, f"Written before the kill {i}") for i in range(3)]
    started = remote / "push-started"
    _hook(remote, f'touch "{started}"\nsleep 3\nexit 1\n')
    proc = subprocess.Popen(_cli(a.root), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert started.exists()
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    (remote / "hooks" / "pre-receive").unlink()
    assert run_sync(a).outgoing == 3
    b = make_clone(remote, "b")
    assert set(ids) <= set(b.catalog())
    assert_clean(a.root)


def test_sync_killed_at_random_points_then_completes(remote: Path) -> None:
    a, b = make_clone(remote, "a"), make_clone(remote, "b")
    ids: set[str] = set()
    for round_ in range(5):
        ids.add(fact(a, f"From a, round {round_}"))
        ids.add(fact(b, f"From b, round {round_}"))
        run_sync(b, index=False)
        proc = subprocess.Popen(_cli(a.root), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(0.15 + 0.12 * round_)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
        run_sync(a, index=False)  # raises unless it completes
        assert ids <= set(Store.open(a.root).catalog())
        assert_clean(a.root)
    run_sync(b, index=False)
    assert ids <= set(Store.open(b.root).catalog())
    subprocess.run(["git", "fsck", "--strict"], cwd=a.root, check=True, capture_output=True)


def test_cli_sync_times_out_with_exit_1(remote: Path, silent_port: int, gm) -> None:  # type: ignore[no-untyped-def]
    a = make_clone(remote, "a")
    point_at(a, f"git://127.0.0.1:{silent_port}/memory.git")
    started = time.monotonic()
    done = gm("sync", "--timeout", "1", "--store", str(a.root))
    assert time.monotonic() - started < 5
    assert done.code == 1
    assert "no answer from the remote within the time allowed" in done.err
