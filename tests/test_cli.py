"""The CLI as a user runs it: exact output where it matters, JSON schemas, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_clean, git, set_model, snapshot


def test_init_record_list_read_history(gm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "mem"
    r = gm("init", str(path))
    assert r.code == 0 and r.out == f"created a gitmem store at {path}\n"
    assert gm("init", str(path)).out == f"{path} is already a gitmem store; nothing changed\n"
    os.environ["GITMEM_STORE"] = str(path)
    r = gm(
        "record",
        "decision",
        "Postgres is durable.",
        "--title",
        "Use Postgres",
        "--tags",
        "db,sessions",
        "--tags",
        "infra",
        "--agent",
        "codex",
        "--json",
    )
    assert r.code == 0, r.err
    written = json.loads(r.out)
    assert written["operation"] == "record" and len(written["commit"]) == 40
    rid = written["ids"][0]
    assert written["paths"] == [f"records/decision/{rid_month(path, rid)}/{rid}.md"]
    listed = json.loads(gm("list", "--json").out)
    assert [x["id"] for x in listed] == [rid]
    assert listed[0]["tags"] == ["db", "sessions", "infra"] and listed[0]["agent"] == "codex"
    assert "body" not in listed[0]
    human = gm("list").out
    assert human.startswith(f"{rid}  decision  ") and human.rstrip().endswith("Use Postgres")
    assert gm("read", rid[:12], "--level", "abstract").out.splitlines()[1] == (
        "  Postgres is durable."
    )
    full = gm("read", rid).out
    assert full == (path / written["paths"][0]).read_text()
    outline = gm("read", rid, "--level", "outline").out
    assert "tags: db, sessions, infra" in outline
    hist = json.loads(gm("history", rid, "--json").out)
    assert [h["operation"] for h in hist] == ["record"] and hist[0]["agent"] == "codex"
    assert_clean(path)


def rid_month(path: Path, rid: str) -> str:
    return next((path / "records").rglob(f"{rid}.md")).parent.name


def test_body_from_stdin_and_file(gm, store_path: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    r = gm("record", "fact", "-", "--title", "From stdin", "--json", input="café ☕\n".encode())
    assert r.code == 0, r.err
    rid = json.loads(r.out)["ids"][0]
    assert gm("read", rid, "--json").out and json.loads(gm("read", rid, "--json").out)["body"] == (
        "café ☕\n"
    )
    body = tmp_path / "b.md"
    body.write_text("# Heading\ntext\n")
    r = gm("record", "fact", "--body-file", str(body), "--title", "From file")
    assert r.code == 0, r.err


def test_supersede_forget_amend(gm, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    old = json.loads(gm("record", "decision", "Redis", "--title", "Redis sessions", "--json").out)
    new = gm("supersede", old["ids"][0], "Postgres", "--title", "Postgres sessions", "--json")
    assert new.code == 0, new.err
    new_id = json.loads(new.out)["ids"][0]
    assert [x["id"] for x in json.loads(gm("list", "--json").out)] == [new_id]
    everything = json.loads(gm("list", "--status", "all", "--json").out)
    assert {x["status"] for x in everything} == {"active", "superseded"}
    r = gm("amend", new_id, "--field", "tags=a,b", "--field", "rationale=cheaper")
    assert r.code == 0 and r.out.startswith(f"amended decision {new_id} in commit ")
    assert gm("forget", new_id).code == 2  # --reason is required
    r = gm("forget", new_id, "--reason", "obsolete")
    assert r.code == 0 and r.out.startswith(f"forgot decision {new_id}")
    assert "obsolete" in git(store_path, "log", "-1", "--format=%B")
    assert gm("read", new_id).code == 1
    assert_clean(store_path)


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["record", "nosuchtype", "x", "--title", "t"], 1, "unknown record type"),
        (["record", "fact", "x"], 2, "title"),
        (["record", "fact", "  ", "--title", "t"], 1, "empty"),
        (["record", "fact", "x", "--title", "t", "--field", "title=x"], 2, "own option"),
        (["record", "fact", "x", "--title", "t", "--bogus"], 2, "No such option"),
        (["record", "fact", "x", "--title", "t", "--scope", "galaxy"], 1, "scope"),
        (["record", "fact", "x", "--title", "t", "--link", "../../etc"], 2, "not a record id"),
        (["record", "fact", "x", "--title", "t", "--field", "novalue"], 2, "K=V"),
        (["record", "fact", "x", "--title", "t", "--redact", "--allow-secret"], 2, "choose one"),
        (["read", "a/b"], 2, "not a record id"),
        (["read", "nothing-here"], 1, "no record"),
        (["read", "x", "--level", "everything"], 2, "--level"),
        (["list", "--status", "gone"], 2, "--status"),
        (["export", "--format", "csv"], 2, "jsonl"),
        (["import", "/no/such/file.jsonl"], 2, "no such file"),
    ],
)
def test_bad_input_exits_with_code_and_changes_nothing(  # type: ignore[no-untyped-def]
    gm, store_path: Path, args: list[str], code: int, needle: str
) -> None:
    before = snapshot(store_path)
    r = gm(*args)
    assert r.code == code, (r.out, r.err)
    assert needle.lower() in (r.err + r.out).lower()
    assert snapshot(store_path) == before


def test_non_utf8_body_is_refused(gm, store_path: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    before = snapshot(store_path)
    r = gm("record", "fact", "-", "--title", "t", input=b"\xff\xfe bad")
    assert r.code == 1 and "UTF-8" in r.err
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"caf\xe9")
    assert gm("record", "fact", "--body-file", str(bad), "--title", "t").code == 1
    assert snapshot(store_path) == before


def test_missing_store_says_how_to_create(gm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    r = gm("list", "--store", str(tmp_path / "none"))
    assert r.code == 1 and "gitmem init" in r.err


def test_store_resolution_order(gm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "xdg"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    assert gm("init").code == 0
    assert (data / "gitmem" / "store" / "config.toml").exists()
    monkeypatch.setenv("GITMEM_STORE", str(tmp_path / "env"))
    assert gm("init").code == 0 and (tmp_path / "env" / "config.toml").exists()
    assert gm("init", "--store", str(tmp_path / "flag")).code == 0
    assert (tmp_path / "flag" / "config.toml").exists()


def test_secret_is_refused_redacted_or_allowed(gm, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
    body = f"The deploy token is {token} for CI.\n"
    before = snapshot(store_path)
    r = gm("record", "fact", body, "--title", "CI token")
    assert r.code == 1 and "GitHub" in r.err and "line" in r.err and token not in r.err
    assert snapshot(store_path) == before
    r = gm("record", "fact", body, "--title", "CI token", "--redact", "--json")
    assert r.code == 0, r.err
    path = store_path / json.loads(r.out)["paths"][0]
    assert token not in path.read_text() and "[REDACTED:" in path.read_text()
    assert token not in git(store_path, "log", "-p", "--all")
    r = gm("record", "fact", body, "--title", "CI token", "--allow-secret")
    assert r.code == 0


def test_export_import_cli(gm, store_path: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for i in range(3):
        gm("record", "fact", f"body {i}", "--title", f"Fact {i}")
    out = tmp_path / "dump.jsonl"
    assert gm("export", "-o", str(out)).code == 0
    assert len(out.read_text().splitlines()) == 3
    fresh = tmp_path / "fresh"
    gm("init", str(fresh))
    r = gm("import", str(out), "--store", str(fresh))
    assert r.code == 0 and r.out.startswith("imported 3 records in commit ")
    assert gm("export", "--store", str(fresh)).out == out.read_text()
    assert gm("import", str(out), "--store", str(fresh)).out == "import: nothing changed\n"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(out.read_text() + "{not json\n")
    r = gm("import", str(bad), "--store", str(fresh))
    assert r.code == 1 and "line 4" in r.err


def test_hand_edit_status_commit_validate(gm, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    rid = json.loads(gm("record", "fact", "one", "--title", "One", "--json").out)["ids"][0]
    path = next(store_path.rglob(f"{rid}.md"))
    path.write_text(path.read_text() + ", edited\n")
    status = json.loads(gm("status", "--json").out)
    assert status["pending"] == [{"path": str(path.relative_to(store_path)), "state": "modified"}]
    assert "gitmem commit" in gm("status").out
    assert gm("validate").code == 0
    r = gm("commit", "-m", "fix wording")
    assert r.code == 0, r.err
    assert git(store_path, "log", "-1", "--format=%s").strip() == "fix wording"
    assert_clean(store_path)
    path.write_text(path.read_text().replace("type: fact", "type: nosuch"))
    r = gm("validate", str(path))
    assert r.code == 1 and "nosuch" in r.out
    assert gm("commit").code == 1


def test_guard_command_for_pre_commit(gm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    clean = tmp_path / "ok.md"
    clean.write_text("nothing to see; commit 3f786850e387550fdab836ed7e6dc881de23001b\n")
    dirty = tmp_path / "bad.md"
    dirty.write_text(
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
        "-----END OPENSSH PRIVATE KEY-----\n"
    )
    assert gm("guard", str(clean)).code == 0
    r = gm("guard", str(clean), str(dirty))
    assert r.code == 1 and "bad.md" in r.err


def test_console_script_and_module_entry(store_path: Path) -> None:
    for cmd in ([sys.executable, "-m", "gitmem"], [str(Path(sys.executable).parent / "gitmem")]):
        done = subprocess.run([*cmd, "list", "--json"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == []
        done = subprocess.run([*cmd, "--version-nonsense"], capture_output=True, text=True)
        assert done.returncode == 2


def test_redact_a_secret_in_a_frontmatter_field(gm, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
    r = gm("record", "fact", "body", "--title", "T", "--source", token, "--redact", "--json")
    assert r.code == 0, r.err
    text = (store_path / json.loads(r.out)["paths"][0]).read_text()
    assert token not in text and 'source: "[REDACTED:github-token]"' in text


def test_status_says_why_the_model_is_not_in_use_and_how_to_fix_it(gm, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    set_model(store_path, "acme/not-downloaded")
    lines = gm("status").out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("model "))
    assert lines[at] == "model     acme/not-downloaded (not in use: semantic search is off)"
    assert lines[at + 1].startswith('          the embedding model "acme/not-downloaded" is')
    assert '"gitmem model fetch"' in lines[at + 1]


def test_a_superseded_hit_says_so(gm, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    old = json.loads(gm("record", "decision", "Jobs queue on Postgres.", "--title", "Job queue",
                        "--json").out)["ids"][0]  # fmt: skip
    new = json.loads(gm("supersede", old, "Jobs queue on Redis now.", "--title", "Job queue now",
                        "--json").out)["ids"][0]  # fmt: skip
    shown = gm("recall", "job queue", "--include-superseded").out.splitlines()
    line = {rid: text for text in shown for rid in (old, new) if f" {rid} " in text}
    assert "Job queue [superseded]  records/" in line[old]
    assert "[superseded]" not in line[new]
    data = json.loads(gm("recall", "job queue", "--include-superseded", "--json").out)
    assert {h["id"]: h["status"] for h in data["hits"]} == {old: "superseded", new: "active"}
    assert [h["id"] for h in json.loads(gm("recall", "job queue", "--json").out)["hits"]] == [new]
