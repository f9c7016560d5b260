"""Coordination between agents through the CLI, as agents use it: messages (send, inbox,
reply, ack), tasks and their lifecycle, the session log, presence; and bad input, which is
refused with a clear message, its exit code, and the store unchanged. Real stores in
temporary directories; the exchange between two clones is tests/test_coord_sync.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import assert_clean, git, snapshot
from hookkit import make_project

TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"


@pytest.fixture
def who(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Become an agent on a device: who("alice")."""

    def become(agent: str, device: str = "laptop") -> None:
        monkeypatch.setenv("GITMEM_AGENT", agent)
        monkeypatch.setenv("GITMEM_DEVICE", device)

    return become


def out_json(result) -> dict:  # type: ignore[no-untyped-def,type-arg]
    assert result.code == 0, result.err
    return json.loads(result.out)  # type: ignore[no-any-return]


def commits(path: Path) -> int:
    return int(git(path, "rev-list", "--count", "HEAD"))


# --- messages ---------------------------------------------------------------------------------


def test_a_message_goes_to_its_recipient_who_acks_it_and_the_sender_sees_the_ack(  # type: ignore[no-untyped-def]
    gm, who, store_path: Path
) -> None:
    who("alice")
    before = commits(store_path)
    sent = out_json(gm("send", "bob", "request", "Please review the webhook PR", "--json"))
    assert commits(store_path) == before + 1
    assert sent["from"] == "alice" and sent["to"] == "bob" and sent["type"] == "request"
    assert sent["priority"] == "normal" and sent["thread"] == sent["id"] and sent["commit"]
    assert (
        git(store_path, "log", "-1", "--format=%s")
        == "record(message): Please review the webhook PR\n"
    )

    who("carol")
    assert out_json(gm("inbox", "--json"))["messages"] == []  # not for carol
    who("bob")
    first = gm("inbox", "--unread")
    assert first.code == 0 and first.out.startswith(f"* {sent['id']}")
    assert "request from alice to bob: Please review the webhook PR" in first.out
    assert out_json(gm("inbox", "--unread", "--json"))["messages"] == []  # shown: read here
    assert [m["read"] for m in out_json(gm("inbox", "--json"))["messages"]] == [True]
    assert commits(store_path) == before + 1  # reading commits nothing

    acked = out_json(gm("ack", sent["id"][:12], "--json"))
    assert acked["acked_by"] == ["bob"] and acked["commit"]
    assert commits(store_path) == before + 2
    assert git(store_path, "log", "-1", "--format=%(trailers:key=Gitmem-Operation)").strip() == (
        "Gitmem-Operation: ack"
    )
    again = gm("ack", sent["id"])
    assert again.code == 0 and "already acknowledged by bob; nothing written" in again.out
    assert commits(store_path) == before + 2

    who("alice")
    mine = out_json(gm("inbox", "--sent", "--json"))["messages"]
    assert [(m["id"], m["acked_by"]) for m in mine] == [(sent["id"], ["bob"])]
    assert_clean(store_path)


def test_a_reply_answers_the_sender_in_the_same_thread(gm, who, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    who("alice")
    first = out_json(gm("send", "bob", "question", "Which queue do webhooks use?", "--json"))
    who("bob")
    answer = out_json(gm("reply", first["id"], "The retry queue, since March.", "--json"))
    assert answer["to"] == "alice" and answer["type"] == "reply"
    assert answer["thread"] == first["id"] and answer["reply_to"] == first["id"]
    assert answer["subject"] == "Re: Which queue do webhooks use?"
    who("alice")
    again = out_json(gm("reply", answer["id"], "Thanks!", "--json"))
    assert again["to"] == "bob" and again["thread"] == first["id"]
    assert again["subject"] == "Re: Which queue do webhooks use?"  # no "Re: Re:"
    threaded = out_json(
        gm("send", "bob", "info", "One more thing", "--thread", again["id"], "--json")
    )
    assert threaded["thread"] == first["id"]


def test_a_broadcast_reaches_everyone_but_its_sender(gm, who, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    who("alice")
    sent = out_json(gm("send", "*", "alert", "Deploys are frozen until Monday", "--json"))
    assert out_json(gm("inbox", "--json"))["messages"] == []
    for agent in ("bob", "carol"):
        who(agent)
        assert [m["id"] for m in out_json(gm("inbox", "--json"))["messages"]] == [sent["id"]]
        assert out_json(gm("ack", sent["id"], "--json"))["acked_by"][-1] == agent
    who("alice")
    assert out_json(gm("inbox", "--sent", "--json"))["messages"][0]["acked_by"] == ["bob", "carol"]


def test_an_unknown_recipient_is_sent_with_a_warning(gm, who, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    who("alice")
    result = gm("send", "bobb", "info", "Typo in the name?")
    assert result.code == 0 and 'no agent named "bobb" is known here yet' in result.err
    gm("send", "bob", "info", "hello")
    who("bob")
    gm("heartbeat")
    who("alice")
    known = gm("send", "bob", "info", "hello again")
    assert known.code == 0 and known.err == ""


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("send", "bob", "info", "  "), 2, "a message needs a body"),
        (("send", "bob", "gossip", "hi"), 2, 'unknown message type "gossip"'),
        (("send", "bob", "info", "hi", "--priority", "asap"), 2, 'unknown priority "asap"'),
        (("send", "bob,carol", "info", "hi"), 2, "names no recipient"),
        (("send", " ", "info", "hi"), 2, "names no recipient"),
        (
            ("send", "bob", "info", "hi", "--thread", "nope-123456"),
            1,
            'no message with id "nope-123456"',
        ),
        (("send", "bob", "info", f"token {TOKEN}"), 1, "possible secret"),
        (
            ("reply", "nope-123456", "hi"),
            1,
            'no message with id "nope-123456" — list them with "gitmem inbox"',
        ),
        (("ack", "nope-123456"), 1, 'no message with id "nope-123456"'),
    ],
)
def test_bad_message_input_is_refused_and_writes_nothing(  # type: ignore[no-untyped-def]
    gm, who, store_path: Path, args: tuple[str, ...], code: int, says: str
) -> None:
    who("alice")
    before = snapshot(store_path)
    result = gm(*args)
    assert result.code == code and says in result.err, result.err
    assert snapshot(store_path) == before


def test_ack_refuses_a_message_for_someone_else_and_a_record_that_is_no_message(  # type: ignore[no-untyped-def]
    gm, who, store_path: Path
) -> None:
    who("alice")
    sent = out_json(gm("send", "bob", "info", "For bob only", "--json"))
    fact = gm("record", "fact", "Webhooks retry five times", "--title", "Webhook retries")
    assert fact.code == 0
    fact_id = out_json(gm("list", "--type", "fact", "--json"))[0]["id"]
    who("carol")
    before = snapshot(store_path)
    wrong = gm("ack", sent["id"])
    assert wrong.code == 1 and f"{sent['id']} is for bob, not for you (carol)" in wrong.err
    not_message = gm("reply", fact_id, "hi")
    assert not_message.code == 1 and "is a fact record, not a message" in not_message.err
    assert snapshot(store_path) == before


# --- tasks ------------------------------------------------------------------------------------


def test_a_task_lives_through_its_lifecycle_one_commit_per_transition(  # type: ignore[no-untyped-def]
    gm, who, store_path: Path
) -> None:
    who("alice")
    before = commits(store_path)
    task = out_json(gm("task", "start", "Migrate webhooks to v2", "--project", "pay", "--json"))
    assert task["state"] == "active" and task["owner"] == "alice" and task["project"] == "pay"
    tid = task["id"]
    assert out_json(gm("task", "current", "--json"))["task"]["id"] == tid
    steps = [
        ("update", "half the handlers moved", "active"),
        ("suspend", "waiting on infra", "suspended"),
        ("resume", "", "active"),
        ("done", "all handlers moved", "done"),
    ]
    for verb, note, state in steps:
        args = ["task", verb, tid] + ([note] if note else []) + ["--json"]
        changed = out_json(gm(*args))
        assert changed["state"] == state and changed["note"] == note and changed["commit"]
    assert commits(store_path) == before + 1 + len(steps)
    history = out_json(gm("history", tid, "--json"))
    assert [v["operation"] for v in history] == [
        "record",
        "task-update",
        "task-suspend",
        "task-resume",
        "task-done",
    ]
    assert [v["record"]["state"] for v in history] == [
        "active",
        "active",
        "suspended",
        "active",
        "done",
    ]
    body = history[-1]["record"]["body"]
    assert "## Log" in body and "done by alice on laptop: all handlers moved" in body
    assert out_json(gm("task", "current", "--json"))["task"] is None
    assert out_json(gm("task", "list", "--json"))["tasks"] == []
    assert [t["id"] for t in out_json(gm("task", "list", "--all", "--json"))["tasks"]] == [tid]
    assert [
        t["id"] for t in out_json(gm("task", "list", "--state", "done", "--json"))["tasks"]
    ] == [tid]
    assert_clean(store_path)


def test_resuming_someone_elses_task_makes_it_yours(gm, who, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    who("alice")
    tid = out_json(gm("task", "start", "Rotate the signing keys", "--json"))["id"]
    out_json(gm("task", "suspend", tid, "end of my day", "--json"))
    who("bob", "desktop")
    resumed = out_json(gm("task", "resume", tid, "picking it up", "--json"))
    assert resumed["owner"] == "bob" and resumed["device"] == "desktop"
    assert out_json(gm("task", "current", "--json"))["task"]["id"] == tid
    assert [t["id"] for t in out_json(gm("task", "list", "--owner", "bob", "--json"))["tasks"]] == [
        tid
    ]


@pytest.mark.parametrize(
    ("setup", "args", "code", "says"),
    [
        ((), ("task", "suspend", "{id}", "again"), 0, ""),
        (
            ("suspend",),
            ("task", "suspend", "{id}"),
            1,
            "is suspended: cannot suspend it — it allows update, resume, done, fail",
        ),
        ((), ("task", "resume", "{id}"), 1, "is active: cannot resume it"),
        (
            ("done",),
            ("task", "fail", "{id}", "oops"),
            1,
            'is done: cannot fail it — it is finished; start a new task with "gitmem task start"',
        ),
        (("fail",), ("task", "update", "{id}", "more"), 1, "is failed: cannot update it"),
        ((), ("task", "update", "{id}"), 2, "task update needs a note"),
        ((), ("task", "update", "{id}", f"key {TOKEN}"), 1, "possible secret"),
        ((), ("task", "done", "nope-123456"), 1, 'no task with id "nope-123456"'),
        ((), ("task", "start", "  "), 2, "a task needs a title"),
        ((), ("task", "list", "--state", "stuck"), 2, 'unknown task state "stuck"'),
    ],
)
def test_a_transition_the_lifecycle_does_not_allow_is_refused_and_writes_nothing(  # type: ignore[no-untyped-def]
    gm, who, store_path: Path, setup: tuple[str, ...], args: tuple[str, ...], code: int, says: str
) -> None:
    who("alice")
    tid = out_json(gm("task", "start", "Clean the queue", "--json"))["id"]
    for verb in setup:
        out_json(gm("task", verb, tid, "--json"))
    before = snapshot(store_path)
    result = gm(*(a.format(id=tid) for a in args))
    assert result.code == code and says in result.err, result.err
    if code:
        assert snapshot(store_path) == before
    else:
        assert snapshot(store_path) != before  # the control: an allowed one writes


# --- the session log, presence ------------------------------------------------------------------


def test_log_entries_and_hook_sessions_are_listed_by_sessions(gm, who, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    from gitmem.agents.session import SessionState, write_session_record
    from gitmem.store.store import Store

    write_session_record(
        Store.open(store_path),
        SessionState("s-1", host="claude", project="pay", started="2026-12-01T09:00:00Z"),
        now=datetime.now(UTC) - timedelta(hours=1),
    )
    who("alice")
    logged = out_json(
        gm("log", "fixed", "Fixed the retry loop", "--files", "a.py", "--files", "b.py", "--json")
    )
    assert logged["kind"] == "log" and logged["action"] == "fixed" and logged["device"] == "laptop"
    assert logged["commit"]
    body = out_json(gm("read", logged["id"], "--json"))["body"]
    assert "- a.py\n- b.py" in body
    listed = out_json(gm("sessions", "--json"))["sessions"]
    assert [(s["kind"], s["agent"]) for s in listed] == [("log", "alice"), ("session", "claude")]
    assert [
        s["id"] for s in out_json(gm("sessions", "--agent", "claude", "--json"))["sessions"]
    ] == [listed[1]["id"]]
    bad = gm("log", "Did Stuff", "x")
    assert bad.code == 2 and '"Did Stuff" is not an action' in bad.err
    assert gm("sessions", "--last", "soon").code == 2


def test_heartbeat_commits_nothing_and_agents_lists_who_was_active(
    gm, who, store_path: Path
) -> None:  # type: ignore[no-untyped-def]
    before = snapshot(store_path)
    who("alice")
    beat = out_json(gm("heartbeat", "--project", "pay", "--note", "reviewing", "--json"))
    assert beat["agent"] == "alice" and beat["device"] == "laptop" and beat["active"]
    who("bob")
    gm("heartbeat")
    # No commit, nothing git sees: only the cache (.gitmem/, excluded from git) changed.
    assert snapshot(store_path)[:2] == before[:2]
    assert (store_path / ".gitmem" / "coord" / "presence.json").is_file()
    listed = out_json(gm("agents", "--json"))["agents"]
    assert {(a["agent"], a["device"], a["active"]) for a in listed} == {
        ("alice", "laptop", True),
        ("bob", "laptop", True),
    }
    assert [a["note"] for a in out_json(gm("agents", "--agent", "alice", "--json"))["agents"]] == [
        "reviewing"
    ]


# --- graph handoff ------------------------------------------------------------------------------


def _process(*args: str) -> subprocess.CompletedProcess[str]:
    """`gitmem ARGS` as its own process: the quick path where it answers (cli.quickhandoff)."""
    return subprocess.run(
        [sys.executable, "-m", "gitmem", *args], capture_output=True, text=True, env=os.environ
    )


def test_handoff_gathers_what_a_new_session_needs_the_same_on_both_paths(  # type: ignore[no-untyped-def]
    gm, who, store_path: Path, tmp_path: Path
) -> None:
    who("alice")
    project = make_project(tmp_path / "work")
    (project / "docs").mkdir()
    (project / "docs" / "deploy.md").write_text(
        "---\ntype: task\nstatus: blocked\nblocked_by: [certs]\n---\n# Deploy v2\n"
    )
    (project / "docs" / "certs.md").write_text("---\ntype: task\nstatus: todo\n---\n# Certs\n")
    indexed = out_json(gm("entity", "index-all", "--project-dir", str(project), "--json"))
    assert indexed["new"] == 2, indexed
    out_json(gm("send", "bob", "handoff", "The webhook migration is yours now", "--json"))
    out_json(gm("send", "bob", "info", "Old news", "--json"))
    task = out_json(gm("task", "start", "Migrate webhooks to v2", "--json"))
    done = out_json(gm("task", "start", "Rotate keys", "--json"))
    out_json(gm("task", "done", done["id"], "rotated", "--json"))
    out_json(gm("log", "fixed", "Fixed the retry loop", "--json"))
    gm("record", "decision", "Webhooks move to the v2 queue.", "--title", "Webhooks on v2")
    gm("heartbeat")
    who("bob")
    messages = out_json(gm("inbox", "--json"))["messages"]  # sent in one second: any order
    (seen,) = [m for m in messages if m["subject"] == "Old news"]
    gm("ack", seen["id"])
    # The inbox marked both shown on this device; say bob saw only the one he acknowledged.
    (store_path / ".gitmem" / "coord" / "read.json").write_text(json.dumps({"bob": [seen["id"]]}))

    full = out_json(gm("graph", "handoff", "--hours", "2", "--json"))
    quick = _process("graph", "handoff", "--json", "--hours", "2")
    assert quick.returncode == 0, quick.stderr
    assert {k: v for k, v in json.loads(quick.stdout).items() if k not in ("since", "until")} == {
        k: v for k, v in full.items() if k not in ("since", "until")
    }
    assert full["agent"] == "bob" and full["device"] == "laptop" and full["hours"] == 2.0
    # The work graph's part (gitmem.graph.handoff): both entities, the one blocked and by what.
    assert sorted(e["title"] for e in full["entities_updated"]) == ["Certs", "Deploy v2"]
    (blocked,) = full["blockers"]
    assert blocked["title"] == "Deploy v2" and [c["title"] for c in blocked["chain"]] == ["Certs"]
    assert [m["subject"] for m in full["messages"]] == ["The webhook migration is yours now"]
    assert [t["id"] for t in full["tasks"]] == [task["id"]]  # open ones only
    assert [d["title"] for d in full["decisions"]] == ["Webhooks on v2"]
    assert [s["action"] for s in full["sessions"]] == ["fixed"]
    assert [a["agent"] for a in full["agents"]] == ["alice"]

    text = gm("graph", "handoff", "--hours", "2")
    quick_text = _process("graph", "handoff", "--hours", "2")
    assert text.code == quick_text.returncode == 0
    assert text.out.split("\n", 1)[1] == quick_text.stdout.split("\n", 1)[1]
    assert text.out.startswith("# Handoff for bob on laptop (since ")
    assert (
        "## Unread messages\n\n- normal handoff from alice: The webhook migration is yours now"
        in text.out
    )
    assert "## Tasks in progress\n\n- [active] Migrate webhooks to v2 (alice, " in text.out
    assert f"## Active blockers\n\n- Deploy v2 ({blocked['id']}) [blocked] blocked" in text.out
    assert " by Certs\n" in text.out


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("graph", "handoff", "--hours", "0"), 2, "hours must be more than 0"),
        (("graph", "handoff", "--hours", "soon"), 2, "'soon' is not a valid float"),
        (
            ("graph", "handoff", "--store", "/nowhere/at/all"),
            1,
            "no gitmem store at /nowhere/at/all",
        ),
        (("graph", "nothing"), 2, "No such command 'nothing'"),
    ],
)
def test_handoff_refusals_are_the_same_on_both_paths(  # type: ignore[no-untyped-def]
    gm, store_path: Path, args: tuple[str, ...], code: int, says: str
) -> None:
    full = gm(*args)
    quick = _process(*args)
    assert full.code == quick.returncode == code
    assert says in full.err and says in quick.stderr


def test_a_session_start_hook_is_a_heartbeat_and_commits_nothing(  # type: ignore[no-untyped-def]
    gm, store_path: Path, tmp_path: Path
) -> None:
    from hookkit import make_project, payload, run_hook

    from gitmem.coord.presence import device_name

    before = snapshot(store_path)[:2]
    project = make_project(tmp_path)
    run = run_hook("session-start", payload("claude-code/session_start", project), store_path)
    assert run.code == 0
    assert snapshot(store_path)[:2] == before
    (seen,) = out_json(gm("agents", "--json"))["agents"]
    assert (seen["agent"], seen["device"], seen["active"]) == ("claude-code", device_name({}), True)
    assert seen["project"] == "github.com/acme/widget"


def test_a_store_made_before_these_types_gets_them_on_first_use(gm, who, store_path: Path) -> None:  # type: ignore[no-untyped-def]
    git(store_path, "rm", "-q", "schemas/message.toml", "schemas/task.toml")
    git(store_path, "commit", "-q", "-m", "an old store")
    who("alice")
    head = git(store_path, "rev-parse", "HEAD").strip()
    for args in (("send", "bob", "info", "hi"), ("task", "start", "Something")):
        result = gm(*args)
        assert result.code == 0, result.err
    subjects = git(store_path, "log", "--format=%s", f"{head}..HEAD").splitlines()[::-1]
    assert subjects[0] == "schema: add message" and subjects[2] == "schema: add task"
    assert len(subjects) == 4  # each schema once, then the write
    assert (store_path / "schemas" / "task.toml").read_text() == (
        Path(__file__).resolve().parents[1] / "store-template" / "schemas" / "task.toml"
    ).read_text()
    assert gm("send", "bob", "info", "again").code == 0
    assert len(git(store_path, "log", "--format=%s", f"{head}..HEAD").splitlines()) == 5
    assert gm("validate").code == 0
    assert_clean(store_path)


def test_session_start_adds_the_handoff_when_asked_within_its_budget(  # type: ignore[no-untyped-def]
    gm, who, store_path: Path, tmp_path: Path
) -> None:
    from hookkit import make_project, payload, run_hook

    who("alice")
    out_json(gm("send", "claude-code", "handoff", "Take over the webhook migration", "--json"))
    out_json(gm("task", "start", "Migrate webhooks to v2", "--json"))
    project = make_project(tmp_path)
    start = payload("claude-code/session_start", project)
    plain = run_hook("session-start", start, store_path).context()
    assert "Handoff" not in plain  # off unless asked for
    config = store_path / "config.toml"
    config.write_text(config.read_text() + "\n[hooks]\ncontext_bytes = 1200\nhandoff_bytes = 600\n")
    git(store_path, "commit", "-qam", "ask for the handoff")
    block = run_hook("session-start", start, store_path).context()
    unread = "## Unread messages\n\n- normal handoff from alice: Take over the webhook migration"
    assert unread in block
    assert "## Tasks in progress\n\n- [active] Migrate webhooks to v2" in block
    assert "## Recent sessions" not in block  # the block has its own last session
    assert len(block.encode("utf-8")) <= 1200


@pytest.mark.parametrize(
    "name", ["Test User", 'Bob "the builder"', "back\\slash", "José", "tab\tname"]
)
def test_a_recipient_with_any_name_gets_the_message(gm, who, store_path: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    who("alice")
    sent = out_json(gm("send", name, "info", "Hello there", "--json"))
    who(name)
    assert [m["id"] for m in out_json(gm("inbox", "--json"))["messages"]] == [sent["id"]]
    assert out_json(gm("ack", sent["id"], "--json"))["acked_by"] == [name]


def test_the_month_folders_a_window_reaches_include_the_month_before() -> None:
    from gitmem.coord.records import months_since

    now = datetime(2027, 1, 3, tzinfo=UTC)
    assert months_since(now - timedelta(days=2), now) == ["2026-12", "2027-01"]
    assert months_since(datetime(2026, 11, 15, tzinfo=UTC), now) == [
        "2026-10",
        "2026-11",
        "2026-12",
        "2027-01",
    ]


def test_the_byte_tests_never_drop_what_the_parse_would_keep() -> None:
    from gitmem.coord.records import field_has, updated_since

    since = updated_since(datetime(2026, 12, 1, tzinfo=UTC))
    assert since(b"---\nupdated: 2026-12-01T00:00:00Z\n") is True
    assert since(b"---\nupdated: 2026-11-30T23:59:59Z\n") is False
    assert since(b"---\nupdated: 2026-11-30 23:59\n") is True  # not gitmem's spelling: parse
    assert since(b"---\ntitle: no updated line\n") is True
    to_bob = field_has("to", "bob", written=(b'"*"',))
    assert to_bob(b'\nto: "*"\n') and to_bob(b"\nto: bob\n") and to_bob(b"\ntitle: x\n")
    assert not to_bob(b"\nto: carol\nbody mentions bob\n")
    assert field_has("to", 'say "hi"')(b"\nto: carol\n")  # escaped in YAML: no byte test
