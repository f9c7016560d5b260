"""The index is a cache of HEAD: rebuild ≡ incremental, self-healing, shared by processes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import git, set_model
from tinymodel import build_tiny_model

from gitmem.api import Store
from gitmem.index.entries import Filter
from gitmem.index.model import ModelRef
from gitmem.index.textindex import TextIndex, TextIndexCorrupt
from gitmem.index.vectors import VectorFile

QUERIES = [
    "retry webhook deliveries",
    "postgres connection pooling",
    "PAY-1423",
    "friday deploy",
    "how do we handle failed callback sends",
    "session storage",
    "日本語",
    'weird "quotes" AND (parens OR : colons) -x * ~ 🙂',
    "",
]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("model") / "tiny"
    build_tiny_model(out)
    return out


def tiny(path: Path) -> ModelRef:
    return ModelRef.from_folder("tiny", path)


def fill(store: Store) -> list[str]:
    ids = []
    for title, body, type_ in [
        ("Retry webhooks with backoff", "We retry webhook deliveries, 24h max.", "decision"),
        ("Payments database", "Postgres 15 behind pgbouncer for pooling.", "fact"),
        ("No Friday deploys", "Deploying on Friday broke checkout; see PAY-1423.", "lesson"),
        ("Sessions in Redis", "User sessions are stored in Redis with a 1h TTL.", "decision"),
        ("日本語のメモ", "日本語で書かれた記録です。", "fact"),
        ("Long design note", "word " * 900 + "the sharding key is tenant_id", "context"),
    ]:
        ids.append(store.record(type_, body, title=title, agent="a").record.id)
    return ids


def answers(store: Store, mode: str = "hybrid") -> list[list[tuple[str, float]]]:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    return [
        [(h.id, round(h.score, 6)) for h in store.recall(q, mode=mode, now=now, limit=5).hits]
        for q in QUERIES
    ]


@pytest.fixture
def searchable(store_path: Path, tiny_model_dir: Path) -> Store:
    store = Store.open(store_path)
    store.use_model(tiny(tiny_model_dir))
    fill(store)
    return store


def reopened(path: Path, model_dir: Path) -> Store:
    store = Store.open(path)
    store.use_model(tiny(model_dir))
    return store


def test_finds_by_keyword_and_meaning(searchable: Store) -> None:
    hits = searchable.recall("PAY-1423", limit=3).hits
    assert hits[0].title == "No Friday deploys"
    assert searchable.recall("deploying", mode="keyword").hits[0].title == "No Friday deploys"
    assert searchable.recall("sharding key tenant_id", limit=1).hits[0].title == "Long design note"
    for q in QUERIES:
        searchable.recall(q, mode="keyword")  # never raises


def test_delete_cache_and_rebuild_gives_identical_answers(
    searchable: Store, tiny_model_dir: Path
) -> None:
    before = answers(searchable)
    assert any(before)
    shutil.rmtree(searchable.cache_dir)
    again = reopened(searchable.root, tiny_model_dir)
    first = again.recall("retry webhook deliveries")
    assert first.notices == ("built the search index from git (6 records)",)
    assert answers(again) == before


def test_incremental_update_equals_full_rebuild(searchable: Store, tiny_model_dir: Path) -> None:
    answers(searchable)  # index built
    ids = [r.id for r in searchable.records()]
    searchable.supersede(ids[0], "Retry with jitter now.", title="Retry webhooks with jitter")
    searchable.forget(ids[1], reason="wrong")
    searchable.amend(ids[2], {"title": "Never deploy on Fridays"})
    searchable.record("fact", "Webhooks are signed with HMAC.", title="Webhook signatures")
    incremental = answers(searchable)
    shutil.rmtree(searchable.cache_dir)
    assert answers(reopened(searchable.root, tiny_model_dir)) == incremental


def test_commits_made_by_hand_are_picked_up(searchable: Store, tiny_model_dir: Path) -> None:
    answers(searchable)
    rid = searchable.recall("PAY-1423", limit=1).hits[0].id
    path = searchable.root / searchable.catalog()[rid]
    path.write_text(path.read_text().replace("PAY-1423", "OPS-77"))
    git(searchable.root, "commit", "-qam", "edit by hand")
    other = reopened(searchable.root, tiny_model_dir)
    assert other.recall("OPS-77", limit=1).hits[0].id == rid
    assert all(h.id != rid for h in other.recall("PAY-1423", mode="keyword").hits)


@pytest.mark.parametrize("damage", ["garbage-catalog", "no-text", "foreign-version", "half-built"])
def test_damaged_cache_heals_with_a_notice(
    searchable: Store, tiny_model_dir: Path, damage: str
) -> None:
    before = answers(searchable)
    root = searchable.cache_dir / "index"
    if damage == "garbage-catalog":
        (root / "catalog.sqlite").write_bytes(b"not a database" * 100)
        for extra in root.glob("catalog.sqlite-*"):
            extra.unlink()
    elif damage == "no-text":
        shutil.rmtree(root / "text")
    elif damage == "foreign-version":
        import sqlite3

        db = sqlite3.connect(root / "catalog.sqlite")
        db.execute("UPDATE meta SET value='999' WHERE key='schema'")
        db.commit()
        db.close()
    else:
        import sqlite3

        db = sqlite3.connect(root / "catalog.sqlite")
        db.execute("DELETE FROM meta WHERE key='commit'")
        db.commit()
        db.close()
    healed = reopened(searchable.root, tiny_model_dir)
    result = healed.recall("retry webhook deliveries")
    [notice] = [n for n in result.notices if "search index" in n]
    assert notice.startswith("search index ") and notice.endswith("; rebuilding it from git")
    assert "delete the directory" not in notice  # it is done for the user, not asked of them
    assert answers(healed) == before


def test_filters_apply_before_ranking(searchable: Store) -> None:
    only_facts = searchable.recall("postgres deploy sessions", filter=Filter(types=("fact",)))
    assert only_facts.hits and {h.type for h in only_facts.hits} == {"fact"}
    assert not searchable.recall("redis", filter=Filter(agent="nobody")).hits
    old = searchable.recall("Sessions in Redis").hits[0]
    searchable.supersede(old.id, "Postgres now.", title="Sessions in Postgres")
    ids = [h.id for h in searchable.recall("sessions redis postgres").hits]
    assert old.id not in ids
    withs = searchable.recall("sessions redis postgres", filter=Filter(include_superseded=True))
    assert old.id in [h.id for h in withs.hits]


def test_without_a_model_recall_says_so_and_uses_keywords(store_path: Path) -> None:
    set_model(store_path, "acme/not-downloaded")
    store = Store.open(store_path)
    fill(store)
    assert store.model_problem and "not on this machine" in store.model_problem
    result = store.recall("friday deploy")
    assert result.mode == "keyword"
    assert any("keywords only" in n for n in result.notices)
    assert result.hits[0].title == "No Friday deploys"


def test_two_processes_updating_at_once_both_succeed(
    searchable: Store, tiny_model_dir: Path
) -> None:
    answers(searchable)
    for i in range(20):
        searchable.record("fact", f"fact number {i} about queues", title=f"Queue fact {i}")
    script = (
        "import sys, json\n"
        "from pathlib import Path\n"
        "from gitmem.api import Store\n"
        "from gitmem.index.model import ModelRef\n"
        "p = Path(sys.argv[2])\n"
        "s = Store.open(Path(sys.argv[1]))\n"
        "s.use_model(ModelRef.from_folder('tiny', p))\n"
        "print(json.dumps([h.id for h in s.recall('queue fact', limit=30).hits]))\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(searchable.root), str(tiny_model_dir)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    first, second = (json.loads(o) for o in outs)
    assert first == second and len(first) >= 20


def test_cli_recall_json_explain_and_batch(gm, store_path: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    set_model(store_path, "none")
    fill(Store.open(store_path))
    r = gm("recall", "friday deploy", "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["mode"] == "keyword" and data["hits"][0]["title"] == "No Friday deploys"
    assert set(data["hits"][0]) >= {"id", "type", "title", "path", "score", "keyword_rank"}
    assert "keywords only" in r.err
    human = gm("recall", "friday deploy", "--explain").out.splitlines()
    assert human[0].startswith(" 1. ") and "keyword #1" in human[1]
    batch = tmp_path / "q.jsonl"
    batch.write_text('{"query": "friday deploy"}\n{"query": "redis", "limit": 1}\n')
    lines = gm("recall", "--batch", str(batch)).out.splitlines()
    assert len(lines) == 2 and len(json.loads(lines[1])["hits"]) == 1
    assert gm("recall", "x", "--mode", "telepathy").code == 2
    assert gm("recall", "x", "--since", "someday").code == 2
    assert gm("rebuild").code == 0
    status = json.loads(gm("status", "--json").out)
    assert status["index"]["state"] == "current"
    assert status["index"]["keyword_leftovers"] == {"records": 0.0, "sessions": 0.0}  # rebuilt


def test_a_record_file_moved_by_hand_is_left_out_alike(
    searchable: Store, tiny_model_dir: Path
) -> None:
    answers(searchable)
    rid = searchable.recall("PAY-1423", limit=1).hits[0].id
    path = searchable.catalog()[rid]
    git(searchable.root, "mv", path, "records/renamed.md")
    git(searchable.root, "commit", "-qm", "move by hand")
    result = searchable.recall("PAY-1423", mode="keyword")
    assert rid not in [h.id for h in result.hits]
    assert any("left out of search" in n for n in result.notices)
    incremental = answers(searchable)
    shutil.rmtree(searchable.cache_dir)
    assert answers(reopened(searchable.root, tiny_model_dir)) == incremental


def test_a_long_lived_reader_follows_a_rebuild_by_another_process(
    searchable: Store, tiny_model_dir: Path
) -> None:
    first = answers(searchable)
    other = reopened(searchable.root, tiny_model_dir)
    other.rebuild()
    other.record("fact", "Zebras graze on the savanna.", title="Zebra stripes")
    assert searchable.recall("zebra savanna", limit=1).hits[0].title == "Zebra stripes"
    assert answers(searchable) != first


def test_compaction_keeps_answers_equal_to_a_rebuild(
    searchable: Store, tiny_model_dir: Path
) -> None:
    answers(searchable)
    rid = searchable.recall("PAY-1423", limit=1).hits[0].id
    for i in range(90):  # many edits leave dead vector rows until compaction
        searchable.amend(rid, {"abstract": f"revision {i}"})
        searchable.recall("friday")
    vectors = list((searchable.cache_dir / "index").glob("vectors*.f32"))
    assert len(vectors) == 1 and vectors[0].name != "vectors.f32"  # compacted at least once
    compacted = answers(searchable)
    shutil.rmtree(searchable.cache_dir)
    assert answers(reopened(searchable.root, tiny_model_dir)) == compacted


def test_a_model_named_in_config_is_used(store_path: Path, tiny_model_dir: Path) -> None:
    set_model(store_path, str(tiny_model_dir))
    store = Store.open(store_path)
    fill(store)
    assert store.model_problem is None
    result = store.recall("retry webhook deliveries")
    assert result.mode == "hybrid"
    assert result.notices == ("built the search index from git (6 records)",)
    assert not store.recall("retry webhook deliveries").notices  # said once, when it was built
    assert result.hits[0].semantic_rank is not None


def laid_out_by_catch_up(store: Store) -> None:
    """An index whose rows a catch-up laid out: a record's edit leaves its old rows dead
    and appends new ones, so a rebuild of the same commit numbers rows otherwise."""
    answers(store)
    rid = store.recall("PAY-1423", limit=1).hits[0].id
    store.amend(rid, {"abstract": "Friday deploys broke checkout"})
    answers(store)


def test_a_reader_opening_the_index_while_another_process_swaps_in_a_rebuild(
    searchable: Store, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rebuild lands between the reader's opening of the catalog and of the text index:
    the reader must not pair the old build's catalog with the new build's files."""
    laid_out_by_catch_up(searchable)
    reader = reopened(searchable.root, tiny_model_dir)
    other = reopened(searchable.root, tiny_model_dir)
    real_open = TextIndex.open.__func__  # type: ignore[attr-defined]
    swapped: list[bool] = []

    def open_while_rebuilt(cls: type[TextIndex], directory: Path) -> TextIndex:
        if not swapped:
            swapped.append(True)
            other.rebuild()
        return real_open(cls, directory)  # type: ignore[no-any-return]

    monkeypatch.setattr(TextIndex, "open", classmethod(open_while_rebuilt))
    raced = answers(reader)
    monkeypatch.undo()
    assert swapped
    assert raced == answers(reopened(searchable.root, tiny_model_dir))


@pytest.mark.parametrize("how", ["reloaded", "between-renames"])
def test_a_reader_reloading_its_text_index_as_another_process_swaps_in_a_rebuild(
    searchable: Store, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The text index reloads by path when HEAD moved: a rebuild landing just before finds
    it the new build's (or, between the rebuild's two renames, missing)."""
    laid_out_by_catch_up(searchable)
    store = reopened(searchable.root, tiny_model_dir)
    answers(store)  # open and current
    other = reopened(searchable.root, tiny_model_dir)
    other.record("fact", "Zebras graze on the savanna.", title="Zebra stripes")
    other.recall("zebra")  # the shared catalog moves to the new HEAD: the reader reloads
    real_reload = TextIndex.reload

    def reload_after_rebuild(self: TextIndex) -> None:
        monkeypatch.setattr(TextIndex, "reload", real_reload)
        other.rebuild()
        if how == "between-renames":
            raise TextIndexCorrupt("no meta.json")
        real_reload(self)

    monkeypatch.setattr(TextIndex, "reload", reload_after_rebuild)
    raced = answers(store)
    assert TextIndex.reload is real_reload  # the rebuild did land in the race
    assert raced == answers(reopened(searchable.root, tiny_model_dir))


@pytest.mark.parametrize("grown", [False, True], ids=["same-commit", "records-added"])
def test_a_reader_mapping_vectors_after_another_process_swapped_in_a_rebuild(
    searchable: Store, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, grown: bool
) -> None:
    """The rebuild lands after the reader opened the catalog and before it maps the vector
    file (a shorter file, or one as long with other rows): it ranks no vectors that once
    rather than the new build's against its catalog."""
    laid_out_by_catch_up(searchable)
    store = reopened(searchable.root, tiny_model_dir)
    reader = store.index()  # the catalog and the text index open, the vectors not mapped
    other = reopened(searchable.root, tiny_model_dir)
    real_matrix = VectorFile.matrix

    def matrix_after_rebuild(self: VectorFile, rows: int) -> Any:
        monkeypatch.setattr(VectorFile, "matrix", real_matrix)
        if grown:
            for n in range(3):
                other.record("fact", f"Deploy window {n} is Friday noon.", title=f"Window {n}")
        other.rebuild()
        return real_matrix(self, rows)

    monkeypatch.setattr(VectorFile, "matrix", matrix_after_rebuild)
    raced = reader.semantic("friday deploy", 6, Filter())
    assert VectorFile.matrix is real_matrix  # the rebuild did land in the race
    fresh = dict(other.index().semantic("friday deploy", 20, Filter()) or [])
    assert raced == []  # none rather than the new build's rows scored as its own
    assert fresh
    assert answers(store) == answers(reopened(searchable.root, tiny_model_dir))  # reopened


def test_an_index_built_with_another_model_is_rebuilt_with_a_notice(
    searchable: Store, tiny_model_dir: Path
) -> None:
    before = answers(searchable)
    built = searchable.index().model_name
    other = Store.open(searchable.root)
    other.use_model(ModelRef.from_folder("renamed", tiny_model_dir))
    result = other.recall("retry webhook deliveries")
    wanted = f"search index was built with {built}, not {other.index().model_name}"
    assert [n for n in result.notices if "search index" in n] == [
        f"{wanted}; rebuilding it from git"
    ]
    assert answers(other) == before  # the same vectors under another name


def test_a_killed_rebuilds_directory_is_removed_by_the_next_catch_up(
    searchable: Store, tiny_model_dir: Path
) -> None:
    before = answers(searchable)
    code = (  # a rebuild killed once its new directory holds part of an index
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from gitmem.api import Store\n"
        "from gitmem.index.catchup import CatchUp\n"
        "from gitmem.index.model import ModelRef\n"
        "def die(self, *args):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "CatchUp._fill = die\n"
        "store = Store.open(Path(sys.argv[1]))\n"
        "store.use_model(ModelRef.from_folder('tiny', Path(sys.argv[2])))\n"
        "store.rebuild()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(searchable.root), str(tiny_model_dir)], check=False
    )
    assert done.returncode == -9
    left = list(searchable.cache_dir.glob("index.new-*"))
    assert left and (left[0] / "catalog.sqlite").exists()
    assert answers(searchable) == before  # the index in place is untouched
    searchable.record("fact", "Zebras graze on the savanna.", title="Zebra stripes")
    searchable.recall("zebra")  # catches up, under the lock
    assert not list(searchable.cache_dir.glob("index.*-*"))
