"""The span index (gitmem.recall.spans): at every moment of a history, the documents live in it
are those a view of that moment indexes of its own (gitmem.recall.pastcontext), contexts and
sources' documents included; a catch-up equals a rebuild; what cannot be caught up is rebuilt."""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from test_index import tiny_model_dir  # noqa: F401  (a fixture)
from test_timetravel import BEGIN, at, commit, opened, put, remove

from gitmem.api import Store
from gitmem.index.context import SOURCES
from gitmem.index.entries import Filter
from gitmem.index.textindex import TextIndex
from gitmem.recall.asof import PastIndex
from gitmem.recall.moment import MomentIndex
from gitmem.recall.pastcontext import PastText
from gitmem.recall.spans import DIR, Spans, _inode, spans_of
from gitmem.recall.timelinedb import rows_of
from gitmem.store.record import Record

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def turn(rid: str, minute: int, body: str, source: str = "s:1", **changes: Any) -> Record:
    """A record created `minute` minutes into day 10 (neighbours are within 30 minutes)."""
    created = datetime(2026, 1, 11, 9, tzinfo=UTC) + timedelta(minutes=minute)
    return Record(rid, "fact", body.split()[0], body, created, created, source=source).with_(
        **changes
    )


A = turn("ta-000001", 0, "Bicycle bought last week, a red one")
B = turn("tb-000002", 1, "Colour asked about the frame")
C = turn("tc-000003", 2, "Harbour ferry timetable changed again")
D = turn("td-000004", 3, "Garden tomatoes need water daily")
E = turn("te-000005", 4, "Kettle broke during breakfast")
F = turn("tf-000006", 5, "Tandem race along the harbour", source="s:2", links=("tb-000002",))
G = turn("tg-000007", 6, "Ferry replaced by a bridge", supersedes=("tc-000003",))


@pytest.fixture
def history(store_path: Path) -> dict[str, str]:
    """Records in two sources with links, written over days 10-40: an edit changes what its
    neighbours borrow, a supersede, a forget, a type change, two commits in one second."""
    root = store_path
    env = {**os.environ, "GIT_COMMITTER_DATE": BEGIN, "GIT_AUTHOR_DATE": BEGIN}
    subprocess.run(["git", "commit", "-q", "--amend", "--no-edit"], cwd=root, env=env, check=True)
    made = {}
    for n, record in enumerate((A, B, C)):
        put(root, record)
        made[record.id] = commit(root, at(10 + n), f"record {record.id}")
    put(root, D)
    made["d"] = commit(root, at(14), "record d")
    put(root, E)
    made["e"] = commit(root, at(14), "record e, the same second")
    put(root, F)
    made["f"] = commit(root, at(16), "record f")
    put(root, B.with_(body="Colour asked about the frame and the saddle bag"))
    made["edit"] = commit(root, at(20), "edit b", "edit")
    put(root, G)
    put(root, C.with_(status="superseded", superseded_by=G.id))
    made["supersede"] = commit(root, at(25), "supersede c", "supersede")
    made["forget"] = remove(root, D, at(30))
    (root / E.path).unlink()
    put(root, E.with_(type="decision"))
    made["moved"] = commit(root, at(35), "e is a decision now", "edit")
    return made


def live(store: Store, t: int) -> tuple[set[tuple[Any, ...]], set[tuple[str, str]]]:
    """The span index's documents live at `t`: the records' (without the span's key) and the
    sources' (name, text)."""
    spans = store.time_travel().spans()
    rows = spans.db.execute(
        "SELECT id, key FROM spans WHERE t0 <= ? AND (t1 IS NULL OR t1 > ?)", (t, t)
    ).fetchall()
    docs = {_doc(d, d.id.split("@")[0]) for d in spans.text.stored(f"{i}@{k}" for i, k in rows)}
    assert len(docs) == len(rows)
    named = spans.db.execute(
        "SELECT name, key FROM sources WHERE t0 <= ? AND (t1 IS NULL OR t1 > ?)", (t, t)
    ).fetchall()
    found = spans.sources.stored(f"{n}@{k}" for n, k in named)
    sources = {(d.id.split("@")[0], d.body) for d in found}
    return docs, sources


def own(store: Store, t: int) -> tuple[set[tuple[Any, ...]], set[tuple[str, str]]]:
    """What a view at `t` indexes of its own (gitmem.recall.pastcontext)."""
    travel = store.time_travel()
    entries = travel.timeline.at_time(t)
    past = PastText(travel._versions.get([e.blob for e in entries.values()]))
    try:
        docs = {_doc(d, d.id) for d in past.text.stored(entries)}
        by_source = TextIndex.open(past.root / SOURCES)
        sources = {(d.id, d.body) for d in by_source.stored(past.facts.all_sources())}
    finally:
        past.close()
    return docs, sources


def _doc(doc: Any, rid: str) -> tuple[Any, ...]:
    return (rid, doc.blob, doc.title, doc.abstract, doc.body, doc.tags, doc.context)


def moments(store: Store) -> list[int]:
    """Every second around an event that the span index answers: before HEAD's (a moment at
    or after it is HEAD's view, gitmem.recall.asof)."""
    timeline = store.time_travel().timeline
    times, _ = timeline.events()
    span = timeline.span()
    assert span is not None
    return sorted({m + d for m in times for d in (-1, 0, 1) if m + d < span[1]})


def test_the_documents_live_at_each_moment_are_the_views_own(
    store_path: Path, history: dict[str, str]
) -> None:
    root = store_path
    store = opened(root)
    store.time_travel().timeline.ensure_current()
    checked = 0
    for t in moments(store):
        docs, sources = live(store, t)
        assert (docs, sources) == own(store, t), datetime.fromtimestamp(t, UTC)
        checked += bool(docs)
    assert checked > 20
    # The edit of b changed what a and c borrow: each has a span before it and one after.
    spans = store.time_travel().spans()
    count = dict(spans.db.execute("SELECT id, count(*) FROM spans GROUP BY id").fetchall())
    assert count[A.id] >= 2 and count[C.id] >= 2


def _rows(store: Store) -> list[tuple[Any, ...]]:
    spans = store.time_travel().spans()
    return [
        *spans.db.execute("SELECT id, blob, context, source, active, t0, t1 FROM spans"),
        *spans.db.execute("SELECT name, digest, t0, t1 FROM sources"),
    ]


def test_a_catch_up_equals_a_rebuild(store_path: Path, history: dict[str, str]) -> None:
    root = store_path
    subprocess.run(["git", "reset", "-q", "--hard", history["e"]], cwd=root, check=True)
    store = opened(root)
    store.recall("ferry", as_of=at(12, 13), now=NOW)  # the spans built up to day 14
    built = (store.cache_dir / "timeline" / DIR / "spans.sqlite").stat().st_ino
    subprocess.run(["git", "reset", "-q", "--hard", history["moved"]], cwd=root, check=True)
    caught = [store.recall(q, as_of=at(d), now=NOW) for q in ("ferry", "colour") for d in (15, 32)]
    assert (store.cache_dir / "timeline" / DIR / "spans.sqlite").stat().st_ino == built
    incremental = sorted(_rows(store), key=repr)
    spans = store.time_travel().spans()
    for table in ("spans", "sources"):  # keys grow with t0: what the search at T filters by
        starts = [t0 for (t0,) in spans.db.execute(f"SELECT t0 FROM {table} ORDER BY key")]
        assert starts == sorted(starts) and len(set(starts)) > 3
    shutil.rmtree(store.cache_dir / "timeline" / DIR)
    fresh = opened(root)
    again = [fresh.recall(q, as_of=at(d), now=NOW) for q in ("ferry", "colour") for d in (15, 32)]
    assert sorted(_rows(fresh), key=repr) == incremental
    assert [[(h.id, h.score) for h in r.hits] for r in again] == [
        [(h.id, h.score) for h in r.hits] for r in caught
    ]


def test_older_work_merged_in_rebuilds_the_spans(store_path: Path, history: dict[str, str]) -> None:
    root = store_path
    store = opened(root)
    store.recall("ferry", as_of=at(15), now=NOW)
    path = store.cache_dir / "timeline" / DIR / "spans.sqlite"
    built = path.stat().st_ino
    # A side branch from day 12 with a commit of day 13, merged on day 40: older than day 35.
    git(root, "checkout", "-q", "-b", "side", history[C.id])
    late = turn("tl-000008", 7, "Lighthouse keeper retired")
    put(root, late)
    commit(root, at(13), "record late")
    git(root, "checkout", "-q", "main")
    env_merge(root, "side", at(40))
    result = store.recall("lighthouse", as_of=at(13, 13), now=NOW)
    assert result.hits[0].id == late.id  # its neighbours borrow its lead
    assert path.stat().st_ino != built  # rebuilt, not caught up
    assert store.recall("lighthouse", as_of=at(12, 13), now=NOW).hits == ()
    docs, sources = live(store, int(datetime.fromisoformat(at(13, 13)).timestamp()))
    assert (docs, sources) == own(store, int(datetime.fromisoformat(at(13, 13)).timestamp()))


def env_merge(root: Path, branch: str, when: str) -> None:
    env = {**os.environ, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when}
    subprocess.run(["git", "merge", "-q", "--no-edit", branch], cwd=root, env=env, check=True)


def test_a_replay_that_died_is_rebuilt_with_the_same_answers(
    store_path: Path, history: dict[str, str]
) -> None:
    root = store_path
    store = opened(root)
    first = store.recall("colour frame", as_of=at(22), now=NOW)
    spans = store.time_travel().spans()
    before = sorted(_rows(store), key=repr)
    spans.db.execute("UPDATE meta SET value = 'writing' WHERE key = 'state'")
    later = opened(root)  # as another process
    again = later.recall("colour frame", as_of=at(22), now=NOW)
    assert [(h.id, h.score) for h in again.hits] == [(h.id, h.score) for h in first.hits]
    assert later.time_travel().spans().inode != spans.inode
    assert sorted(_rows(later), key=repr) == before


def test_a_rewritten_history_rebuilds_the_spans(store_path: Path, history: dict[str, str]) -> None:
    root = store_path
    store = opened(root)
    assert store.recall("kettle", as_of=at(45), now=NOW).hits[0].id == E.id
    built = store.time_travel().spans().inode
    subprocess.run(["git", "reset", "-q", "--hard", history["d"]], cwd=root, check=True)
    put(root, turn("tk-000009", 8, "Kettle descaled with vinegar"))
    commit(root, at(50), "record k")
    # e was written after d, in the same second: it is not in this history.
    assert store.recall("kettle", as_of=at(45), now=NOW).hits == ()
    assert store.time_travel().spans().inode != built
    t = int(datetime.fromisoformat(at(45)).timestamp())
    assert live(store, t) == own(store, t)


def test_a_moment_ranks_its_vectors_and_reads_its_entries_as_its_view(
    store_path: Path,
    history: dict[str, str],
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    store = opened(store_path, tiny_model_dir)
    travel = store.time_travel()
    travel.timeline.ensure_current()
    filters = [
        Filter(),
        Filter(include_superseded=True),
        Filter(types=("decision",), include_superseded=True),
        Filter(exclude=frozenset({A.id})),
    ]
    compared = 0
    for t in moments(store)[3:-3]:  # between the first commit and HEAD
        view = travel.view(travel.moment(datetime.fromtimestamp(t, UTC)))
        past = PastIndex(travel.timeline, view, travel._versions)
        moment = MomentIndex(travel.timeline, travel.spans, t)
        for flt in filters:
            for q in ("ferry harbour", "colour of the frame", "kettle"):
                assert moment.semantic(q, 5, flt) == past.semantic(q, 5, flt), (t, flt, q)
                found = moment.keyword(q, 5, flt)
                admitted = {rid for rid, e in view.entries.items() if flt.admits(e)}
                assert {rid for rid, _ in found} <= admitted
                compared += len(found)
        assert moment.entries(sorted(view.entries)) == view.entries
        assert moment.scoring([A.id, "nobody"]) == past.scoring([A.id, "nobody"])
    assert compared > 50


def test_a_reader_follows_spans_another_process_caught_up(
    store_path: Path, history: dict[str, str]
) -> None:
    root = store_path
    reader = opened(root)
    assert reader.recall("lighthouse", as_of=at(30), now=NOW).hits == ()  # spans before day 35
    held = reader.time_travel().spans()
    built = held.inode
    put(root, turn("tl-000008", 9, "Lighthouse keeper retired"))
    commit(root, at(45), "record late")
    put(root, turn("tz-000010", 10, "Zeppelin seen over the harbour"))
    commit(root, at(50), "record z")
    writer = opened(root)  # as another process: catches the spans up to day 50
    assert [h.id for h in writer.recall("lighthouse", as_of=at(46), now=NOW).hits][:1] == [
        "tl-000008"
    ]
    caught = writer.time_travel().spans()
    # The reader's spans, opened before, now see what the writer added (reloaded, not reopened).
    assert reader.recall("lighthouse", as_of=at(46), now=NOW).hits[0].id == "tl-000008"
    assert reader.time_travel().spans() is held
    assert caught.inode == built  # caught up in place, not rebuilt
    # The reader catching them up itself (under the lock) keeps the same handles too.
    put(root, turn("tm-000011", 11, "Mandolin restrung"))
    commit(root, at(55), "record m")
    put(root, turn("tn-000012", 12, "Nettle tea brewed"))
    commit(root, at(60), "record n")
    assert reader.recall("mandolin", as_of=at(57), now=NOW).hits[0].id == "tm-000011"
    assert reader.time_travel().spans() is held


def _renumbered(root: Path, history: dict[str, str], model: Path) -> tuple[Store, Store]:
    """Two processes' stores over a timeline caught up from day 14 to day 35 (vector rows in
    the order the catch-up appended them); the second then rebuilds it, numbering them anew."""
    subprocess.run(["git", "reset", "-q", "--hard", history["d"]], cwd=root, check=True)
    opened(root, model).time_travel().timeline.ensure_current()
    subprocess.run(["git", "reset", "-q", "--hard", history["moved"]], cwd=root, check=True)
    first, second = opened(root, model), opened(root, model)
    first.time_travel().timeline.ensure_current()
    before = _vector_rows(first)
    second.time_travel().timeline.rebuild()
    assert _vector_rows(second) != before  # else the tests below prove nothing
    return first, second


def _vector_rows(store: Store) -> dict[str, list[int]]:
    db = store.time_travel().timeline.db
    return rows_of(db, [blob for (blob,) in db.execute("SELECT blob FROM rows")])


def _misplaced(spans: Spans, rows: dict[str, list[int]]) -> list[tuple[Any, ...]]:
    """Spans whose vector rows are not their version's in the timeline."""
    found = spans.db.execute("SELECT id, blob, row0, nrows FROM spans WHERE row0 >= 0")
    return [r for r in found if list(range(r[2], r[2] + r[3])) != rows.get(r[1])]


def test_spans_built_after_another_process_rebuilt_the_timeline_use_its_rows(
    store_path: Path,
    history: dict[str, str],
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    first, second = _renumbered(store_path, history, tiny_model_dir)
    # The first process's timeline was current before the rebuild swapped a new one in: what
    # TimeTravel.spans does next, with the lock, must follow the swap before replaying.
    spans = spans_of(first.time_travel().timeline, None)
    rows = _vector_rows(second)
    assert spans.db.execute("SELECT count(*) FROM spans WHERE row0 >= 0").fetchone()[0] > 5
    assert _misplaced(spans, rows) == []
    assert _vector_rows(first) == rows
    assert spans.meta("build") == second.time_travel().timeline.meta("build") != ""
    _same_semantic_answers(second, int(datetime.fromisoformat(at(22)).timestamp()))


def test_a_span_index_of_another_timeline_build_is_rebuilt(
    store_path: Path,
    history: dict[str, str],
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    root = store_path
    first, second = _renumbered(root, history, tiny_model_dir)
    kept = root / "kept-spans"
    built = first.time_travel().spans()
    built.close()
    shutil.copytree(Path(built.root), kept)
    second.time_travel().timeline.rebuild()
    # As a process that replayed the old timeline into the new directory would have left it:
    # the same epoch and event counts, rows numbered by another build.
    shutil.copytree(kept, second.cache_dir / "timeline" / DIR)
    copied = _inode(second.cache_dir / "timeline" / DIR / "spans.sqlite")
    later = opened(root, tiny_model_dir)
    spans = later.time_travel().spans()
    assert spans.inode != copied
    assert _misplaced(spans, _vector_rows(later)) == []
    _same_semantic_answers(later, int(datetime.fromisoformat(at(22)).timestamp()))


def _same_semantic_answers(store: Store, t: int) -> None:
    travel = store.time_travel()
    view = travel.view(travel.moment(datetime.fromtimestamp(t, UTC)))
    past = PastIndex(travel.timeline, view, travel._versions)
    moment = MomentIndex(travel.timeline, travel.spans, t)
    for q in ("ferry harbour", "kettle", "colour of the frame"):
        assert moment.semantic(q, 3, Filter()) == past.semantic(q, 3, Filter()), q


def test_writes_in_heads_second_are_replayed_once_head_moves_on_without_a_rebuild(
    store_path: Path, history: dict[str, str]
) -> None:
    root = store_path
    store = opened(root)
    store.recall("ferry", as_of=at(20), now=NOW)
    path = store.cache_dir / "timeline" / DIR / "spans.sqlite"
    built = path.stat().st_ino
    put(root, turn("tq-000011", 11, "Quince jam recipe"))
    commit(root, at(35), "in HEAD's second")
    assert store.recall("quince", as_of=at(35), now=NOW).hits[0].id == "tq-000011"
    store.recall("ferry", as_of=at(20), now=NOW)
    assert path.stat().st_ino == built
    put(root, turn("tr-000012", 12, "Rhubarb crumble"))
    commit(root, at(33), "a clock behind: written at its parent's time, HEAD's second")
    store.recall("ferry", as_of=at(20), now=NOW)
    assert path.stat().st_ino == built
    put(root, turn("ts-000013", 13, "Sorrel soup"))
    commit(root, at(36), "a later second")
    found = store.recall("quince rhubarb", as_of=at(35, 13), now=NOW)
    assert {h.id for h in found.hits} >= {"tq-000011", "tr-000012"}
    assert store.recall("sorrel", as_of=at(35, 13), now=NOW).hits == ()
    assert path.stat().st_ino == built  # caught up, never rebuilt
    t = int(datetime.fromisoformat(at(35, 13)).timestamp())
    assert live(store, t) == own(store, t)
