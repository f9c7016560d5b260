"""The row facts stored in chunks (gitmem.index.factstore): a write rewrites only the chunks
whose rows it changed, and what it leaves is always what the tables say and what a rebuild
writes; an index whose facts an older gitmem stored whole is read as it is and moves to
chunks at its next write, without a rebuild."""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path

import pytest
from test_index import answers, fill, reopened, tiny, tiny_model_dir  # noqa: F401
from test_rowfacts import (
    assert_damage_heals,
    assert_facts_rewritten_by_a_write,
    catalog_of,
    stored_and_computed,
)

from gitmem.api import Store
from gitmem.index import factstore, rowfacts
from gitmem.index.rowfacts import FactChunks, RowFacts

SMALL = 4  # rows a chunk holds here: the tiny stores' ~40 rows make ~10 chunks


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rowfacts, "CHUNK_ROWS", SMALL)


def catalog_path(store: Store) -> Path:
    return store.cache_dir / "index" / "catalog.sqlite"


def parts_of(store: Store, table: str = "row_fact_chunks") -> dict[str, bytes]:
    """The stored parts of the row facts' chunks ("key.0" ...), or of `table`."""
    with sqlite3.connect(catalog_path(store)) as db:
        return {str(part): data for part, data in db.execute(f"SELECT part, data FROM {table}")}


def chunk_of(part: str) -> int | None:
    """The chunk a stored part belongs to (None: the stamp)."""
    return int(part.split(".")[1]) if "." in part else None


@pytest.fixture
def chunked(store_path: Path, tiny_model_dir: Path, small_chunks: None) -> Store:  # noqa: F811
    """A store of several chunks of row facts, the last one partial."""
    store = Store.open(store_path)
    store.use_model(tiny(tiny_model_dir))
    fill(store)
    answers(store)  # built
    return store


# --- the writer's chunks against whole facts, row by row --------------------------------------


def replay(ops: list[tuple[int, int]], start: int) -> tuple[RowFacts, RowFacts]:
    """`ops` (row, key; key -1: kill) applied to facts of `start` rows both ways: on whole
    RowFacts, and on FactChunks over stored chunks, each write's changed chunks stored, as
    the catalog does, then read back whole."""
    whole = RowFacts()
    for row in range(start):
        whole.put(row, row, row * 10, 1.0, row % 3 == 0, f"r{row}")
    stored = {
        rowfacts.chunk_part(name, n): data
        for n, chunk in whole.chunks().items()
        for name, data in chunk.items()
    }
    rows = len(whole)
    for at in range(0, len(ops), 3):  # three changes a write
        loaded: list[int] = []

        def load(n: int, loaded: list[int] = loaded) -> RowFacts:
            loaded.append(n)
            parts = {name: stored[rowfacts.chunk_part(name, n)] for name in rowfacts.PART_NAMES}
            facts = RowFacts.from_bytes(parts)
            assert facts is not None
            return facts

        writer = FactChunks(rows, load)
        for row, key in ops[at : at + 3]:
            for facts in (whole, writer):
                if key < 0:
                    facts.kill(row)
                else:
                    facts.put(row, key, key * 10, 0.5, False, f"é{key}")
        changed = writer.changed()
        assert set(loaded) <= set(changed)  # read only what it rewrites
        assert len(changed) <= 3 + (max(r for r, _ in ops[at : at + 3]) // SMALL) + 1
        for n, chunk in changed.items():
            stored.update({rowfacts.chunk_part(name, n): data for name, data in chunk.items()})
        rows = len(writer)
    back = RowFacts.from_chunks(stored, rows)
    assert back is not None
    return back, whole


@pytest.mark.parametrize(
    "start, ops",
    [
        (0, [(0, 1)]),  # the first row of a new catalog
        (0, [(9, 1)]),  # a row past the end of a new catalog: chunks before it dead, full
        (4, [(4, 7)]),  # the first row of a new chunk, after a full one
        (5, [(7, 7), (8, 8)]),  # the end of a partial chunk, then the next one's first row
        (5, [(3, -1), (4, -1)]),  # kills either side of a boundary
        (6, [(30, 2), (5, -1), (40, -1)]),  # far past the end; a kill past the end is none
        (8, [(7, -1), (8, 3), (3, 4)]),
    ],
)
def test_chunks_at_their_boundaries_hold_what_whole_facts_hold(
    small_chunks: None, start: int, ops: list[tuple[int, int]]
) -> None:
    back, whole = replay(ops, start)
    assert back == whole
    assert back.ids_of(range(len(whole))) == whole.ids()


@pytest.mark.parametrize("seed", range(20))
def test_chunks_hold_what_whole_facts_hold_after_random_writes(
    small_chunks: None, seed: int
) -> None:
    rng = random.Random(seed)
    start = rng.randrange(0, 3 * SMALL)
    ops = [
        (rng.randrange(0, start + 2 * SMALL), rng.choice([-1, rng.randrange(99)]))
        for _ in range(30)
    ]
    back, whole = replay(ops, start)
    assert back == whole


# --- the catalog --------------------------------------------------------------------------------


def test_facts_are_stored_in_chunks_and_say_what_the_tables_say(chunked: Store) -> None:
    parts = parts_of(chunked)
    stored, computed = stored_and_computed(chunked)
    assert stored is not None and stored == computed
    assert len(stored) > 2 * SMALL  # several chunks, the names say which
    assert {"key.0", "key.1", f"id_ends.{(len(stored) - 1) // SMALL}"} <= set(parts)
    assert set(parts_of(chunked, "row_facts")) == {"stamp"}


def test_a_write_reads_and_rewrites_only_the_chunks_it_changes(
    chunked: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    rid = chunked.recall("PAY-1423", limit=1).hits[0].id
    catalog = catalog_of(chunked)
    try:
        old_rows = catalog.rows_of([rid])
        rows_before = catalog.next_row()
    finally:
        catalog.close()
    before = parts_of(chunked)
    loaded: list[int] = []
    real = factstore.chunk_facts

    def spy(db: sqlite3.Connection, n: int, rows: int) -> RowFacts | None:
        loaded.append(n)
        return real(db, n, rows)

    def refuse(*args: object) -> None:
        raise AssertionError("the write read all the row facts")

    with monkeypatch.context() as patch:
        patch.setattr(factstore, "chunk_facts", spy)
        patch.setattr(factstore, "read", refuse)
        patch.setattr("gitmem.index.catalog.Catalog.computed_facts", refuse)
        chunked.amend(rid, {"abstract": "Friday deploys broke checkout"})
        chunked.index()  # caught up, no recall (a reader reads them all)
    after = parts_of(chunked)
    catalog = catalog_of(chunked)
    try:
        rows_after = catalog.next_row()
    finally:
        catalog.close()
    killed = {row // SMALL for row in old_rows}
    appended = set(range(rows_before // SMALL, (rows_after - 1) // SMALL + 1))
    assert killed <= set(loaded) <= killed | appended
    untouched = [p for p in before if chunk_of(p) not in killed | appended | {None}]
    assert untouched and all(after[p] == before[p] for p in untouched)
    assert any(after[p] != before[p] for p in before if chunk_of(p) in killed)
    stored, computed = stored_and_computed(chunked)
    assert stored is not None and stored == computed


def test_catch_up_over_chunks_equals_a_rebuild(chunked: Store, tiny_model_dir: Path) -> None:  # noqa: F811
    ids = [r.id for r in chunked.records()]
    chunked.supersede(ids[0], "Retry with jitter now.", title="Retry webhooks with jitter")
    chunked.forget(ids[1], reason="wrong")
    chunked.amend(ids[5], {"abstract": "where the shards go"})  # many chunks die at once
    chunked.record("fact", "Webhooks are signed with HMAC.", title="Webhook signatures")
    caught_up = answers(chunked)
    stored, computed = stored_and_computed(chunked)
    assert stored is not None and stored == computed
    shutil.rmtree(chunked.cache_dir)
    again = reopened(chunked.root, tiny_model_dir)
    assert answers(again) == caught_up
    assert stored_and_computed(again)[0] is not None


# --- an older gitmem's whole parts ------------------------------------------------------------


def store_whole(store: Store, leftovers: bool) -> None:
    """The facts as a gitmem before chunks stores them: one part of each name beside a stamp
    of the commit and vector file alone, in `row_facts` (`leftovers`: beside the chunks this
    version wrote in their own table, as that gitmem's write to a chunked catalog leaves them;
    else a catalog that gitmem wrote alone)."""
    stored, _ = stored_and_computed(store)
    assert stored is not None
    with sqlite3.connect(catalog_path(store)) as db:
        commit, vectors = (
            db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            for key in ("commit", "vectors")
        )
        stamp = f"{commit[0]}\x1f{vectors[0] if vectors else 'vectors.f32'}".encode()
        db.execute("DELETE FROM row_facts")
        db.executemany(
            "INSERT INTO row_facts (part, data) VALUES (?, ?)",
            [*stored.to_bytes().items(), ("stamp", stamp)],
        )
        if leftovers:  # the chunks that gitmem left say something else
            db.execute("UPDATE row_fact_chunks SET data = zeroblob(length(data))")
        else:
            db.execute("DROP TABLE row_fact_chunks")


def what_an_older_gitmem_reads(store: Store) -> RowFacts | None:
    """The row facts as a gitmem before chunks reads them: `row_facts` alone, the stamp
    compared whole, then one part of each name and no other."""
    found = parts_of(store, "row_facts")
    catalog = catalog_of(store)
    try:
        if found.pop("stamp", b"").decode() != catalog._stamp():
            return None
    finally:
        catalog.close()
    return RowFacts.from_bytes(found) if set(found) == set(rowfacts.PART_NAMES) else None


@pytest.mark.parametrize("leftovers", [False, True])
def test_whole_facts_of_an_older_gitmem_are_read_and_moved_to_chunks_by_the_next_write(
    chunked: Store,
    tiny_model_dir: Path,  # noqa: F811
    leftovers: bool,
) -> None:
    before = answers(chunked)
    assert what_an_older_gitmem_reads(chunked) is None  # not its own: it does without
    store_whole(chunked, leftovers)
    whole = what_an_older_gitmem_reads(chunked)
    assert whole is not None  # what it wrote, it reads, whatever chunks are left beside
    old = reopened(chunked.root, tiny_model_dir)
    stored, computed = stored_and_computed(old)
    assert stored is not None and stored == computed == whole  # read as they are, no rebuild
    assert answers(old) == before
    assert_facts_rewritten_by_a_write(old)
    assert set(parts_of(old, "row_facts")) == {"stamp"}  # in chunks now
    parts = parts_of(old)
    rows = len(stored_and_computed(old)[1])
    assert len(parts) == len(rowfacts.PART_NAMES) * -(-rows // SMALL)  # no leftovers
    assert what_an_older_gitmem_reads(old) is None


_UNDIGITED = "rtrim(CAST(data AS TEXT), '0123456789')"  # the stamp without its row count
_LAST = (  # the last chunk's ids
    "part = (SELECT part FROM row_fact_chunks WHERE part LIKE 'ids.%'"
    " ORDER BY CAST(substr(part, instr(part, '.') + 1) AS INTEGER) DESC LIMIT 1)"
)
# Damage to ids that keeps every length, and the ends' first and last items.
_NOT_UTF8 = "UPDATE row_fact_chunks SET data = CAST(x'ff' || substr(data, 2) AS BLOB) WHERE "
_DECREASING = (  # the first end is the last
    "UPDATE row_fact_chunks SET data = CAST(substr(data, -8) || substr(data, 9) AS BLOB) WHERE "
)


@pytest.mark.parametrize(
    "damage",
    [
        "DELETE FROM row_fact_chunks WHERE part = 'weight.1'",  # a chunk missing a part
        "UPDATE row_fact_chunks SET data = substr(data, 1, 8) WHERE part = 'key.1'",  # short
        "UPDATE row_fact_chunks SET data = data || '' WHERE part = 'ids.1'",  # text
        "UPDATE row_fact_chunks SET data = CAST(data || x'00' AS BLOB) WHERE part = 'ids.1'",
        "UPDATE row_fact_chunks SET data = zeroblob(length(data)) WHERE part = 'id_ends.1'",
        "INSERT INTO row_fact_chunks VALUES ('key.99', x'00')",  # a chunk past the end
        "DROP TABLE row_fact_chunks",
        "UPDATE row_facts SET data = CAST('chunks 4 rows 9' AS BLOB) WHERE part = 'stamp'",
        "UPDATE row_fact_chunks SET data = x'' WHERE part = 'id_ends.1'",  # SQLite's ends: NULL
        f"UPDATE row_facts SET data = CAST({_UNDIGITED} || '\u00b2' AS BLOB)",  # int() refuses
        f"UPDATE row_facts SET data = CAST({_UNDIGITED} || hex(zeroblob(2200)) AS BLOB)",  # 4400
        _NOT_UTF8 + _LAST,  # in the chunk the write rewrites (the last): found when it is read
        _DECREASING + _LAST.replace("ids", "id_ends"),
    ],
)
def test_a_damaged_chunk_the_write_does_not_touch_is_found_and_all_rewritten(
    chunked: Store,
    tiny_model_dir: Path,  # noqa: F811
    damage: str,
) -> None:
    before = answers(chunked)
    with sqlite3.connect(catalog_path(chunked)) as db:
        db.execute(damage)
    assert_damage_heals(chunked, tiny_model_dir, before)  # the write's chunk is the last only


@pytest.mark.parametrize(
    "damage",
    [_NOT_UTF8 + "part = 'ids.1'", _DECREASING + "part = 'id_ends.1'"],
)
def test_ids_damaged_inside_a_chunk_no_write_reads_are_not_trusted_until_a_rebuild(
    chunked: Store,
    tiny_model_dir: Path,  # noqa: F811
    damage: str,
) -> None:
    """Damage inside the ids (_NOT_UTF8, _DECREASING) of a chunk a write does not rewrite:
    the write's cheap check (factstore.sound) does not see it, so the facts stay not trusted
    (the answers as before, without them) until a rebuild writes them."""
    before = answers(chunked)
    with sqlite3.connect(catalog_path(chunked)) as db:
        db.execute(damage)
    other = reopened(chunked.root, tiny_model_dir)
    assert stored_and_computed(other)[0] is None
    assert answers(other) == before
    other.record("fact", "Zebras graze on the savanna.", title="Zebra stripes")
    assert other.recall("zebra savanna", limit=1).hits[0].title == "Zebra stripes"
    assert stored_and_computed(other)[0] is None  # chunk 1 untouched, still damaged
    other.rebuild()
    stored, computed = stored_and_computed(other)
    assert stored is not None and stored == computed
