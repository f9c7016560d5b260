"""A full build prepared in worker processes is the build prepared in this process, byte for
byte; a worker that cannot start or dies changes nothing but a notice."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from tinymodel import build_tiny_model

import gitmem.index.build as indexbuild
import gitmem.index.catchup as catchup
from gitmem.api import Store
from gitmem.index.model import ModelRef
from gitmem.store.validate import validate_files

NOW = datetime(2030, 1, 1, tzinfo=UTC)
QUERIES = ("webhook retry", "PAY-1423 deploy", "tenant_id sharding", "日本語", "redis session")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("model") / "tiny"
    build_tiny_model(out)
    return out


@pytest.fixture
def varied(store_path: Path, model_dir: Path) -> Store:
    """Thirty records of every shape a build meets: long bodies (several chunks), non-ASCII,
    identifiers, a record superseded; plus a file that is not a record and a record moved by
    hand, which a build leaves out with a notice."""
    store = Store.open(store_path)
    store.use_model(ModelRef.from_folder("tiny", model_dir))
    topics = ["webhook retry backoff", "redis session ttl", "postgres pgbouncer pool"]
    ids = []
    for i in range(30):
        body = f"Note {i} about {topics[i % 3]}; see PAY-{1400 + i} in src/api/h{i}.go."
        if i % 7 == 0:
            body += " word" * 450 + " the sharding key is tenant_id"
        if i % 5 == 0:
            body += " 日本語で書かれた記録です。"
        written = store.record("fact", body, title=f"{topics[i % 3].capitalize()} {i}", agent="a")
        ids.append(written.record.id)
    store.supersede(ids[0], "The retry budget is now 48h.", title="Webhook retry budget")
    (store.root / "records" / "junk.md").write_text("no frontmatter here\n")
    moved = store.catalog()[ids[3]]
    git(store.root, "mv", moved, "records/moved.md")
    git(store.root, "add", "records/junk.md")
    git(store.root, "commit", "-qm", "by hand")
    return store


def build(store: Store, monkeypatch: pytest.MonkeyPatch, *, parallel: bool) -> dict[str, Any]:
    """Rebuild from scratch and return everything the index holds, as comparable values."""
    monkeypatch.setattr(catchup, "_BATCH", 4)
    monkeypatch.setattr(indexbuild, "_workers", lambda records: 2 if parallel else 0)
    index = store._opened_index()
    index.notices.clear()
    store.rebuild()
    notices = sorted(set(index.notices))
    root = store.cache_dir / "index"
    db = sqlite3.connect(root / "catalog.sqlite")
    try:
        records = list(db.execute("SELECT * FROM records ORDER BY id"))
        chunks = list(db.execute("SELECT row, id FROM chunks ORDER BY row"))
        meta = dict(db.execute("SELECT key, value FROM meta"))
        # The keyword index's checksums name its segment files, whose names are random.
        assert len(json.loads(meta.pop("files"))) >= 6
    finally:
        db.close()
    vectors = hashlib.sha256((root / "vectors.f32").read_bytes()).hexdigest()
    answers = {
        (q, mode): [(h.id, h.score) for h in store.recall(q, mode=mode, now=NOW).hits]
        for q in QUERIES
        for mode in ("keyword", "semantic", "hybrid")
    }
    return {
        "records": records,
        "chunks": chunks,
        "meta": meta,
        "vectors": vectors,
        "answers": answers,
        "notices": notices,
    }


def assert_the_same_but_a_notice(serial: dict[str, Any], broken: dict[str, Any]) -> None:
    """The index a failed worker left is the one-process index; only a notice tells."""
    notices = broken.pop("notices")
    assert broken == {k: v for k, v in serial.items() if k != "notices"}
    assert any("a worker process failed" in n for n in notices)


def workers_run(script: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Start workers through a shell script in place of the interpreter."""
    shim = tmp_path / "python"
    shim.write_text(f"#!/bin/sh\n{script}\n")
    shim.chmod(0o755)
    monkeypatch.setattr(indexbuild.sys, "executable", str(shim))


def test_workers_build_the_same_index_as_one_process(
    varied: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    serial = build(varied, monkeypatch, parallel=False)
    parallel = build(varied, monkeypatch, parallel=True)
    assert parallel == serial
    assert len(serial["records"]) == 30  # 31 written, one moved by hand; junk.md is no record
    assert len(serial["chunks"]) > len(serial["records"])  # long bodies have several chunks
    assert any("junk.md is not a valid record" in n for n in serial["notices"])
    assert any("moved.md holds" in n for n in serial["notices"])
    assert all(serial["answers"][(q, "hybrid")] for q in QUERIES)


def test_workers_are_really_used(varied: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[int] = []
    real = indexbuild._Pool.__init__

    def spy(self: Any, root: Path, folder: Path | None, count: int, deadline: float) -> None:
        started.append(count)
        real(self, root, folder, count, deadline)

    monkeypatch.setattr(indexbuild._Pool, "__init__", spy)
    build(varied, monkeypatch, parallel=True)
    assert started == [2]
    build(varied, monkeypatch, parallel=False)
    assert started == [2]


def test_how_many_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indexbuild.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert indexbuild._workers(indexbuild.PARALLEL_MIN - 1) == 0
    assert indexbuild._workers(indexbuild.PARALLEL_MIN) == 2
    monkeypatch.setattr(indexbuild.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert indexbuild._workers(10**6) == 0
    monkeypatch.setattr(indexbuild.os, "sched_getaffinity", lambda pid: set(range(64)))
    assert indexbuild._workers(10**6) == indexbuild._MAX_WORKERS


def test_a_worker_that_cannot_start_leaves_a_notice_and_the_same_index(
    varied: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    serial = build(varied, monkeypatch, parallel=False)
    monkeypatch.setattr(indexbuild.sys, "executable", "/bin/false")
    broken = build(varied, monkeypatch, parallel=True)
    assert_the_same_but_a_notice(serial, broken)


def test_a_worker_error_midway_hands_the_rest_back(
    varied: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A worker that answers the first batch and then dies: the rest is prepared here."""
    serial = build(varied, monkeypatch, parallel=False)
    package = str(Path(indexbuild.__file__).parents[2])
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {package!r})
        import gitmem.index.build as b
        real, calls = b.prepare, []
        def once(*args, **kwargs):
            calls.append(1)
            if len(calls) > 1:
                raise SystemExit(9)
            return real(*args, **kwargs)
        b.prepare = once
        b.serve()
        """
    )
    (tmp_path / "worker.py").write_text(code)
    workers_run(f"exec {sys.executable} {tmp_path / 'worker.py'}", tmp_path, monkeypatch)
    broken = build(varied, monkeypatch, parallel=True)
    assert_the_same_but_a_notice(serial, broken)


def test_a_script_without_a_main_guard_can_rebuild(store_path: Path, model_dir: Path) -> None:
    """Workers never import the parent's __main__ (multiprocessing's spawn would run this
    script again in each worker, which would wait on the index lock the parent holds)."""
    store = Store.open(store_path)
    for i in range(12):
        store.record("fact", f"Fact number {i} about caches.", title=f"Fact {i}", agent="a")
    script = store_path.parent / "unguarded.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from pathlib import Path
            import gitmem.index.catchup, gitmem.index.build
            from gitmem.api import Store
            from gitmem.index.model import ModelRef
            gitmem.index.catchup._BATCH = 3
            gitmem.index.build.PARALLEL_MIN = 1
            store = Store.open(Path({str(store_path)!r}))
            store.use_model(ModelRef.from_folder("tiny", Path({str(model_dir)!r})))
            store.rebuild()
            print("built", len(store.recall("caches", limit=20).hits))
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "built 12\n"


@pytest.mark.parametrize("executable", ["/nonexistent/python", ""])
def test_a_worker_that_cannot_be_started_leaves_the_same_index(
    varied: Store, monkeypatch: pytest.MonkeyPatch, executable: str
) -> None:
    """No such interpreter (or none at all, as in an embedded Python): the build is prepared
    here instead of failing."""
    serial = build(varied, monkeypatch, parallel=False)
    monkeypatch.setattr(indexbuild.sys, "executable", executable)
    broken = build(varied, monkeypatch, parallel=True)
    broken.pop("notices")
    assert broken == {k: v for k, v in serial.items() if k != "notices"}


def test_a_worker_that_prints_before_it_serves_leaves_the_same_index(
    varied: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Text on a worker's stdout (a .pth or sitecustomize that prints) fails to unpickle in
    ways other than UnpicklingError; it is still that worker's failure, not the build's."""
    serial = build(varied, monkeypatch, parallel=False)
    workers_run(f"echo 'Usage: x'\nexec {sys.executable} \"$@\"", tmp_path, monkeypatch)
    broken = build(varied, monkeypatch, parallel=True)
    assert_the_same_but_a_notice(serial, broken)


HANGS = {
    # How the first worker to reach its n-th batch hangs: stopped (SIGSTOP), asleep in a
    # library, or halfway through writing its answer (a large piece of it already sent).
    "stopped": "os.kill(os.getpid(), signal.SIGSTOP); time.sleep(10**6)",
    "asleep": "time.sleep(10**6)",
    "mid-answer": "result = dataclasses.replace(result, notices=('x' * 300_000, Hang()))",
}


def hanging_workers(
    how: str, batch: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, wrapped: bool
) -> tuple[Path, Path]:
    """Workers of which one hangs `how` on its `batch`-th batch; the others answer. `wrapped`:
    started by a script that runs Python as its child instead of becoming it. Returns the
    files that list the started processes' ids and the Python workers' ids."""
    package = str(Path(indexbuild.__file__).parents[2])
    code = textwrap.dedent(
        f"""
        import dataclasses, os, signal, sys, time
        sys.path.insert(0, {package!r})
        import gitmem.index.build as b
        with open({str(tmp_path / "workers")!r}, "a") as out:
            print(os.getpid(), file=out)
        class Hang:
            def __reduce__(self):
                time.sleep(10**6)
        real, calls = b.prepare, []
        def hanging(*args, **kwargs):
            calls.append(1)
            result = real(*args, **kwargs)
            if len(calls) == {batch}:
                try:
                    os.close(os.open({str(tmp_path / "claimed")!r}, os.O_CREAT | os.O_EXCL))
                except FileExistsError:
                    return result
                {HANGS[how]}
            return result
        b.prepare = hanging
        b.serve()
        """
    )
    (tmp_path / "worker.py").write_text(code)
    started = tmp_path / "started"
    run = f"{sys.executable} {tmp_path / 'worker.py'}"
    workers_run(f"echo $$ >> {started}\n{'' if wrapped else 'exec '}{run}", tmp_path, monkeypatch)
    return started, tmp_path / "workers"


def running(pid: int) -> bool:
    """Whether `pid` is running or stopped (not gone, not a zombie awaiting its reaper)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


@contextlib.contextmanager
def watchdog(*lists: Path, seconds: float = 60) -> Iterator[list[int]]:
    """Kills the processes listed in `lists` if they are still there after `seconds`, so that
    a build that waits on a hung worker forever fails instead of hanging the suite."""
    killed: list[int] = []
    over = threading.Event()

    def guard() -> None:
        if over.wait(seconds):
            return
        for pid in {int(pid) for pids in lists for pid in pids.read_text().split()}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    thread = threading.Thread(target=guard, daemon=True)
    thread.start()
    try:
        yield killed
    finally:
        over.set()
        thread.join()


@pytest.mark.parametrize(
    ("how", "batch", "wrapped"),
    [("stopped", 1, False), ("asleep", 2, False), ("mid-answer", 1, False), ("asleep", 1, True)],
)
def test_a_hung_worker_is_stopped_and_its_batches_prepared_here(
    varied: Store,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    how: str,
    batch: int,
    wrapped: bool,
) -> None:
    """A worker alive but silent (a deadlock in a library, a stopped process, an answer cut
    off halfway) must not hold the build and its lock forever: past the deadline it is killed
    (with whatever it started), reaped, and its batches are prepared here; the index is the
    one-process index."""
    serial = build(varied, monkeypatch, parallel=False)
    monkeypatch.setattr(indexbuild, "_DEADLINE", 5.0, raising=False)
    started, workers = hanging_workers(how, batch, tmp_path, monkeypatch, wrapped=wrapped)
    with watchdog(started, workers) as killed:
        broken = build(varied, monkeypatch, parallel=True)
    assert killed == []  # the build stopped the hung worker itself
    assert (tmp_path / "claimed").exists()  # and one did hang
    assert any("gave no answer within 5 s" in n for n in broken["notices"])
    assert_the_same_but_a_notice(serial, broken)
    for pid in map(int, started.read_text().split()):
        with pytest.raises(ProcessLookupError):  # neither running, nor stopped, nor a zombie
            os.kill(pid, 0)
    # A wrapper's Python child is this process's grandchild, for its own parent to reap.
    assert not [pid for pid in map(int, workers.read_text().split()) if running(pid)]


class _Clock:
    """time.monotonic, but able to jump: the time this process spent stopped (Ctrl-Z, then
    fg) or waiting for a core, as its clock sees it."""

    def __init__(self) -> None:
        self.offset = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.offset


def test_an_answer_that_arrived_is_read_however_late_this_process_reads_it(
    varied: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker answered in time; this process came to read it only after the deadline
    (it was stopped, say). The answer is there to read: the build must not kill the workers
    and prepare everything again here."""
    serial = build(varied, monkeypatch, parallel=False)
    clock = _Clock()
    monkeypatch.setattr(indexbuild, "time", clock)
    real = indexbuild._Answers.readinto
    jumped: list[bool] = []

    def late(self: Any, buffer: Any) -> int:
        if not jumped:
            select.select([self._fd], [], [], 60)  # the worker's answer has arrived
            clock.offset += indexbuild._DEADLINE + 1  # and this process was away meanwhile
            jumped.append(True)
        result: int = real(self, buffer)
        return result

    monkeypatch.setattr(indexbuild._Answers, "readinto", late)
    parallel = build(varied, monkeypatch, parallel=True)
    assert jumped
    assert parallel == serial  # no notice either: no worker was given up on


def test_workers_do_not_import_from_the_working_directory(
    varied: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`python -c` puts the working directory first on sys.path: a project's `dataclasses.py`
    there must not run in a worker (the parent, a console script, never imports it)."""
    project = tmp_path / "project"
    project.mkdir()
    marker = tmp_path / "ran"
    (project / "dataclasses.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.chdir(project)
    build(varied, monkeypatch, parallel=True)
    assert not marker.exists()


def test_an_id_claimed_by_two_files_is_left_out_by_rebuild_and_update_alike(
    varied: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record copied by hand into another type's directory (its type changed to match):
    both copies are valid and at their own place. Neither is searchable until one remains,
    whichever way the index got there; in worker processes a rebuild used to fail on the
    catalog's unique id, or to index the id twice."""
    root = varied.root
    varied.recall("warm", mode="keyword")  # the index is current before the copy
    first = next(r.id for r in varied.records() if r.status == "active")
    path = varied.catalog()[first]
    text = (root / path).read_text()
    copy_path = path.replace("/fact/", "/lesson/", 1)
    assert copy_path != path
    (root / copy_path).parent.mkdir(parents=True, exist_ok=True)
    (root / copy_path).write_text(text.replace("type: fact", "type: lesson", 1))
    git(root, "add", copy_path)
    git(root, "commit", "-qm", "copy by hand")

    def ids(store: Store) -> list[str]:
        return [h.id for h in store.recall(first, mode="keyword", limit=50, now=NOW).hits]

    problems = validate_files(varied, [])
    assert [p.path for p in problems if "also claimed by" in p.message] == sorted([path, copy_path])
    updated = varied.recall(first, mode="keyword", limit=50, now=NOW)
    assert first not in [h.id for h in updated.hits]
    assert any("claimed by more than one file" in n for n in updated.notices)
    parallel = build(varied, monkeypatch, parallel=True)
    assert any("claimed by more than one file" in n for n in parallel["notices"])
    assert first not in {r[0] for r in parallel["records"]}
    assert build(varied, monkeypatch, parallel=False) == parallel

    # An edit of one copy changes nothing; removing it brings the other back, as a rebuild.
    (root / copy_path).write_text(text.replace("type: fact", "type: lesson", 1) + "\nmore\n")
    git(root, "commit", "-qam", "edit the copy")
    assert first not in ids(varied)
    git(root, "rm", "-q", copy_path)
    git(root, "commit", "-qm", "remove the copy")
    assert first in ids(varied)
    incremental = ids(varied)
    build(varied, monkeypatch, parallel=False)
    assert ids(varied) == incremental


@pytest.mark.parametrize("change", ["edit", "remove"])
def test_an_invalid_copy_changed_leaves_the_record_it_copies_in_search(
    varied: Store, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """A copy in another type's directory with its type unchanged is not at its own place, so
    neither build indexes it; editing or removing it must not take the record it copies out
    of search by update while a rebuild keeps it (the catch-up once removed the id of every
    changed path)."""
    root = varied.root
    varied.recall("warm", mode="keyword")  # the index is current before the copy
    first = next(r.id for r in varied.records() if r.status == "active")
    path = varied.catalog()[first]
    copy_path = path.replace("/fact/", "/lesson/", 1)
    (root / copy_path).parent.mkdir(parents=True, exist_ok=True)
    (root / copy_path).write_text((root / path).read_text())
    git(root, "add", copy_path)
    git(root, "commit", "-qm", "copy by hand, type unchanged")

    def ids() -> list[str]:
        return [h.id for h in varied.recall(first, mode="keyword", limit=50, now=NOW).hits]

    assert first in ids()
    if change == "edit":
        (root / copy_path).write_text((root / path).read_text() + "\nmore\n")
        git(root, "commit", "-qam", "edit the copy")
    else:
        git(root, "rm", "-q", copy_path)
        git(root, "commit", "-qm", "remove the copy")
    incremental = ids()
    assert first in incremental
    build(varied, monkeypatch, parallel=False)
    assert ids() == incremental


def test_a_copy_is_found_doubled_after_another_process_caught_up(
    varied: Store, monkeypatch: pytest.MonkeyPatch, model_dir: Path
) -> None:
    """A long-lived process caches catalog entries of the last commit it saw; another process
    then catches the index up past a move. The doubled-id check of the first process's next
    catch-up must read the catalog, not its cache (which still has the record at its old
    place, where the copy now is)."""
    root = varied.root
    first = next(r.id for r in varied.records() if r.status == "active")

    def ids(store: Store) -> list[str]:
        return [h.id for h in store.recall(first, mode="keyword", limit=50, now=NOW).hits]

    assert first in ids(varied)  # this process has cached first's entry at its place
    path = varied.catalog()[first]
    text = (root / path).read_text()
    moved = path.replace("/fact/", "/lesson/", 1)
    (root / moved).parent.mkdir(parents=True, exist_ok=True)
    (root / moved).write_text(text.replace("type: fact", "type: lesson", 1))
    git(root, "rm", "-q", path)
    git(root, "add", moved)
    git(root, "commit", "-qm", "move to lessons")
    other = Store.open(root)
    other.use_model(ModelRef.from_folder("tiny", model_dir))
    assert first in ids(other)  # the other process catches the index up past the move
    (root / path).write_text(text)
    git(root, "add", path)
    git(root, "commit", "-qm", "a copy back at the old place")
    incremental = ids(varied)
    assert first not in incremental
    build(varied, monkeypatch, parallel=False)
    assert ids(varied) == incremental


def test_validate_names_doubles_only_among_copies_at_their_own_place(varied: Store) -> None:
    """A copy in the wrong directory (its type unchanged) claims nothing: validate reports its
    place, and does not tell the original that search leaves it out."""
    root = varied.root
    first = next(r.id for r in varied.records() if r.status == "active")
    path = varied.catalog()[first]
    copy_path = path.replace("/fact/", "/lesson/", 1)
    (root / copy_path).parent.mkdir(parents=True, exist_ok=True)
    (root / copy_path).write_text((root / path).read_text())
    problems = validate_files(varied, [])
    assert not [p for p in problems if "also claimed by" in p.message]
    misplaced = [p.path for p in problems if p.message.startswith("id/path")]
    assert copy_path in misplaced and path not in misplaced
