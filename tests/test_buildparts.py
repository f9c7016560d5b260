"""The shortcuts a full build takes in its one process give what the plain ways give: a
document's context added to its made fields (no JSON round trip), a record's lead (its first
words, the rest unsplit), a record file's id (no pathlib)."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from test_indexbuild import build, model_dir, varied  # noqa: F401  (fixtures)

from gitmem.api import Store
from gitmem.index import catchup, neighbours, rowfacts
from gitmem.index.catalog import Catalog
from gitmem.index.textdoc import TextDoc, text_fields, with_context
from gitmem.store.record import Record

DOCS = [
    TextDoc("a-1", "b1", "Title", "abstract", "body", ("t1", "t2"), "fact"),
    TextDoc("b-2", "b2", 'quote " and \\ back', "", "line\nbreak\ttab", (), "decision"),
    TextDoc("c-3", "b3", "日本語", "ünïcode", "emoji 🚲 " * 50, ("ταγ",), "fact"),
    TextDoc("d-4", "b4", "lone \ud800 surrogate", "", "", (), "fact", key=7),
]
CONTEXTS = ["", "one lead", 'a "quoted" lead\nand \\ another', "日本語の文脈 🚲", "bad \udfff one"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.id)
@pytest.mark.parametrize("context", CONTEXTS)
def test_context_added_to_made_fields_is_the_document_made_with_it(
    doc: TextDoc, context: str
) -> None:
    made = with_context(text_fields(doc), context)
    assert made == text_fields(replace(doc, context=context))


def record(body: str, title: str = "A title", abstract: str = "") -> Record:
    at = datetime(2030, 1, 1, tzinfo=UTC)
    return Record(
        id="a-title-abcd", type="fact", title=title, abstract=abstract, body=body, agent="a",
        created=at, updated=at,
    )  # fmt: skip


@pytest.mark.parametrize(
    "body",
    [
        "",
        "few words here",
        " ".join(f"w{i}" for i in range(37)),  # with the title's two: 39
        " ".join(f"w{i}" for i in range(38)),  # exactly 40
        " ".join(f"w{i}" for i in range(39)),  # 41
        "\n\n  lead\twith\u00a0odd \u2003 spaces\n" + "x " * 500,
        "word " * 2000 + "\n",
    ],
)
def test_a_lead_is_the_first_words_of_title_abstract_and_body(body: str) -> None:
    r = record(body, abstract="  an  abstract ")
    words = " ".join((r.title, r.abstract, r.body)).split()
    assert neighbours.lead(r) == " ".join(words[: neighbours.LEAD_WORDS])


@pytest.mark.parametrize(
    "path",
    [
        "records/fact/2030/01/a-title-abcd.md",
        "records/a.md",
        "records/x/.md",
        "records/x/..md",
        "records/x/a.b.md",
        "records/x.y/z.md",
    ],
)
def test_a_record_file_id_is_its_path_stem(path: str) -> None:
    assert catchup._is_record(path)
    assert catchup._stem(path) == Path(path).stem


def _count_applies(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of entries of each Catalog.apply from now on."""
    applied: list[int] = []
    real = Catalog.apply

    def counted(self: Catalog, remove: Any, add: Any, meta: Any, first: Any = None) -> None:
        applied.append(len(add))
        real(self, remove, add, meta, first)

    monkeypatch.setattr(Catalog, "apply", counted)
    return applied


def _fact_chunks(store: Store) -> dict[str, bytes]:
    """The stored row facts' chunks ("key.0" ...): what a write rewrote, or left."""
    db = sqlite3.connect(store.cache_dir / "index" / "catalog.sqlite")
    try:
        return {str(part): data for part, data in db.execute("SELECT * FROM row_fact_chunks")}
    finally:
        db.close()


@pytest.mark.parametrize("chunk_rows", [rowfacts.CHUNK_ROWS, 4])  # 4: applies cross chunks
@pytest.mark.parametrize("group", [(4, 1 << 30), (12, 1 << 30), (1 << 30, 1)])
def test_catalog_entries_applied_in_groups_make_the_catalog_of_one_batch_at_a_time(
    varied: Store,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    group: tuple[int, int],
    chunk_rows: int,
) -> None:
    monkeypatch.setattr(rowfacts, "CHUNK_ROWS", chunk_rows)
    applied = _count_applies(monkeypatch)
    monkeypatch.setattr(catchup, "_APPLY_RECORDS", 4)  # with _BATCH 4: each batch alone
    one_by_one = build(varied, monkeypatch, parallel=False)
    one_by_one_chunks = _fact_chunks(varied)
    assert [n for n in applied if n] == [4] * 7 + [2]
    applied.clear()
    monkeypatch.setattr(catchup, "_APPLY_RECORDS", group[0])
    monkeypatch.setattr(catchup, "_APPLY_CHARS", group[1])
    grouped = build(varied, monkeypatch, parallel=False)
    expected = {4: [4] * 7 + [2], 12: [12, 12, 6], 1 << 30: [4] * 7 + [2]}[group[0]]
    assert [n for n in applied if n] == expected
    assert grouped == one_by_one
    catalog = Catalog(varied.cache_dir / "index" / "catalog.sqlite")
    try:
        stored = catalog._stored_facts()
        computed = catalog.computed_facts()
        assert stored is not None and stored == computed
    finally:
        catalog.close()
    chunks = _fact_chunks(varied)
    assert chunks == one_by_one_chunks  # byte for byte, as a write of them whole gives them
    assert chunks == {
        rowfacts.chunk_part(name, n): data
        for n, parts in computed.chunks().items()
        for name, data in parts.items()
    }
    assert len(computed) <= chunk_rows or len(chunks) > len(rowfacts.PART_NAMES)


def test_a_size_cap_between_batches_flushes_every_second_batch(
    varied: Store,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    applied = _count_applies(monkeypatch)
    monkeypatch.setattr(catchup, "_held_chars", lambda record: 1)  # a record's text: 1
    monkeypatch.setattr(catchup, "_APPLY_RECORDS", 1 << 30)
    monkeypatch.setattr(catchup, "_APPLY_CHARS", 6)  # a batch and a half (batches of 4)
    build(varied, monkeypatch, parallel=False)
    assert [n for n in applied if n] == [8, 8, 8, 6]  # the count starts again at each flush


def test_a_built_index_has_the_neighbours_indexes_and_a_writer_makes_lost_ones(
    varied: Store,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    build(varied, monkeypatch, parallel=False)
    path = varied.cache_dir / "index" / neighbours.FILE

    def indexes() -> set[str]:
        db = sqlite3.connect(path)
        try:
            return {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        finally:
            db.close()

    assert {"facts_in_order", "links_to"} <= indexes()
    db = sqlite3.connect(path)
    db.executescript("DROP INDEX facts_in_order; DROP INDEX links_to;")
    db.close()
    neighbours.Neighbours(path).close()  # a catch-up's open
    assert {"facts_in_order", "links_to"} <= indexes()


def test_a_held_records_text_counts_every_field() -> None:
    plain = record("body text", abstract="an abstract")
    fielded = replace(plain, fields=(("owner", "payments team"), ("refs", ("PAY-1", "PAY-2"))))
    assert catchup._held_chars(plain) == len("body text") + len(plain.title) + len("an abstract")
    assert catchup._held_chars(fielded) == catchup._held_chars(plain) + len("payments team") + len(
        str(("PAY-1", "PAY-2"))
    )
