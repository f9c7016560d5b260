"""`gitmem hook EVENT`: every event with the hosts' payloads, and every way it must fail open."""

from __future__ import annotations

import json
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import assert_clean, git
from hookkit import HookRun, hook_process, log_text, make_project, payload, run_hook

from gitmem.api import Store
from gitmem.hooks.main import EVENTS, event_name


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "work")


def indexed(store_path: Path) -> Store:
    store = Store.open(store_path)
    store.index()
    return store


def remember(store_path: Path) -> list[str]:
    store = Store.open(store_path)
    ids = [
        store.record(
            "decision",
            "We retry webhook deliveries with exponential backoff, 24 h at most.",
            title="Retry webhooks with backoff",
            tags=["project:github.com/acme/widget"],
            weight=3,
        ).record.id,
        store.record("preference", "Spaces, never tabs.", title="Indent with spaces").record.id,
        store.record(
            "fact", "Other repo detail.", title="Unrelated", tags=["project:github.com/o/other"]
        ).record.id,
    ]
    return ids


# --- event names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"), [*((k, k) for k in EVENTS), *((v, k) for k, v in EVENTS.items())]
)
def test_both_spellings_name_an_event(given: str, expected: str) -> None:
    assert event_name(given) == expected


def test_unknown_event_is_logged_and_ignored(store_path: Path, project: Path) -> None:
    run = run_hook("Notification", b"{}", store_path)
    assert (run.code, run.out) == (0, "")
    assert 'unknown hook event "Notification"' in log_text(store_path)


# --- SessionStart --------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["claude-code", "codex"])
def test_session_start_injects_this_projects_context(
    store_path: Path, project: Path, host: str
) -> None:
    ids = remember(store_path)
    indexed(store_path)
    run = run_hook("SessionStart", payload(f"{host}/session_start", project), store_path)
    data = json.loads(run.out)
    assert data["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = run.context()
    assert f"[{ids[0]}]" in context and f"[{ids[1]}]" in context
    assert ids[2] not in context  # another project's memory stays out
    assert "project github.com/acme/widget" in context
    assert log_text(store_path) == ""


def test_session_start_with_an_empty_store_prints_nothing(store_path: Path, project: Path) -> None:
    run = run_hook("session-start", payload("claude-code/session_start", project), store_path)
    assert (run.code, run.out) == (0, "")


def test_session_start_reads_git_when_the_index_is_behind(store_path: Path, project: Path) -> None:
    remember(store_path)
    indexed(store_path)
    late = Store.open(store_path).record(
        "lesson", "Never deploy on Friday.", title="No Friday deploys"
    )
    run = run_hook("session-start", payload("claude-code/session_start", project), store_path)
    assert f"[{late.record.id}]" in run.context()


def test_session_start_without_an_index_lists_the_latest_writes(
    store_path: Path, project: Path
) -> None:
    ids = remember(store_path)
    run = run_hook("session-start", payload("claude-code/session_start", project), store_path)
    assert f"[{ids[1]}]" in run.context()
    assert not (store_path / ".gitmem" / "index").exists()  # it did not build the index


def test_session_start_respects_the_configured_budget(store_path: Path, project: Path) -> None:
    store = Store.open(store_path)
    for n in range(40):
        store.record("fact", f"Fact number {n} about the widget. " * 3, title=f"Widget fact {n}")
    indexed(store_path)
    config = store_path / "config.toml"
    config.write_text(config.read_text() + "\n[hooks]\ncontext_bytes = 1000\n")
    git(store_path, "commit", "-qam", "smaller context")
    context = run_hook("session-start", payload("claude-code/session_start", project), store_path)
    assert 0 < len(context.context().encode()) <= 1000


def test_session_start_as_a_process_loads_no_heavy_module(store_path: Path, project: Path) -> None:
    remember(store_path)
    indexed(store_path)
    done = hook_process(
        "session-start",
        payload("claude-code/session_start", project),
        store_path,
        env={"GITMEM_HOOK_DEBUG_MODULES": "1"},
    )
    assert done.returncode == 0 and done.stderr == ""
    assert "Retry webhooks" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "session-start: heavy modules loaded: none" in log_text(store_path)


def test_the_typer_cli_runs_hooks_too(gm, store_path: Path, project: Path) -> None:  # type: ignore[no-untyped-def]
    ids = remember(store_path)
    done = gm(
        "hook", "SessionStart", "--host", "codex", input=payload("codex/session_start", project)
    )
    assert done.code == 0 and done.err == ""
    assert ids[0] in json.loads(done.out)["hookSpecificOutput"]["additionalContext"]
    assert "Usage: gitmem hook [OPTIONS] {EVENT}" in gm("hook", "--help").out


# --- PostToolUse ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["claude-code/post_tool_use_bash", "codex/post_tool_use_bash"])
def test_the_no_op_path_imports_nothing_heavy(store_path: Path, project: Path, name: str) -> None:
    done = hook_process(
        "post-tool-use", payload(name, project), store_path, env={"GITMEM_HOOK_DEBUG_MODULES": "1"}
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert "post-tool-use: heavy modules loaded: none" in log_text(store_path)


NO_OP = """
import io, json, os, sys
from gitmem.hooks.main import main
out = io.StringIO()
main(["post-tool-use"], os.environ, io.BytesIO(sys.stdin.buffer.read()), out)
print(json.dumps([out.getvalue(), sorted(sys.modules)]))
"""
# The same call as the console script makes it: through gitmem.__main__.
NO_OP_MAIN = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(["", sorted(sys.modules)])))
sys.argv = ["gitmem", "hook", "post-tool-use"]
from gitmem.__main__ import main
main()
"""


@pytest.mark.parametrize("code", [NO_OP, NO_OP_MAIN], ids=["hooks", "entry-point"])
@pytest.mark.parametrize("name", ["claude-code/post_tool_use_bash", "codex/post_tool_use_bash"])
def test_the_no_op_path_imports_neither_typing_nor_pathlib(
    store_path: Path, project: Path, name: str, code: str
) -> None:
    """Most calls are no-ops: they must cost little more than Python's start. Run without
    site (an editable install's import finder loads pathlib and typing itself)."""
    import os
    import sys

    import gitmem

    done = subprocess.run(
        [sys.executable, "-S", "-c", code],
        input=payload(name, project),
        capture_output=True,
        env={
            **os.environ,
            "GITMEM_STORE": str(store_path),
            "PYTHONPATH": str(Path(gitmem.__file__).parents[1]),
        },
        check=True,
    )
    out, loaded = json.loads(done.stdout)
    assert out == "" and not log_text(store_path)
    entry = ["gitmem.__main__", "gitmem.errors"] if code is NO_OP_MAIN else []
    assert [m for m in loaded if m.startswith("gitmem")] == [
        "gitmem",
        *entry,
        "gitmem.hooks",
        "gitmem.hooks.main",
    ]
    assert not {"typing", "pathlib", "dataclasses", "tomllib"} & set(loaded)


def test_a_markdown_write_under_a_watched_dir_is_indexed(store_path: Path, project: Path) -> None:
    head = git(store_path, "rev-parse", "HEAD")
    (project / "docs").mkdir()
    (project / "docs" / "design.md").write_text(
        "---\ntype: plan\nstatus: active\nblocked_by: [storage-review]\n---\n"
        "# Design\n\nHow the widget stores state.\n## Storage\n"
    )
    run = run_hook("PostToolUse", payload("claude-code/post_tool_use_write", project), store_path)
    assert (run.code, run.out) == (0, "")
    found = [r for r in Store.open(store_path).records() if r.type == "entity"]
    assert len(found) == 1
    assert found[0].extra["path"] == "docs/design.md"
    assert found[0].extra["entity_type"] == "plan"
    assert found[0].extra["blocked_by"] == ("storage-review",)
    assert "project:github.com/acme/widget" in found[0].tags and "## Storage" in found[0].body
    assert git(store_path, "rev-list", "--count", f"{head.strip()}..HEAD").strip() == "1"
    # The same content again: no new commit.
    run_hook("PostToolUse", payload("claude-code/post_tool_use_write", project), store_path)
    assert git(store_path, "rev-list", "--count", f"{head.strip()}..HEAD").strip() == "1"
    assert_clean(store_path)


def test_a_watched_file_that_cannot_be_an_entity_is_logged_not_written(
    store_path: Path, project: Path
) -> None:
    head = git(store_path, "rev-parse", "HEAD")
    (project / "docs").mkdir()
    (project / "docs" / "design.md").write_text("---\na: &x [1]\nb: *x\n---\n# Bomb\n")
    run = run_hook("PostToolUse", payload("claude-code/post_tool_use_write", project), store_path)
    assert (run.code, run.out) == (0, "")
    assert git(store_path, "rev-parse", "HEAD") == head
    assert "docs/design.md not indexed: frontmatter: a YAML anchor" in log_text(store_path)


def test_a_watched_write_is_indexed_after_the_hook_answers(store_path: Path, project: Path) -> None:
    """With background indexing on (the default), the hook process only starts the indexer:
    it loads no pygit2 and makes no commit itself; the detached child commits soon after."""
    head = git(store_path, "rev-parse", "HEAD")
    (project / "docs").mkdir()
    (project / "docs" / "design.md").write_text("---\ntype: plan\n---\n# Design\n\nState.\n")
    done = hook_process(
        "post-tool-use",
        payload("claude-code/post_tool_use_write", project),
        store_path,
        env={"GITMEM_BACKGROUND_INDEX": "on", "GITMEM_HOOK_DEBUG_MODULES": "1"},
    )
    assert (done.returncode, done.stdout) == (0, "")
    assert "post-tool-use: heavy modules loaded: none" in log_text(store_path)
    for _ in range(600):  # the child's own start, pygit2 and the commit: a few seconds at most
        if git(store_path, "rev-parse", "HEAD") != head:
            break
        time.sleep(0.05)
    found = [r for r in Store.open(store_path).records() if r.type == "entity"]
    assert [(r.extra["path"], r.extra["entity_type"]) for r in found] == [
        ("docs/design.md", "plan")
    ]
    assert_clean(store_path)


def test_codex_apply_patch_markdown_is_indexed(store_path: Path, project: Path) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "design.md").write_text("# Design\n\nHow the widget stores state.\n")
    run_hook("post-tool-use", payload("codex/post_tool_use_apply_patch", project), store_path)
    found = [r for r in Store.open(store_path).records() if r.type == "entity"]
    assert [r.extra["path"] for r in found] == ["docs/design.md"]
    assert found[0].agent == "codex" and found[0].extra["entity_type"] == "document"


def test_a_code_edit_is_only_noted_for_the_session(store_path: Path, project: Path) -> None:
    head = git(store_path, "rev-parse", "HEAD")
    run_hook("post-tool-use", payload("claude-code/post_tool_use_edit", project), store_path)
    assert git(store_path, "rev-parse", "HEAD") == head
    files = store_path / ".gitmem" / "sessions" / "00893aaf-19fa-41d2-8238-13269b9b3ca0.files"
    assert files.read_text() == "src/app.py\n"


# --- UserPromptSubmit ----------------------------------------------------------------------


def test_prompt_recall_is_off_by_default(store_path: Path, project: Path) -> None:
    remember(store_path)
    run = run_hook(
        "user-prompt-submit", payload("claude-code/user_prompt_submit", project), store_path
    )
    assert run.out == ""


def enable_prompt_recall(store_path: Path) -> None:
    config = store_path / "config.toml"
    config.write_text(config.read_text() + "\n[hooks]\nprompt_recall = true\n")
    git(store_path, "commit", "-qam", "prompt recall on")


@pytest.mark.parametrize("host", ["claude-code", "codex"])
def test_prompt_recall_when_switched_on(store_path: Path, project: Path, host: str) -> None:
    ids = remember(store_path)
    enable_prompt_recall(store_path)
    run = run_hook("UserPromptSubmit", payload(f"{host}/user_prompt_submit", project), store_path)
    assert json.loads(run.out)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert f"[{ids[0]}]" in run.context()
    assert len(run.context().encode()) <= 1500


@pytest.mark.parametrize("prompt", ["yes", "ok thanks", "/clear the screen please"])
def test_trivial_prompts_are_skipped(store_path: Path, project: Path, prompt: str) -> None:
    remember(store_path)
    enable_prompt_recall(store_path)
    body = payload("claude-code/user_prompt_submit", project, prompt=prompt)
    assert run_hook("user-prompt-submit", body, store_path).out == ""


# --- PreCompact / Stop / SessionEnd --------------------------------------------------------


def transcript(tmp_path: Path, *lines: dict[str, object]) -> Path:
    path = tmp_path / "transcript.jsonl"
    with path.open("a") as handle:
        for line in lines:
            handle.write(json.dumps(line) + "\n")
    return path


TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"


def test_a_session_is_one_record_updated_in_place(
    store_path: Path, project: Path, tmp_path: Path
) -> None:
    talk = transcript(tmp_path, {"type": "user", "text": f"use token {TOKEN}"})
    run_hook("session-start", payload("claude-code/session_start", project, talk), store_path)
    run_hook("post-tool-use", payload("claude-code/post_tool_use_edit", project, talk), store_path)
    head = git(store_path, "rev-parse", "HEAD").strip()
    run_hook("stop", payload("claude-code/stop", project, talk), store_path)
    sessions = [r for r in Store.open(store_path).records() if "session" in r.tags]
    assert len(sessions) == 1
    first = sessions[0]
    assert "src/app.py" in first.body and "project:github.com/acme/widget" in first.tags
    assert first.extra == {"project": "github.com/acme/widget"}
    # Another Stop with nothing new: no commit.
    after_stop = git(store_path, "rev-parse", "HEAD").strip()
    run_hook("stop", payload("claude-code/stop", project, talk), store_path)
    assert git(store_path, "rev-parse", "HEAD").strip() == after_stop != head
    # More work, then SessionEnd: the same record, updated by one commit.
    edit = payload("claude-code/post_tool_use_edit", project, talk)
    edit = edit.replace(b"src/app.py", b"src/db.py")
    run_hook("post-tool-use", edit, store_path)
    run_hook("SessionEnd", payload("claude-code/session_end", project, talk), store_path)
    assert git(store_path, "rev-list", "--count", f"{after_stop}..HEAD").strip() == "1"
    again = Store.open(store_path).get(first.id)
    assert "src/db.py" in again.body and again.created == first.created
    assert_clean(store_path)
    # The transcript is archived outside git, redacted.
    archived = next((store_path / ".gitmem" / "transcripts").rglob("*.jsonl")).read_text()
    assert TOKEN not in archived and "[REDACTED:github-token]" in archived
    assert TOKEN not in git(store_path, "log", "-p")
    assert log_text(store_path) == ""


def test_the_transcript_archive_appends_only_new_lines(
    store_path: Path, project: Path, tmp_path: Path
) -> None:
    talk = transcript(tmp_path, {"n": 1})
    run_hook("pre-compact", payload("claude-code/pre_compact", project, talk), store_path)
    transcript(tmp_path, {"n": 2})
    with talk.open("a") as handle:
        handle.write('{"n": 3, "partial')  # still being written: waits for the next run
    run_hook("pre-compact", payload("claude-code/pre_compact", project, talk), store_path)
    archived = next((store_path / ".gitmem" / "transcripts").rglob("*.jsonl")).read_text()
    assert archived == '{"n": 1}\n{"n": 2}\n'


def test_codex_stop_records_its_summary(store_path: Path, project: Path, tmp_path: Path) -> None:
    run_hook("stop", payload("codex/stop", project, tmp_path / "none.jsonl"), store_path)
    (session,) = [r for r in Store.open(store_path).records() if "session" in r.tags]
    assert "codex" in session.tags and session.agent == "codex"
    assert session.abstract == "Added docs/design.md and fixed the counter in src/app.py."


# --- failing open --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "name"),
    [
        ("session-start", "claude-code/session_start"),
        ("post-tool-use", "claude-code/post_tool_use_edit"),
        ("post-tool-use", "claude-code/post_tool_use_bash"),
    ],
)
def test_no_store_does_nothing(tmp_path: Path, project: Path, event: str, name: str) -> None:
    missing = tmp_path / "nowhere"
    run = run_hook(event, payload(name, project), missing)
    assert (run.code, run.out) == (0, "")
    assert not missing.exists()


@pytest.mark.parametrize("event", ["session-start", "post-tool-use"])
@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1, 2]", b"\xff\xfe"])
def test_bad_stdin_is_a_log_line(store_path: Path, stdin: bytes, event: str) -> None:
    remember(store_path)
    run = run_hook(event, stdin, store_path)
    assert run.code == 0
    if stdin:
        assert run.out == ""
        assert f"{event}: stdin is not" in log_text(store_path)


def test_a_corrupt_store_harms_nothing(store_path: Path, project: Path) -> None:
    remember(store_path)
    (store_path / "config.toml").write_text("this is [ not toml")
    (store_path / ".git" / "HEAD").write_text("garbage\n")
    done = hook_process("session-start", payload("claude-code/session_start", project), store_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert "session-start:" in log_text(store_path)


def test_a_slow_remote_is_cut_short(store_path: Path, project: Path, tmp_path: Path) -> None:
    """A remote that never answers: SessionStart still answers, within its budget."""
    remember(store_path)
    hang = tmp_path / "hang.sh"
    hang.write_text("#!/bin/sh\nsleep 30\n")
    hang.chmod(0o755)
    git(store_path, "remote", "add", "origin", "ssh://git@example.invalid/memory.git")
    config = store_path / "config.toml"
    config.write_text(config.read_text() + "\n[hooks]\nsync_timeout = 0.5\ntimeout = 4\n")
    git(store_path, "commit", "-qam", "short sync")
    started = time.monotonic()
    done = hook_process(
        "session-start",
        payload("claude-code/session_start", project),
        store_path,
        env={"GIT_SSH_COMMAND": str(hang)},
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0 and elapsed < 4.5
    assert "Indent with spaces" in done.stdout
    assert "sync" in log_text(store_path)


@pytest.mark.parametrize("event", ["session-start", "post-tool-use"])
def test_a_host_that_never_closes_stdin_is_given_up_on(store_path: Path, event: str) -> None:
    started = time.monotonic()
    with subprocess.Popen(["sleep", "20"], stdout=subprocess.PIPE) as never_closes:
        done = hook_process(event, b"", store_path, stdin_file=never_closes.stdout)
        never_closes.kill()
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert time.monotonic() - started < 6
    assert f"{event}: gave up after the 2 s hook timeout" in log_text(store_path)


def test_the_hard_timeout_stops_slow_work(store_path: Path, project: Path, tmp_path: Path) -> None:
    """Another writer holds the store's lock for long: the hook gives up at its timeout."""
    import fcntl

    config = store_path / "config.toml"
    config.write_text(config.read_text() + "\n[hooks]\ntimeout = 1\n")
    git(store_path, "commit", "-qam", "short timeout")
    head = git(store_path, "rev-parse", "HEAD")
    with (store_path / ".git" / "gitmem-write.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        started = time.monotonic()
        done = hook_process("stop", payload("codex/stop", project, tmp_path / "t"), store_path)
        elapsed = time.monotonic() - started
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert elapsed < 5
    assert "stop: gave up after the 1 s hook timeout" in log_text(store_path)
    assert git(store_path, "rev-parse", "HEAD") == head
    assert_clean(store_path)


def test_a_disabled_event_does_nothing(store_path: Path, project: Path) -> None:
    remember(store_path)
    config = store_path / "config.toml"
    config.write_text(config.read_text() + '\n[hooks]\ndisabled = ["session-start"]\n')
    git(store_path, "commit", "-qam", "no context")
    run = run_hook("session-start", payload("claude-code/session_start", project), store_path)
    assert run == HookRun(0, "")


def test_the_log_stays_bounded(store_path: Path) -> None:
    for _ in range(3000):
        run_hook("session-start", b"not json " * 20, store_path)
    log = store_path / ".gitmem" / "hooks.log"
    assert log.stat().st_size <= 256 * 1024 + 400
    assert (store_path / ".gitmem" / "hooks.log.1").exists()


def test_files_noted_before_any_session_start_still_count(
    store_path: Path, project: Path, tmp_path: Path
) -> None:
    """setup mid-session, or session-start disabled: the PostToolUse notes are not lost."""
    run_hook("post-tool-use", payload("claude-code/post_tool_use_edit", project), store_path)
    run_hook("session-end", payload("claude-code/session_end", project), store_path)
    (session,) = [r for r in Store.open(store_path).records() if "session" in r.tags]
    assert "- src/app.py" in session.body
    assert "project:github.com/acme/widget" in session.tags


def test_a_later_event_without_a_summary_keeps_the_last_one(
    store_path: Path, project: Path, tmp_path: Path
) -> None:
    """Stop sends the last assistant message; SessionEnd and PreCompact send none."""
    talk = transcript(tmp_path, {"n": 1})
    run_hook("session-start", payload("claude-code/session_start", project, talk), store_path)
    run_hook("post-tool-use", payload("claude-code/post_tool_use_edit", project, talk), store_path)
    said = "Fixed the counter in src/app.py."
    stop = payload("claude-code/stop", project, talk, last_assistant_message=said)
    run_hook("stop", stop, store_path)
    run_hook("pre-compact", payload("claude-code/pre_compact", project, talk), store_path)
    run_hook("session-end", payload("claude-code/session_end", project, talk), store_path)
    (session,) = [r for r in Store.open(store_path).records() if "session" in r.tags]
    assert session.abstract == said and f"## Summary\n\n{said}" in session.body


def test_an_unusable_store_flag_does_nothing(tmp_path: Path, project: Path) -> None:
    run = run_hook(
        "session-start",
        payload("claude-code/session_start", project),
        None,
        "--store",
        "~no-such-user-gitmem-test/store",
    )
    assert run == HookRun(0, "")


def test_prompt_recall_keeps_the_ranking(store_path: Path, project: Path) -> None:
    """The best hit comes first, under one heading: not re-sorted by date as the session
    block is."""
    store = Store.open(store_path)
    best = store.record(
        "decision",
        "We retry webhook deliveries with exponential backoff.",
        title="Retry webhook deliveries with backoff",
        now=datetime(2025, 1, 1, tzinfo=UTC),
    ).record.id
    store.record("fact", "The webhook dashboard lives at /admin/hooks.", title="Webhook dashboard")
    enable_prompt_recall(store_path)
    run = run_hook("user-prompt-submit", payload("codex/user_prompt_submit", project), store_path)
    lines = [ln for ln in run.context().splitlines() if ln.startswith("- [")]
    assert lines[0].startswith(f"- [{best}]")
    assert "## Related\n" in run.context() and "## Latest writes" not in run.context()


def test_an_event_can_be_disabled_in_the_hosts_spelling(store_path: Path, project: Path) -> None:
    remember(store_path)
    config = store_path / "config.toml"
    config.write_text(config.read_text() + '\n[hooks]\ndisabled = ["SessionStart"]\n')
    git(store_path, "commit", "-qam", "no context")
    run = run_hook("session-start", payload("claude-code/session_start", project), store_path)
    assert run == HookRun(0, "")


LIGHT = """
import io, json, os, sys
from gitmem.hooks.main import main
main(["post-tool-use"], os.environ, io.BytesIO(sys.stdin.buffer.read()), io.StringIO())
print(json.dumps(sorted(sys.modules)))
"""


def light_run(store_path: Path, project: Path) -> list[str]:
    """A code edit in a new process, without site (an editable install's import finder loads
    pathlib and typing itself): the modules it loaded."""
    import os
    import sys

    import gitmem

    done = subprocess.run(
        [sys.executable, "-S", "-c", LIGHT],
        input=payload("claude-code/post_tool_use_edit", project),
        capture_output=True,
        env={
            **os.environ,
            "GITMEM_STORE": str(store_path),
            "PYTHONPATH": str(Path(gitmem.__file__).parents[1]),
        },
        check=True,
    )
    return list(json.loads(done.stdout))


def test_a_code_edit_stays_on_the_light_path(store_path: Path, project: Path) -> None:
    """The most common tool use with work to do appends a line: it must not load the session,
    context or index modules (dataclasses, datetime and SQLite would double its cost), nor
    the event handlers, pathlib or typing; and, once the parsed `[hooks]` table is cached, not
    tomllib either."""
    light_run(store_path, project)  # parses config.toml and caches the table
    loaded = light_run(store_path, project)
    assert [m for m in loaded if m.startswith("gitmem")] == [
        "gitmem",
        "gitmem.agents",
        "gitmem.agents.notes",
        "gitmem.agents.settings",
        "gitmem.hooks",
        "gitmem.hooks.main",
        "gitmem.store",
        "gitmem.store.location",
    ]
    assert not {"typing", "pathlib", "tomllib", "dataclasses", "sqlite3"} & set(loaded)
    assert not log_text(store_path)
    files = store_path / ".gitmem" / "sessions" / "00893aaf-19fa-41d2-8238-13269b9b3ca0.files"
    assert files.read_text() == "src/app.py\nsrc/app.py\n"


def test_a_changed_config_is_read_again(store_path: Path, project: Path) -> None:
    """The cached `[hooks]` table is keyed by config.toml's text: an edit counts at once."""
    edit = payload("claude-code/post_tool_use_edit", project)
    files = store_path / ".gitmem" / "sessions" / "00893aaf-19fa-41d2-8238-13269b9b3ca0.files"
    run_hook("post-tool-use", edit, store_path)
    assert files.read_text() == "src/app.py\n"
    config = store_path / "config.toml"
    config.write_text(config.read_text() + '\n[hooks]\ndisabled = ["PostToolUse"]\n')
    assert run_hook("post-tool-use", edit, store_path) == HookRun(0, "")
    assert files.read_text() == "src/app.py\n"
    config.write_text(config.read_text().replace("PostToolUse", "stop"))
    run_hook("post-tool-use", edit, store_path)
    assert files.read_text() == "src/app.py\nsrc/app.py\n"
    assert not log_text(store_path)


@pytest.mark.parametrize(
    ("written", "noted"),
    [
        ("src/app.py", "src/app.py"),  # relative to the payload's cwd
        ("{cwd}/./src/../lib/x.py", "lib/x.py"),
        ("{cwd}/link/app.py", "src/app.py"),  # through a symlink, as resolve() does
        ("/elsewhere/app.py", None),  # outside the project: not noted
    ],
)
def test_a_code_edit_is_noted_relative_to_the_project(
    store_path: Path, project: Path, written: str, noted: str | None
) -> None:
    (project / "src").mkdir()
    (project / "link").symlink_to(project / "src")
    sub = project / "src"  # the host's cwd may be below the work tree's top
    data = json.loads(payload("claude-code/post_tool_use_edit", sub))
    data["tool_input"]["file_path"] = written.replace("{cwd}", str(project))
    if not written.startswith(("{", "/")):
        data["cwd"] = str(project)
    run_hook("post-tool-use", json.dumps(data).encode(), store_path)
    files = store_path / ".gitmem" / "sessions" / "00893aaf-19fa-41d2-8238-13269b9b3ca0.files"
    assert (files.read_text() if files.exists() else None) == (noted and noted + "\n")


def test_a_projects_own_watched_directories_replace_the_default(
    store_path: Path, project: Path
) -> None:
    config = store_path / "config.toml"
    config.write_text(
        config.read_text()
        + '\n[hooks.watch_projects]\n"github.com/acme/widget" = ["plans"]\n"other" = "x"\n'
    )
    (project / "docs").mkdir()
    (project / "docs" / "design.md").write_text("# Design\n")
    head = git(store_path, "rev-parse", "HEAD")
    run_hook("PostToolUse", payload("claude-code/post_tool_use_write", project), store_path)
    assert git(store_path, "rev-parse", "HEAD") == head  # docs/ is not this project's
    (project / "plans").mkdir()
    (project / "plans" / "q1.md").write_text("# Q1\n")
    data = json.loads(payload("claude-code/post_tool_use_write", project))
    data["tool_input"]["file_path"] = str(project / "plans" / "q1.md")
    run_hook("PostToolUse", json.dumps(data).encode(), store_path)
    found = [r.extra["path"] for r in Store.open(store_path).records() if r.type == "entity"]
    assert found == ["plans/q1.md"]
    assert "hooks.watch_projects.other must be a list" in log_text(store_path)
