"""A damaged search index is found, rebuilt from git with the usual one-line notice, and
reported by `gitmem doctor` (issue 26): random bytes in the keyword index's files, in the
catalog's pages, a truncated vector file. Real stores with the tiny model; `gitmem recall` runs
as a whole process (the fast path first, which hands a damaged index to the full CLI)."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from test_index import fill
from test_quickrecall import use_model
from tinymodel import build_tiny_model

from gitmem.api import Store
from gitmem.cli import quickrecall
from gitmem.index import verify

QUERY = "retry webhook deliveries"
NOW = ["--until", "2031-01-01"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store whose config names the tiny model, filled and indexed (copied per test)."""
    base = tmp_path_factory.mktemp("damage")
    build_tiny_model(base / "tiny")
    root = base / "store"
    Store.init(root)
    use_model(root, str(base / "tiny"))
    store = Store.open(root)
    fill(store)
    store.index()
    return root


@pytest.fixture
def damaged(built: Path, tmp_path: Path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(built, root, symlinks=True)
    return root


def recall_process(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gitmem", "recall", QUERY, "--store", str(root), *NOW, *args],
        capture_output=True,
        text=True,
        check=False,
    )


def doctor(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gitmem", "doctor", "--store", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )


def overwrite(
    path: Path, seed: int = 1, *, start: float = 1 / 3, count: int = 64, fill: bytes = b""
) -> None:
    """Random bytes (or `fill` bytes) over part of a file, its size unchanged."""
    size = path.stat().st_size
    at = int(size * start)
    length = max(1, min(count, size - at))
    data = fill * length if fill else random.Random(seed).randbytes(length)
    with path.open("r+b") as handle:
        handle.seek(at)
        handle.write(data)


def _text_file(suffix: str) -> Callable[[Path], None]:
    def damage(index: Path) -> None:
        [*found] = sorted((index / "text").glob(f"*{suffix}"), key=lambda p: -p.stat().st_size)
        overwrite(found[0])

    return damage


def _catalog_pages(index: Path) -> None:
    """Every page after the first: the file still opens, its tables do not read."""
    path = index / "catalog.sqlite"
    size = path.stat().st_size
    overwrite(path, start=4096 / size, count=size)


def _truncated_vectors(index: Path) -> None:
    path = index / "vectors.f32"
    os.truncate(path, path.stat().st_size // 2)


DAMAGES: dict[str, Callable[[Path], None]] = {
    **{f"text{suffix}": _text_file(suffix) for suffix in (".term", ".idx", ".store", ".pos")},
    "text.fast": _text_file(".fast"),
    "text.fieldnorm": _text_file(".fieldnorm"),
    "text meta.json": lambda index: overwrite(index / "text" / "meta.json"),
    "catalog pages": _catalog_pages,
    "vectors truncated": _truncated_vectors,
}


@pytest.mark.parametrize("kind", sorted(DAMAGES))
def test_damage_is_found_rebuilt_with_a_notice_and_reported(damaged: Path, kind: str) -> None:
    before = recall_process(damaged)
    assert before.returncode == 0 and before.stderr == "", before.stderr
    assert doctor(damaged).returncode == 0
    DAMAGES[kind](damaged / ".gitmem" / "index")
    told = doctor(damaged)
    assert told.returncode == 1, told.stdout + told.stderr
    assert "index     damaged" in told.stdout or "index     unreadable (" in told.stdout
    assert "the next recall rebuilds it from git" in told.stderr
    healed = recall_process(damaged)
    assert healed.returncode == 0, healed.stderr
    [notice] = healed.stderr.splitlines()
    assert notice.startswith("gitmem: search index is ") and notice.endswith(
        "; rebuilding it from git"
    )
    assert "Traceback" not in healed.stderr and "panic" not in healed.stderr.lower()
    assert healed.stdout == before.stdout
    again = recall_process(damaged)
    assert (again.returncode, again.stdout, again.stderr) == (0, before.stdout, "")
    assert doctor(damaged).returncode == 0


@pytest.mark.parametrize(
    ("suffix", "start", "fill", "raised"),
    [(".term", 1 / 3, b"", "ValueError"), (".fast", 0.1, b"\xff", "PanicException")],
)
def test_damage_the_open_cannot_see_is_met_by_the_search_and_rebuilt(
    damaged: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    suffix: str,
    start: float,
    fill: bytes,
    raised: str,
) -> None:
    """A large segment file is not checksummed at open: a search that reads its damage gets
    tantivy's error, or its Rust code's panic (a BaseException), which the fast path hands
    over and the full path rebuilds on."""
    from gitmem.index.textindex import TextIndex

    before = [h.id for h in Store.open(damaged).recall(QUERY).hits]
    monkeypatch.setattr(verify, "SMALL", 0)  # as if every file were large
    text = damaged / ".gitmem" / "index" / "text"
    overwrite(max(text.glob(f"*{suffix}"), key=lambda p: p.stat().st_size), start=start, fill=fill)
    with pytest.raises(BaseException) as met:  # what tantivy itself does with it
        TextIndex.open(text).search(QUERY, 10, None, lambda keys: {})
    assert raised in (type(met.value).__name__, type(met.value.__cause__).__name__)
    monkeypatch.setenv("GITMEM_STORE", str(damaged))
    assert quickrecall.run([QUERY, *NOW], os.environ) is None  # left to the full CLI
    assert capsys.readouterr() == ("", "")
    result = Store.open(damaged).recall(QUERY)
    [notice] = result.notices
    assert notice.startswith("search index is damaged (") and "rebuilding it from git" in notice
    assert [h.id for h in result.hits] == before


def test_a_build_records_checksums_an_intact_index_passes(built: Path) -> None:
    import json
    import sqlite3

    index = built / ".gitmem" / "index"
    db = sqlite3.connect(index / "catalog.sqlite")
    [(manifest,)] = db.execute("SELECT value FROM meta WHERE key = ?", (verify.MANIFEST,))
    db.close()
    names = set(json.loads(manifest))
    assert {p.suffix for p in (index / "text").glob("*.*")} - {".json", ".lock"} <= {
        Path(n).suffix for n in names
    }
    assert verify.quick(index, manifest) is None and verify.full(index, manifest) == []


def test_a_busy_or_full_catalog_is_not_taken_for_damage() -> None:
    import sqlite3

    from gitmem.index.index import damaged
    from gitmem.index.verify import IndexDamaged

    def error(kind: type[Exception], message: str, code: int) -> Exception:
        exc = kind(message)
        exc.sqlite_errorcode = code  # type: ignore[attr-defined]
        return exc

    assert damaged(error(sqlite3.DatabaseError, "database disk image is malformed", 11))
    assert damaged(error(sqlite3.DatabaseError, "file is not a database", 26))
    assert not damaged(error(sqlite3.OperationalError, "database is locked", 5))
    assert not damaged(error(sqlite3.OperationalError, "database or disk is full", 13))
    assert damaged(IndexDamaged("vectors.f32 holds 3 vector rows, the catalog 6"))
