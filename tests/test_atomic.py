"""gitmem.atomic: a file is replaced whole or not at all, a failed write leaves nothing behind,
concurrent writers never tear a file, and every module that replaces a file goes through it."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from conftest import assert_clean

import gitmem
from gitmem import atomic
from gitmem.atomic import replace_file

ROOT = Path(gitmem.__file__).parents[1]
LIMIT = 64 * 1024  # the largest file a "full disk" below lets anyone write


def python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"},
        check=False,
    )


def default_mode(directory: Path) -> int:
    """The permissions a new file gets here (0o666 less the umask)."""
    probe = directory / "probe"
    probe.write_bytes(b"")
    mode = probe.stat().st_mode & 0o777
    probe.unlink()
    return mode


# --- one writer ------------------------------------------------------------------------------


def test_a_file_is_replaced_whole(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    mode = default_mode(tmp_path)
    replace_file(target, b"first, and longer than what follows")
    assert target.read_bytes() == b"first, and longer than what follows"
    assert target.stat().st_mode & 0o777 == mode  # what Path.write_bytes would have made
    replace_file(str(target), b"second")
    assert target.read_bytes() == b"second"
    replace_file(target, b"")
    assert target.read_bytes() == b""
    assert os.listdir(tmp_path) == ["state.json"]


def test_text_is_utf8_with_its_newlines_as_given(tmp_path: Path) -> None:
    target = tmp_path / "notes.md"
    replace_file(target, "grüße\r\nzwei\ndrei")
    assert target.read_bytes() == "grüße\r\nzwei\ndrei".encode()


def test_a_mode_is_given_to_the_new_file(tmp_path: Path) -> None:
    target = tmp_path / "settings.json"
    target.write_text("{}")
    target.chmod(0o600)
    replace_file(target, "{}\n", mode=0o640)
    assert target.stat().st_mode & 0o777 == 0o640


def test_a_large_file_is_written_in_full(tmp_path: Path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)
    replace_file(tmp_path / "vectors.f32", data)
    assert (tmp_path / "vectors.f32").read_bytes() == data


# --- failures --------------------------------------------------------------------------------


def _fail_on(monkeypatch: pytest.MonkeyPatch, name: str, error: BaseException) -> None:
    def fail(*args: object) -> object:
        raise error

    monkeypatch.setattr(os, name, fail)


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("write", OSError(errno.ENOSPC, "No space left on device")),
        ("write", KeyboardInterrupt()),
        ("fsync", OSError(errno.EIO, "Input/output error")),
        ("fchmod", PermissionError(errno.EPERM, "Operation not permitted")),
        ("replace", OSError(errno.EXDEV, "Invalid cross-device link")),
    ],
)
def test_a_failure_keeps_the_old_file_and_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, error: BaseException
) -> None:
    target = tmp_path / "state.json"
    target.write_text("old")
    _fail_on(monkeypatch, name, error)
    with pytest.raises(type(error)):
        replace_file(target, "new" * 1000, fsync=True, mode=0o644)
    monkeypatch.undo()
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["state.json"]


def test_a_write_that_fails_partway_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills after some of the data is written."""
    target = tmp_path / "state.json"
    target.write_text("old")
    real_write = os.write
    calls = []

    def write(fd: int, data: bytes) -> int:
        calls.append(len(data))
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, bytes(data)[:100])

    monkeypatch.setattr(os, "write", write)
    with pytest.raises(OSError, match="No space left"):
        replace_file(target, b"x" * 1000)
    monkeypatch.undo()
    assert calls == [1000, 900]
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["state.json"]


def test_a_full_disk_keeps_the_old_file(tmp_path: Path) -> None:
    """A real failed write: the kernel refuses to let the file grow past a limit."""
    target = tmp_path / "state.json"
    target.write_text("old")
    done = python(LIMITED + "replace_file(sys.argv[1], b'x' * (2 * LIMIT))\n", str(target))
    assert "File too large" in done.stderr
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["state.json"]


def test_with_fsync_the_file_is_on_disk_before_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = fsynced(monkeypatch)
    replace_file(tmp_path / "a", b"not synced")
    assert synced == []
    replace_file(tmp_path / "b", b"synced", fsync=True)
    assert (tmp_path / "b").stat().st_ino in synced


def fsynced(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The inodes of the files fsynced from now on."""
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


# --- concurrent writers ----------------------------------------------------------------------


def contents(n: int) -> list[bytes]:
    """Whole contents that a torn mix could not pass for: each writer's own bytes, and
    different lengths."""
    return [bytes([65 + i]) * (200_000 + 1000 * i) for i in range(n)]


def test_writers_in_threads_never_tear_the_file(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    wholes = contents(6)
    replace_file(target, wholes[0])
    seen: set[bytes] = set()
    done = threading.Event()
    errors: list[BaseException] = []

    def write(data: bytes) -> None:
        try:
            for _ in range(20):
                replace_file(target, data)
        except BaseException as exc:  # reported below
            errors.append(exc)

    def read() -> None:
        while not done.is_set():
            seen.add(target.read_bytes())

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(data,)) for data in wholes]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    done.set()
    reader.join()
    assert errors == []
    assert seen <= set(wholes)
    assert target.read_bytes() in wholes
    assert os.listdir(tmp_path) == ["state.json"]


WRITER = """
import sys
from gitmem.atomic import replace_file
data = bytes([int(sys.argv[2])]) * int(sys.argv[3])
for _ in range(200):  # long enough to overlap the others, whose start takes ~0.1 s
    replace_file(sys.argv[1], data)
"""


def test_writers_in_processes_never_tear_the_file(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    wholes = contents(4)
    replace_file(target, wholes[0])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target), str(data[0]), str(len(data))], env=env
        )
        for data in wholes
    ]
    seen: set[bytes] = set()
    while any(p.poll() is None for p in writers):
        seen.add(target.read_bytes())
    assert [p.returncode for p in writers] == [0] * len(writers)
    assert seen <= set(wholes)
    assert target.read_bytes() in wholes
    assert os.listdir(tmp_path) == ["state.json"]


# --- the hook path ---------------------------------------------------------------------------


def test_importing_it_loads_nothing_but_os() -> None:
    """The hook path writes through this module: it must not bring pathlib or typing (run
    without site, as the hook import checks do)."""
    code = "import json, sys; import {}; print(json.dumps(sorted(sys.modules)))"
    loaded = {}
    for module in ("gitmem, os", "gitmem.atomic"):
        done = subprocess.run(
            [sys.executable, "-S", "-c", code.format(module)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=True,
        )
        loaded[module] = set(json.loads(done.stdout))
    assert loaded["gitmem.atomic"] - loaded["gitmem, os"] == {"gitmem.atomic"}
    assert not {"typing", "pathlib"} & loaded["gitmem.atomic"]


# --- every caller ----------------------------------------------------------------------------

# A child process whose files cannot grow past LIMIT bytes (EFBIG, "File too large"): a full
# disk, as the code that writes sees it. Python ignores SIGXFSZ, so the write just fails.
LIMITED = f"""
import resource, sys
from gitmem.atomic import replace_file
LIMIT = {LIMIT}
resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, resource.RLIM_INFINITY))
"""

BIG = LIMIT * 2


def _store(tmp_path: Path) -> Path:
    from gitmem.store.store import Store

    Store.init(tmp_path / "store")
    return tmp_path / "store"


def _session(tmp_path: Path) -> tuple[Path, str, str]:
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "s1.json").write_text("old")
    code = f"""
    from pathlib import Path
    from gitmem.agents.session import SessionState, save_state
    files = tuple("src/x.py" for _ in range({BIG} // 10))
    save_state(Path(D).parent, SessionState("s1", files=files))
    """
    return tmp_path / "sessions", "s1.json", code


def _automemory(tmp_path: Path) -> tuple[Path, str, str]:
    (tmp_path / "automemory.json").write_text("old")
    code = f"""
    from pathlib import Path
    from gitmem.agents.automemory import _save
    _save(Path(D), {{"p": {{str(i): {{"sha": "0" * 64}} for i in range({BIG} // 64)}}}})
    """
    return tmp_path, "automemory.json", code


def _sync(tmp_path: Path) -> tuple[Path, str, str]:
    (tmp_path / "gitmem-sync.json").write_text("old")
    code = f"""
    from pathlib import Path
    from gitmem.sync.state import save_state
    save_state(Path(D), "a" * {BIG}, "b")
    """
    return tmp_path, "gitmem-sync.json", code


def _hostsetup(tmp_path: Path) -> tuple[Path, str, str]:
    (tmp_path / "settings.json").write_text("old")
    code = f"""
    from pathlib import Path
    from gitmem.agents.hostfiles import write
    write(Path(D) / "settings.json", "x" * {BIG})
    """
    return tmp_path, "settings.json", code


def _lock(tmp_path: Path) -> tuple[Path, str, str]:
    (tmp_path / "gitmem-write.lock").write_text("old")  # the journal is new; the lock is kept
    code = f"""
    from pathlib import Path
    from gitmem.store.lock import write_lock
    with write_lock(Path(D), 5.0, lambda journal: None) as begin:
        begin("0" * 40, ["records/x.md"] * ({BIG} // 10))
    """
    return tmp_path, "gitmem-write.lock", code


def _vectors(tmp_path: Path) -> tuple[Path, str, str]:
    (tmp_path / "vectors.f32").write_text("old")
    code = f"""
    from pathlib import Path
    import numpy as np
    from gitmem.index.vectors import VectorFile
    VectorFile(Path(D) / "vectors.f32", 4).replace(np.ones(({BIG} // 16, 4), np.float32))
    """
    return tmp_path, "vectors.f32", code


def _worktree(tmp_path: Path) -> tuple[Path, str, str]:
    (tmp_path / "r.md").write_text("old")
    code = f"""
    from pathlib import Path
    from gitmem.store.git import _atomic_write
    _atomic_write(Path(D) / "r.md", b"x" * {BIG})
    """
    return tmp_path, "r.md", code


def _hook_settings_cache(tmp_path: Path) -> tuple[Path, str, str]:
    (tmp_path / "hooks.json").write_text("old")
    code = f"""
    import os
    from gitmem.agents.settings import _cache_table
    _cache_table(os.path.join(D, "hooks.json"), "x" * {BIG}, {{}})  # best effort: no error
    """
    return tmp_path, "hooks.json", code


def _publish(tmp_path: Path) -> tuple[Path, str, str]:
    store = _store(tmp_path)
    twins = {f"{i:040x}": f"{i + 1:040x}" for i in range(BIG // 80)}
    (store / ".git" / "gitmem-publish.json").write_text(json.dumps({"twins": twins}))
    code = """
    from pathlib import Path
    from gitmem.store.git import GitRepo
    from gitmem.sync.publish import Publisher
    repo = GitRepo.open(Path(D).parent)
    Publisher(repo).save(repo.head())
    """
    return store / ".git", "gitmem-publish.json", code


@pytest.mark.parametrize(
    "case",
    [
        _session,
        _automemory,
        _sync,
        _hostsetup,
        _lock,
        _vectors,
        _worktree,
        _hook_settings_cache,
        _publish,
    ],
    ids=lambda case: case.__name__.strip("_"),
)
def test_a_full_disk_leaves_each_callers_file_as_it_was(tmp_path: Path, case: object) -> None:
    """Every module that replaces a file, on a disk that fills: the old file is intact and no
    temporary file is left beside it."""
    assert callable(case)
    directory, name, code = case(tmp_path)
    before = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}
    done = python(LIMITED + f"D = {str(directory)!r}\n" + textwrap.dedent(code))
    if case is _hook_settings_cache:  # a cache it can do without: the failure is swallowed
        assert done.returncode == 0, done.stderr
    else:
        assert "File too large" in done.stderr, done.stderr
    after = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}
    after.pop(name + ".gitmem-backup", None)  # hostfiles' copy of the old file, by design
    assert after == before


def test_the_write_journal_is_written_whole_but_not_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer's journal is what the next writer recovers from after a crash: it is in place
    (renamed in whole) before the work it describes starts. It is not fsynced, by choice: the
    work it describes (objects, ref, work tree, index) is not fsynced either, as git's is not
    by default, and a killed writer's journal survives in the page cache (the test below);
    two fsyncs per write cost 8-20 ms on a busy disk (docs/benchmarks.md, the write path)."""
    from gitmem.store.lock import JOURNAL_NAME, write_lock

    synced = fsynced(monkeypatch)
    with write_lock(tmp_path, 5.0, lambda journal: None) as begin:
        begin("0" * 40, ["records/x.md"])
        journal = tmp_path / JOURNAL_NAME
        assert json.loads(journal.read_text())["paths"] == ["records/x.md"]
        assert journal.stat().st_ino not in synced
    assert not journal.exists()


KILLED = """
import os, sys
from pathlib import Path
from gitmem.store.store import Store
store = Store.open(Path(sys.argv[1]))
real_replace = os.replace
def replace(src, dst):
    if str(dst).endswith(".md"):
        os._exit(9)  # killed between the temporary file and the rename
    real_replace(src, dst)
os.replace = replace
store.record("fact", "a body", title="Killed at the rename")
"""


def test_a_writer_killed_at_the_rename_leaves_git_status_clean(store_path: Path) -> None:
    """The temporary file of a dead writer is named so that the store's .gitignore hides it
    (`.gitmem-*`), and the next writer finishes the work tree."""
    from gitmem.store.store import Store

    done = python(KILLED, str(store_path))
    assert done.returncode == 9, done.stderr
    left = [p.name for p in (store_path / "records").rglob("*") if p.is_file()]
    assert [name[: len(atomic.TEMP_PREFIX)] for name in left] == [atomic.TEMP_PREFIX]
    Store.open(store_path).record("fact", "next", title="Next writer")
    assert_clean(store_path)
    assert {r.title for r in Store.open(store_path).records()} == {
        "Killed at the rename",
        "Next writer",
    }


SETUP = """
import resource, sys
from gitmem.cli.main import run
resource.setrlimit(resource.RLIMIT_FSIZE, (512, resource.RLIM_INFINITY))
sys.exit(run(["setup", "--host", "claude-code", "--command", "gitmem"]))
"""


def test_setup_on_a_full_disk_leaves_the_users_settings_as_they_were(tmp_path: Path) -> None:
    """`gitmem setup` as a user runs it, when the disk fills while it writes the user's
    settings: the file keeps what it held, and no temporary file is left beside it."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text('{"theme": "dark"}\n')
    done = subprocess.run(
        [sys.executable, "-c", SETUP],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 1 and "File too large" in done.stderr
    assert sorted(os.listdir(home / ".claude")) == ["settings.json", "settings.json.gitmem-backup"]
    assert (home / ".claude" / "settings.json").read_text() == '{"theme": "dark"}\n'


def test_an_interrupt_as_the_temporary_file_is_made_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C delivered as os.open returns (Python runs signal handlers right after a call):
    the file exists, its descriptor was never handed back, and no `try` had begun yet."""
    target = tmp_path / "state.json"
    target.write_text("old")
    real_open = os.open

    def open_then_interrupt(path: str, flags: int, mode: int = 0o777) -> int:
        fd = real_open(path, flags, mode)
        if os.path.basename(path).startswith(atomic.TEMP_PREFIX):
            os.close(fd)  # the descriptor is lost with the interrupt; the file is not
            raise KeyboardInterrupt
        return fd

    monkeypatch.setattr(os, "open", open_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        replace_file(target, "new", fsync=True)
    monkeypatch.undo()
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["state.json"]
