"""The store through the Python API: one write, one commit, nothing lost, git stays clean."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_clean, git, snapshot

from gitmem.errors import GitmemError, NotFound, RecordInvalid, UsageError
from gitmem.store.store import Store


def commits(path: Path) -> int:
    return int(git(path, "rev-list", "--count", "HEAD"))


def test_init_lays_down_template_and_one_commit(tmp_path: Path) -> None:
    _, created = Store.init(tmp_path / "s")
    assert created
    root = tmp_path / "s"
    for name in ("config.toml", "README.md", ".gitignore", ".pre-commit-config.yaml"):
        assert (root / name).is_file()
    assert (root / "schemas" / "decision.toml").is_file()
    assert commits(root) == 1
    assert_clean(root)
    _, created_again = Store.init(root)
    assert not created_again
    assert commits(root) == 1


def test_init_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(GitmemError, match="not empty"):
        Store.init(tmp_path)
    assert not (tmp_path / ".git").exists()


def test_open_missing_store_says_how_to_create(tmp_path: Path) -> None:
    with pytest.raises(GitmemError, match="gitmem init"):
        Store.open(tmp_path / "nowhere")
    (tmp_path / "plain").mkdir()
    git(tmp_path / "plain", "init", "-q")
    with pytest.raises(GitmemError, match="not a gitmem store"):
        Store.open(tmp_path / "plain")


def test_record_is_one_commit_with_trailers(store: Store) -> None:
    before = commits(store.root)
    result = store.record(
        "decision",
        "Body.\n",
        title="Use Jina v5 for embeddings",
        agent="claude-code",
        tags=["ml", "ml", " embeddings "],
    )
    assert commits(store.root) == before + 1
    assert_clean(store.root)
    r = result.record
    assert r.tags == ("ml", "embeddings")
    assert r.abstract == "Body."
    assert (store.root / r.path).read_text() == (git(store.root, "show", f"HEAD:{r.path}"))
    message = git(store.root, "log", "-1", "--format=%B")
    assert message.splitlines()[0] == "record(decision): Use Jina v5 for embeddings"
    assert f"Gitmem-Record: {r.id}" in message
    assert "Gitmem-Operation: record" in message
    assert "Gitmem-Agent: claude-code" in message
    assert git(store.root, "log", "-1", "--format=%an").strip() == "claude-code"
    trailers = git(store.root, "log", "-1", "--format=%(trailers:key=Gitmem-Record,valueonly)")
    assert trailers.strip() == r.id


def test_get_by_unique_prefix_and_ambiguous_prefix(store: Store) -> None:
    a = store.record("fact", "x", title="Alpha one").record
    store.record("fact", "y", title="Alpha two")
    assert store.get(a.id[:-2]).id == a.id
    with pytest.raises(UsageError, match="ambiguous"):
        store.get("alpha")
    with pytest.raises(NotFound):
        store.get("zzz")
    with pytest.raises(UsageError, match="not a record id"):
        store.get("../etc/passwd")


def test_supersede_changes_both_in_one_commit(store: Store) -> None:
    old = store.record("decision", "Redis.", title="Use Redis for sessions").record
    before = commits(store.root)
    new = store.supersede(old.id, "Postgres.", title="Move sessions to Postgres").record
    assert commits(store.root) == before + 1
    assert new.supersedes == (old.id,)
    retired = store.get(old.id)
    assert retired.status == "superseded" and retired.superseded_by == new.id
    changed = git(store.root, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(changed) == sorted([new.path, old.path])
    with pytest.raises(GitmemError, match="already superseded"):
        store.supersede(old.id, "again", title="again")
    assert_clean(store.root)


def test_forget_removes_from_tree_keeps_history(store: Store) -> None:
    r = store.record("fact", "Secret-free fact.", title="A fact").record
    store.forget(r.id, reason="wrong", agent="alice")
    assert not (store.root / r.path).exists()
    with pytest.raises(NotFound):
        store.get(r.id)
    assert "Secret-free fact." in git(store.root, "show", f"HEAD~1:{r.path}")
    versions = store.history(r.id)
    assert [v.operation for v in versions] == ["record", "forget"]
    assert versions[-1].record is None
    with pytest.raises(UsageError, match="reason"):
        store.forget(store.record("fact", "b", title="B").record.id, reason=" ")
    assert_clean(store.root)


def test_amend_and_history(store: Store) -> None:
    r = store.record("fact", "b", title="Old title", fields={"confidence": "low"}).record
    store.amend(r.id, {"title": "New title", "tags": "a,b", "confidence": "high"}, agent="bob")
    got = store.get(r.id)
    assert got.title == "New title" and got.tags == ("a", "b") and got.extra["confidence"] == "high"
    versions = store.history(r.id)
    assert [v.operation for v in versions] == ["record", "amend"]
    assert set(versions[1].changed) >= {"title", "tags", "confidence"}
    assert versions[1].agent == "bob"
    unchanged = store.amend(r.id, {"title": "New title"})
    assert unchanged.commit is None
    with pytest.raises(UsageError):
        store.amend(r.id, {"id": "other"})
    with pytest.raises(RecordInvalid, match="confidence"):
        store.amend(r.id, {"confidence": "sure"})


def test_replace_text_is_an_edit(store: Store) -> None:
    r = store.record("fact", "body\n", title="T").record
    text = (store.root / r.path).read_text().replace("body\n", "better body\n")
    store.replace_text(r.id, text)
    assert store.get(r.id).body == "better body\n"
    with pytest.raises(RecordInvalid, match="cannot change"):
        store.replace_text(r.id, text.replace(r.id, r.id + "x"))


def test_refused_writes_change_nothing(store: Store) -> None:
    store.record("fact", "x", title="Existing")
    before = snapshot(store.root)
    bad_calls = [
        lambda: store.record("nosuchtype", "x", title="t"),
        lambda: store.record("fact", "x", title=""),
        lambda: store.record("fact", "   ", title="t"),
        lambda: store.record("fact", "x" * 70000, title="t"),
        lambda: store.record("fact", "---\nid: evil\n---\n", title="t"),
        lambda: store.record("fact", "x", title="t", scope="world"),
        lambda: store.record("fact", "x", title="t", links=["nobody-here"]),
        lambda: store.record("fact", "x", title="line\nbreak"),
        lambda: store.record("reference", "x", title="no url"),
        lambda: store.record("fact", "bad \x00 byte", title="t"),
    ]
    for call in bad_calls:
        with pytest.raises(GitmemError):
            call()
        assert snapshot(store.root) == before


def test_user_edits_are_shown_and_committed(store: Store) -> None:
    r = store.record("fact", "original\n", title="T").record
    path = store.root / r.path
    path.write_text(path.read_text().replace("original", "edited by hand"))
    assert [(p.path, p.state) for p in store.pending()] == [(r.path, "modified")]
    with pytest.raises(GitmemError, match="uncommitted"):
        store.amend(r.id, {"title": "x"})
    result = store.commit_pending(agent="alice")
    assert result.commit is not None
    assert store.get(r.id).body == "edited by hand\n"
    assert_clean(store.root)
    assert store.commit_pending().commit is None


def test_invalid_user_edit_is_refused(store: Store) -> None:
    r = store.record("fact", "original\n", title="T").record
    path = store.root / r.path
    path.write_text(path.read_text().replace("scope: shared", "scope: galaxy"))
    head = git(store.root, "rev-parse", "HEAD")
    with pytest.raises(RecordInvalid, match="scope"):
        store.commit_pending()
    assert git(store.root, "rev-parse", "HEAD") == head


def test_export_import_round_trip(store: Store, tmp_path: Path) -> None:
    a = store.record("decision", "A body", title="A", tags=["x"]).record
    store.record("fact", "B body", title="B", links=[a.id])
    store.supersede(a.id, "A2 body", title="A2")
    exported = list(store.export())
    fresh, _ = Store.init(tmp_path / "fresh")
    result = fresh.import_records(exported, source_name="dump.jsonl")
    assert result.commit is not None
    assert commits(fresh.root) == 2
    assert list(fresh.export()) == exported
    for item in exported:
        path = next(p for p in (fresh.root / "records").rglob(f"{item['id']}.md"))
        original = next((store.root / "records").rglob(f"{item['id']}.md"))
        assert path.read_bytes() == original.read_bytes()
    again = fresh.import_records(exported)
    assert again.commit is None
    assert commits(fresh.root) == 2
    assert_clean(fresh.root)


def test_import_validates_everything_first(store: Store) -> None:
    good = {
        "id": "good-aaaaaa",
        "type": "fact",
        "title": "G",
        "created": "2026-01-01T00:00:00Z",
        "body": "ok",
    }
    bad = {"id": "bad/../x", "type": "fact", "title": "B", "created": "2026-01-01", "body": "x"}
    before = snapshot(store.root)
    with pytest.raises(RecordInvalid, match="line 2"):
        store.import_records([good, bad])
    assert snapshot(store.root) == before


def test_links_to_a_forgotten_record_do_not_lock_the_linker(store: Store) -> None:
    a = store.record("decision", "A", title="A").record
    b = store.supersede(a.id, "B", title="B").record
    store.forget(a.id, reason="obsolete")
    store.amend(b.id, {"weight": "2"})
    assert store.get(b.id).weight == 2.0
    with pytest.raises(RecordInvalid, match="points at no record"):
        store.amend(b.id, {"links": "nobody-here-aaaaaa"})


def test_hand_committed_secret_in_frontmatter_comment_is_refused(store: Store) -> None:
    from gitmem.errors import SecretFound

    r = store.record("fact", "x", title="T").record
    path = store.root / r.path
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
    path.write_text(path.read_text().replace("type: fact", f"type: fact\n# token {token}"))
    with pytest.raises(SecretFound):
        store.commit_pending()
    assert token not in git(store.root, "log", "-p")


def test_default_agent_is_git_user_name(store: Store) -> None:
    r = store.record("fact", "x", title="Who").record
    assert r.agent == "Test User"
    assert "Gitmem-Agent: Test User" in git(store.root, "log", "-1", "--format=%B")


def test_unknown_field_is_refused_and_schema_extension_allows_it(store: Store) -> None:
    before = snapshot(store.root)
    with pytest.raises(RecordInvalid, match="favourite_colour"):
        store.record("fact", "x", title="T", fields={"favourite_colour": "blue"})
    assert snapshot(store.root) == before
    schema_file = store.root / "schemas" / "fact.toml"
    schema_file.write_text(
        schema_file.read_text() + '\n[fields.favourite_colour]\nkind = "text"\n'
        'description = "A colour."\n'
    )
    git(store.root, "commit", "-qam", "extend the fact schema")
    extended = Store.open(store.root)
    assert extended.record("fact", "x", title="T", fields={"favourite_colour": "blue"}).commit


def test_import_refuses_to_overwrite_uncommitted_edits(store: Store) -> None:
    r = store.record("fact", "original\n", title="T").record
    path = store.root / r.path
    path.write_text(path.read_text() + "hand edit\n")
    item = {**r.to_dict(), "body": "imported\n"}
    with pytest.raises(GitmemError, match="uncommitted"):
        store.import_records([item])
    assert path.read_text().endswith("hand edit\n")


def test_history_follows_a_record_whose_type_changed(store: Store) -> None:
    r = store.record("fact", "x\n", title="T").record
    store.amend(r.id, {"title": "T2"})
    text = (store.root / r.path).read_text().replace("type: fact", "type: lesson")
    store.replace_text(r.id, text)
    assert store.get(r.id).type == "lesson"
    assert [v.operation for v in store.history(r.id)] == ["record", "amend", "edit"]
