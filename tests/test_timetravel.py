"""Time travel: `--as-of` recall, read, list and history, and `gitmem diff`, pinned against
real git histories whose commit times the tests set (GIT_COMMITTER_DATE)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import git, snapshot
from test_docs import documented, gen  # noqa: F401  (a fixture)
from test_index import tiny, tiny_model_dir  # noqa: F401  (a session fixture)

from gitmem.api import Store
from gitmem.errors import NotFound, UsageError
from gitmem.index import catchup
from gitmem.index.catalog import Catalog
from gitmem.recall import pastcontext
from gitmem.store.record import Record
from gitmem.store.recordfile import dump

NOW = datetime(2026, 11, 30, tzinfo=UTC)
BEGIN = "2026-01-01T00:00:00Z"


# --- building histories with the git command ------------------------------------------------


def at(day: int, hour: int = 12) -> str:
    """A commit time: `day` days into 2026 (day 1 = Jan 2), at `hour` UTC."""
    moment = datetime(2026, 1, 1, hour, tzinfo=UTC) + timedelta(days=day)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def commit(root: Path, when: str, subject: str, op: str = "record", author_when: str = "") -> str:
    env = {**os.environ, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": author_when or when}
    message = f"{subject}\n\nGitmem-Operation: {op}\nGitmem-Agent: tester\n"
    subprocess.run(["git", "add", "-A", "records"], cwd=root, check=True)
    subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", message], cwd=root, env=env, check=True
    )
    return git(root, "rev-parse", "HEAD").strip()


def make(
    rid: str,
    title: str,
    body: str,
    day: int,
    type_: str = "decision",
    **changes: Any,
) -> Record:
    created = datetime.fromisoformat(at(day).replace("Z", "+00:00"))
    return Record(rid, type_, title, body, created, created, abstract=title).with_(**changes)


def put(root: Path, record: Record) -> None:
    target = root / record.path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(dump(record), encoding="utf-8")


def write(root: Path, record: Record, when: str, op: str = "record") -> str:
    put(root, record)
    return commit(root, when, f"{op}: {record.title}", op)


def remove(root: Path, record: Record, when: str) -> str:
    (root / record.path).unlink()
    return commit(root, when, f"forget: {record.title}", "forget")


@pytest.fixture
def root(store_path: Path) -> Path:
    """A store whose first commit is dated 2026-01-01."""
    env = {**os.environ, "GIT_COMMITTER_DATE": BEGIN, "GIT_AUTHOR_DATE": BEGIN}
    subprocess.run(["git", "commit", "-q", "--amend", "--no-edit"], cwd=store_path, env=env)
    return store_path


def opened(path: Path, model_dir: Path | None = None) -> Store:
    store = Store.open(path)
    store.use_model(None if model_dir is None else tiny(model_dir))
    return store


def ids(store: Store, query: str, when: str | datetime | None, mode: str = "keyword") -> list[str]:
    result = store.recall(query, mode=mode, as_of=when, now=NOW)
    return [h.id for h in result.hits]


def listed(store: Store, when: str | datetime | None) -> list[str]:
    return sorted(r.id for r in store.records(as_of=when) if r.status == "active")


# --- a history with edits, supersedes and a forget --------------------------------------------

QUEUE_PG = make("queue-pg0001", "Queue on Postgres", "The job queue lives in Postgres.", 10)
QUEUE_REDIS = make("queue-rd0002", "Queue on Redis", "The job queue moves to Redis streams.", 40)
QUEUE_KAFKA = make("queue-kf0003", "Queue on Kafka", "The job queue moves to Kafka topics.", 70)
PORT = make("port-db0004", "Database port", "The database listens on port 5432.", 20, "fact")
NOTE = make("note-tmp0005", "Temporary note", "Remember to rotate the staging token.", 30, "fact")


@pytest.fixture
def story(root: Path) -> dict[str, str]:
    """Jan 11 record A; Jan 21 fact; Jan 31 note; Feb 10 A → B; Mar 1 edit the fact in place;
    Mar 13 B → C; Mar 20 forget the note. Returns the commits by name."""
    made = {"a": write(root, QUEUE_PG, at(10))}
    made["port"] = write(root, PORT, at(20))
    made["note"] = write(root, NOTE, at(30))
    put(root, QUEUE_REDIS.with_(supersedes=("queue-pg0001",)))
    put(root, QUEUE_PG.with_(status="superseded", superseded_by="queue-rd0002"))
    made["b"] = commit(root, at(40), "supersede: Queue on Redis", "supersede")
    edited = PORT.with_(body="The database listens on port 6432 behind pgbouncer.", tags=("db",))
    made["edit"] = write(root, edited, at(59), "edit")
    put(
        root,
        QUEUE_REDIS.with_(
            supersedes=("queue-pg0001",), status="superseded", superseded_by="queue-kf0003"
        ),
    )
    made["c"] = write(root, QUEUE_KAFKA.with_(supersedes=("queue-rd0002",)), at(71), "supersede")
    made["forget"] = remove(root, NOTE, at(78))
    return made


def test_supersede_chain_at_three_dates(root: Path, story: dict[str, str]) -> None:
    store = opened(root)
    assert ids(store, "job queue", "2026-01-20") == ["queue-pg0001"]
    assert ids(store, "job queue", "2026-02-20") == ["queue-rd0002"]
    assert ids(store, "job queue", "2026-03-20") == ["queue-kf0003"]
    assert ids(store, "job queue", None) == ["queue-kf0003"]
    chain = store.recall("job queue", mode="keyword", as_of="2026-02-20", now=NOW)
    assert chain.hits[0].title == "Queue on Redis"


def test_in_place_edit_shows_the_old_text_before_it(root: Path, story: dict[str, str]) -> None:
    store = opened(root)
    assert "5432" in store.get("port-db0004", as_of="2026-02-27").body
    assert "6432" in store.get("port-db0004", as_of="2026-03-01").body
    assert ids(store, "pgbouncer", "2026-02-27") == []
    assert ids(store, "pgbouncer", "2026-03-02") == ["port-db0004"]
    assert ids(store, "5432", "2026-02-27") == ["port-db0004"]
    assert ids(store, "5432", None) == []


def test_forget_removes_from_then_on(root: Path, story: dict[str, str]) -> None:
    store = opened(root)
    assert "note-tmp0005" in listed(store, "2026-03-19")
    assert "note-tmp0005" not in listed(store, "2026-03-20")
    assert ids(store, "staging token", "2026-03-19") == ["note-tmp0005"]
    assert ids(store, "staging token", "2026-03-21") == []
    with pytest.raises(NotFound, match="written later, or forgotten"):
        store.get("note-tmp0005", as_of="2026-03-21")


def test_between_versions_at_the_second(root: Path, story: dict[str, str]) -> None:
    store = opened(root)
    edit = datetime(2026, 3, 1, 12, tzinfo=UTC)
    assert "5432" in store.get("port-db0004", as_of=edit - timedelta(seconds=1)).body
    assert "6432" in store.get("port-db0004", as_of=edit).body


def test_before_the_store_is_empty_with_a_note(root: Path, story: dict[str, str]) -> None:
    store = opened(root)
    result = store.recall("job queue", as_of="2025-06-01", now=NOW)
    assert result.hits == ()
    assert any("begins at 2026-01-01T00:00:00Z" in n for n in result.notices)
    assert listed(store, "2025-06-01") == []


def test_list_before_the_store_says_why_it_is_empty(
    gm: Any, root: Path, story: dict[str, str]
) -> None:
    out = gm("list", "--as-of", "2025-06-01")
    assert out.code == 0
    assert "begins at 2026-01-01T00:00:00Z" in out.err
    assert "nothing was remembered as of" in out.err


def test_the_future_is_the_present(root: Path, story: dict[str, str]) -> None:
    store = opened(root)
    for when in ("2030-01-01", "now", datetime(2099, 1, 1, tzinfo=UTC)):
        assert ids(store, "queue database token", when) == ids(store, "queue database token", None)
        assert listed(store, when) == listed(store, None)


def test_time_zones_name_the_same_instant(root: Path, story: dict[str, str]) -> None:
    store = opened(root)
    same = ["2026-03-01T12:00:00Z", "2026-03-01T14:00:00+02:00", "2026-03-01T07:00-05:00"]
    bodies = {store.get("port-db0004", as_of=w).body for w in same}
    assert len(bodies) == 1 and "6432" in bodies.pop()
    earlier = ["2026-03-01T11:59:59", "2026-03-01T13:59:59+02:00"]  # no zone: UTC
    assert {store.get("port-db0004", as_of=w).body for w in earlier} == {PORT.body}


def test_a_bare_date_means_the_end_of_that_day(root: Path, story: dict[str, str]) -> None:
    store = opened(root)
    # The edit is at 12:00 on Mar 1: "as of 2026-03-01" includes it.
    assert "6432" in store.get("port-db0004", as_of="2026-03-01").body
    assert "5432" in store.get("port-db0004", as_of="2026-03-01T00:00:00Z").body


def test_a_commit_or_ref_is_that_commits_tree(root: Path, story: dict[str, str]) -> None:
    store = opened(root)
    assert ids(store, "job queue", story["b"]) == ["queue-rd0002"]
    assert ids(store, "job queue", story["b"][:8]) == ["queue-rd0002"]
    assert ids(store, "job queue", "HEAD~4") == ["queue-pg0001"]  # the note's commit
    assert listed(store, "HEAD~4") == ["note-tmp0005", "port-db0004", "queue-pg0001"]
    assert "5432" in store.get("port-db0004", as_of=story["b"]).body
    git(root, "checkout", "-q", "-b", "side", story["a"])
    side = write(root, NOTE.with_(id="side-nt0006", title="Side"), at(90))
    git(root, "checkout", "-q", "main")
    with pytest.raises(UsageError, match="not in the history of HEAD"):
        store.recall("queue", as_of=side)


def test_clock_skew_written_time_never_runs_backwards(root: Path) -> None:
    write(root, QUEUE_PG, at(10))
    # A laptop whose clock is 5 days behind commits on top: its record counts as written at
    # its parent's time, so the view never shows a child without its parent.
    skewed = write(root, PORT, at(5))
    write(root, NOTE, at(30))
    store = opened(root)
    assert listed(store, at(6)) == []
    assert listed(store, at(10)) == ["port-db0004", "queue-pg0001"]
    stamp = store.time_travel().timeline.stamp(skewed)
    assert stamp is not None and stamp[0] == int(datetime.fromisoformat(at(10)).timestamp())
    assert listed(store, at(29)) == ["port-db0004", "queue-pg0001"]


def test_history_as_of_lists_versions_up_to_then(
    gm: Any, root: Path, story: dict[str, str]
) -> None:
    store = opened(root)
    assert len(store.history("port-db0004")) == 2
    assert [v.commit for v in store.history("port-db0004", as_of="2026-02-01")] == [story["port"]]
    assert len(store.history("queue-pg0001", as_of=story["b"])) == 2
    out = gm("history", "port-db0004", "--as-of", "2026-02-01", "--json")
    assert out.code == 0 and [v["commit"] for v in json.loads(out.out)] == [story["port"]]
    early = gm("history", "port-db0004", "--as-of", "2026-01-05")
    assert early.code == 1 and "no version yet" in early.err


def test_read_as_of_prints_that_version_or_refuses(
    gm: Any, root: Path, story: dict[str, str]
) -> None:
    old = gm("read", "port-db0004", "--as-of", "2026-02-01", "--json")
    assert old.code == 0 and "5432" in json.loads(old.out)["body"]
    missing = gm("read", "queue-kf0003", "--as-of", "2026-02-01")
    assert missing.code == 1 and "as of 2026-02-01T23:59:59Z" in missing.err


def test_bad_when_exits_2_lists_the_forms_and_writes_nothing(
    gm: Any, root: Path, story: dict[str, str]
) -> None:
    before = snapshot(root)
    for command in (
        ["recall", "queue", "--as-of", "last tuesday-ish"],
        ["read", "port-db0004", "--as-of", "2026-13-45"],
        ["list", "--as-of", "nope"],
        ["history", "port-db0004", "--as-of", "nope"],
        ["diff", "whenever"],
        ["recall", "queue", "--as-of", "100000 years ago"],  # before the year 1
        ["diff", "--since", "99999999999w"],
    ):
        out = gm(*command)
        assert out.code == 2, command
        assert "a commit id or ref" in out.err and out.out == ""
        assert "N days ago" in out.err and "2026-04-01T09:30+02:00" in out.err
    assert snapshot(root) == before


def test_diff_reports_added_superseded_forgotten_and_changed(
    gm: Any,
    root: Path,
    story: dict[str, str],
    gen: ModuleType,  # noqa: F811
) -> None:
    store = opened(root)
    changes = store.diff("2026-02-20", "2026-03-31")
    assert [i.id for i in changes.added] == ["queue-kf0003"]
    assert [(i.id, i.by, i.by_title) for i in changes.superseded] == [
        ("queue-rd0002", "queue-kf0003", "Queue on Kafka")
    ]
    assert [i.id for i in changes.forgotten] == ["note-tmp0005"]
    (edit,) = changes.changed
    assert edit.record.id == "port-db0004" and edit.body_edited
    assert [(f.field, f.old, f.new) for f in edit.fields] == [("tags", [], ["db"])]
    out = gm("diff", "2026-02-20", "2026-03-31", "--json")
    assert out.code == 0 and json.loads(out.out) == changes.to_dict()
    assert list(changes.to_dict()) == documented(gen, "Diff")
    human = gm("diff", "2026-02-20", "2026-03-31")
    assert "superseded (1)" in human.out and "→ queue-kf0003  Queue on Kafka" in human.out
    assert "tags: (none) → db" in human.out and "body edited" in human.out
    assert gm("diff", "2026-03-31", "2026-02-20").code == 2
    since = store.diff(at(70), None)
    assert [i.id for i in since.added] == ["queue-kf0003"]
    empty = gm("diff", "2026-03-25", "2026-03-26")
    assert empty.code == 0 and "no changes" in empty.out


def test_cli_and_api_agree(gm: Any, root: Path, story: dict[str, str]) -> None:
    store = Store.open(root)  # the configured model, the built-in one, as the CLI's
    assert store.model() is not None
    for when in ("2026-01-25", "2026-02-20", story["c"][:10], "2026-12-01"):
        out = gm("recall", "job queue database", "--as-of", when, "--json", "--now", "2026-11-30")
        api = store.recall("job queue database", as_of=when, now=NOW)
        assert [h["id"] for h in json.loads(out.out)["hits"]] == [h.id for h in api.hits]
        listed_cli = gm("list", "--as-of", when, "--status", "all", "--json")
        assert sorted(r["id"] for r in json.loads(listed_cli.out)) == sorted(
            r.id for r in store.records(as_of=when)
        )


# --- two clones, merged both ways -------------------------------------------------------------


def clone(origin: Path, where: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(origin), str(where)], check=True)
    return where


def merge(root: Path, other: str, when: str) -> None:
    env = {**os.environ, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when}
    subprocess.run(
        ["git", "merge", "-q", "--no-edit", "--no-ff", other], cwd=root, env=env, check=True
    )


def test_two_clones_merged_both_ways_answer_alike(
    root: Path,
    tmp_path: Path,
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    write(root, QUEUE_PG, at(10))
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(root), str(origin)], check=True)
    a, b = clone(origin, tmp_path / "a"), clone(origin, tmp_path / "b")
    # Interleaved: a writes on days 20, 40, 60; b on 30, 50 (b's clock runs a day behind on
    # one of them) and edits A's queue record in place on day 55 (after syncing once).
    write(a, PORT, at(20))
    write(b, NOTE, at(30))
    write(a, QUEUE_REDIS, at(40))
    write(b, make("cache-rd0007", "Cache in Redis", "Session cache lives in Redis.", 50), at(50))
    write(b, make("retry-wh0008", "Webhook retries", "Retry webhooks for 24h.", 51), at(49))
    write(a, make("deploy-fr0009", "No Friday deploys", "Deploys stop on Friday.", 60), at(60))
    # Each fetches the other's work before either merges: two different merge commits.
    subprocess.run(["git", "push", "-q", "origin", "main"], cwd=a, check=True)
    subprocess.run(["git", "fetch", "-q", "origin"], cwd=b, check=True)
    subprocess.run(["git", "fetch", "-q", str(b), "main:b-main"], cwd=a, check=True)
    merge(b, "origin/main", at(62))  # b merges a
    merge(a, "b-main", at(64))  # a merges b
    edited = QUEUE_PG.with_(body="The job queue lives in Postgres, partitioned by tenant.")
    write(b, edited, at(66), "edit")
    env = {**os.environ, "GIT_COMMITTER_DATE": at(67), "GIT_AUTHOR_DATE": at(67)}
    subprocess.run(
        ["git", "pull", "-q", "--no-rebase", "--no-edit", str(b), "main"],
        cwd=a,
        env=env,
        check=True,
    )
    assert git(a, "rev-parse", "HEAD") != git(b, "rev-parse", "HEAD")
    left, right = opened(a, tiny_model_dir), opened(b, tiny_model_dir)
    dates = [
        at(d, h)
        for d in (5, 10, 25, 30, 45, 49, 50, 55, 61, 62, 63, 64, 65, 66, 68, 200)
        for h in (11, 13)
    ]
    for when in dates:
        for query in ("job queue", "redis", "webhook retries friday", "database port"):
            for mode in ("keyword", "hybrid"):
                assert ids(left, query, when, mode) == ids(right, query, when, mode), (when, query)
        assert listed(left, when) == listed(right, when), when
    assert listed(left, at(45)) == ["note-tmp0005", "port-db0004", "queue-pg0001", "queue-rd0002"]
    # Records that came in through a merge keep their own written time, not the merge's.
    assert "retry-wh0008" in listed(left, at(50, 13)) and "deploy-fr0009" in listed(right, at(61))
    assert "partitioned" in left.get("queue-pg0001", as_of=at(66, 13)).body
    assert "partitioned" not in right.get("queue-pg0001", as_of=at(65)).body


# --- the cache -----------------------------------------------------------------------------------


def tables(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    db = sqlite3.connect(store.cache_dir / "timeline" / "timeline.sqlite")
    try:
        return {
            name: sorted(db.execute(f"SELECT * FROM {name}").fetchall(), key=repr)
            for name in ("commits", "events", "versions")
        }
    finally:
        db.close()


QUERIES = ("job queue", "database port pgbouncer", "staging token", "redis kafka")


def answers(store: Store, whens: list[str]) -> list[list[tuple[str, float]]]:
    return [
        [(h.id, round(h.score, 6)) for h in store.recall(q, as_of=w, now=NOW).hits]
        for q in QUERIES
        for w in whens
    ]


WHENS = ["2026-01-15", "2026-02-15", "2026-03-05", "2026-03-25", "HEAD~2"]


def test_incremental_timeline_equals_a_rebuilt_one(
    root: Path,
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    store = opened(root, tiny_model_dir)
    write(root, QUEUE_PG, at(10))
    store.recall("queue", as_of="2026-01-15")  # built here, then caught up step by step
    write(root, PORT, at(20))
    write(root, NOTE, at(30))
    store.recall("queue", as_of="2026-01-15")
    write(root, PORT.with_(body="Port 6432 now."), at(59), "edit")
    remove(root, NOTE, at(78))
    incremental = answers(store, WHENS)
    before = tables(store)
    shutil.rmtree(store.cache_dir / "timeline")
    fresh = opened(root, tiny_model_dir)
    assert answers(fresh, WHENS) == incremental
    assert tables(fresh) == before


def test_deleting_the_cache_gives_the_same_answers(
    root: Path,
    story: dict[str, str],
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    store = opened(root, tiny_model_dir)
    first = answers(store, WHENS)
    shutil.rmtree(store.cache_dir)
    assert answers(opened(root, tiny_model_dir), WHENS) == first
    (store.cache_dir / "timeline" / "timeline.sqlite").write_bytes(b"garbage")
    healed = opened(root, tiny_model_dir)
    result = healed.recall("job queue", as_of="2026-02-15", now=NOW)
    assert any("time-travel cache is unreadable" in n for n in result.notices)
    assert [h.id for h in result.hits][:1] == ["queue-rd0002"]
    (store.cache_dir / "timeline" / "vectors.f32").write_bytes(b"")  # cut short: rebuilt
    assert answers(opened(root, tiny_model_dir), WHENS) == first


def test_a_rewritten_history_is_walked_again(root: Path, story: dict[str, str]) -> None:
    store = opened(root)
    assert "note-tmp0005" not in listed(store, None)
    git(root, "reset", "-q", "--hard", "HEAD~1")  # undo the forget: not a fast-forward
    write(root, make("new-rc0010", "New", "A new record after the reset.", 80), at(80))
    assert "note-tmp0005" in listed(store, "2026-03-25")
    rebuilt = opened(root)
    shutil.rmtree(root / ".gitmem" / "timeline")
    assert listed(rebuilt, "2026-03-25") == listed(store, "2026-03-25")
    assert tables(rebuilt) == tables(store)


def test_the_cache_does_not_grow_with_the_dates_asked(root: Path, story: dict[str, str]) -> None:
    """It grows with the versions views have read (each kept once), not with dates."""
    store = opened(root)
    for day in range(1, 80, 3):  # a date between every two writes: every version read
        store.recall("queue", as_of=at(day))
        store.diff(at(day), at(day + 2))
    timeline = store.time_travel().timeline
    size = timeline.size()
    db = timeline._connection()
    assert (
        db.execute("SELECT count(*) FROM made").fetchone()
        == db.execute("SELECT count(*) FROM versions WHERE ok = 1").fetchone()
    )
    for day in range(2, 80, 3):
        opened(root).recall("queue", as_of=at(day))  # other dates, other processes
    assert timeline.size() == size


def test_after_a_merge_the_view_is_the_merges_tree(root: Path) -> None:
    """Both sides edit one record; the merge keeps the side written *earlier*. From the merge's
    time on, the view has what the merge kept, not the later-written side."""
    write(root, PORT, at(10))
    git(root, "checkout", "-q", "-b", "other")
    write(root, PORT.with_(body="Port 7000 on the other side."), at(20), "edit")
    git(root, "checkout", "-q", "main")
    write(root, PORT.with_(body="Port 8000 on main."), at(30), "edit")
    env = {**os.environ, "GIT_COMMITTER_DATE": at(40), "GIT_AUTHOR_DATE": at(40)}
    subprocess.run(
        ["git", "merge", "-q", "--no-edit", "-X", "theirs", "other"], cwd=root, env=env, check=True
    )
    write(root, NOTE, at(50))
    store = opened(root)
    assert "7000" in store.get("port-db0004", as_of=at(25)).body  # written on the other side
    assert "8000" in store.get("port-db0004", as_of=at(35)).body
    assert "7000" in store.get("port-db0004", as_of=at(45)).body  # what the merge kept
    assert store.diff(at(35), at(45)).changed[0].body_edited


def test_a_reader_follows_a_rebuild_by_another_process(root: Path, story: dict[str, str]) -> None:
    reader, other = opened(root), opened(root)
    assert listed(reader, "2026-02-15") == listed(other, "2026-02-15")
    other.time_travel().timeline.rebuild()
    write(root, make("late-rc0011", "Late", "Written after the rebuild.", 85), at(85))
    write(root, make("later-rc0013", "Later", "Something else.", 90), at(90))  # 86: the past
    assert "late-rc0011" in listed(reader, at(86))
    # The reader caught up the cache in place now, not the one the rebuild replaced.
    db = sqlite3.connect(root / ".gitmem" / "timeline" / "timeline.sqlite")
    stamp = db.execute("SELECT value FROM meta WHERE key = 'head'").fetchone()[0]
    db.close()
    assert stamp == git(root, "rev-parse", "HEAD").strip()
    assert listed(reader, "2026-02-15") == listed(opened(root), "2026-02-15")


# --- review fixes: each test failed before its fix ----------------------------------------------


def test_a_reader_sees_versions_another_process_added(root: Path, story: dict[str, str]) -> None:
    """Another process caught the cache up in place: the reader's keyword index must follow."""
    reader, other = opened(root), opened(root)
    assert ids(reader, "zeppelin", "2026-03-25") == []
    write(root, make("late-zp0012", "Zeppelin", "Mail goes by zeppelin.", 85), at(85))
    write(root, make("later-rc0013", "Later", "Something else.", 90), at(90))  # 86: the past
    assert ids(other, "zeppelin", at(86)) == ["late-zp0012"]  # `other` catches the cache up
    assert ids(reader, "zeppelin", at(86)) == ["late-zp0012"]


def test_a_failed_catch_up_after_a_rewrite_leaves_the_cache_as_it_was(
    root: Path, story: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = opened(root)
    assert listed(store, "2026-03-25") == ["port-db0004", "queue-kf0003"]
    before = tables(store)
    git(root, "reset", "-q", "--hard", "HEAD~1")
    write(root, make("new-rc0010", "New", "A new record after the reset.", 80), at(80))

    def dies(*args: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr("gitmem.recall.timeline.walk", dies)
    with pytest.raises(KeyboardInterrupt):
        opened(root).records(as_of="2026-03-25")
    assert tables(store) == before


def test_an_interrupted_rebuild_leaves_no_copy_behind(
    root: Path, story: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = opened(root)
    listed(store, "2026-02-15")
    stale = store.cache_dir / "timeline.new-999999999"  # a rebuild by a process that died
    stale.mkdir(parents=True)
    real = store.time_travel().timeline._catch_up

    def dies(*args: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(store.time_travel().timeline, "_catch_up", dies)
    with pytest.raises(KeyboardInterrupt):
        store.time_travel().timeline.rebuild()
    monkeypatch.setattr(store.time_travel().timeline, "_catch_up", real)
    store.time_travel().timeline.rebuild()
    assert sorted(p.name for p in store.cache_dir.iterdir() if p.name.startswith("timeline")) == [
        "timeline",
        "timeline.lock",
    ]


def test_every_bare_date_form_means_the_end_of_that_day(root: Path, story: dict[str, str]) -> None:
    store = opened(root)
    travel = store.time_travel()
    end = datetime(2026, 3, 1, 23, 59, 59, tzinfo=UTC)
    for text in ("2026-03-01", "20260301", " 2026-03-01 "):
        assert travel.moment(text).time == end, text
    assert "6432" in store.get("port-db0004", as_of="20260301").body


def test_as_of_decay_respects_an_explicit_now(root: Path, story: dict[str, str]) -> None:
    """In the future WHEN is capped at the present: the caller's `now` when given."""
    store = opened(root)
    far = store.recall("job queue", mode="keyword", as_of="2099-01-01", now=NOW)
    head = store.recall("job queue", mode="keyword", now=NOW)
    assert [(h.id, h.score) for h in far.hits] == [(h.id, h.score) for h in head.hits]
    past = store.recall("job queue", mode="keyword", as_of="2026-03-20", now=NOW)
    later = store.recall("job queue", mode="keyword", as_of="2026-03-20", now=NOW + timedelta(1))
    assert [h.score for h in past.hits] == [h.score for h in later.hits]  # decay from WHEN


def test_an_ambiguous_prefix_as_of_names_the_next_step(root: Path, story: dict[str, str]) -> None:
    with pytest.raises(UsageError, match="give more of the id"):
        opened(root).get("queue-", as_of="2026-03-25")


def test_an_unreachable_commit_is_refused_before_any_cache_is_built(
    gm: Any, root: Path, story: dict[str, str]
) -> None:
    git(root, "checkout", "-q", "-b", "side", story["a"])
    side = write(root, NOTE.with_(id="side-nt0006", title="Side"), at(90))
    git(root, "checkout", "-q", "main")
    before = snapshot(root)
    out = gm("list", "--as-of", side)
    assert out.code == 2 and "not in the history of HEAD" in out.err and out.out == ""
    assert snapshot(root) == before


def test_a_view_kept_in_memory_follows_a_rebuilt_cache(
    root: Path,
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    """Vector rows are numbered by build: a view made before a rebuild must not keep its rows."""
    store = opened(root, tiny_model_dir)
    write(root, QUEUE_PG, at(10))
    store.recall("queue", as_of="2026-01-15", mode="hybrid")  # built with one version
    write(root, PORT, at(20))
    write(root, NOTE, at(30))
    write(root, QUEUE_REDIS, at(40))
    expected = [ids(store, q, "2026-02-05", "hybrid") for q in QUERIES]  # caught up: new rows
    shutil.rmtree(store.cache_dir / "timeline")  # rebuilt on the next read: rows renumbered
    assert [ids(store, q, "2026-02-05", "hybrid") for q in QUERIES] == expected


def test_forget_then_re_create_and_a_type_change_in_one_commit(
    root: Path, story: dict[str, str]
) -> None:
    """A record forgotten and written again under its id is back from the second write; one
    whose type (so directory) changed is a delete and a write in one commit: the write wins,
    whatever the paths' order."""
    write(root, NOTE.with_(body="Rotate the production token too."), at(85))
    (root / PORT.path).unlink()
    fact = PORT.with_(body="Port 6432, decided.")
    write(root, fact.with_(type="decision"), at(90), "edit")
    write(root, make("later-rc0013", "Later", "Something else.", 95), at(95))  # 90: the past
    store = opened(root)
    assert "note-tmp0005" not in listed(store, at(84))
    assert "production" in store.get("note-tmp0005", as_of=at(86)).body
    assert [v.operation for v in store.history("note-tmp0005", as_of=at(86))] == [
        "record",
        "forget",
        "record",
    ]
    moved = store.get("port-db0004", as_of=at(90, 13))
    assert moved.type == "decision" and "decided" in moved.body
    assert store.get("port-db0004", as_of=at(89)).type == "fact"
    (edit,) = store.diff(at(89), at(91)).changed
    assert edit.record.id == "port-db0004" and edit.body_edited
    assert ("type", "fact", "decision") in [(f.field, f.old, f.new) for f in edit.fields]


def test_versions_the_head_index_holds_are_copied_not_embedded_again(
    root: Path,
    story: dict[str, str],
    tiny_model_dir: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    alone = answers(opened(root, tiny_model_dir), WHENS)  # no HEAD index yet: all embedded
    shutil.rmtree(opened(root).cache_dir)
    store = opened(root, tiny_model_dir)
    head = store.index()  # built with the model: it holds HEAD's versions' vectors
    embedded: list[str] = []
    real = catchup.embed_docs

    def counted(embedder: Any, vectors: Any, docs: Any) -> Any:
        embedded.extend(d.blob for d in docs)
        return real(embedder, vectors, docs)

    monkeypatch.setattr("gitmem.recall.timeline.embed_docs", counted)
    timeline = store.time_travel().timeline
    timeline.ensure_current()
    at_head = {e.blob for e in head.every()}
    versions = {b for (b,) in timeline._connection().execute("SELECT blob FROM versions")}
    assert at_head < versions  # the history has older versions too
    assert sorted(embedded) == sorted(versions - at_head)
    by_blob, _ = timeline.vector_rows()
    counts, rows, matrix = head.vectors_of({e.blob: e.id for e in head.every()})
    assert sorted(blob for blob, _ in counts) == sorted(at_head)
    first = 0
    for blob, count in counts:
        theirs = matrix[rows[first : first + count]]
        assert (timeline.matrix()[by_blob[blob]] == theirs).all(), blob
        first += count
    assert answers(store, WHENS) == alone


def test_a_later_process_reads_the_versions_an_earlier_view_made_not_the_blobs(
    root: Path, story: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = opened(root)  # builds the cache; its views make and keep their versions
    expected = [ids(first, "job queue", "2026-02-15"), ids(first, "redis kafka", "2026-03-15")]
    assert [found[:1] for found in expected] == [["queue-rd0002"], ["queue-kf0003"]]

    def read(*args: Any) -> Any:
        raise AssertionError("a view read a blob again")

    monkeypatch.setattr("gitmem.store.git.GitRepo.blob", read)
    later = opened(root)  # as another process: nothing made in memory yet
    assert ids(later, "job queue", "2026-02-15") == expected[0]
    assert ids(later, "redis kafka", "2026-03-15") == expected[1]
    assert ids(later, "database port", "2026-03-14")  # other dates, the same versions


def test_views_past_the_versions_kept_in_memory_are_answered_whole(
    root: Path, story: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Views as of commits index their own records (at a moment, the span index serves).
    whens = [story["b"], story["edit"], story["b"]]  # 4 records, then 4 (1 not seen yet)
    expected = [ids(opened(root), "job queue", when) for when in whens]
    monkeypatch.setattr(pastcontext, "_KEPT", 3)  # fewer versions than one view has records
    store = opened(root)
    assert [ids(store, "job queue", when) for when in whens] == expected
    assert len(store.time_travel()._versions._made) == 3  # the cap caps


def _made_rows(store: Store) -> dict[str, bytes]:
    db = sqlite3.connect(store.cache_dir / "timeline" / "timeline.sqlite")
    try:
        return dict(db.execute("SELECT blob, data FROM made").fetchall())
    finally:
        db.close()


def _on_cache(store: Store, *statements: str) -> None:
    db = sqlite3.connect(store.cache_dir / "timeline" / "timeline.sqlite")
    try:
        for statement in statements:
            db.execute(statement)
        db.commit()
    finally:
        db.close()


def test_damaged_or_misplaced_kept_versions_are_made_again_and_replaced(
    root: Path, story: dict[str, str]
) -> None:
    first = opened(root)  # as of a commit: the view makes its own index from kept versions
    expected = ids(first, "job queue", story["b"])
    kept = _made_rows(first)
    assert len(kept) >= 2
    one, other = sorted(kept)[:2]
    _on_cache(
        first,
        f"UPDATE made SET data = substr(data, 1, length(data) - 3) WHERE blob = '{one}'",
        f"UPDATE made SET data = (SELECT data FROM made WHERE blob = '{one}')"
        f" WHERE blob != '{one}'",  # the others hold another blob's version
    )  # and the first cut short: zlib fails
    assert ids(opened(root), "job queue", story["b"]) == expected
    assert _made_rows(first) == kept  # made again and replaced
    assert other in kept


def test_versions_kept_by_another_making_are_dropped(root: Path, story: dict[str, str]) -> None:
    first = opened(root)
    expected = ids(first, "job queue", story["b"])
    kept = _made_rows(first)
    _on_cache(
        first,
        "UPDATE meta SET value = 'an older analysis' WHERE key = 'made'",
        "INSERT INTO made VALUES ('stale', x'00')",
    )
    assert ids(opened(root), "job queue", story["b"]) == expected
    assert _made_rows(first) == kept  # the stale row gone, the view's made anew


def test_a_view_answers_when_its_versions_cannot_be_kept(root: Path, story: dict[str, str]) -> None:
    first = opened(root)
    first.time_travel().timeline.ensure_current()
    _on_cache(  # stands for a full disk: every write to the table fails
        first,
        "CREATE TRIGGER full BEFORE INSERT ON made BEGIN SELECT RAISE(FAIL, 'disk full'); END",
    )
    assert ids(first, "job queue", "2026-02-15")[:1] == ["queue-rd0002"]
    assert _made_rows(first) == {}


def test_a_catch_up_waits_for_a_view_keeping_its_versions(
    root: Path, story: dict[str, str]
) -> None:
    store = opened(root)
    ids(store, "queue", "2026-02-15")
    path = store.cache_dir / "timeline" / "timeline.sqlite"
    held = threading.Event()

    def keeping() -> None:  # a long write of `made` in another process, past SQLite's 5 s
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT OR IGNORE INTO made VALUES ('x', x'00')")
        held.set()
        time.sleep(7)
        db.execute("ROLLBACK")
        db.close()

    thread = threading.Thread(target=keeping)
    thread.start()
    held.wait()
    try:
        write(root, PORT.with_(body="The database listens on port 7000."), at(95), "edit")
        assert ids(opened(root), "port 7000", at(96))[:1] == ["port-db0004"]
    finally:
        thread.join()


@pytest.mark.parametrize("problem", ["held", "damaged"])
def test_a_held_or_damaged_head_index_means_embedding_not_failing(
    root: Path,
    story: dict[str, str],
    tiny_model_dir: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    problem: str,
) -> None:
    alone = answers(opened(root, tiny_model_dir), WHENS)  # no HEAD index: all embedded
    shutil.rmtree(opened(root).cache_dir)
    store = opened(root, tiny_model_dir)
    store.index()
    fd = os.open(store.cache_dir / "index.lock", os.O_RDWR | os.O_CREAT)
    if problem == "held":  # by a rebuild of the index in another process
        monkeypatch.setattr("gitmem.index.index._LOCK_TIMEOUT", 2.0)  # before: waited, raised
        fcntl.flock(fd, fcntl.LOCK_EX)
    else:

        def damaged(self: Any, ids: Any) -> Any:
            raise sqlite3.DatabaseError("database disk image is malformed")

        monkeypatch.setattr("gitmem.index.catalog.Catalog.blob_rows", damaged)
    try:
        assert answers(store, WHENS) == alone
    finally:
        os.close(fd)


def test_head_rows_of_a_few_versions_or_of_most_are_the_same_rows(tmp_path: Path) -> None:
    """Catalog.blob_rows looks a few records up by id and scans for many: the same rows."""
    catalog = Catalog(tmp_path / "catalog.sqlite", create=True)
    db = catalog._db
    records = [(f"id-{i:02d}", f"records/fact/id-{i:02d}.md", f"{i:040x}") for i in range(20)]
    db.executemany(
        "INSERT INTO records (id, path, blob, type, title, abstract, tags, agent, scope, status,"
        " created, updated, weight) VALUES (?, ?, ?, 'fact', 't', 'a', '', '', 'shared',"
        " 'active', 0, 0, 1.0)",
        records,
    )
    chunks = [(row, f"id-{(row * 7) % 20:02d}") for row in range(40)]  # rows not in id order
    db.executemany("INSERT INTO chunks (row, id) VALUES (?, ?)", sorted(chunks, key=lambda c: c[1]))
    every = {rid: blob for rid, _, blob in records}
    expected = {rid: sorted(r for r, i in chunks if i == rid) for rid in every}
    for ids in (["id-03"], ["id-03", "id-11", "id-19"], list(every)):  # by id, by id, a scan
        found: dict[str, list[int]] = {}
        for blob, row in catalog.blob_rows(ids):
            found.setdefault(blob, []).append(row)
        assert {every[i]: expected[i] for i in ids}.items() <= found.items()
        assert all(rows == sorted(rows) for rows in found.values())
