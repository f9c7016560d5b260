"""The keyword half names its hits by the catalog keys its documents carry (gitmem.index.textindex,
Keys): it must answer exactly as naming them from the stored documents and checking each
entry did, keep keys unique to one record version through failed writes, and never name a
hit with another record's key."""

from __future__ import annotations

from typing import Any

import pytest
from test_index import QUERIES, answers, fill, tiny, tiny_model_dir  # noqa: F401
from test_rowfacts import catalog_of, edited  # noqa: F401

from gitmem.api import Store
from gitmem.index import texthits, textindex
from gitmem.index.catalog import Catalog, CatalogCorrupt
from gitmem.index.entries import Filter
from gitmem.index.index import Index
from gitmem.index.textindex import TextIndex

FILTERS = [
    Filter(),
    Filter(include_superseded=True),
    Filter(types=("decision", "fact")),
    Filter(agent="a"),
    Filter(exclude=frozenset({"nothing-by-this-id"})),
]


def by_entries(index: Index, monkeypatch: pytest.MonkeyPatch, q: str, flt: Filter) -> Any:
    """The keyword half as before keys: hits named from the stored documents."""
    with monkeypatch.context() as patch:
        patch.setattr(texthits, "keys", lambda searcher, addresses: [None] * len(addresses))
        return index.keyword(q, 5, flt)


@pytest.mark.parametrize("flt", FILTERS, ids=repr)
def test_hits_named_by_key_are_the_hits_named_by_entry(
    edited: Store,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    flt: Filter,
) -> None:
    index = edited.index()
    queries = [*QUERIES, "webhook deploy redis postgres sessions retry shards"]
    expected = [by_entries(index, monkeypatch, q, flt) for q in queries]
    assert any(len(hits) > 1 for hits in expected)
    with monkeypatch.context() as patch:

        def refuse(*args: Any) -> Any:
            raise AssertionError("the keyword half asked for entries")

        patch.setattr(Catalog, "entries", refuse)
        assert [index.keyword(q, 5, flt) for q in queries] == expected


def test_a_superseded_record_is_left_out_unless_asked(edited: Store) -> None:  # noqa: F811
    index = edited.index()
    hidden = [i for i, _ in index.keyword("retry webhooks backoff", 10, Filter())]
    shown = [
        i for i, _ in index.keyword("retry webhooks backoff", 10, Filter(include_superseded=True))
    ]
    assert len(shown) == len(hidden) + 1 and set(hidden) < set(shown)


def test_a_hit_whose_key_is_gone_is_left_out_and_the_list_refilled(
    edited: Store,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As when another process's update removed the version the text index still has."""
    index = edited.index()
    every = index.keyword("webhook deploy redis postgres", 10, Filter())
    full = index.keyword("webhook deploy redis postgres", 3, Filter())
    assert len(every) > 3 and full == every[:3]
    real = Catalog.admitted

    def without_first(self: Catalog, keys: Any, flt: Filter) -> Any:
        return {k: v for k, v in real(self, keys, flt).items() if v[0] != full[0][0]}

    monkeypatch.setattr(Catalog, "admitted", without_first)
    later = index.keyword("webhook deploy redis postgres", 3, Filter())
    assert later == every[1:4]


def text_keys(store: Store) -> dict[str, int]:
    """Record id -> the key its document in the text index carries."""
    text = TextIndex.open(store.cache_dir / "index" / "text")
    searcher = text._main.searcher()
    every = textindex._every(searcher)
    ids = [texthits.id_blob(searcher.doc(address))[0] for address in every]
    marks = texthits.keys(searcher, every)
    return {i: -1 if m is None else m[0] for i, m in zip(ids, marks, strict=True)}


def catalog_keys(store: Store) -> dict[str, int]:
    catalog = catalog_of(store)
    try:
        return {str(i): int(k) for k, i in catalog._db.execute("SELECT rowid, id FROM records")}
    finally:
        catalog.close()


def test_every_document_carries_its_records_key_after_catch_ups_and_a_rebuild(
    edited: Store,  # noqa: F811
) -> None:
    assert text_keys(edited) == catalog_keys(edited)
    before = answers(edited)
    edited.rebuild()
    assert text_keys(edited) == catalog_keys(edited)
    assert answers(edited) == before


def test_keys_reserved_by_a_write_that_failed_are_never_given_again(
    edited: Store,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The text index may hold documents keyed by a write whose catalog half never
    committed: no later record may get those keys."""
    reserved: list[int] = []
    real = Catalog.reserve_keys

    def reserve(self: Catalog, count: int) -> int:
        reserved.append(first := real(self, count))
        return first

    def fail(*args: Any) -> None:
        raise OSError("disk gone after the text index committed")

    monkeypatch.setattr(Catalog, "reserve_keys", reserve)
    with monkeypatch.context() as patch:
        patch.setattr(Catalog, "apply", fail)
        edited.record("fact", "Caches are warmed at boot.", title="Warm caches")
        with pytest.raises(OSError, match="disk gone"):
            edited.index().ensure_current()
    failed = reserved[-1]
    answers(edited)  # the next catch-up writes the same record again
    assert reserved[-1] > failed
    assert min(catalog_keys(edited).values()) < failed
    assert failed not in catalog_keys(edited).values()
    assert text_keys(edited) == catalog_keys(edited)


def test_apply_refuses_keys_a_record_already_has(edited: Store) -> None:  # noqa: F811
    catalog = catalog_of(edited)
    try:
        taken = max(catalog_keys(edited).values())
        with pytest.raises(CatalogCorrupt, match="taken"):
            catalog.apply((), [], {}, taken)
    finally:
        catalog.close()
