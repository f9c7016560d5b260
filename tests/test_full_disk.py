"""A write the machine refuses (a full disk, a file size limit, a read-only store, no
permission) is said as such: exit code 1, one line naming the file and the next step, no
traceback and no "bug in gitmem". Nothing is written, and the same command run again once
the machine allows it succeeds and leaves `git status` clean, with one record, not two.

A full disk is played by a file size limit (RLIMIT_FSIZE, set in the child only): a write
past it fails with EFBIG as one past the free space fails with ENOSPC, and the limit chooses
which step of a write fails: the journal, a git object, the reflog, the work tree file, the
git index.
"""

from __future__ import annotations

import ctypes
import os
import random
import resource
import shutil
import subprocess
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import Result, assert_clean, git, snapshot

BODY = random.Random(7).randbytes(30_000).hex()  # 60 kB that compress to about half
GITMEM = [sys.executable, "-m", "gitmem"]


def gitmem(
    *args: str, limit: int | None = None, preexec: Callable[[], None] | None = None
) -> Result:
    """`gitmem ARGS` as a user runs it, in a process whose files may not grow past `limit`."""

    def child() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        if preexec is not None:
            preexec()

    done = subprocess.run(
        [*GITMEM, *args], capture_output=True, text=True, preexec_fn=child, timeout=120
    )
    return Result(done.returncode, done.stdout, done.stderr)


def new_store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    assert gitmem("init", str(store)).code == 0
    return store


def records(store: Path) -> list[str]:
    return git(store, "ls-files", "records").split()


def assert_refused(result: Result, *words: str) -> None:
    """Exit code 1 and one line that names the problem and says what to do next."""
    assert result.code == 1, result
    assert result.out == ""
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    assert "bug in gitmem" not in result.err and "Traceback" not in result.err
    assert lines[0].startswith("gitmem: cannot "), result.err
    assert "then run the command again" in lines[0], result.err
    for word in words:
        assert word in lines[0], result.err


def refused_then_done(store: Path, command: list[str], limit: int, *words: str) -> None:
    """`command` under `limit` is refused and changes nothing; without it, it is done once."""
    before, listed = snapshot(store), records(store)
    assert_refused(gitmem(*command, limit=limit), "File too large", "free some space", *words)
    assert snapshot(store) == before
    again = gitmem(*command)
    assert again.code == 0, again
    assert_clean(store)
    assert len(records(store)) == len(listed) + 1


def compressed(text: str) -> int:
    return len(zlib.compress(text.encode()))


def grow_reflog(path: Path, size: int) -> None:
    """Make a reflog `size` bytes long, of whole entries: its first one, repeated, and one
    whose message makes up the rest (an old store's reflog, without its many commits)."""
    line = path.read_text(encoding="utf-8").splitlines(keepends=True)[0]
    who = line.split("\t", 1)[0]
    copies = (size - len(who) - 3) // len(line)
    rest = size - copies * len(line) - len(who) - 2
    path.write_text(line * copies + f"{who}\t{'x' * rest}\n", encoding="utf-8")
    assert path.stat().st_size == size


# --- a full disk ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "limit", "place"),
    [
        ("journal", lambda: 100, "cannot write a file"),  # atomic.replace_file names no file
        ("object, early", lambda: 1_000, "/.git/objects"),
        ("object, late", lambda: compressed(BODY) - 500, "/.git/objects"),
        ("work tree file", lambda: (compressed(BODY) + len(BODY)) // 2, "/records/fact/"),
    ],
)
def test_record_on_a_full_disk(
    tmp_path: Path, step: str, limit: Callable[[], int], place: str
) -> None:
    store = new_store(tmp_path)
    command = ["record", "fact", BODY, "--title", "Big fact", "--store", str(store)]
    refused_then_done(store, command, limit(), place)


def test_the_reflog_full(tmp_path: Path) -> None:
    """A long-lived store's reflog is its biggest file that grows: moving the branch fails."""
    store = new_store(tmp_path)
    size = 40_000
    for log in (".git/logs/HEAD", ".git/logs/refs/heads/main"):
        grow_reflog(store / log, size)
    command = ["record", "fact", "A small fact.", "--title", "Small", "--store", str(store)]
    refused_then_done(store, command, size, "/.git/logs/")


def test_a_commit_that_cannot_be_taken_back(tmp_path: Path) -> None:
    """The work tree file fails, and so does moving the branch back (the reflog is full by
    then): the commit stands, the message says so and that the next write finishes it."""
    command = ["record", "fact", BODY, "--title", "Big fact", "--store"]
    scratch = new_store(tmp_path / "scratch")
    log = scratch / ".git/logs/HEAD"
    start = log.stat().st_size
    assert gitmem(*command, str(scratch)).code == 0
    entry = log.stat().st_size - start  # what the commit adds to each reflog
    file_size = (scratch / records(scratch)[0]).stat().st_size
    limit = (compressed(BODY) + file_size) // 2  # the object fits, the work tree file not
    store = new_store(tmp_path)
    for name in (".git/logs/HEAD", ".git/logs/refs/heads/main"):
        grow_reflog(store / name, limit - entry - 60)  # the undo's entry is longer than 60
    head = git(store, "rev-parse", "HEAD")
    done = gitmem(*command, str(store), limit=limit)
    assert done.code == 1, done
    assert len(done.err.splitlines()) == 1 and "bug in gitmem" not in done.err
    assert " was made, but the work tree could not follow " in done.err, done.err
    assert "File too large" in done.err and "the next gitmem write brings" in done.err
    assert git(store, "rev-parse", "HEAD") != head
    other = gitmem("record", "fact", "Another.", "--title", "Another", "--store", str(store))
    assert other.code == 0, other
    assert_clean(store)
    assert len(records(store)) == 2


def store_with_a_big_git_index(tmp_path: Path) -> Path:
    """A store whose git index lists 800 more files, so rewriting it is a big write: a plain
    index, rewritten whole on every write, as `core.splitIndex=false` asks."""
    store = new_store(tmp_path)
    git(store, "config", "core.splitIndex", "false")
    notes = store / "notes"
    notes.mkdir()
    for number in range(800):
        (notes / f"note-number-{number:04d}.txt").write_text(str(number))
    git(store, "add", "notes")
    git(store, "commit", "-q", "-m", "notes")
    return store


def test_the_git_index_full(tmp_path: Path) -> None:
    """A store with many files has a big git index, rewritten whole after each commit."""
    store = store_with_a_big_git_index(tmp_path)
    size = (store / ".git/index").stat().st_size
    assert size > 40_000
    command = ["record", "fact", "A small fact.", "--title", "Small", "--store", str(store)]
    refused_then_done(store, command, size // 2, "/.git/index")


def test_the_shared_git_index_full(tmp_path: Path) -> None:
    """Forgetting a record of the shared index folds the split index into a new shared index
    (gitmem.store.gitindex writes no delete bitmap), which the limit refuses: nothing is
    changed, and without the limit it is done."""
    store = new_store(tmp_path)
    made = gitmem("record", "fact", "Soon gone.", "--title", "Gone", "--store", str(store))
    assert made.code == 0, made
    (path,) = records(store)
    notes = store / "notes"
    notes.mkdir()
    back = time.time() - 60  # not racily clean: a fold puts them in the shared index
    for number in range(800):
        (notes / f"note-number-{number:04d}.txt").write_text(str(number))
        os.utime(notes / f"note-number-{number:04d}.txt", (back, back))
    git(store, "add", "notes")  # git writes a new shared index, with the record in it
    git(store, "commit", "-q", "-m", "notes")
    shared = max((store / ".git").glob("sharedindex.*"), key=lambda p: p.stat().st_size)
    assert shared.stat().st_size > 40_000 > (store / ".git/index").stat().st_size
    command = ["forget", Path(path).stem, "--reason", "wrong", "--store", str(store)]
    before = snapshot(store)
    limit = shared.stat().st_size // 2
    assert_refused(gitmem(*command, limit=limit), "File too large", "/.git/sharedindex.")
    assert snapshot(store) == before
    assert gitmem(*command).code == 0
    assert_clean(store)
    assert records(store) == []


def test_forget_with_the_git_index_full(tmp_path: Path) -> None:
    """A write with no new file at all (the full CLI, not the quick record path)."""
    store = store_with_a_big_git_index(tmp_path)
    made = gitmem("record", "fact", "Soon gone.", "--title", "Gone", "--store", str(store))
    assert made.code == 0, made
    (path,) = records(store)
    command = ["forget", Path(path).stem, "--reason", "wrong", "--store", str(store)]
    before = snapshot(store)
    limit = (store / ".git/index").stat().st_size // 2
    assert_refused(gitmem(*command, limit=limit), "File too large", "/.git/index")
    assert snapshot(store) == before
    assert gitmem(*command).code == 0
    assert_clean(store)
    assert records(store) == []


def test_supersede_undoes_the_file_it_wrote(tmp_path: Path) -> None:
    """The new record is written, the old one cannot be: the new one is taken back too."""
    store = new_store(tmp_path)
    assert gitmem("record", "fact", BODY, "--title", "Old", "--store", str(store)).code == 0
    (old,) = records(store)
    command = ["supersede", Path(old).stem, "New and short.", "--title", "New"]
    limit = (compressed(BODY) + len(BODY)) // 2
    refused_then_done(store, [*command, "--store", str(store)], limit, Path(old).name)


def _schemas_limit() -> int:
    """A file size limit that every object of the template's blobs fits under and no schema
    file does: `init` then fails writing the schemas, whatever the shipped files hold."""
    template = Path(__file__).resolve().parents[1] / "store-template"
    files = [p.read_bytes() for p in template.rglob("*") if p.is_file()]
    biggest = max(len(zlib.compress(b"blob %d\0" % len(d) + d)) for d in files)
    smallest = min(p.stat().st_size for p in (template / "schemas").glob("*.toml"))
    assert biggest + 64 < smallest, "a template file no longer fits the test's gap; see above"
    return (biggest + smallest) // 2


@pytest.mark.parametrize(
    ("limit", "place"),
    [(100, "/store:"), (300, "/store/.git/objects"), (_schemas_limit(), "/store/schemas/")],
)
def test_init_on_a_full_disk(tmp_path: Path, limit: int, place: str) -> None:
    """Refused while making .git, its first objects, or the template's files: what was made
    is not a store that `gitmem init` would then refuse to finish."""
    store = tmp_path / "store"
    assert_refused(gitmem("init", str(store), limit=limit), "File too large", place)
    done = gitmem("init", str(store))
    assert done.code == 0 and done.out.startswith("created a gitmem store"), done
    assert_clean(store)
    assert len(git(store, "log", "--format=%H").split()) == 1


# --- a store that may not be written ----------------------------------------------------------

_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _without_root_powers() -> None:
    """Root ignores file modes through two capabilities: dropped from the bounding set before
    exec, the new program does not get them."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


@pytest.fixture
def as_owner(tmp_path: Path) -> Callable[[], None] | None:
    """What makes a child obey file modes: nothing for a user; for root, dropping the
    capabilities that let it ignore them (skipped where that cannot be done)."""
    if os.geteuid() != 0:
        return None
    probe = tmp_path / "locked"
    probe.mkdir(mode=0o500)
    try:
        done = subprocess.run(
            [sys.executable, "-c", f"open({str(probe / 'x')!r}, 'w')"],
            capture_output=True,
            preexec_fn=_without_root_powers,
        )
    except subprocess.SubprocessError as exc:
        pytest.skip(f"running as root, and cannot drop CAP_DAC_OVERRIDE here: {exc}")
    finally:
        probe.rmdir()
    if done.returncode == 0:
        pytest.skip("running as root, and file modes still do not bind after dropping caps")
    return _without_root_powers


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Callable[[Path], None]]:
    """Makes a store read-only (every directory and file), and writable again at the end."""
    locked: list[Path] = []

    def lock(store: Path) -> None:
        locked.append(store)
        for path in [store, *store.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)

    yield lock
    for store in locked:
        _writable(store)


def _writable(store: Path) -> None:
    for path in [store, *store.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)


@pytest.mark.parametrize("command", ["record", "forget"])
def test_a_read_only_store(
    tmp_path: Path,
    as_owner: Callable[[], None] | None,
    read_only: Callable[[Path], None],
    command: str,
) -> None:
    store = new_store(tmp_path)
    assert gitmem("record", "fact", "Kept.", "--title", "Kept", "--store", str(store)).code == 0
    (kept,) = records(store)
    args = {
        "record": ["record", "fact", "New.", "--title", "New"],
        "forget": ["forget", Path(kept).stem, "--reason", "wrong"],
    }[command] + ["--store", str(store)]
    before = snapshot(store)
    read_only(store)
    refused = gitmem(*args, preexec=as_owner)
    assert_refused(refused, "Permission denied", "check who owns the store", str(store))
    _writable(store)
    assert snapshot(store) == before
    assert gitmem(*args).code == 0
    assert_clean(store)


def test_a_read_only_file_system(tmp_path: Path) -> None:
    """The store on a file system mounted read-only (a bind mount in a mount namespace of
    the child's own, where that can be made: root, util-linux's unshare)."""
    store = new_store(tmp_path)
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("a read-only mount needs root and unshare(1)")
    mount = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    wrapper = [unshare, "--mount", "sh", "-c", mount, str(store)]
    if subprocess.run([*wrapper, "true"], capture_output=True).returncode != 0:
        pytest.skip("cannot make a read-only bind mount here")
    args = ["record", "fact", "New.", "--title", "New", "--store", str(store)]
    before = snapshot(store)
    done = subprocess.run([*wrapper, *GITMEM, *args], capture_output=True, text=True)
    refused = Result(done.returncode, done.stdout, done.stderr)
    assert_refused(refused, "Read-only file system", "writable file system", str(store))
    assert snapshot(store) == before
    assert gitmem(*args).code == 0
    assert_clean(store)


# --- the search index -----------------------------------------------------------------------


@pytest.mark.parametrize("limit", [4_096, 40_000, 120_000])
def test_recall_on_a_full_disk(tmp_path: Path, limit: int) -> None:
    """The index's SQLite and tantivy say "database or disk is full" and "File too large (os
    error 27)" in their own words: told as the refused write they are, not as a bug, and the
    half-built index is removed (issue 26)."""
    store = new_store(tmp_path)
    for n in range(3):
        assert (
            gitmem("record", "fact", BODY, "--title", f"Big {n}", "--store", str(store)).code == 0
        )
    result = gitmem("recall", "big", "--store", str(store), limit=limit)
    assert_refused(result, "/.gitmem/", "free some space")
    assert not list((store / ".gitmem").glob("index.new-*"))
    again = gitmem("recall", "big", "--store", str(store))
    assert again.code == 0 and "Big 0" in again.out, again


def test_the_index_libraries_words_for_a_full_disk_are_known(tmp_path: Path) -> None:
    """What a real full disk makes them say (a file size limit makes SQLite say "disk I/O
    error" and tantivy "os error 27", above)."""
    import errno
    import sqlite3

    from gitmem.index.diskfull import refused_write

    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = 13  # type: ignore[attr-defined]
    tantivy = ValueError("Failed to commit: IoError: No space left on device (os error 28)")
    for said in (full, tantivy):
        wrapped = RuntimeError("while building")
        wrapped.__cause__ = said
        for exc in (said, wrapped):
            found = refused_write(exc, tmp_path / "index")
            assert found is not None and found.errno == errno.ENOSPC
            assert found.filename == str(tmp_path / "index")
    assert refused_write(ValueError("schema mismatch (os error 2)"), tmp_path) is None
    assert refused_write(sqlite3.DatabaseError("malformed"), tmp_path) is None
