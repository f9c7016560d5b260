"""The keyword index: ranking, any-text queries, identifiers, updates, determinism, damage."""

from __future__ import annotations

import functools
import json
import random
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import pytest

from gitmem.index import textcarry, textdoc, texthits, textindex, textquery
from gitmem.index.textindex import TextDoc, TextHit, TextIndex, TextIndexBusy, TextIndexCorrupt

WORDS = (
    "cache deploy build queue retry timeout schema index commit branch merge token session "
    "payment invoice refund webhook client server latency memory thread socket config secret "
    "rotate backup restore migrate database replica shard cluster ingress router gateway"
).split()


def doc(
    ident: str,
    title: str = "",
    body: str = "",
    *,
    abstract: str = "",
    tags: tuple[str, ...] = (),
    blob: str = "",
) -> TextDoc:
    return TextDoc(ident, blob or f"blob-{ident}", title, abstract, body, tags, "fact")


def corpus(n: int, seed: int = 1) -> list[TextDoc]:
    rng = random.Random(seed)
    return [
        doc(
            f"r{i:04d}",
            " ".join(rng.choices(WORDS, k=4)),
            " ".join(rng.choices(WORDS, k=rng.randint(5, 40))),
            abstract=" ".join(rng.choices(WORDS, k=6)),
            tags=tuple(rng.choices(WORDS, k=2)),
        )
        for i in range(n)
    ]


def build(tmp_path: Path, docs: Iterable[TextDoc], name: str = "ix") -> TextIndex:
    directory = tmp_path / name
    directory.mkdir()
    index = TextIndex.create(directory)
    index.write(list(docs), [])
    return index


def top(index: TextIndex, query: str, limit: int = 10) -> list[str]:
    return [hit.id for hit in index.search(query, limit)]


def test_stemming_finds_other_forms(tmp_path: Path) -> None:
    index = build(
        tmp_path,
        [doc("a", "Deployment pipeline", "We deployed twice."), doc("b", "Lunch", "Pizza")],
    )
    assert top(index, "deploying") == ["a"]
    assert top(index, "DEPLOYS!") == ["a"]


def test_title_outranks_body(tmp_path: Path) -> None:
    index = build(
        tmp_path,
        [
            doc("body", "Notes on things", "the webhook retries when the server is slow"),
            doc("title", "Webhook retries", "notes on things when the server is slow"),
            doc("abstract", "Notes on things", "when the server is slow", abstract="webhook"),
        ],
    )
    assert top(index, "webhook") == ["title", "abstract", "body"]


NASTY = [
    "",
    "   \t\n ",
    '"unbalanced quote',
    "((( deploy",
    "deploy )))",
    "AND OR NOT",
    "cache AND NOT deploy",
    "title:cache body:deploy",
    "-deploy +cache",
    "*",
    "dep*",
    "deploy~2",
    "cache^10",
    "[a TO z]",
    "{}[]<>!@#$%^&*()_+=|\\/?.,;:'`~",
    "😀🚀 deploy 🔥",
    "数据库连接失败",
    "ñandú über café",
    "\x00\x01 nul bytes",
    "\ud800 lone surrogate cache",
    "a" * 10_000,
    "deploy " * 2000,
    " ".join(f"word{i} cache" for i in range(2000)),
    "IN [1, 2]",
    "field:",
    ":",
    '"',
    "\\",
]


@pytest.mark.parametrize("query", NASTY)
def test_any_text_is_a_query(tmp_path: Path, query: str) -> None:
    index = build(tmp_path, corpus(30))
    hits = index.search(query, 5)
    assert len(hits) <= 5
    assert all(isinstance(h, TextHit) and h.score > 0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_operators_are_plain_words(tmp_path: Path) -> None:
    index = build(tmp_path, [doc("a", "cache eviction"), doc("b", "deploy freeze")])
    assert set(top(index, "cache AND NOT deploy")) == {"a", "b"}
    assert top(index, "title:cache") == ["a"]
    assert top(index, "-deploy") == ["b"]
    assert top(index, "") == [] and top(index, " \n ") == []


IDENTIFIERS = [
    ("PAY-1423", "pay 1423 pay-1424 PAY-14 1423 payment"),
    ("src/api/webhooks.go", "src api webhooks go src/api/handlers.go api/webhooks"),
    ("DATABASE_URL", "database url DATABASE_HOST url of the database"),
    ("E11000", "error E11001 e1100 duplicate key 11000"),
    ("v2.3.1", "v2 3 1 v2.3.0 version 2.3"),
    ("a1b2c3d", "a1b2c3e a1 b2 c3d commit"),
]


@pytest.mark.parametrize(("ident", "noise"), IDENTIFIERS)
def test_identifier_ranks_its_record_first(tmp_path: Path, ident: str, noise: str) -> None:
    docs = [doc(f"noise{i}", noise, noise + " " + noise) for i in range(5)]
    docs.append(doc("target", "A note", f"We saw ({ident}) during the incident."))
    docs += corpus(40)
    index = build(tmp_path, docs)
    for query in (ident, f"what about {ident}?", ident.lower(), f"`{ident}`"):
        assert top(index, query)[0] == "target", query


def test_path_part_finds_the_path(tmp_path: Path) -> None:
    index = build(
        tmp_path, [doc("a", "", "edit ./src/api/webhooks.go"), doc("b", "", "go webhooks api")]
    )
    assert top(index, "webhooks.go") == ["a", "b"]


def test_upsert_replaces_and_delete_removes(tmp_path: Path) -> None:
    index = build(tmp_path, [doc("a", "old words", blob="1"), doc("b", "other", blob="1")])
    index.write([doc("a", "new words", blob="2")], [])
    assert index.count() == 2
    assert index.ids() == {"a": "2", "b": "1"}
    assert top(index, "old") == []
    assert index.search("new", 5) == [TextHit("a", "2", index.search("new", 1)[0].score)]
    index.write([], ["b", "missing"])
    assert index.ids() == {"a": "2"}
    assert top(index, "other") == []
    index.write([doc("c", "x", blob="1"), doc("c", "y", blob="2")], ["c"])
    assert index.ids() == {"a": "2", "c": "2"}


@pytest.mark.parametrize("term_set_max", [0, 10_000])  # filter after tantivy, or in it
def test_allowed_filters_before_ranking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, term_set_max: int
) -> None:
    monkeypatch.setattr(textindex, "_TERM_SET_MAX", term_set_max)
    docs = corpus(200)
    index = build(tmp_path, docs)
    everything = index.search("cache deploy", 200)
    for size in (1, 10, 150):
        allowed = frozenset(d.id for d in docs[-size:]) | {"not-indexed"}
        expected = [h for h in everything if h.id in allowed][:5]
        found = index.search("cache deploy", 5, allowed)
        assert [h.id for h in found] == [h.id for h in expected]
        assert [h.score for h in found] == pytest.approx([h.score for h in expected], rel=1e-6)
    assert index.search("cache", 5, frozenset()) == []


def test_ties_are_ordered_by_id(tmp_path: Path) -> None:
    same = [doc(f"t{i:02d}", "same title", "same body") for i in (7, 3, 9, 1, 5)]
    index = build(tmp_path, same + corpus(20))
    assert top(index, "same", 3) == ["t01", "t03", "t05"]


def test_reopen_sees_what_was_written(tmp_path: Path) -> None:
    index = build(tmp_path, corpus(50))
    before = index.search("retry timeout", 10)
    del index
    again = TextIndex.open(tmp_path / "ix")
    assert again.search("retry timeout", 10) == before
    assert again.count() == 50


def test_readers_see_commits_after_reload(tmp_path: Path) -> None:
    writer = build(tmp_path, [doc("a", "cache")])
    reader = TextIndex.open(tmp_path / "ix")
    writer.write([doc("b", "cache")], [])
    assert reader.count() == 1
    reader.reload()
    assert reader.count() == 2


def test_readers_never_see_half_a_commit(tmp_path: Path) -> None:
    reader = build(tmp_path, corpus(50))
    before = reader.ids()
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; "
            "from gitmem.index.textindex import TextIndex, TextDoc;"
            "docs = [TextDoc(f'n{i}', 'b', 'cache', '', 'deploy ' * 50, (), 'f')"
            " for i in range(3000)];"
            "TextIndex.open(Path(sys.argv[1])).write(docs, ['r0000'])",
            str(tmp_path / "ix"),
        ]
    )
    while writer.poll() is None:
        reader.reload()
        ids = reader.ids()
        assert ids == before or (len(ids) == 3049 and "r0000" not in ids and "n2999" in ids)
    assert writer.returncode == 0
    reader.reload()
    assert reader.count() == 3049 and "r0000" not in reader.ids()


def test_second_writer_fails_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build(tmp_path, [doc("a", "cache")])
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from gitmem.index.textindex import TextIndex;"
            "w = TextIndex.open(Path(sys.argv[1]))._main.writer(15_000_000, 1);"
            "print('held', flush=True); sys.stdin.read()",
            str(tmp_path / "ix"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        monkeypatch.setattr(textindex, "_LOCK_WAIT", 0.2)
        index = TextIndex.open(tmp_path / "ix")
        start = time.monotonic()
        with pytest.raises(TextIndexBusy, match="another process"):
            index.write([doc("b", "x")], [])
        assert time.monotonic() - start < 2
        assert index.ids() == {"a": "blob-a"}
    finally:
        holder.communicate("")
    index.write([doc("b", "x")], [])
    assert index.count() == 2


def _damage_meta(directory: Path) -> None:
    (directory / "meta.json").write_text("{not json")


def _damage_segment(directory: Path) -> None:
    next(directory.glob("*.idx")).unlink()


def _foreign_schema(directory: Path) -> None:
    meta = json.loads((directory / "meta.json").read_text())
    meta["schema"][2]["options"]["indexing"]["tokenizer"] = "default"
    (directory / "meta.json").write_text(json.dumps(meta))


def _lose_source(directory: Path) -> None:
    (directory / "source" / "meta.json").unlink()


@pytest.mark.parametrize("damage", [_damage_meta, _damage_segment, _foreign_schema, _lose_source])
def test_damage_is_reported_as_corrupt(tmp_path: Path, damage: object) -> None:
    build(tmp_path, corpus(5))
    assert callable(damage)
    damage(tmp_path / "ix")
    with pytest.raises(TextIndexCorrupt, match="rebuild"):
        TextIndex.open(tmp_path / "ix")


def test_missing_or_empty_dir_is_corrupt(tmp_path: Path) -> None:
    with pytest.raises(TextIndexCorrupt):
        TextIndex.open(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TextIndexCorrupt):
        TextIndex.open(tmp_path / "empty")
    (tmp_path / "empty" / "x").write_text("")
    with pytest.raises(FileExistsError):
        TextIndex.create(tmp_path / "empty")


QUERIES = ["cache", "deploy retry", "webhook payment refund", "memory thread socket server", "x"]


def results(index: TextIndex) -> list[list[tuple[str, str, float]]]:
    return [[(h.id, h.blob, h.score) for h in index.search(q, 30)] for q in QUERIES]


def assert_same(
    a: list[list[tuple[str, str, float]]], b: list[list[tuple[str, str, float]]]
) -> None:
    assert [[row[:2] for row in rows] for rows in a] == [[row[:2] for row in rows] for rows in b]
    for rows_a, rows_b in zip(a, b, strict=True):
        for (_, _, sa), (_, _, sb) in zip(rows_a, rows_b, strict=True):
            assert sa == pytest.approx(sb, rel=1e-6)


def test_incremental_equals_rebuild(tmp_path: Path) -> None:
    docs = corpus(300)
    rebuilt = build(tmp_path, docs, "rebuilt")
    directory = tmp_path / "incremental"
    directory.mkdir()
    index = TextIndex.create(directory)
    rng = random.Random(7)
    shuffled = rng.sample(docs, len(docs))
    for start in range(0, 300, 37):  # many small segments, then edits in old ones
        index.write(shuffled[start : start + 37], [])
    index.write([doc(d.id, "temporary words") for d in docs[::3]], [])
    index.write([doc("extra", "cache cache")], [d.id for d in docs[1::5]])
    index.write(docs[::3] + docs[1::5], ["extra"])
    assert textcarry.ghosts(directory) == 0
    assert index.ids() == rebuilt.ids()
    assert_same(results(index), results(rebuilt))


def shape(directory: Path) -> list[tuple[int, int]]:
    """Each segment's (documents written, deleted ones), sorted."""
    return sorted((s.max_doc, s.deleted) for s in textcarry.segments(directory))


def unlisted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[TextDoc], TextIndex, Path]:
    """300 documents in one segment, and from here on no write may list the whole index to
    find what it carries."""

    def refuse(searcher: object) -> None:
        raise AssertionError("a write listed every document")

    docs = corpus(300)
    index = build(tmp_path, docs)
    monkeypatch.setattr(textindex, "_every", refuse)
    return docs, index, tmp_path / "ix"


def test_an_edit_in_a_segment_over_the_budget_leaves_its_leftovers_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, index, ix = unlisted(tmp_path, monkeypatch)
    assert index.write([doc(d.id, "edited") for d in docs[:20]], [], budget=100) == 0
    assert shape(ix) == [(20, 0), (300, 20)]  # 300 documents to read: over the budget
    assert index.write([doc(d.id, "again") for d in docs[:10]], [], budget=100) == 10
    assert shape(ix) == [(20, 0), (300, 20)]  # the 20 moved: 10 again, 10 carried
    assert textcarry.ghosts(ix) == 20
    assert index.count() == 300
    assert top(index, "again", 20) == sorted(d.id for d in docs[:10])


def test_a_write_carries_the_most_leftovers_per_document_first_and_later_ones_pay_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, index, ix = unlisted(tmp_path, monkeypatch)
    forty = [doc(f"n{i:02d}", "forty", WORDS[i % 9]) for i in range(40)]
    ten = [doc(f"m{i}", "ten", WORDS[i]) for i in range(10)]
    index.write(forty, [])
    index.write(ten, [])
    # One of 40 in one segment, two of 10 in another: room for one of them.
    assert index.write([], ["n00", "m0", "m1"], budget=40) == 8
    assert shape(ix) == [(8, 0), (40, 1), (300, 0)]
    # A later write that deletes nothing of that segment pays its leftover.
    assert index.write([doc("z", "zed")], [], budget=40) == 39
    assert shape(ix) == [(8, 0), (40, 0), (300, 0)]
    assert textcarry.ghosts(ix) == 0
    monkeypatch.undo()
    rebuilt = build(tmp_path, [*docs, *forty[1:], *ten[2:], doc("z", "zed")], "rebuilt")
    assert index.ids() == rebuilt.ids()
    assert_same(results(index), results(rebuilt))


def test_a_write_that_finds_meta_json_not_its_searchers_lists_the_index_and_stays_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = corpus(60)
    index = build(tmp_path, docs[:30])
    index.write(docs[30:], [])
    real = textcarry.segments

    def skewed(directory: Path) -> list[textcarry.Segment]:  # as if a writer had committed
        return [replace(s, deleted=s.deleted + 1) for s in real(directory)]

    monkeypatch.setattr(textcarry, "segments", skewed)
    listed = []
    every = textindex._every
    monkeypatch.setattr(textindex, "_every", lambda searcher: listed.append(1) or every(searcher))
    assert index.write([doc(docs[0].id, "edited")], []) == 59  # both "hold leftovers"
    assert listed == [1]
    monkeypatch.undo()
    assert textcarry.ghosts(tmp_path / "ix") == 0
    rebuilt = build(tmp_path, [doc(docs[0].id, "edited"), *docs[1:]], "rebuilt")
    assert_same(results(index), results(rebuilt))


def leftovers(tmp_path: Path) -> TextIndex:
    """Ten holders of PAY-1423 in one segment, nine of them edited without a carry: nine
    leftovers that tantivy still counts (N = 19, the identifier in all 19)."""
    index = build(tmp_path, [doc(f"r{i}", "refund", f"see PAY-1423 step {i}") for i in range(10)])
    edits = [doc(f"r{i}", "refund", f"PAY-1423 again {i}") for i in range(9)]
    index.write(edits, [], budget=0, whole=1.0)
    assert textcarry.ghosts(tmp_path / "ix") == 9
    return index


def test_leftovers_count_in_the_statistics_gitmem_computes_as_in_tantivys(
    tmp_path: Path,
) -> None:
    index = leftovers(tmp_path)
    ident = textquery.query_terms(index._counted, index._en, "PAY-1423")[0][0]
    searcher = index._main.searcher()
    q = textindex.tantivy.Query.term_query(index._schema, "ident", ident, index_option="basic")
    tantivys = float(searcher.search(q, 1).hits[0][0])  # BM25 with tantivy's own N
    ours = textquery.idf(index._counted.doc_freq("ident", ident), index._counted.num_docs)
    assert ours == pytest.approx(tantivys, rel=1e-5) and tantivys > 0  # float32
    live = textquery.idf(index._counted.doc_freq("ident", ident), index.count())
    assert live < 0  # counted live, as before: another figure than tantivy's
    hits = index.search("PAY-1423", 10)
    assert len(hits) == 10 and all(h.score > 0 for h in hits) and index.ceiling("PAY-1423") > 0


def test_a_commit_between_a_readers_reload_and_its_count_leaves_tantivys_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = leftovers(tmp_path)
    ix = tmp_path / "ix"
    reader = TextIndex.open(ix)
    writer = TextIndex.open(ix)
    real = textcarry.segments
    edits = [doc("r0", "x", "y"), doc("new", "other", "unrelated")]
    writing: list[int] = []

    def committed_first(directory: Path) -> list[textcarry.Segment]:
        # Another process commits after the reader's searcher was reloaded, before it
        # reads meta.json: once an addition (the live count changes), once an edit.
        if edits and not writing:
            writing.append(1)
            writer.write([edits.pop()], [], budget=0, whole=1.0)
            writing.pop()
        return real(directory)

    index.reload()
    before = index._counted.num_docs
    assert before == 19
    monkeypatch.setattr(textcarry, "segments", committed_first)
    reader.reload()
    assert reader._counted.num_docs == 19  # its searcher's, not meta.json's nor its live 10
    reader.reload()  # the edit: live count unchanged, meta.json one document more
    assert reader._counted.num_docs == 20
    monkeypatch.undo()
    ident = textquery.query_terms(reader._counted, reader._en, "PAY-1423")[0][0]
    assert textquery.ident_score(reader._counted, ident) > 0
    assert all(h.score > 0 for h in reader.search("PAY-1423", 10))
    reader.reload()
    assert reader._counted.num_docs == 21


def test_a_write_past_the_whole_share_rewrites_the_index_as_a_rebuild_would(
    tmp_path: Path,
) -> None:
    docs = corpus(100)
    index = build(tmp_path, docs)
    ix = tmp_path / "ix"
    edited = [doc(d.id, "edited words") for d in docs[:8]]
    assert index.write(edited[:4], [], budget=0, whole=0.05) == 0  # 4 of 104: under 5 %
    assert textcarry.ghosts(ix) == 4
    assert textcarry.share(ix) == pytest.approx(4 / 104)
    assert index.write(edited[4:], [], budget=0, whole=0.05) == 96  # 8 of 108: past it
    assert textcarry.ghosts(ix) == 0 and textcarry.share(ix) == 0.0
    rebuilt = build(tmp_path, [*edited, *docs[8:]], "rebuilt")
    assert index.ids() == rebuilt.ids()
    assert_same(results(index), results(rebuilt))


def test_the_budget_counts_documents_read_deleted_ones_too() -> None:
    segments = [
        textcarry.Segment(0, 300, 0),
        textcarry.Segment(1, 50, 45),  # 5 alive, but 50 to read
        textcarry.Segment(2, 30, 1),
        textcarry.Segment(3, 7, 0),
    ]
    assert textcarry.choose(segments, {3: 7}, 40) == [2]  # 3 is emptied: tantivy drops it
    assert textcarry.choose(segments, {0: 1}, 80) == [1, 2]
    assert textcarry.choose(segments, {0: 1}, 1000) == [0, 1, 2]
    assert textcarry.choose(segments, {}, 29) == []


def test_a_segment_list_that_is_not_the_searchers_is_found_out(tmp_path: Path) -> None:
    docs = corpus(60)
    index = build(tmp_path, docs[:30])
    index.write(docs[30:], [])
    index.write([doc(docs[0].id, "edited")], [], budget=0, whole=1.0)
    searcher = index._main.searcher()
    found = textcarry.segments(tmp_path / "ix")
    match = functools.partial(textindex._matching, index._main, searcher)
    ords = [s.ord for s in found]
    live = textcarry.live(searcher, textindex.tantivy.DocAddress, found, ords, match)
    assert live is not None and len(live) == 60
    wrong = [replace(s, deleted=s.deleted + 1) if s.deleted else s for s in found]
    assert textcarry.live(searcher, textindex.tantivy.DocAddress, wrong, ords, match) is None


@pytest.mark.parametrize(
    "skew",
    [
        lambda s: [*s, textcarry.Segment(len(s), 5, 1)],  # a later commit's segment more
        lambda s: [replace(x, max_doc=x.max_doc + 5) for x in s],  # merged since, bigger
        lambda s: [replace(x, max_doc=x.max_doc - 1) for x in s],  # smaller
    ],
    ids=["one-segment-more", "bigger", "smaller"],
)
def test_a_segment_list_of_another_shape_is_found_out_before_any_document_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, skew: object
) -> None:
    docs = corpus(60)
    index = build(tmp_path, docs[:30])
    index.write(docs[30:], [])
    index.write([doc(docs[0].id, "edited")], [], budget=0, whole=1.0)
    searcher = index._main.searcher()
    wrong = skew(textcarry.segments(tmp_path / "ix"))  # type: ignore[operator]
    match = functools.partial(textindex._matching, index._main, searcher)
    ords = [s.ord for s in wrong if s.ord < searcher.num_segments]
    address = textindex.tantivy.DocAddress
    assert textcarry.live(searcher, address, wrong, ords, match) is None
    real = textcarry.segments
    monkeypatch.setattr(textcarry, "segments", lambda d: skew(real(d)))  # type: ignore[operator]
    assert textcarry.counted(searcher, tmp_path / "ix", address).num_docs == 61
    index.write([doc(docs[1].id, "edited")], [])  # lists the index: exact, no panic
    monkeypatch.undo()
    assert textcarry.ghosts(tmp_path / "ix") == 0
    rebuilt = build(tmp_path, [doc(d.id, "edited") for d in docs[:2]] + docs[2:], "rebuilt")
    assert_same(results(index), results(rebuilt))


def test_a_segments_size_is_found_by_probing_its_deleted_last_document_too(
    tmp_path: Path,
) -> None:
    index = build(tmp_path, corpus(5))
    index.write([doc("x", "other")], [])
    index.write([], ["r0004"], budget=0, whole=1.0)  # the first segment's last document
    searcher = index._main.searcher()
    found = textcarry.segments(tmp_path / "ix")
    address = textindex.tantivy.DocAddress
    assert sorted((s.max_doc, s.deleted) for s in found) == [(1, 0), (5, 1)]
    assert textcarry.fits(searcher, address, found)
    probed = [textcarry._probed(searcher, address, o) for o in range(2)]
    assert probed == [s.max_doc for s in found]
    assert index._counted.num_docs == 6


def test_cjk_records_are_found_by_cjk_queries(tmp_path: Path) -> None:
    index = build(
        tmp_path,
        [
            doc("zh", "数据库连接失败", "生产环境的数据库连接池耗尽"),
            doc("ja", "デプロイ手順", "本番環境へのデプロイは金曜日に禁止"),
            doc("en", "database connection", "pool exhausted"),
        ],
    )
    assert top(index, "连接失败") == ["zh"]
    assert top(index, "数据库连接池") == ["zh"]
    assert top(index, "库") == ["zh"]
    assert top(index, "デプロイ") == ["ja"]
    assert top(index, "金曜日のデプロイ") == ["ja"]
    assert top(index, "database") == ["en"]


def test_long_prompt_keeps_its_rare_terms(tmp_path: Path) -> None:
    index = build(tmp_path, [*corpus(100), doc("rare", "zanzibar quokka", "see E4711")])
    unseen = [f"unseen{i} unseen-{i} word{'x' * (i % 30)}q{chr(97 + i % 26)}" for i in range(700)]
    prompt = " ".join([*unseen, "zanzibar", *unseen, "E4711"])  # ~2,100 words
    start = time.perf_counter()
    assert top(index, prompt, 3) == ["rare"]
    assert time.perf_counter() - start < 1.0


def keyed(docs: list[TextDoc], first: int = 1000) -> list[TextDoc]:
    return [replace(d, key=first + n) for n, d in enumerate(docs)]


def names(docs: list[TextDoc]) -> dict[int, tuple[str, str]]:
    return {d.key: (d.id, d.blob) for d in docs}


def by_key(
    index: TextIndex, query: str, known: dict[int, tuple[str, str]], limit: int = 30
) -> list[TextHit]:
    """A search whose hits are named by `known` (key -> (id, blob)) alone, as the catalog
    would."""
    return index.search(query, limit, None, lambda keys: {k: known[k] for k in keys if k in known})


def test_hits_named_by_key_are_the_stored_hits(tmp_path: Path) -> None:
    docs = keyed(corpus(300))
    index = build(tmp_path, docs)
    for query in QUERIES:
        stored = index.search(query, 30)
        named = by_key(index, query, names(docs))
        assert [(h.id, h.score) for h in named] == [(h.id, h.score) for h in stored]
        assert all(h.blob == "" and names(docs)[h.key][0] == h.id for h in named)
        assert all(h.key == -1 for h in stored)


def test_a_key_the_resolver_does_not_name_is_left_out_and_the_list_refilled(
    tmp_path: Path,
) -> None:
    docs = keyed(corpus(300))
    index = build(tmp_path, docs)
    full = [h.id for h in index.search("cache", 60)]
    dropped = set(full[:25:2])  # gone from the catalog, or not admitted by the filter
    known = {k: v for k, v in names(docs).items() if v[0] not in dropped}
    assert [h.id for h in by_key(index, "cache", known)] == [i for i in full if i not in dropped][
        :30
    ]


def test_carried_documents_keep_their_keys(tmp_path: Path) -> None:
    docs = keyed(corpus(300))
    index = build(tmp_path, docs)
    edited = replace(docs[0], title="cache cache edited", key=5000)
    index.write([edited], [docs[1].id])  # rewrites the one segment: every survivor is carried
    assert textcarry.ghosts(tmp_path / "ix") == 0
    live = {**names(docs[2:]), 5000: (edited.id, edited.blob)}
    searcher = index._main.searcher()
    every = textindex._every(searcher)
    stored = [texthits.id_blob(searcher.doc(a)) for a in every]
    marks = texthits.keys(searcher, every)
    assert None not in marks
    assert dict(zip([m[0] for m in marks if m], stored, strict=True)) == live
    assert [m[1] for m in marks if m] == [textdoc.fingerprint(blob) for _, blob in stored]
    assert [h.id for h in by_key(index, "cache", live)] == [h.id for h in index.search("cache", 30)]


def test_an_index_with_an_unkeyed_document_names_hits_from_the_documents(
    tmp_path: Path,
) -> None:
    docs = keyed(corpus(100))
    docs[7] = replace(docs[7], key=-1)  # written without a key
    index = build(tmp_path, docs)
    asked: list[list[int]] = []

    def resolve(keys: list[int]) -> dict[int, tuple[str, str]]:
        asked.append(keys)
        return names(docs)

    hits = index.search(docs[7].title, 100, None, resolve)
    assert asked == []  # seen before the catalog is asked anything
    assert docs[7].id in {h.id for h in hits}
    assert all(h.key == -1 and h.blob.startswith("blob-") for h in hits)
    assert [h.id for h in hits] == [h.id for h in index.search(docs[7].title, 100)]


def test_a_key_the_catalog_gives_another_version_names_no_hit(tmp_path: Path) -> None:
    """Keys are unique within one catalog: after another process's rebuild, a reader may pair
    this text index with a catalog in which the same key is another record (or another
    version of it). The blob's fingerprint tells: such a hit is left out, never misnamed."""
    docs = keyed(corpus(200, seed=3))
    index = build(tmp_path, docs)
    full = [(h.id, h.key) for h in by_key(index, "cache deploy", names(docs), 60)]
    other = {d.key: (d.id, d.blob) for d in docs}
    (first, key), (second, key2) = full[0], full[1]
    other[key] = (second, other[key2][1])  # key names another record, with that one's blob
    other[key2] = (second, "0123456789abcdef0123456789abcdef01234567")  # another version
    got = [h.id for h in by_key(index, "cache deploy", other, 40)]
    assert got == [i for i, _ in full if i not in {first, second}][:40]


def test_the_fingerprint_is_a_blob_ids_first_60_bits() -> None:
    blob = "d670460b4b4aece5915caf5c68d12f560a9fe3e4"
    assert textdoc.fingerprint(blob) == int(blob[:15], 16) < 2**60
    assert textdoc.fingerprint(blob) != textdoc.fingerprint(blob[:14] + "0" + blob[15:])
    assert textdoc.fingerprint("blob-a") != textdoc.fingerprint("blob-b")
