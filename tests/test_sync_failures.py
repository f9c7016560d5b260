"""Sync failures: each gets a clear message and loses nothing. Real remotes: missing paths,
closed and silent ports, an http server that wants a password, a remote hook that refuses,
a history that is not ours, a corrupt ref, a sync killed with SIGKILL; and over ssh, a
stand-in ssh that fails as OpenSSH does."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from conftest import Result, assert_clean, git, snapshot
from test_sync import fact, make_clone, run_sync

from gitmem.api import Store
from gitmem.errors import GitmemError
from gitmem.sync.gitcli import GitFailed
from gitmem.sync.state import sync_status
from gitmem.sync.sync import sync

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


# --- ssh: authentication, host keys, the program itself, prompts ---------------------------
# No ssh server here: a fake `ssh` prints what OpenSSH prints on stderr and exits 255, as the
# real one does. `memory.example` is never resolved: the fake stands in for the whole network.

Gm = Callable[..., Result]  # the CLI in this process (conftest.gm)
SCP_URL = "git@memory.example:me/memory.git"
SSH_URL = "ssh://git@memory.example:2222/me/memory.git"
CHANGED_HOST_KEY = """\
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!
Someone could be eavesdropping on you right now (man-in-the-middle attack)!
It is also possible that a host key has just been changed.
The fingerprint for the ED25519 key sent by the remote host is
SHA256:3b0mWRBl2bRw6pP1m1Uo9oTzN8mQm0YXgK4bQ2h6zqA.
Please contact your system administrator.
Add correct host key in /home/me/.ssh/known_hosts to get rid of this message.
Offending ED25519 key in /home/me/.ssh/known_hosts:3
Host key for memory.example has changed and you have requested strict checking.
Host key verification failed.
"""


def fake_ssh(folder: Path, stderr: str, name: str = "ssh") -> Path:
    """An ssh that fails as OpenSSH does (its words on stderr, exit 255), logging its
    arguments to `args` beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    said = folder / f"{name}.says"
    said.write_text(stderr)
    script.write_text(
        f'#!/bin/sh\nprintf \'%s\\n\' "$*" >> "{folder / "args"}"\ncat "{said}" >&2\nexit 255\n'
    )
    script.chmod(0o755)
    return script


def store_state(store: Store) -> tuple[object, ...]:
    """Everything a failed sync must leave alone: HEAD, every ref, git status, the records
    and other tracked files, what waits to be pushed, and the index's files (not the hook's
    log and settings cache beside it). The other devices' refs as fetched are a cache of the
    remote that a fetch which worked may fill in before the push fails, like the branch's."""

    def files(top: Path, skip: tuple[str, ...] = ()) -> list[tuple[str, bytes]]:
        return sorted(
            (str(p.relative_to(top)), p.read_bytes())
            for p in top.rglob("*")
            if p.is_file() and p.relative_to(top).parts[0] not in skip
        )

    listed = git(store.root, "for-each-ref", "--format=%(refname) %(objectname)")
    refs = [line for line in listed.splitlines() if "/devices/" not in line.split(" ")[0]]
    status = git(store.root, "status", "--porcelain", "--ignored")
    tracked = files(store.root, skip=(".git", ".gitmem"))
    index = files(store.cache_dir / "index")
    return git(store.root, "rev-parse", "HEAD"), refs, status, tracked, index, sync_status(store)


@pytest.fixture
def waiting(remote: Path) -> Store:
    """A clone with a write not pushed yet and a current index, whose remote is over ssh."""
    a = make_clone(remote, "a")
    fact(a, "Written offline")
    a.index()
    point_at(a, SCP_URL)
    return a


# stderr of OpenSSH (9.x) in each case (\r\n as its log lines sometimes end), and the cause
# the message gives.
DENIED = {
    "no key": (
        "git@memory.example: Permission denied (publickey).\r\n",
        "Permission denied (publickey)",
    ),
    "wrong key": (
        'Load key "/home/me/.ssh/id_work": invalid format\r\n'
        "git@memory.example: Permission denied (publickey).\r\n",
        'Permission denied (publickey); Load key "/home/me/.ssh/id_work": invalid format',
    ),
    "missing key": (
        "Warning: Identity file /home/me/.ssh/id_work not accessible: No such file or "
        "directory.\r\ngit@memory.example: Permission denied (publickey).\r\n",
        "Permission denied (publickey); Warning: Identity file /home/me/.ssh/id_work not "
        "accessible: No such file or directory",
    ),
    "password only": (
        "read_passphrase: can't open /dev/tty: No such device or address\r\n"
        "git@memory.example: Permission denied (publickey,password).\r\n",
        "Permission denied (publickey,password)",
    ),
}


@pytest.mark.parametrize("case", sorted(DENIED))
def test_ssh_that_cannot_authenticate_names_remote_cause_and_next_step(
    waiting: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gm: Gm, case: str
) -> None:
    stderr, cause = DENIED[case]
    bin_dir = tmp_path / "bin"
    fake_ssh(bin_dir, stderr)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    before = store_state(waiting)
    done = gm("sync", "--timeout", "30", "--store", str(waiting.root))
    assert (done.code, done.out) == (1, "")
    assert done.err == (
        f"gitmem: ssh could not authenticate to origin ({SCP_URL}): {cause} — check your key "
        'with "ssh -T git@memory.example" (gitmem never prompts: a key with a passphrase must '
        "be in ssh-agent), then sync again; your writes stay local commits until then\n"
    )
    assert store_state(waiting) == before
    # gitmem drives ssh: in batch mode, so it never waits on a prompt.
    assert "-o BatchMode=yes" in (bin_dir / "args").read_text()


def test_ssh_url_with_a_port_gets_a_hint_with_that_port(waiting: Store, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    fake_ssh(bin_dir, DENIED["no key"][0])
    point_at(waiting, SSH_URL)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    with pytest.raises(GitFailed) as caught:
        sync(waiting, env, timeout=30)
    assert caught.value.kind == "authentication"
    assert f"ssh could not authenticate to origin ({SSH_URL})" in str(caught.value)
    assert '"ssh -T -p 2222 git@memory.example"' in str(caught.value)
    assert "-p 2222" in (bin_dir / "args").read_text()


def test_unknown_host_key_says_how_to_check_and_accept_it(waiting: Store, tmp_path: Path) -> None:
    # gitmem's own ssh command accepts a new host's key (accept-new); the user's may not.
    ssh = fake_ssh(
        tmp_path / "bin",
        "No ED25519 host key is known for memory.example and you have requested strict "
        "checking.\r\nHost key verification failed.\r\n",
        name="strict-ssh",
    )
    git(waiting.root, "config", "core.sshCommand", str(ssh))
    before = store_state(waiting)
    with pytest.raises(GitFailed) as caught:
        run_sync(waiting, timeout=30)
    assert caught.value.kind == "host-key"
    assert str(caught.value) == (
        f"ssh could not verify the host of origin ({SCP_URL}): No ED25519 host key is known "
        "for memory.example and you have requested strict checking — check its key's "
        'fingerprint and accept it with "ssh -T git@memory.example", then sync again; your '
        "writes stay local commits until then"
    )
    assert store_state(waiting) == before


def test_changed_host_key_is_not_waved_through(
    waiting: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gm: Gm
) -> None:
    bin_dir = tmp_path / "bin"
    fake_ssh(bin_dir, CHANGED_HOST_KEY)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    before = store_state(waiting)
    done = gm("sync", "--timeout", "30", "--store", str(waiting.root))
    assert done.code == 1
    assert done.err == (
        f"gitmem: ssh could not verify the host of origin ({SCP_URL}): Host key for "
        "memory.example has changed and you have requested strict checking — if the host's "
        'owner changed its key, remove the old one with "ssh-keygen -R memory.example" and '
        'accept the new one with "ssh -T git@memory.example"; otherwise someone may be '
        "intercepting the connection: do not connect\n"
    )
    assert store_state(waiting) == before


@pytest.mark.parametrize("how", ["not on PATH", "core.sshCommand"])
def test_missing_ssh_program_is_named(waiting: Store, tmp_path: Path, how: str) -> None:
    env = dict(os.environ)
    if how == "not on PATH":
        # A PATH with git and nothing else: git runs its ssh command through /bin/sh.
        only_git = tmp_path / "only-git"
        only_git.mkdir()
        real_git = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True)
        (only_git / "git").symlink_to(real_git.stdout.strip())
        env["PATH"] = str(only_git)
        program = "ssh"
    else:
        program = str(tmp_path / "gone" / "ssh")
        git(waiting.root, "config", "core.sshCommand", program)
    before = store_state(waiting)
    with pytest.raises(GitFailed) as caught:
        sync(waiting, env, timeout=30)
    assert caught.value.kind == "ssh-missing"
    assert str(caught.value) == (
        f'ssh could not start for origin ({SCP_URL}): "{program}" was not found — install an '
        "OpenSSH client, or point git's core.sshCommand at one, then sync again; your writes "
        "stay local commits until then"
    )
    assert store_state(waiting) == before


def test_a_host_without_git_is_not_taken_for_a_missing_ssh(waiting: Store, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    fake_ssh(bin_dir, "bash: line 1: git-upload-pack: command not found\r\n")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    with pytest.raises(GitFailed) as caught:
        sync(waiting, env, timeout=30)
    assert caught.value.kind != "ssh-missing"
    assert "OpenSSH" not in str(caught.value)


def test_a_prompting_ssh_is_run_in_batch_mode_and_never_waits(
    waiting: Store, tmp_path: Path
) -> None:
    """An ssh that asks for a password on its input unless told it is in batch mode: had
    gitmem not said so, it would wait there until the timeout."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    asked = tmp_path / "asked"
    (bin_dir / "ssh").write_text(
        "#!/bin/sh\n"
        'case "$*" in *BatchMode=yes*)\n'
        '  echo "git@memory.example: Permission denied (publickey,password)." >&2; exit 255;;\n'
        "esac\n"
        f'touch "{asked}"\n'
        'printf "git@memory.example\'s password: " >&2\n'
        "read -r password\n"
        "exit 255\n"
    )
    (bin_dir / "ssh").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    before = store_state(waiting)
    with pytest.raises(GitFailed) as caught:
        sync(waiting, env, timeout=20)
    assert caught.value.kind == "authentication", str(caught.value)
    assert not asked.exists()
    assert store_state(waiting) == before


# Runs the command after it with the pseudo-terminal named first as its controlling terminal:
# a person's shell, where a prompt on /dev/tty would wait for them.
_ON_A_TERMINAL = """\
import fcntl, os, sys, termios
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.ioctl(fd, termios.TIOCSCTTY, 0)
os.dup2(fd, 0)
os.execv(sys.argv[2], sys.argv[2:])
"""


def test_the_users_own_ssh_command_cannot_prompt_on_the_terminal(
    waiting: Store, tmp_path: Path
) -> None:
    """core.sshCommand runs as configured (no BatchMode added); on a person's terminal it
    still cannot ask for a password, because git runs without one."""
    asked = tmp_path / "asked"
    ssh = tmp_path / "my-ssh"
    ssh.write_text(
        "#!/bin/sh\n"
        "if (exec 3</dev/tty) 2>/dev/null; then\n"
        f'  touch "{asked}"\n'
        '  printf "git@memory.example\'s password: " >/dev/tty\n'
        "  read -r password </dev/tty\n"
        "fi\n"
        'echo "read_passphrase: can\'t open /dev/tty: No such device or address" >&2\n'
        'echo "git@memory.example: Permission denied (publickey,password)." >&2\n'
        "exit 255\n"
    )
    ssh.chmod(0o755)
    git(waiting.root, "config", "core.sshCommand", str(ssh))
    before = store_state(waiting)
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _ON_A_TERMINAL, os.ttyname(slave), *_cli(waiting.root)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
    finally:
        os.close(slave)
        os.close(master)
    assert not asked.exists(), "ssh prompted on the terminal"
    assert proc.returncode == 1, err
    assert err.startswith(f"gitmem: ssh could not authenticate to origin ({SCP_URL}): ")
    assert store_state(Store.open(waiting.root)) == before


def test_push_refused_by_ssh_keeps_the_local_commits(remote: Path, tmp_path: Path) -> None:
    """The key worked for the fetch and is gone by the push (an agent's key that expired)."""
    a = make_clone(remote, "a")
    rid = fact(a, "Stays here until the key is back")
    a.index()
    point_at(a, SCP_URL)
    ssh = tmp_path / "half-ssh"
    ssh.write_text(
        "#!/bin/sh\n"
        'case "$*" in *git-upload-pack*)\n'
        f"  exec git-upload-pack '{remote}';;\n"
        "esac\n"
        'echo "git@memory.example: Permission denied (publickey)." >&2\n'
        "exit 255\n"
    )
    ssh.chmod(0o755)
    git(a.root, "config", "core.sshCommand", str(ssh))
    before = store_state(a)
    with pytest.raises(GitFailed) as caught:
        run_sync(a, timeout=30)
    assert caught.value.kind == "authentication"
    assert str(caught.value).startswith(f"ssh could not authenticate to origin ({SCP_URL}): ")
    assert store_state(a) == before
    assert rid in a.catalog()
    git(a.root, "config", "--unset", "core.sshCommand")
    point_at(a, str(remote))
    assert run_sync(a).outgoing == 1


def test_clone_over_ssh_that_cannot_authenticate_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gm: Gm
) -> None:
    bin_dir = tmp_path / "bin"
    fake_ssh(bin_dir, DENIED["no key"][0])
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    target = tmp_path / "memory"
    done = gm("clone", SCP_URL, str(target), "--timeout", "30")
    assert (done.code, done.out) == (1, "")
    assert done.err == (
        f"gitmem: ssh could not authenticate to {SCP_URL}: Permission denied (publickey) — "
        'check your key with "ssh -T git@memory.example" (gitmem never prompts: a key with a '
        "passphrase must be in ssh-agent), then clone again\n"
    )
    assert not target.exists()


def test_a_hook_whose_sync_cannot_authenticate_fails_open(waiting: Store, tmp_path: Path) -> None:
    from hookkit import hook_process, log_text, make_project, payload

    config = waiting.root / "config.toml"
    config.write_text(config.read_text() + "\n[hooks]\nsync_timeout = 30\ntimeout = 60\n")
    git(waiting.root, "commit", "-qam", "a patient hook")
    bin_dir = tmp_path / "bin"
    fake_ssh(bin_dir, DENIED["no key"][0])
    before = store_state(waiting)
    done = hook_process(
        "session-start",
        payload("claude-code/session_start", make_project(tmp_path / "work")),
        waiting.root,
        env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert "Written offline" in done.stdout
    assert f"ssh could not authenticate to origin ({SCP_URL})" in log_text(waiting.root)
    assert "-o BatchMode=yes" in (bin_dir / "args").read_text()
    assert store_state(waiting) == before


def test_a_hooks_sync_uses_the_users_core_ssh_command(waiting: Store, tmp_path: Path) -> None:
    """The ssh command a user configured for this store (a key of its own) is the one a hook's
    sync runs, as `gitmem sync` does (tests/test_sync_edges.py)."""
    from hookkit import hook_process, log_text, make_project, payload

    ssh = fake_ssh(tmp_path / "mine", DENIED["no key"][0], name="my-ssh")
    git(waiting.root, "config", "core.sshCommand", str(ssh))
    config = waiting.root / "config.toml"
    config.write_text(config.read_text() + "\n[hooks]\nsync_timeout = 30\ntimeout = 60\n")
    git(waiting.root, "commit", "-qam", "a patient hook")
    others = fake_ssh(tmp_path / "bin", "ssh: Could not resolve hostname memory.example\r\n")
    done = hook_process(
        "session-start",
        payload("claude-code/session_start", make_project(tmp_path / "work")),
        waiting.root,
        env={"PATH": f"{others.parent}{os.pathsep}{os.environ['PATH']}"},
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert "sync failed" in log_text(waiting.root)
    assert (tmp_path / "mine" / "args").exists()


# --- what the messages say of a URL and of ssh's output -----------------------------------
SECRET = "hunter2-s3cret"


def serving_ssh(folder: Path, remote: Path) -> Path:
    """An ssh that reaches `remote` whatever the host (git's own programs run on it here)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "ssh"
    script.write_text(
        "#!/bin/sh\n"
        'case "$*" in\n'
        f"  *git-upload-pack*) exec git-upload-pack '{remote}';;\n"
        f"  *git-receive-pack*) exec git-receive-pack '{remote}';;\n"
        "esac\n"
        "exit 255\n"
    )
    script.chmod(0o755)
    return script


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            f"https://me:{SECRET}@memory.example/me/memory.git",
            "https://memory.example/me/memory.git",
        ),
        (f"https://{SECRET}@memory.example/me/memory.git", "https://memory.example/me/memory.git"),
        (
            f"ssh://git:{SECRET}@memory.example/me/memory.git",
            "ssh://git@memory.example/me/memory.git",
        ),
    ],
)
def test_a_clone_that_fails_never_shows_a_password_or_token_of_its_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gm: Gm, url: str, shown: str
) -> None:
    """A token in a URL (https://TOKEN@host/..., as hosting services hand out) is a secret:
    not on the screen, not in an agent's transcript, not in the hook log."""
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "file")  # git refuses the URL: no network
    done = gm("clone", url, str(tmp_path / "memory"), "--timeout", "30")
    assert done.code == 1
    assert SECRET not in done.out + done.err
    assert f"cloning {shown} failed" in done.err


def test_a_clone_of_an_empty_remote_never_shows_the_password_of_its_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gm: Gm
) -> None:
    empty = tmp_path / "empty.git"
    git(tmp_path, "init", "--quiet", "--bare", str(empty))
    bin_dir = tmp_path / "bin"
    serving_ssh(bin_dir, empty)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    url = f"ssh://git:{SECRET}@memory.example/me/memory.git"
    done = gm("clone", url, str(tmp_path / "memory"), "--timeout", "30")
    assert done.code == 1
    assert "holds no gitmem store" in done.err
    assert SECRET not in done.out + done.err
    assert "ssh://git@memory.example/me/memory.git" in done.err


def test_a_sync_never_shows_the_password_of_its_url(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gm: Gm
) -> None:
    """What a sync prints when it worked goes to the hook log too (a hook's background
    sync): the URL is shown without its password, as git itself shows it."""
    import json

    a = make_clone(remote, "a")
    fact(a, "Written here")
    bin_dir = tmp_path / "bin"
    serving_ssh(bin_dir, remote)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    point_at(a, f"ssh://git:{SECRET}@memory.example/me/memory.git")
    done = gm("sync", "--store", str(a.root))
    assert done.code == 0, done.err
    assert "synced with origin (ssh://git@memory.example/me/memory.git): " in done.out
    assert SECRET not in done.out + done.err
    done = gm("sync", "--json", "--store", str(a.root))
    assert done.code == 0, done.err
    assert json.loads(done.out)["url"] == "ssh://git@memory.example/me/memory.git"


def test_ssh_that_cannot_authenticate_never_shows_the_password_of_the_url(
    waiting: Store, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    fake_ssh(bin_dir, DENIED["no key"][0])
    point_at(waiting, f"ssh://git:{SECRET}@memory.example:2222/me/memory.git")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    with pytest.raises(GitFailed) as caught:
        sync(waiting, env, timeout=30)
    assert caught.value.kind == "authentication"
    assert SECRET not in str(caught.value)
    assert "origin (ssh://git@memory.example:2222/me/memory.git)" in str(caught.value)
    assert '"ssh -T -p 2222 git@memory.example"' in str(caught.value)


def test_the_servers_shell_missing_a_program_is_not_taken_for_a_missing_ssh(
    waiting: Store, tmp_path: Path
) -> None:
    """A server account whose ~/.bashrc runs a tool it lacks (bash reads it for ssh's
    commands): its complaint reaches our stderr like a local shell's would. ssh ran; the
    failure is the server's."""
    bin_dir = tmp_path / "bin"
    fake_ssh(
        bin_dir,
        "bash: pyenv: command not found\r\n"
        "fatal: '/srv/me/memory.git' does not appear to be a git repository\r\n",
    )
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    with pytest.raises(GitFailed) as caught:
        sync(waiting, env, timeout=30)
    assert caught.value.kind == "not-found"
    assert "does not appear to be a git repository" in str(caught.value)
    assert "OpenSSH" not in str(caught.value)


def test_a_remote_hooks_own_ssh_failure_is_not_taken_for_ours(remote: Path, tmp_path: Path) -> None:
    """The remote's pre-receive hook mirrors elsewhere over ssh and fails: its words come
    back as "remote: ... Permission denied (publickey)". Our ssh logged in; the remote
    refused the push, and says why."""
    a = make_clone(remote, "a")
    fact(a, "Refused by the mirror")
    _hook(remote, 'echo "mirror@backup.example: Permission denied (publickey)." >&2\nexit 1\n')
    ssh = serving_ssh(tmp_path / "bin", remote)
    git(a.root, "config", "core.sshCommand", str(ssh))
    point_at(a, SCP_URL)
    with pytest.raises(GitFailed) as caught:
        run_sync(a, timeout=30)
    assert "ssh could not authenticate" not in str(caught.value)
    assert "mirror@backup.example: Permission denied (publickey)" in str(caught.value)


def test_the_remote_commands_never_show_a_token_from_the_url(gm, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`gitmem remote add/set/show` and a second `add` name the remote as git shows URLs: an
    https URL without its user part (a token), an ssh URL without a password."""
    secret = "https://me:ghp_TOKEN123@memory.example/me/memory.git"
    said = [gm("remote", "add", secret, "--store", str(store_path))]
    said.append(gm("remote", "add", secret, "--store", str(store_path)))  # refused: it exists
    said.append(gm("remote", "show", "--store", str(store_path)))
    said.append(gm("remote", "show", "--json", "--store", str(store_path)))
    said.append(
        gm("remote", "set", "ssh://git:hunter2@memory.example/m.git", "--store", str(store_path))
    )
    assert [r.code for r in said] == [0, 1, 0, 0, 0]
    text = "".join(r.out + r.err for r in said)
    assert "ghp_TOKEN123" not in text and "hunter2" not in text
    assert "https://memory.example/me/memory.git" in said[0].out
    assert "ssh://git@memory.example/m.git" in said[4].out
