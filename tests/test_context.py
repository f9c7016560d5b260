"""Context-aware recall (issue 21): a record is found through its neighbours in its source and
its links, a matching source lifts its records, and the index keeps both current by catch-up
exactly as a rebuild makes them."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_index import reopened, tiny, tiny_model_dir  # noqa: F401  (a fixture)

from gitmem.api import Store
from gitmem.index import context, textcarry, textindex
from gitmem.index.neighbours import FILE, PARTNERS, SPAN, Neighbours
from gitmem.index.textdoc import TextDoc, TextFields, text_fields
from gitmem.index.textindex import TextIndex
from gitmem.insight.status import store_status
from gitmem.recall.recall import DEFAULTS

START = datetime(2029, 3, 1, 9, 0, tzinfo=UTC)
NOW = datetime(2030, 1, 1, tzinfo=UTC)
PLAIN = replace(DEFAULTS, context_weight=0.0, source_prior=0.0)
QUERIES = [
    "bicycle colour",
    "red",
    "tandem race",
    "garden tomatoes",
    "harbour ferry timetable",
    "kettle",
    "PAY-1423 refund",
    "",
]
# Three sources of several turns, one record without a source; each turn's time is its order.
TURNS = {
    "session:1": [
        "I bought a new bicycle last week",
        "What colour is it?",
        "It's red!",
        "Nice, do you ride to work?",
        "Every day, unless it rains",
    ],
    "session:2": [
        "The garden is full of tomatoes",
        "Do you make sauce?",
        "Every August, with basil",
    ],
    "session:3": [
        "The harbour ferry changed its timetable",
        "Now it leaves at seven",
        "That is early",
        "Refund asked in PAY-1423",
    ],
}


def fill(store: Store) -> dict[str, list[str]]:
    ids: dict[str, list[str]] = {}
    at = START
    for source, turns in TURNS.items():
        for n, text in enumerate(turns):
            at += timedelta(minutes=1)
            rid = store.record(
                "fact", text, title=f"turn {n}", agent="a", source=source, now=at
            ).record.id
            ids.setdefault(source, []).append(rid)
    return ids


def answers(store: Store) -> list[list[tuple[str, float]]]:
    out = []
    for options in (DEFAULTS, PLAIN):
        for mode in ("keyword", "hybrid"):
            for q in QUERIES:
                hits = store.recall(q, mode=mode, now=NOW, limit=6, options=options).hits
                out.append([(h.id, h.score) for h in hits])
    return out


@pytest.fixture
def talk(store_path: Path, tiny_model_dir: Path) -> tuple[Store, dict[str, list[str]]]:  # noqa: F811
    store = Store.open(store_path)
    store.use_model(tiny(tiny_model_dir))
    return store, fill(store)


def test_a_turn_is_found_through_its_neighbours_in_time(
    talk: tuple[Store, dict[str, list[str]]],
) -> None:
    store, ids = talk
    # A word only its neighbours have finds it, below the records that hold the word.
    plain = store.recall("bicycle", mode="keyword", now=NOW, options=PLAIN).hits
    assert [h.id for h in plain] == [ids["session:1"][0]]
    lent = [h.id for h in store.recall("bicycle", mode="keyword", now=NOW).hits]
    assert lent[0] == ids["session:1"][0]
    assert set(lent[1:]) == {ids["session:1"][1], ids["session:1"][2]}  # ±2 turns, no further


def test_context_follows_links_both_ways_and_leaves_with_a_forgotten_record(
    talk: tuple[Store, dict[str, list[str]]],
) -> None:
    store, ids = talk
    kettle = store.record("fact", "The kettle is descaled monthly", title="kettle", agent="a")
    linker = store.record(
        "fact", "Chores list", title="chores", agent="a", links=[kettle.record.id]
    ).record.id
    found = {h.id for h in store.recall("kettle", mode="keyword", now=NOW).hits}
    assert linker in found  # it links to the kettle note
    tomato = ids["session:2"][0]
    store.amend(kettle.record.id, {"links": [tomato]})
    found = {h.id for h in store.recall("kettle", mode="keyword", now=NOW).hits}
    assert tomato in found  # the kettle note links to it now
    store.forget(kettle.record.id, reason="moved")
    assert store.recall("kettle", mode="keyword", now=NOW).hits == ()


def test_a_matching_source_lifts_its_records(talk: tuple[Store, dict[str, list[str]]]) -> None:
    store, ids = talk
    # "early" is one turn of session 3, "ferry timetable" its first: the session matches.
    query = "early ferry"
    with_prior = store.recall(
        query, mode="keyword", now=NOW, options=replace(DEFAULTS, context_weight=0.0)
    )
    without = store.recall(query, mode="keyword", now=NOW, options=PLAIN)
    lifted = {h.id: h.fused for h in with_prior.hits}
    plain = {h.id: h.fused for h in without.hits}
    for rid in set(lifted) & set(ids["session:3"]):
        assert lifted[rid] > plain[rid]


def test_catch_up_equals_rebuild_with_sources_supersedes_forgets_and_links(
    talk: tuple[Store, dict[str, list[str]]],
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    store, ids = talk
    answers(store)  # the index is built
    one, two, three = ids["session:1"], ids["session:2"], ids["session:3"]
    steps: list[Callable[[], object]] = [
        lambda: store.supersede(
            one[2], "It's blue now, repainted", title="turn 2", source="session:1"
        ),
        lambda: store.forget(two[1], reason="wrong"),
        lambda: store.record("fact", "A tandem race", title="x", agent="a", links=[one[0]]),
        lambda: store.amend(three[0], {"links": [two[0]]}),
        lambda: store.record(
            "fact", "Ferry tickets are cheaper", title="t", agent="a", source="session:3", now=START
        ),
        lambda: store.forget(three[3], reason="closed"),
    ]
    for n, step in enumerate(steps):
        step()
        if n % 2:  # a catch-up after one change, or after two
            store.index().ensure_current()
    incremental = answers(store)
    facts = _facts(store)
    shutil.rmtree(store.cache_dir)
    again = reopened(store.root, tiny_model_dir)
    rebuilt = answers(again)
    assert [[i for i, _ in rows] for rows in rebuilt] == [
        [i for i, _ in rows] for rows in incremental
    ]
    for rows, expected in zip(rebuilt, incremental, strict=True):  # float32 sums: ~1e-7
        assert [s for _, s in rows] == pytest.approx([s for _, s in expected], rel=1e-5)
    assert _facts(again) == facts


def test_a_catch_up_carries_within_its_budgets_and_finds_what_it_wrote(
    talk: tuple[Store, dict[str, list[str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, ids = talk
    answers(store)  # the index is built: its segments hold every record
    carried: list[tuple[str, int, int]] = []
    real = TextIndex.write

    def counting(
        self: TextIndex,
        add: Sequence[TextDoc],
        delete: Sequence[str],
        budget: int | None = None,
        whole: float | None = None,
    ) -> int:
        n = real(self, add, delete, budget, whole)
        carried.append((self._directory.name, n, textindex.CARRY if budget is None else budget))
        return n

    monkeypatch.setattr(textindex, "CARRY", 2)
    monkeypatch.setattr(context, "SOURCE_CARRY", 1)
    monkeypatch.setattr(textindex, "WHOLE", 1.0)  # leftovers may wait, however many
    monkeypatch.setattr(context, "SOURCE_WHOLE", 1.0)
    monkeypatch.setattr(TextIndex, "write", counting)
    store.amend(ids["session:2"][0], {"abstract": "zucchini glut"})
    store.amend(ids["session:3"][1], {"abstract": "quayside"})
    store.index().ensure_current()
    # A build's segments hold ~6 records and 1-3 sources (two threads): none fits the budget.
    assert sorted((name, n, budget) for name, n, budget in carried) == [
        (context.SOURCES, 0, 1),
        ("text", 0, 2),
    ]
    base = store.cache_dir / "index"
    left = textcarry.ghosts(base / "text") + textcarry.ghosts(base / context.SOURCES)
    found = {"zucchini": ids["session:2"][0], "quayside": ids["session:3"][1]}
    for word, rid in found.items():
        assert [h.id for h in store.recall(word, mode="keyword", now=NOW).hits][:1] == [rid]
    store.rebuild()
    assert left and not textcarry.ghosts(base / "text") + textcarry.ghosts(base / context.SOURCES)
    for word, rid in found.items():
        assert [h.id for h in store.recall(word, mode="keyword", now=NOW).hits][:1] == [rid]


def test_a_catch_up_rewrites_an_index_whole_once_its_leftovers_pass_their_share(
    talk: tuple[Store, dict[str, list[str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, ids = talk
    answers(store)
    base = store.cache_dir / "index"
    monkeypatch.setattr(textindex, "CARRY", 0)  # nothing carried within a budget
    monkeypatch.setattr(context, "SOURCE_CARRY", 0)
    monkeypatch.setattr(textindex, "WHOLE", 1.0)
    monkeypatch.setattr(context, "SOURCE_WHOLE", 1.0)
    # Two sessions' documents written into one new segment, then one of them again: a
    # leftover in each index whatever segments the build made.
    store.amend(ids["session:2"][0], {"abstract": "zucchini"})
    store.amend(ids["session:3"][0], {"abstract": "aubergine"})
    store.index().ensure_current()
    store.amend(ids["session:2"][0], {"abstract": "zucchini glut"})
    store.index().ensure_current()
    assert textcarry.ghosts(base / "text") and textcarry.ghosts(base / context.SOURCES)
    shown = store_status(store)["index"]["keyword_leftovers"]  # what `status --json` shows
    assert shown["records"] == round(textcarry.share(base / "text"), 4) > 0
    assert shown["sessions"] == round(textcarry.share(base / context.SOURCES), 4) > 0
    monkeypatch.setattr(context, "SOURCE_WHOLE", 0.0)  # any leftover: past it (not the records')
    store.amend(ids["session:1"][1], {"abstract": "quayside"})
    store.index().ensure_current()
    assert textcarry.share(base / "text") > 0
    assert textcarry.ghosts(base / context.SOURCES) == 0
    monkeypatch.setattr(textindex, "WHOLE", 0.0)
    store.amend(ids["session:1"][1], {"abstract": "quayside again"})
    store.index().ensure_current()
    assert textcarry.ghosts(base / "text") == 0
    found = {"zucchini": ids["session:2"][0], "quayside": ids["session:1"][1]}
    for word, rid in found.items():
        assert [h.id for h in store.recall(word, mode="keyword", now=NOW).hits][:1] == [rid]


def _facts(store: Store) -> dict[str, str]:
    """Every active record's context, and every source's document, as the index holds them."""
    store.index().ensure_current()
    facts = Neighbours(store.cache_dir / "index" / FILE, readonly=True)
    try:
        out = {r.id: facts.context(r.id) for r in store.records()}
        # A full build's way of making them all at once agrees with the catch-up's.
        assert facts.every_context() == {
            rid: c for rid, c in out.items() if rid in facts.every_context()
        }
        assert all(not c for rid, c in out.items() if rid not in facts.every_context())
        out |= {f"source {s}": facts.source_text(s) for s in facts.all_sources()}
    finally:
        facts.close()
    return out


def test_explain_shows_own_bm25_the_context_share_and_the_prior(store_path: Path, gm) -> None:  # type: ignore[no-untyped-def]
    store = Store.open(store_path)
    ids = fill(store)
    shown = gm("recall", "bicycle", "--mode", "keyword", "--explain").out
    lines = shown.splitlines()
    first, second = lines[1], lines[3]  # each hit, then its explanation
    assert ids["session:1"][0] in lines[0]
    # The record that names the bicycle scores by its own text; its neighbour by context alone.
    own = first.split("bm25 ")[1].split(",")[0]
    assert "context 0.000" in first and float(own) > 0
    bm25, context = second.split("bm25 ")[1].split(")")[0].split(", context ")
    assert float(bm25) == pytest.approx(float(context)) and float(context) > 0
    assert "prior ×1.500" in first  # its source's document is the only one that matches
    data = json.loads(gm("recall", "bicycle", "--mode", "keyword", "--json", "--explain").out)
    assert data["hits"][0]["prior"] == 1.5
    assert data["hits"][1]["keyword_score"] == pytest.approx(data["hits"][1]["context_score"])


def test_a_store_behind_another_process_catches_up_without_calling_the_index_damaged(
    talk: tuple[Store, dict[str, list[str]]],
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    # Three processes on one store: A has the index open, B and C change neighbouring records
    # (the context of one holds the other's text) and B catches up in between.
    a, ids = talk
    one = ids["session:1"]
    a.recall("bicycle", mode="keyword", now=NOW)
    b, c = reopened(a.root, tiny_model_dir), reopened(a.root, tiny_model_dir)
    b.amend(one[1], {"title": "turn one"})
    b.index().ensure_current()
    c.amend(one[2], {"title": "turn two"})
    found = a.recall("bicycle", mode="keyword", now=NOW)
    assert not [n for n in found.notices if "damaged" in n]
    assert _facts(a) == _facts(reopened(a.root, tiny_model_dir))


def test_a_record_linked_by_many_takes_the_leads_of_the_most_recent_few(
    talk: tuple[Store, dict[str, list[str]]],
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    store, ids = talk
    hub = ids["session:2"][0]
    linkers = []
    for n in range(PARTNERS + 4):
        linkers.append(
            store.record(
                "fact",
                f"Linker number {n} says word{n}",
                title=f"linker {n}",
                agent="a",
                links=[hub],
                now=START + timedelta(days=n),
            ).record.id
        )
        if n % 3 == 0:
            store.index().ensure_current()
    context = _facts(store)[hub]
    lent = [n for n in range(PARTNERS + 4) if f"word{n} " in context + " "]
    assert lent == list(range(4, PARTNERS + 4))  # the most recent PARTNERS
    store.forget(linkers[-1], reason="gone")  # the next most recent takes its place
    incremental = _facts(store)
    assert "word3 " in incremental[hub] + " " and "word11" not in incremental[hub]
    shutil.rmtree(store.cache_dir)
    assert _facts(reopened(store.root, tiny_model_dir)) == incremental


def test_a_full_build_spills_its_documents_to_disk_until_every_context_is_known(
    talk: tuple[Store, dict[str, list[str]]], tmp_path: Path
) -> None:
    store, _ = talk
    records = list(store.records())
    given: list[tuple[list[str], int, str]] = []
    spilled: list[int] = []

    def add(texts: Sequence[TextFields], first: int) -> None:
        given.append(([t[0]["id"] for t in texts], first, texts[0][0].get("context", "")))

    root = tmp_path / "build"
    root.mkdir()
    with context.filling(root, add) as keep:
        for at in range(0, len(records), 3):  # batches of 3, as a build's workers make them
            batch = records[at : at + 3]
            keep(
                [text_fields(TextDoc(r.id, "b", r.title, "", r.body, (), r.type)) for r in batch],
                at,
                batch,
            )
            spilled.append((root / "documents.spill").stat().st_size)
            assert not given  # held on disk, not handed on, until every fact is in
    assert spilled == sorted(spilled) and spilled[0] > 0
    assert [ids for ids, _, _ in given] == [
        [r.id for r in records[at : at + 3]] for at in range(0, len(records), 3)
    ]
    assert [first for _, first, _ in given] == list(range(0, len(records), 3))
    assert given[0][2]  # the first record of a source has its neighbours' context
    assert not (root / "documents.spill").exists()


def test_neighbours_in_time_are_those_within_span(store_path: Path) -> None:
    """The same source's records more than SPAN apart lend nothing, even next to each other;
    one written later into the gap joins both sides, and the catch-up agrees with a rebuild."""
    store = Store.open(store_path)
    gap = timedelta(seconds=SPAN + 60)
    say = ["The lighthouse keeper waved", "Gulls everywhere", "Storm warning at noon"]
    at = [START, START + timedelta(minutes=1), START + timedelta(minutes=1) + gap]
    ids = [
        store.record("fact", t, title="log", agent="a", source="s", now=moment).record.id
        for t, moment in zip(say, at, strict=True)
    ]
    found = {h.id for h in store.recall("lighthouse", mode="keyword", now=NOW).hits}
    assert found == {ids[0], ids[1]}  # the storm warning is next in order, not in time
    assert {h.id for h in store.recall("storm", mode="keyword", now=NOW).hits} == {ids[2]}
    middle = START + timedelta(minutes=1) + gap / 2  # within SPAN of both sides
    late = store.record("fact", "Ropes stowed", title="log", agent="a", source="s", now=middle)
    found = {h.id for h in store.recall("storm", mode="keyword", now=NOW).hits}
    assert found == {ids[2], late.record.id}
    assert ids[1] not in found  # still farther than SPAN from the storm warning
    incremental = _facts(store)
    shutil.rmtree(store.cache_dir)
    assert _facts(Store.open(store_path)) == incremental


def test_the_prior_lifts_by_how_much_of_the_query_a_source_matches(
    talk: tuple[Store, dict[str, list[str]]],
) -> None:
    store, ids = talk
    keyword = replace(DEFAULTS, context_weight=0.0, explain=True)
    whole = store.recall("harbour ferry timetable", mode="keyword", now=NOW, options=keyword)
    assert whole.hits[0].id == ids["session:3"][0]
    assert whole.hits[0].prior == pytest.approx(1.5)  # one source holds every word: the full lift
    # Each source holds one word of three: the best of them is not lifted as if it held all.
    scattered = store.recall("timetable tomatoes bicycle", mode="keyword", now=NOW, options=keyword)
    priors = [h.prior for h in scattered.hits]
    assert len(priors) == 3 and all(1.0 < p < 1.3 for p in priors)
