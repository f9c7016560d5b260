"""The catalog's row facts: what each vector row is, as arrays the semantic half reads instead
of asking the catalog per record. They must always say what the tables say, and a recall with
them must answer exactly as one without."""

from __future__ import annotations

import sqlite3
from array import array
from pathlib import Path
from typing import Any

import pytest
from test_index import QUERIES, answers, fill, reopened, tiny, tiny_model_dir  # noqa: F401

from gitmem.api import Store
from gitmem.index.catalog import Catalog
from gitmem.index.entries import Filter
from gitmem.index.rowfacts import RowFacts
from gitmem.index.semantic import SemanticHalf


@pytest.fixture
def edited(store_path: Path, tiny_model_dir: Path) -> Store:  # noqa: F811
    """A store whose index has every kind of row: a record of many chunks, dead rows left by
    edits, a superseded record, a forgotten one."""
    store = Store.open(store_path)
    store.use_model(tiny(tiny_model_dir))
    ids = fill(store)
    answers(store)  # built
    store.supersede(ids[0], "Retry with jitter now.", title="Retry webhooks with jitter")
    store.forget(ids[1], reason="wrong")
    store.amend(ids[2], {"title": "Never deploy on Fridays"})
    store.amend(ids[5], {"abstract": "where the shards go"})  # many chunks die at once
    store.record("fact", "Webhooks are signed with HMAC.", title="Webhook signatures")
    answers(store)  # caught up
    return store


def catalog_of(store: Store) -> Catalog:
    return Catalog(store.cache_dir / "index" / "catalog.sqlite")


def stored_and_computed(store: Store) -> tuple[RowFacts | None, RowFacts]:
    catalog = catalog_of(store)
    try:
        stored = catalog.row_facts()
        return (None if stored is None else stored.facts), catalog.computed_facts()
    finally:
        catalog.close()


def assert_facts_rewritten_by_a_write(store: Store) -> None:
    """After a new record and the catch-up it brings, the stored facts are the tables'."""
    store.record("fact", "Zebras graze on the savanna.", title="Zebra stripes")
    assert store.recall("zebra savanna", limit=1).hits[0].title == "Zebra stripes"
    stored, computed = stored_and_computed(store)
    assert stored is not None and stored == computed


def test_row_facts_say_what_the_tables_say_after_every_kind_of_write(edited: Store) -> None:
    stored, computed = stored_and_computed(edited)
    assert stored is not None
    assert stored == computed
    keys = stored.parts["key"]
    assert -1 in keys  # the edits left dead rows
    assert 1 in stored.parts["superseded"]  # the superseded record's rows say so
    live = [k for k in keys if k >= 0]
    assert len(set(live)) < len(live)  # the long note has several rows


def test_row_facts_follow_a_compaction(edited: Store) -> None:
    rid = edited.recall("PAY-1423", limit=1).hits[0].id
    index = edited.cache_dir / "index"
    for i in range(90):  # many edits leave dead vector rows until compaction
        edited.amend(rid, {"abstract": f"revision {i}"})
        edited.recall("friday")
    assert [p.name for p in index.glob("vectors*.f32")] != ["vectors.f32"]  # compacted
    stored, computed = stored_and_computed(edited)
    assert stored is not None and stored == computed


def test_keys_are_never_reused(edited: Store) -> None:
    """A reader holding row facts older than the tables finds no record for a stale key,
    never another record."""
    catalog = catalog_of(edited)
    try:
        seen = {int(k) for (k,) in catalog._db.execute("SELECT rowid FROM records")}
        before = int(catalog.meta("next_key") or 0)
    finally:
        catalog.close()
    newest = max(seen)
    edited.forget(edited.recall("signatures HMAC", limit=1).hits[0].id, reason="gone")
    edited.record("fact", "Queues are drained before deploys.", title="Drain queues")
    answers(edited)
    catalog = catalog_of(edited)
    try:
        after = {int(k) for (k,) in catalog._db.execute("SELECT rowid FROM records")}
        assert int(catalog.meta("next_key") or 0) > before
    finally:
        catalog.close()
    assert min(after - seen) > newest


def semantic_both_ways(
    store: Store, monkeypatch: pytest.MonkeyPatch, flt: Filter, n: int
) -> tuple[list[Any], list[Any]]:
    index = store.index()
    with monkeypatch.context() as patch:
        for name in ("owners", "entries", "rows_of"):  # the row facts answer instead

            def refuse(*args: Any, name: str = name) -> Any:
                raise AssertionError(f"the catalog was asked {name}")

            patch.setattr(Catalog, name, refuse)
        fast = [index.semantic(q, n, flt) for q in QUERIES]
    with monkeypatch.context() as patch:
        patch.setattr(SemanticHalf, "_row_arrays", lambda self: None)  # as without row facts
        plain = [index.semantic(q, n, flt) for q in QUERIES]
    return fast, plain


@pytest.mark.parametrize("n", [1, 3, 10])
@pytest.mark.parametrize("include_superseded", [False, True])
def test_the_semantic_half_answers_alike_with_and_without_row_facts(
    edited: Store, monkeypatch: pytest.MonkeyPatch, n: int, include_superseded: bool
) -> None:
    flt = Filter(include_superseded=include_superseded)
    fast, plain = semantic_both_ways(edited, monkeypatch, flt, n)
    for got, want in zip(fast, plain, strict=True):
        assert got is not None and want is not None
        assert [rid for rid, _ in got] == [rid for rid, _ in want]
        assert all(abs(a - b) < 1e-6 for (_, a), (_, b) in zip(got, want, strict=True))
    # n = 10 is more than the store holds: every admitted record, each once.
    records = {r.id: r for r in edited.records()}
    admitted = {i for i, r in records.items() if include_superseded or r.status != "superseded"}
    if n == 10:
        assert {rid for rid, _ in fast[0] or []} == admitted


def test_a_catalog_without_row_facts_answers_alike_and_gains_them_at_its_next_update(
    edited: Store,
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    before = answers(edited)
    path = edited.cache_dir / "index" / "catalog.sqlite"
    with sqlite3.connect(path) as db:  # as an index written by a gitmem before row facts
        db.execute("DROP TABLE row_facts")
        db.execute("DROP TABLE row_fact_chunks")
    old = reopened(edited.root, tiny_model_dir)
    assert answers(old) == before
    assert stored_and_computed(old)[0] is None
    assert_facts_rewritten_by_a_write(old)


@pytest.mark.parametrize(
    "damage",
    [
        "short-part",
        "missing-part",
        "ragged",
        "text",
        "no-ids",
        "short-ids",
        "ids-past-text",
        "ends-decrease",
        "not-utf8",
    ],
)
def test_damaged_row_facts_are_not_trusted_and_are_rewritten(
    edited: Store,
    tiny_model_dir: Path,  # noqa: F811
    damage: str,
) -> None:
    before = answers(edited)
    path = edited.cache_dir / "index" / "catalog.sqlite"
    with sqlite3.connect(path) as db:  # the parts of chunks "key.0", "ids.0" ...
        if damage == "short-part":  # whole and alike, but fewer rows than the vector file has
            db.execute("UPDATE row_fact_chunks SET data = substr(data, 1, 16) WHERE 1")
            db.execute(
                "UPDATE row_fact_chunks SET data = substr(data, 1, 2) WHERE part LIKE 'superseded%'"
            )
        elif damage == "missing-part":
            db.execute("DELETE FROM row_fact_chunks WHERE part LIKE 'weight%'")
        elif damage == "ragged":  # bytes that are no whole number of items
            db.execute(
                "UPDATE row_fact_chunks SET data = CAST(data || x'00' AS BLOB)"
                " WHERE part LIKE 'key%'"
            )
        elif damage == "text":  # a part stored as text (what || makes of blobs)
            db.execute("UPDATE row_fact_chunks SET data = data || '' WHERE part LIKE 'ids%'")
        elif damage == "no-ids":  # as a gitmem from before the ids were in the facts wrote
            db.execute("DELETE FROM row_fact_chunks WHERE part LIKE 'id%'")
        elif damage == "short-ids":
            db.execute(
                "UPDATE row_fact_chunks SET data = substr(data, 1, 3) WHERE part LIKE 'ids%'"
            )
        elif damage == "ends-decrease":  # the first end is the last: the first and last agree
            db.execute(
                "UPDATE row_fact_chunks SET data = CAST(substr(data, -8) || substr(data, 9)"
                " AS BLOB) WHERE part LIKE 'id_ends%'"
            )
        elif damage == "not-utf8":  # every length right, the first id's first byte not UTF-8
            db.execute(
                "UPDATE row_fact_chunks SET data = CAST(x'ff' || substr(data, 2) AS BLOB)"
                " WHERE part LIKE 'ids%'"
            )
        else:  # the ends point past the text
            db.execute(
                "UPDATE row_fact_chunks SET data = CAST(data || x'00' AS BLOB)"
                " WHERE part LIKE 'ids%'"
            )
    assert_damage_heals(edited, tiny_model_dir, before)


def assert_damage_heals(store: Store, model_dir: Path, before: object) -> None:
    """After damage to the stored row facts: not trusted, the answers as `before`, and the
    facts the tables' again after the next write."""
    other = reopened(store.root, model_dir)
    assert stored_and_computed(other)[0] is None  # not trusted
    assert answers(other) == before
    assert_facts_rewritten_by_a_write(other)


def test_row_facts_keep_each_rows_id_through_their_bytes() -> None:
    facts = RowFacts()
    facts.put(2, 7, 100, 1.0, False, "caf\u00e9-1")  # rows 0 and 1 dead until set
    facts.put(0, 5, 50, 2.0, True, "a")
    back = RowFacts.from_bytes(facts.to_bytes())
    assert back is not None and back == facts
    assert [back.id_of(row) for row in range(3)] == ["a", "", "caf\u00e9-1"]
    back.kill(2)
    assert back != facts and back.ids() == ["a", "", ""]
    moved = RowFacts.from_bytes(facts.renumbered({2: 0, 0: 1}).to_bytes())
    assert moved is not None and moved.ids() == ["caf\u00e9-1", "a"]
    assert list(moved.parts["key"]) == [7, 5]


@pytest.mark.parametrize(
    "ids, ends",
    [
        (b"ab", [2, 1, 2]),  # an end before the one before it
        (b"\xff", [1]),  # not UTF-8
        ("\u00e9".encode(), [1, 2]),  # UTF-8 cut inside a character
    ],
)
def test_ids_whose_ends_decrease_or_that_are_not_utf8_are_not_row_facts(
    ids: bytes, ends: list[int]
) -> None:
    facts = RowFacts()
    for row in range(len(ends)):
        facts.put(row, row, 0, 1.0, False, "x")
    parts = facts.to_bytes() | {"ids": ids, "id_ends": array("q", ends).tobytes()}
    assert RowFacts.from_bytes(parts) is None


def write_as_an_older_gitmem(store: Store, sql: list[str]) -> None:
    """Statements on the catalog as a gitmem from before row facts makes them: it moves the
    commit stamp (or the vector file's name), takes rowids of its own, and leaves the row
    facts and next_key as they were."""
    with sqlite3.connect(store.cache_dir / "index" / "catalog.sqlite") as db:
        for statement in sql:
            db.execute(statement)


@pytest.mark.parametrize("what", ["update", "compaction"])
def test_facts_an_older_gitmem_left_behind_are_not_trusted(
    edited: Store,
    tiny_model_dir: Path,  # noqa: F811
    what: str,
) -> None:
    before = answers(edited)
    if what == "update":  # a record rewritten at a new rowid, the stamp moved
        write_as_an_older_gitmem(
            edited,
            [
                "UPDATE records SET rowid = (SELECT max(rowid) + 1 FROM records)"
                " WHERE rowid = (SELECT min(rowid) FROM records)",
                "UPDATE meta SET value = 'moved-' || value WHERE key = 'commit'",
            ],
        )
    else:  # rows renumbered under the same stamp, the vector file renamed
        write_as_an_older_gitmem(
            edited, ["INSERT OR REPLACE INTO meta VALUES ('vectors', 'vectors-elsewhere.f32')"]
        )
    catalog = catalog_of(edited)
    try:
        assert catalog.row_facts() is None  # written for another commit or file
        assert catalog._facts_to_write() == catalog.computed_facts()
        assert catalog._next_key() > max(
            k for (k,) in catalog._db.execute("SELECT rowid FROM records")
        )
    finally:
        catalog.close()
    if what == "update":  # the catalog's own stamp is HEAD's no more: the index catches up
        other = reopened(edited.root, tiny_model_dir)
        assert answers(other) == before
        assert_facts_rewritten_by_a_write(other)


def test_a_record_gone_from_the_catalog_is_left_out_of_recall(
    edited: Store,
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    """Row facts a moment older than the tables (another process's update in between) may
    name a record that is gone: the semantic half ranks it from the facts, ids included, and
    recall, finding no entry for it, returns the next one instead of fewer hits."""
    query = "webhook retry deliveries"
    full = edited.recall(query, mode="semantic", limit=4)
    assert len(full.hits) == 4
    first = full.hits[0].id
    with sqlite3.connect(edited.cache_dir / "index" / "catalog.sqlite") as db:
        db.execute("DELETE FROM records WHERE id = ?", (first,))  # the facts still name it
    other = reopened(edited.root, tiny_model_dir)
    index = other.index()
    ranked = index.semantic(query, 4, Filter())
    assert ranked is not None and ranked[0][0] == first  # from the facts
    later = other.recall(query, mode="semantic", limit=4)
    assert len(later.hits) == 4 and first not in {hit.id for hit in later.hits}
    assert [hit.id for hit in later.hits[:3]] == [hit.id for hit in full.hits[1:]]


def test_one_catalog_asked_from_two_threads_gives_each_its_own_answer(edited: Store) -> None:
    """A hybrid recall asks the catalog from the keyword thread and the semantic half at once.
    On a catalog from before row facts, row_facts' read fails in one thread while the other's
    reads succeed; SQLite keeps one last error per connection, so unserialised, a thread was
    told the other's outcome (a DatabaseError read as index damage, or CPython's SystemError
    for no error at all). Each thread must get its own answer, every time."""
    import threading
    import time

    path = edited.cache_dir / "index" / "catalog.sqlite"
    db = sqlite3.connect(path)
    db.execute("DROP TABLE row_facts")
    db.commit()
    db.close()
    catalog = catalog_of(edited)
    keys = list(range(1, 200))
    expected = catalog.admitted(keys, Filter())
    assert expected and catalog.row_facts() is None
    errors: list[BaseException] = []
    until = time.monotonic() + 1.5

    def ask(call: Any, want: object) -> None:
        while time.monotonic() < until and not errors:
            try:
                assert call() == want
            except BaseException as exc:  # any failure at all is the finding
                errors.append(exc)

    threads = [
        threading.Thread(target=ask, args=(catalog.row_facts, None)),
        threading.Thread(target=ask, args=(lambda: catalog.admitted(keys, Filter()), expected)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    catalog.close()
    assert errors == []
