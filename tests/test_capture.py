"""Capture (issue 20): archived sessions become records through a fake distiller, one commit
per span, each record naming the transcript lines it came from; bad input changes nothing."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from capturekit import CLAUDE_SESSION, archive, configure, decision, fake_distiller, prompts
from conftest import Result, assert_clean, git

from gitmem.api import Store

LESSON = {
    "type": "lesson",
    "title": "Redis pub/sub drops jobs on restart",
    "abstract": "Pub/sub keeps nothing for absent subscribers; use a durable queue.",
    "body": "Redis pub/sub drops every message nobody is subscribed to, so jobs vanished "
    "whenever Redis restarted. The queue moved to Postgres with SKIP LOCKED.",
    "fields": {"trigger": "jobs lost after a Redis restart"},
}
PREFERENCE = {
    "type": "preference",
    "title": "Run migrations with --lock-timeout 5s",
    "body": "The DBA insists that migrations run with --lock-timeout 5s.",
}


def _json(result: Result) -> dict[str, object]:
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert isinstance(data, dict)
    return data


def _state(store: Path) -> tuple[str, str, str]:
    """HEAD, git status and the tracked files: what a refused capture must leave as it was
    (the cache under .gitmem/ is capture's own and changes)."""
    return (
        git(store, "rev-parse", "HEAD"),
        git(store, "status", "--porcelain"),
        git(store, "ls-files", "-s"),
    )


def _commits(store: Path) -> int:
    return int(git(store, "rev-list", "--count", "HEAD").strip())


def test_a_session_becomes_records_in_one_commit_with_provenance(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    script = fake_distiller(tmp_path, {"records": [LESSON, PREFERENCE]})
    configure(store_path, script)
    archive(tmp_path, store_path)
    before = _commits(store_path)
    report = _json(gm("distill", "--json"))
    (span,) = report["spans"]  # type: ignore[misc]
    assert span["problem"] is None and len(span["written"]) == 2
    assert span["source"] == f"transcript:{CLAUDE_SESSION}#1-7"
    assert _commits(store_path) == before + 1  # one commit for the span
    message = git(store_path, "log", "-1", "--format=%B")
    assert message.startswith(f"capture: 2 records from session {CLAUDE_SESSION[:12]}")
    assert "Gitmem-Operation: capture" in message and "Gitmem-Count: 2" in message
    assert f"Gitmem-Source: transcript:{CLAUDE_SESSION}#1-7" in message
    assert_clean(store_path)
    store = Store.open(store_path)
    lesson = store.get(span["written"][0])
    assert lesson.type == "lesson" and lesson.source == span["source"]
    assert lesson.extra["trigger"] == "jobs lost after a Redis restart"
    # What was sent: the instructions, the types, the transcript's messages by line.
    (sent,) = prompts(tmp_path)
    assert "Answer with JSON only" in sent and "- decision:" in sent
    assert "[2] user: The job queue keeps losing jobs" in sent
    assert "[tool Read]" in sent and "[result]" in sent
    assert "Look at the queue module first." not in sent  # thinking is not sent
    # trace: the messages of the span, as archived.
    traced = _json(gm("trace", lesson.id, "--json"))
    assert traced["lines"] == "1-7" and traced["problem"] is None
    lines = [m["line"] for m in traced["messages"]]  # type: ignore[union-attr]
    assert lines == [2, 3, 4, 5, 6, 7]
    text = gm("trace", lesson.id)
    assert text.code == 0 and "[6] user:\nThanks! Always run the migrations" in text.out


def test_distilling_again_adds_nothing_and_a_grown_transcript_goes_on_from_the_watermark(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    configure(store_path, fake_distiller(tmp_path, {"records": [LESSON]}))
    archive(tmp_path, store_path)
    assert gm("distill").code == 0
    head = _state(store_path)
    again = gm("distill")
    assert again.code == 0 and "nothing to distill" in again.out
    assert _state(store_path) == head and len(prompts(tmp_path)) == 1
    # --force starts from the beginning: the distiller answers the same, de-dup drops it.
    forced = _json(gm("distill", "--force", "--json"))
    assert forced["spans"][0]["duplicates"] == 1 and forced["spans"][0]["written"] == []  # type: ignore[index]
    assert _state(store_path) == head
    grown = json.dumps(
        {"type": "user", "message": {"role": "user", "content": "New: CI uses Python 3.12."}}
    )
    archive(tmp_path, store_path, extra=grown + "\n")
    configure(store_path, fake_distiller(tmp_path, {"records": [PREFERENCE]}, name="second"))
    report = _json(gm("distill", "--json"))
    assert report["spans"][0]["lines"] == "8-8"  # type: ignore[index]
    (sent,) = prompts(tmp_path, "second")
    assert "[8] user: New: CI uses Python 3.12." in sent and "[2] user" not in sent


def test_codex_transcripts_are_read(tmp_path: Path, store_path: Path, gm) -> None:  # type: ignore[no-untyped-def]
    configure(store_path, fake_distiller(tmp_path, {"records": []}))
    archive(tmp_path, store_path, "codex")
    report = _json(gm("distill", "--json"))
    assert report["spans"][0]["written"] == [] and report["spans"][0]["problem"] is None  # type: ignore[index]
    (sent,) = prompts(tmp_path)
    assert "[3] user: The counter in src/app.py double counts retries." in sent
    assert "<environment_context>" not in sent  # the host's boilerplate
    assert '[tool shell] {"command"' in sent
    assert "[8] tool: [result] def record(event):" in sent
    assert "[10] assistant: Retries were counted twice" in sent
    assert "token_count" not in sent and "gAAAAABo5fQx" not in sent


def test_a_malformed_answer_is_retried_once_with_the_problems(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    # First answer: garbage; the retry (the prompt then names the problems) is good.
    code = (
        "if 'previous answer was refused' not in prompt:\n"
        "    sys.stdout.write('Sure! Here are the memories: {oops'); sys.exit(0)"
    )
    configure(store_path, fake_distiller(tmp_path, {"records": [LESSON]}, code=code))
    archive(tmp_path, store_path)
    report = _json(gm("distill", "--json"))
    assert len(report["spans"][0]["written"]) == 1  # type: ignore[index]
    first, second = prompts(tmp_path)
    assert "previous answer was refused" not in first
    assert "previous answer was refused" in second and "the answer is not JSON" in second


def test_an_answer_refused_twice_writes_nothing_keeps_the_watermark_and_says_so(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    bad = {"records": [{"type": "decision", "title": "x", "body": "y", "fields": {"nope": "1"}}]}
    configure(store_path, fake_distiller(tmp_path, bad))
    archive(tmp_path, store_path)
    head = _state(store_path)
    report = _json(gm("distill", "--json"))
    problem = str(report["spans"][0]["problem"])  # type: ignore[index]
    assert problem.startswith("the answer was refused twice") and "nope" in problem
    assert _state(store_path) == head
    status = _json(gm("status", "--json"))["capture"]
    assert status["waiting"][0]["session"] == CLAUDE_SESSION  # type: ignore[index]
    assert "refused twice" in status["failures"][0]["reason"]  # type: ignore[index]
    shown = gm("status")
    assert "1 waiting for distillation" in shown.out and "refused twice" in shown.out
    # The next boundary tries again: a fixed distiller succeeds from the same watermark.
    configure(store_path, fake_distiller(tmp_path, {"records": [LESSON]}, name="fixed"))
    report = _json(gm("distill", "--json"))
    assert report["spans"][0]["lines"] == "1-7" and len(report["spans"][0]["written"]) == 1  # type: ignore[index]
    status = _json(gm("status", "--json"))["capture"]
    assert status["waiting"] == [] and status["failures"] == []  # type: ignore[index]
    assert "refused twice" not in gm("status").out  # resolved: no longer news


@pytest.mark.parametrize(
    ("answer", "code", "said"),
    [
        ("not json at all", "", "refused twice"),
        ({"records": []}, "sys.exit(3)", "exited 3"),
        ({"records": []}, "time.sleep(30)", "took longer than 1 s"),
        ("x" * 10, "sys.stdout.write('y' * (9 << 20))", "more than 8 MB"),
    ],
)
def test_a_failing_or_hung_distiller_loses_nothing(
    tmp_path: Path, store_path: Path, gm, answer: object, code: str, said: str
) -> None:  # type: ignore[no-untyped-def]
    configure(store_path, fake_distiller(tmp_path, answer, code=code), timeout=1)
    archive(tmp_path, store_path)
    head = _state(store_path)
    report = _json(gm("distill", "--json"))
    assert said in str(report["spans"][0]["problem"])  # type: ignore[index]
    assert _state(store_path) == head
    archived = next((store_path / ".gitmem" / "transcripts").rglob("*.jsonl"))
    assert len(archived.read_text().splitlines()) == 7  # the transcript is kept
    (state,) = (store_path / ".gitmem" / "capture").rglob("*.json")
    assert json.loads(state.read_text())["offset"] == 0  # the watermark did not move


def test_a_span_that_keeps_failing_is_skipped_after_three_tries(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    configure(store_path, fake_distiller(tmp_path, {"records": []}, code="sys.exit(1)"))
    archive(tmp_path, store_path)
    for _ in range(2):
        assert _json(gm("distill", "--json"))["spans"][0]["problem"]  # type: ignore[index]
    last = _json(gm("distill", "--json"))
    assert any("skipped after 3 failures" in n for n in last["notes"])  # type: ignore[union-attr]
    assert _json(gm("status", "--json"))["capture"]["waiting"] == []  # type: ignore[index]


def test_a_secret_in_the_answer_is_redacted_or_refused(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    leaky = {**LESSON, "body": LESSON["body"] + f" The deploy token is {token}."}
    configure(store_path, fake_distiller(tmp_path, {"records": [leaky, PREFERENCE]}))
    archive(tmp_path, store_path)
    report = _json(gm("distill", "--json"))
    ids = report["spans"][0]["written"]  # type: ignore[index]
    assert len(ids) == 2
    body = Store.open(store_path).get(ids[0]).body
    assert token not in body and "REDACTED" in body.upper()
    assert token not in git(store_path, "log", "-p")
    # refuse: the record with the secret is dropped, the rest is written.
    configure(
        store_path, fake_distiller(tmp_path, {"records": [leaky, PREFERENCE]}), secrets="refuse"
    )
    report = _json(gm("distill", "--force", "--json"))
    span = report["spans"][0]  # type: ignore[index]
    assert (
        "possible secret" in span["dropped"][0] and span["written"] == []
    )  # the other: a duplicate
    assert token not in git(store_path, "log", "-p")


def test_a_duplicate_of_a_current_record_is_left_out(tmp_path: Path, store_path: Path, gm) -> None:  # type: ignore[no-untyped-def]
    assert (
        gm(
            "record",
            "lesson",
            "Redis pub/sub drops every message nobody is subscribed to, so "
            "jobs vanished whenever Redis restarted. The queue moved to Postgres with SKIP LOCKED.",
            "--title",
            "Redis pub/sub drops jobs when it restarts",
        ).code
        == 0
    )
    configure(store_path, fake_distiller(tmp_path, {"records": [LESSON, LESSON, PREFERENCE]}))
    archive(tmp_path, store_path)
    report = _json(gm("distill", "--json"))
    span = report["spans"][0]  # type: ignore[index]
    assert span["duplicates"] == 2 and len(span["written"]) == 1
    (sent,) = prompts(tmp_path)
    assert "Redis pub/sub drops jobs when it restarts" in sent  # found by recall, sent along


def test_a_record_with_the_same_key_supersedes_the_current_one(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    old = gm(
        "record",
        "decision",
        "Jobs go through Redis pub/sub.",
        "--title",
        "Queue on Redis",
        "--field",
        "project=widget",
        "--field",
        "subject=job queue",
        "--json",
    )
    old_id = json.loads(old.out)["ids"][0]
    new = decision(
        "Queue on Postgres",
        "Jobs live in a Postgres table read with SKIP LOCKED.",
        project="Widget",
        subject="Job  Queue",
        rationale="Survives restarts.",
    )
    other = decision("Use ruff", "Lint with ruff.", project="widget", subject="linting")
    configure(store_path, fake_distiller(tmp_path, {"records": [new, other]}))
    archive(tmp_path, store_path)
    report = _json(gm("distill", "--json"))
    span = report["spans"][0]  # type: ignore[index]
    assert span["superseded"] == [old_id] and len(span["written"]) == 2
    store = Store.open(store_path)
    assert store.get(old_id).status == "superseded"
    assert store.get(old_id).superseded_by == span["written"][0]
    assert store.get(span["written"][0]).supersedes == (old_id,)
    assert _commits(store_path) == 4  # init, record, config, the span: one commit
    assert_clean(store_path)


def test_an_explicit_supersede_of_an_unknown_id_is_refused_and_retried(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    configure(
        store_path, fake_distiller(tmp_path, {"records": [{**LESSON, "supersedes": "no-such-id"}]})
    )
    archive(tmp_path, store_path)
    head = _state(store_path)
    report = _json(gm("distill", "--json"))
    assert "no-such-id" in str(report["spans"][0]["problem"])  # type: ignore[index]
    assert len(prompts(tmp_path)) == 2 and _state(store_path) == head


def test_ten_thousand_records_are_capped(tmp_path: Path, store_path: Path, gm) -> None:  # type: ignore[no-untyped-def]
    many = [
        {"type": "fact", "title": f"Fact number {i}", "body": f"Port {i} is open to {i * 7} hosts."}
        for i in range(10_000)
    ]
    configure(store_path, fake_distiller(tmp_path, {"records": many}), max_records=20)
    archive(tmp_path, store_path)
    before = _commits(store_path)
    report = _json(gm("distill", "--json"))
    span = report["spans"][0]  # type: ignore[index]
    assert len(span["written"]) == 20 and "9980 records past the cap of 20" in span["dropped"]
    assert _commits(store_path) == before + 1


def test_bad_transcripts_are_skipped_with_a_reason(tmp_path: Path, store_path: Path, gm) -> None:  # type: ignore[no-untyped-def]
    configure(store_path, fake_distiller(tmp_path, {"records": [LESSON]}))
    transcript = tmp_path / "claude-code.jsonl"
    transcript.write_text("this is not JSON\n<html>nor this</html>\n" + "\x00\xff" * 10 + "\n")
    archive(tmp_path, store_path)
    head = _state(store_path)
    report = _json(gm("distill", "--json"))
    assert report["spans"][0]["dropped"] == ["nothing to distill (3 lines not JSON)"]  # type: ignore[index]
    assert prompts(tmp_path) == [] and _state(store_path) == head
    # A last line still being written (no newline yet) waits; once whole it is distilled.
    (state,) = (store_path / ".gitmem" / "capture").rglob("*.json")
    archived = next((store_path / ".gitmem" / "transcripts").rglob("*.jsonl"))
    line = json.dumps({"type": "user", "message": {"role": "user", "content": "half"}})
    with archived.open("a") as handle:
        handle.write(line[:20])
    assert _json(gm("distill", "--json"))["spans"] == []
    with archived.open("a") as handle:
        handle.write(line[20:] + "\n")
    report = _json(gm("distill", "--json"))
    assert report["spans"][0]["lines"] == "4-4"  # type: ignore[index]
    assert json.loads(state.read_text())["line"] == 4


def test_a_big_transcript_is_cut_into_spans_each_its_own_commit(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    code = (
        "import re\n"
        "first = re.findall(r'^\\[(\\d+)\\] ', prompt, re.M)[0]\n"
        "sys.stdout.write(json.dumps({'records': [{'type': 'fact', 'title': 'From line ' + first,"
        " 'body': 'Seen at line ' + first + ' of a long session about topic ' + first}]}))\n"
        "sys.exit(0)"
    )
    configure(store_path, fake_distiller(tmp_path, "", code=code), span_chars=2000, spans_per_run=3)
    lines = "".join(
        json.dumps(
            {"type": "user", "message": {"role": "user", "content": f"message {i} " + "x" * 400}}
        )
        + "\n"
        for i in range(12)
    )
    (tmp_path / "claude-code.jsonl").write_text(lines)
    archive(tmp_path, store_path)
    before = _commits(store_path)
    report = _json(gm("distill", "--json"))
    assert [s["lines"] for s in report["spans"]] == ["1-4", "5-8", "9-12"]  # type: ignore[union-attr]
    assert _commits(store_path) == before + 3


def test_records_written_by_hand_have_no_provenance(store_path: Path, gm) -> None:  # type: ignore[no-untyped-def]
    made = gm("record", "fact", "The API limit is 100/min.", "--title", "Rate limit", "--json")
    ident = json.loads(made.out)["ids"][0]
    traced = _json(gm("trace", ident, "--json"))
    assert traced["messages"] == [] and "has no provenance" in str(traced["problem"])
    assert "has no provenance" in gm("trace", ident).out
    assert gm("trace", "no-such-record").code == 1


def test_capture_turned_off_in_config_sends_nothing(tmp_path: Path, store_path: Path, gm) -> None:  # type: ignore[no-untyped-def]
    configure(store_path, fake_distiller(tmp_path, {"records": [LESSON]}), enabled=False)
    archive(tmp_path, store_path)
    head = _state(store_path)
    done = gm("distill")
    assert done.code == 0 and "capture is off" in done.out
    assert prompts(tmp_path) == [] and _state(store_path) == head


def test_a_turn_end_with_few_messages_waits_and_the_background_run_logs_nothing(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    # Stop fires after every turn: a detached run that waits must not add a hooks.log line.
    configure(store_path, fake_distiller(tmp_path, {"records": [LESSON]}), min_messages=50)
    archive(tmp_path, store_path)
    head = _state(store_path)
    quiet = gm("distill", "--trigger", "stop", "--background")
    assert quiet.code == 0 and quiet.out == ""
    said = gm("distill", "--trigger", "stop")
    assert said.code == 0 and "waits for more" in said.out
    assert len(_json(gm("distill", "--trigger", "stop", "--json"))["waiting"]) == 1  # type: ignore[arg-type]
    assert prompts(tmp_path) == [] and _state(store_path) == head
    assert len(_json(gm("distill", "--json"))["spans"]) == 1  # SessionEnd does not wait


def test_dry_run_writes_nothing_and_moves_no_watermark(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    configure(store_path, fake_distiller(tmp_path, {"records": [LESSON]}))
    archive(tmp_path, store_path)
    head = _state(store_path)
    done = gm("distill", "--dry-run")
    assert done.code == 0 and "would write 1" in done.out
    assert _state(store_path) == head
    assert len(_json(gm("status", "--json"))["capture"]["waiting"]) == 1  # type: ignore[arg-type]


def test_an_unknown_session_and_a_missing_distiller_say_what_to_do(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    missing = gm("distill", "--session", "nope")
    assert missing.code == 1 and "no archived transcript for session nope" in missing.err
    configure(store_path, None, command="no-such-distiller-here -p")
    archive(tmp_path, store_path)
    report = _json(gm("distill", "--json"))
    assert "is not on PATH" in str(report["spans"][0]["problem"])  # type: ignore[index]


def test_a_wrong_capture_setting_is_refused(tmp_path: Path, store_path: Path, gm) -> None:  # type: ignore[no-untyped-def]
    configure(store_path, None, secrets="maybe")
    done = gm("distill")
    assert done.code == 1 and 'capture.secrets must be "redact" or "refuse"' in done.err


def test_the_mcp_tools_answer_as_the_cli(tmp_path: Path, store_path: Path, gm) -> None:  # type: ignore[no-untyped-def]
    import os

    from test_mcp import call

    from gitmem.mcp_server import build_server

    configure(store_path, fake_distiller(tmp_path, {"records": [LESSON]}))
    archive(tmp_path, store_path)
    server = build_server(Store.open(store_path), env=dict(os.environ))
    dry = call(server, "distill", {"dry_run": True})
    assert dry == _json(gm("distill", "--dry-run", "--json"))
    assert dry["spans"][0]["written"] == [LESSON["title"]]
    done = call(server, "distill", {})
    ident = done["spans"][0]["written"][0]
    assert call(server, "trace", {"id": ident}) == _json(gm("trace", ident, "--json"))


def test_a_big_transcript_is_archived_in_pieces_across_runs(tmp_path: Path) -> None:
    """The hook reads, redacts and appends a piece at a time (never the whole file) and
    stops between pieces at its deadline; the next run goes on from there."""
    import time

    from gitmem.agents.session import SessionState, archive_path, archive_transcript

    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    lines = [
        json.dumps({"n": i, "text": f"line {i} {token if i % 50 == 0 else ''}"}) for i in range(400)
    ]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(lines) + "\n" + '{"half": ')  # a last line being written
    cache = tmp_path / "cache"
    state = SessionState("s", project="p")
    state = archive_transcript(cache, state, transcript, deadline=time.monotonic() - 1, piece=1000)
    assert state.transcript_offset == 0  # the deadline had passed: nothing read
    state = archive_transcript(cache, state, transcript, piece=1000)
    archived = archive_path(cache, state).read_text().splitlines()
    assert [json.loads(line)["n"] for line in archived] == list(range(400))
    assert token not in archive_path(cache, state).read_text()
    assert state.transcript_offset == transcript.stat().st_size - len('{"half": ')


def _queue_state(store: Path) -> dict[str, object]:
    (state,) = (store / ".gitmem" / "capture").rglob("*.json")
    data = json.loads(state.read_text())
    assert isinstance(data, dict)
    return data


def test_spans_left_at_the_cap_are_taken_by_the_next_sweep(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    code = "import re\nfirst = re.findall(r'^\\[(\\d+)\\] ', prompt, re.M)[0]\n"
    code += "print(json.dumps({'records': [{'type': 'fact', 'title': 'Line ' + first + ' fact',"
    code += " 'body': 'Topic ' + first + ' was settled.'}]})); sys.exit(0)"
    configure(store_path, fake_distiller(tmp_path, "", code=code), span_chars=2000, spans_per_run=2)
    lines = "".join(
        json.dumps({"type": "user", "message": {"role": "user", "content": f"m{i} " + "x" * 400}})
        + "\n"
        for i in range(12)
    )
    (tmp_path / "claude-code.jsonl").write_text(lines)
    archive(tmp_path, store_path)
    ended = _json(gm("distill", "--session", CLAUDE_SESSION, "--trigger", "session-end", "--json"))
    assert [s["lines"] for s in ended["spans"]] == ["1-4", "5-8"]  # type: ignore[union-attr]
    assert f"{CLAUDE_SESSION}: more left for the next run" in ended["notes"]  # type: ignore[operator]
    assert _queue_state(store_path)["more"] is True
    swept = _json(gm("distill", "--sweep", "--trigger", "session-start", "--json"))
    assert [s["lines"] for s in swept["spans"]] == ["9-12"]  # type: ignore[union-attr]
    assert _queue_state(store_path)["more"] is False
    assert _json(gm("distill", "--sweep", "--trigger", "session-start", "--json"))["spans"] == []


def test_a_failed_span_waits_for_its_retry_unless_asked_by_hand(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    configure(store_path, fake_distiller(tmp_path, {"records": []}, code="sys.exit(1)"))
    archive(tmp_path, store_path)
    stop = ["distill", "--session", CLAUDE_SESSION, "--trigger", "session-end", "--json"]
    assert "exited 1" in str(_json(gm(*stop))["spans"][0]["problem"])  # type: ignore[index]
    state = _queue_state(store_path)
    assert state["attempts"] == 1 and str(state["retry"]) > str(state["failures"][0]["time"])  # type: ignore[index]
    # Within capture.retry_after (600 s): neither its own boundary nor a sweep tries it...
    again = _json(gm(*stop))
    assert again["spans"] == [] and "waits for its retry" in again["waiting"][0]  # type: ignore[index]
    assert _json(gm("distill", "--sweep", "--trigger", "session-start", "--json"))["spans"] == []
    assert "nothing due" in gm("distill", "--sweep").out
    assert len(prompts(tmp_path)) == 1
    # ...a person does; and a second failure waits twice as long.
    assert _json(gm("distill", "--json"))["spans"][0]["problem"]  # type: ignore[index]
    state = _queue_state(store_path)
    assert state["attempts"] == 2 and len(prompts(tmp_path)) == 2
    (failure,) = state["failures"]  # type: ignore[misc]  # the same failure again: one line
    from datetime import datetime

    def at(stamp: object) -> datetime:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))

    waited = (at(state["retry"]) - at(failure["time"])).total_seconds()
    assert 1190 <= waited <= 1210


def test_a_distiller_missing_from_path_waits_without_using_up_the_tries(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    configure(store_path, None, command="no-such-distiller-here -p")
    archive(tmp_path, store_path)
    for _ in range(5):
        problem = str(_json(gm("distill", "--json"))["spans"][0]["problem"])  # type: ignore[index]
        assert "'no-such-distiller-here' is not on PATH" in problem
    state = _queue_state(store_path)
    assert state["attempts"] == 0 and state["offset"] == 0 and len(state["failures"]) == 1  # type: ignore[arg-type]
    status = _json(gm("status", "--json"))["capture"]
    assert [w["session"] for w in status["waiting"]] == [CLAUDE_SESSION]  # type: ignore[index]
    shown = gm("status").out
    assert "'no-such-distiller-here' is not on PATH" in shown
    configure(store_path, fake_distiller(tmp_path, {"records": [LESSON]}))
    done = _json(gm("distill", "--json"))
    assert done["spans"][0]["lines"] == "1-7" and len(done["spans"][0]["written"]) == 1  # type: ignore[index]
    assert _json(gm("status", "--json"))["capture"]["failures"] == []  # type: ignore[index]


@pytest.mark.parametrize("hangs", [True, False])
def test_a_process_the_distiller_leaves_holding_its_output_does_not_hold_the_run(
    tmp_path: Path, store_path: Path, gm, hangs: bool
) -> None:  # type: ignore[no-untyped-def]
    # The grandchild starts a session of its own (out of reach of the group's kill) and keeps
    # the distiller's stdout open for 30 s; the distiller then hangs, or answers and exits.
    import os
    import signal
    import time

    pid_file = tmp_path / "grandchild.pid"
    code = (
        "import subprocess\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'],"
        " start_new_session=True)\n"
        f"pathlib.Path({str(pid_file)!r}).write_text(str(child.pid))\n"
        + ("time.sleep(30)\n" if hangs else "")
    )
    configure(store_path, fake_distiller(tmp_path, {"records": [LESSON]}, code=code), timeout=2)
    archive(tmp_path, store_path)
    try:
        started = time.monotonic()
        report = _json(gm("distill", "--json"))
        took = time.monotonic() - started
    finally:
        if pid_file.exists():
            with contextlib.suppress(OSError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
    span = report["spans"][0]  # type: ignore[index]
    assert took < 10, took  # not the grandchild's 30 s
    if hangs:
        assert "took longer than 2 s" in str(span["problem"])
    else:
        assert span["problem"] is None and len(span["written"]) == 1


def test_the_stores_prompt_file_as_edited_is_what_is_sent(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    shipped = (store_path / "prompts" / "distill.md").read_text(encoding="utf-8")
    edited = "Keep only what a new teammate on the widget team must know. Answer JSON only.\n"
    (store_path / "prompts" / "distill.md").write_text(edited, encoding="utf-8")
    git(store_path, "commit", "-qam", "our own distill prompt")
    configure(store_path, fake_distiller(tmp_path, {"records": []}))
    archive(tmp_path, store_path)
    assert _json(gm("distill", "--json"))["spans"][0]["problem"] is None  # type: ignore[index]
    (sent,) = prompts(tmp_path)
    assert sent.startswith(edited) and shipped.strip().splitlines()[0] not in sent
    assert "[2] user: The job queue keeps losing jobs" in sent


def test_a_sweep_takes_at_most_spans_per_run_spans_of_other_sessions(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    import os
    import time

    configure(store_path, fake_distiller(tmp_path, {"records": []}), spans_per_run=1, quiet=60)
    archive(tmp_path, store_path)
    archive(tmp_path, store_path, "codex")
    hour_ago = time.time() - 3600
    for archived in (store_path / ".gitmem" / "transcripts").rglob("*.jsonl"):
        os.utime(archived, (hour_ago, hour_ago))
    first = _json(gm("distill", "--sweep", "--json"))
    assert len(first["spans"]) == 1  # type: ignore[arg-type]
    assert "more sessions waiting for the next boundary" in first["notes"]  # type: ignore[operator]
    second = _json(gm("distill", "--sweep", "--json"))
    assert len(second["spans"]) == 1 and second["notes"] == []  # type: ignore[arg-type]
    sessions = {first["spans"][0]["session"], second["spans"][0]["session"]}  # type: ignore[index]
    assert sessions == {CLAUDE_SESSION, "019d036d-c7fa-72d2-b6fd-78878bfe34e4"}
    assert _json(gm("distill", "--sweep", "--json"))["spans"] == []
    assert len(prompts(tmp_path)) == 2


def test_a_sweep_leaves_a_span_whose_retry_was_set_after_it_chose_the_session(
    tmp_path: Path, store_path: Path, gm, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """A sweep lists the sessions due before it runs any of them; a run of that session that
    fails meanwhile sets a retry, and the sweep, looking again under the session's lock, does
    not ask the distiller before the retry is due (three early asks would use up the tries)."""
    import os

    from gitmem.capture import distill as distilling
    from gitmem.capture import queue

    configure(store_path, fake_distiller(tmp_path, {"records": []}, code="sys.exit(1)"))
    archive(tmp_path, store_path)
    store = Store.open(store_path)
    chosen = queue.load_all(store.cache_dir)  # what the sweep saw: nothing failed yet
    assert [s.session for s in chosen] == [CLAUDE_SESSION] and not chosen[0].retry
    own = ["distill", "--session", CLAUDE_SESSION, "--trigger", "session-end", "--json"]
    assert _json(gm(*own))["spans"][0]["problem"]  # type: ignore[index]
    monkeypatch.setattr(distilling, "due", lambda *args: chosen)
    swept = store.distill(dict(os.environ), sweep=True, trigger="session-start")
    assert swept.spans == () and len(prompts(tmp_path)) == 1
    assert _queue_state(store_path)["attempts"] == 1


def test_a_failing_distillers_last_words_are_what_status_shows(
    tmp_path: Path, store_path: Path, gm
) -> None:  # type: ignore[no-untyped-def]
    """A chatty command says why it failed at the end: 200 KB of noise on stderr first."""
    code = (
        "sys.stderr.write('noise ' * 40000 + '\\nnot logged in: run claude login\\n'); sys.exit(1)"
    )
    configure(store_path, fake_distiller(tmp_path, {"records": []}, code=code))
    archive(tmp_path, store_path)
    problem = str(_json(gm("distill", "--json"))["spans"][0]["problem"])  # type: ignore[index]
    assert "not logged in: run claude login" in problem
