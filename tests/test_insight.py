"""`gitmem stats` and `gitmem report --html`: the numbers, the page, and the page in a browser.

The store is real (imported JSONL with known dates, a supersede chain, a forget, sessions);
the numbers are checked against what was written, in the JSON, the terminal text, the HTML and
the DOM headless Chromium renders. Where no Chromium can be found the browser test says so
(skipped with the reason; under CI, where .ci/run installs it, a missing browser fails).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import snapshot
from hookkit import make_project

AGENTS = ("claude-code", "codex", "alice")
TYPES = ("fact", "lesson", "pattern")


def _records() -> list[dict[str, Any]]:
    """30 records over 6 weeks of 2026 (Mondays from 2026-01-05), three types, three agents,
    two projects; 5 session records."""
    out = []
    for i in range(30):
        week, day = divmod(i, 5)
        out.append(
            {
                "id": f"note-{i:03d}",
                "type": TYPES[i % 3],
                "title": f"Note {i} about the cache layer",
                "body": f"Body of note {i}: the cache keeps entries for {i} minutes.",
                "tags": ["cache", f"project:{'web' if i % 2 else 'api'}"],
                "agent": AGENTS[i % 3],
                "created": f"2026-01-{5 + week * 7 + day:02d}T10:00:00Z"
                if 5 + week * 7 + day <= 31
                else f"2026-02-{5 + week * 7 + day - 31:02d}T10:00:00Z",
            }
        )
    for i in range(5):
        out.append(
            {
                "id": f"session-{i:03d}",
                "type": "context",
                "title": f"Session {i}: worked on the importer",
                "body": "What the session did.",
                "tags": ["session"],
                "agent": "claude-code",
                "created": f"2026-02-0{i + 1}T09:00:00Z",
            }
        )
    for record in out:
        record["updated"] = record["created"]
    return out


@pytest.fixture
def filled(gm: Any, store_path: Path, tmp_path: Path) -> Path:
    data = tmp_path / "records.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _records()), encoding="utf-8")
    assert gm("import", str(data)).code == 0
    first = gm("record", "decision", "Small and local.", "-t", "Use SQLite for the cache", "--json")
    assert first.code == 0, first.err
    old = json.loads(first.out)["ids"][0]
    second = gm(
        "supersede",
        old,
        "Readers and a writer.",
        "-t",
        "Use SQLite with WAL for the cache",
        "--json",
    )
    assert second.code == 0, second.err
    newer = json.loads(second.out)["ids"][0]
    third = gm("supersede", newer, "Several hosts.", "-t", "Use Postgres for the cache", "--json")
    assert third.code == 0, third.err
    gone = gm("record", "fact", "Gone soon.", "-t", "A fact to forget", "--json")
    doomed = json.loads(gone.out)["ids"][0]
    assert gm("forget", doomed, "--reason", "a test").code == 0
    return store_path


def test_stats_json_counts_what_was_written(gm: Any, filled: Path) -> None:
    done = gm("stats", "--json")
    assert done.code == 0, done.err
    stats = json.loads(done.out)
    records = stats["records"]
    assert records["total"] == 30 + 5 + 3  # the forgotten fact is gone; superseded ones stay
    assert records["active"] == 30 + 5 + 1
    assert records["by_type"] == {
        "fact": 10,
        "lesson": 10,
        "pattern": 10,
        "context": 5,
        "decision": 3,
    }
    assert records["by_project"] == {"api": 15, "web": 15}
    assert records["by_status"]["superseded"] == 2
    assert records["by_agent"]["codex"] == 10
    history = stats["history"]
    assert history["supersedes"] == 2 and history["forgets"] == 1
    assert history["by_operation"]["import"] == 1
    assert history["by_operation"]["record"] == 2
    assert stats["top_tags"][0] == ["cache", 30]
    assert all(not tag.startswith("project:") for tag, _ in stats["top_tags"])
    weeks = {w["start"]: w["added"] for w in stats["growth"]}
    assert weeks["2026-01-05"] == 5 and weeks["2026-02-02"] == 5 + 4  # + 4 sessions that week
    assert sum(weeks.values()) == records["total"]
    starts = [w["start"] for w in stats["growth"]]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    assert stats["sync"] == {"remote": None}
    assert stats["recall"]["recorded"] is False


def test_stats_since_limits_growth_and_history(gm: Any, filled: Path) -> None:
    stats = json.loads(gm("stats", "--since", "2026-02-01", "--json").out)
    assert stats["records"]["total"] == 38  # always HEAD
    assert all(w["start"] >= "2026-01-26" for w in stats["growth"])
    assert sum(w["added"] for w in stats["growth"]) < 38


def test_stats_text_when_piped(gm: Any, filled: Path) -> None:
    done = gm("stats")
    assert done.code == 0
    assert "records   38 (36 active)" in done.out
    assert re.search(r"^  decision\s+3$", done.out, re.M)
    assert "by project:" in done.out and "no remote" in done.out
    assert "\x1b[" not in done.out  # no colour codes into a pipe


def test_stats_bad_since_is_a_usage_error(gm: Any, filled: Path) -> None:
    done = gm("stats", "--since", "last tuesday-ish")
    assert done.code == 2 and "not a time gitmem understands" in done.err


def _report(gm: Any, out: Path, *args: str) -> str:
    done = gm("report", "--html", str(out), *args)
    assert done.code == 0, done.err
    assert f"wrote {out}" in done.out
    return out.read_text(encoding="utf-8")


def test_report_is_self_contained_and_shows_the_numbers(
    gm: Any, filled: Path, tmp_path: Path
) -> None:
    page = _report(gm, tmp_path / "r.html")
    assert page.startswith("<!DOCTYPE html>")
    # Nothing to fetch: no scripts, no links, no remote URLs in attributes.
    assert "<script" not in page and "<link" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert re.search(r'id="n-records" data-value="38"', page)
    assert re.search(r'id="n-supersedes" data-value="2"', page)
    assert re.search(r'id="n-forgets" data-value="1"', page)
    for section in (
        "summary",
        "growth",
        "breakdown",
        "decisions",
        "sessions",
        "proposals",
        "health",
    ):
        assert f'<section id="{section}">' in page
    # The latest decision and the chain it replaced, newest first.
    decisions = page[page.index('id="decisions"') : page.index('id="sessions"')]
    assert "Use Postgres for the cache" in decisions
    assert decisions.index("Use SQLite with WAL") < decisions.index("Use SQLite for the cache")
    assert "Session 4: worked on the importer" in page
    assert "prefers-color-scheme: dark" in page and "@media print" in page


def test_report_escapes_what_records_say(gm: Any, store_path: Path, tmp_path: Path) -> None:
    assert gm("record", "decision", "x", "-t", "<script>alert(1)</script> & <b>bold</b>").code == 0
    page = _report(gm, tmp_path / "r.html")
    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b&gt;" in page


def test_report_of_an_empty_store_says_so(gm: Any, store_path: Path, tmp_path: Path) -> None:
    page = _report(gm, tmp_path / "r.html")
    assert 'data-value="0"' in page
    assert "Nothing to draw yet." in page and "No decisions recorded." in page


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("missing/dir/r.html", "does not exist; create it"),
        (".", "is a directory"),
        ("STORE/r.html", "inside the store"),
    ],
)
def test_report_refuses_bad_paths_and_writes_nothing(
    gm: Any, filled: Path, tmp_path: Path, where: str, message: str
) -> None:
    before = snapshot(filled)
    target = str(filled / "r.html") if where.startswith("STORE") else str(tmp_path / where)
    done = gm("report", "--html", target)
    assert done.code == 2 and message in done.err
    assert snapshot(filled) == before
    assert not (filled / "r.html").exists()


# --- in a real browser -----------------------------------------------------------------------


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI"):
        pytest.fail("no Chromium on this CI machine: .ci/run installs Debian's chromium")
    pytest.skip(
        "no Chromium here, so the report was not opened in a browser: "
        "install Debian's chromium (apt-get install chromium) to run this test"
    )


def _browse(page: Path, profile: Path, *, screenshot: Path | None = None) -> tuple[str, str]:
    """(the DOM after rendering, Chromium's log with the page's console messages)."""
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1200,2600",
    ]
    what = [f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
    done = subprocess.run(
        [_chromium(), *flags, *what, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def _console_messages(log: str) -> list[str]:
    return [line for line in log.splitlines() if "CONSOLE" in line]


def test_the_browser_check_sees_console_errors(tmp_path: Path) -> None:
    """The check below would fail on a page that logs errors or fetches what is missing."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><body><img src="missing.png">'
        '<script>console.error("broken on purpose")</script></body></html>',
        encoding="utf-8",
    )
    _, log = _browse(bad, tmp_path / "profile")
    assert any("broken on purpose" in line for line in _console_messages(log)), log[-2000:]


def test_report_renders_in_chromium(gm: Any, filled: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    _report(gm, out)
    dom, log = _browse(out, tmp_path / "profile")
    assert _console_messages(log) == []
    assert re.search(r'id="n-records" data-value="38"[^>]*>38<', dom)
    assert re.search(r'id="n-active" data-value="36"', dom)
    for chart in ("chart-type", "chart-agent"):
        assert re.search(rf'<svg id="{chart}"', dom)
    bars = re.findall(r'<rect class="s\d"', dom)
    assert len(bars) >= 6  # six weeks, each with at least one bar segment
    assert "Use Postgres for the cache" in dom
    shot = tmp_path / "report.png"
    _browse(out, tmp_path / "profile2", screenshot=shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


# --- the work graph, proposals and recall statistics (issues 19, 22) ---------------------------


@pytest.fixture
def working(gm: Any, filled: Path, tmp_path: Path) -> Path:
    """`filled`, plus an initiative with two tasks (one blocked by the other), two exact
    duplicates for gitmem sleep to propose merging, and two recalls."""
    project = make_project(tmp_path / "work")
    docs = project / "docs"
    docs.mkdir()
    (docs / "launch.md").write_text("---\ntype: initiative\nstatus: active\n---\n# Launch\n")
    (docs / "certs.md").write_text(
        "---\ntype: task\nstatus: todo\ninitiative: launch\n---\n# Renew the certs\n"
    )
    (docs / "deploy.md").write_text(
        "---\ntype: task\nstatus: blocked\ninitiative: launch\nblocked_by: certs\n---\n"
        "# Deploy v2\n"
    )
    done = gm("entity", "index-all", "--project-dir", str(project), "--json")
    assert json.loads(done.out)["new"] == 3, done.err
    text = "The staging database listens on port 6543, not the default 5432."
    for _ in range(2):
        assert gm("record", "fact", text, "-t", "Staging DB port").code == 0
    slept = gm("sleep", "--json")
    assert slept.code == 0, slept.err
    for query in ("staging database port", "cache layer note"):
        assert gm("recall", query).code == 0
    return filled


def test_stats_show_the_graph_proposals_and_recalls(gm: Any, working: Path) -> None:
    stats = json.loads(gm("stats", "--json").out)
    graph = stats["graph"]
    assert graph["entities"] == 3 and graph["blocked"] == 1 and graph["dangling"] == 0
    assert graph["by_type"] == {"task": 2, "initiative": 1}
    proposals = stats["proposals"]
    assert proposals["pending"] >= 1 and proposals["by_kind"].get("merge", 0) >= 1, proposals
    recall = stats["recall"]
    assert recall["recorded"] is True and recall["recalls"] == 2
    assert recall["top"] and all(n >= 1 for _, n in recall["top"])
    text = gm("stats").out
    assert "graph     3 entities, 1 blocked, 0 dangling edges" in text
    assert f"proposals {proposals['pending']} pending" in text


def test_report_shows_the_graph_with_blockers_and_the_proposals(
    gm: Any, working: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    page = _report(gm, out)
    graph = page[page.index('<section id="graph">') : page.index('<section id="sessions">')]
    assert re.search(r'id="n-entities" data-value="3"', graph)
    assert re.search(r'id="n-blocked" data-value="1"', graph)
    (row,) = re.findall(r'<tr class="blocked"[^>]*>.*?</tr>', graph)
    assert "Deploy v2" in row and "Renew the certs" in row
    tree = graph[graph.index('id="entity-tree"') :]
    assert "<b>Launch</b>" in tree and tree.index("Deploy v2") < tree.index("Renew the certs")
    proposals = page[page.index('<section id="proposals">') : page.index('<section id="health">')]
    pending = json.loads(gm("proposals", "--json").out)["proposals"]
    assert re.search(rf'id="n-proposals" data-value="{len(pending)}"', proposals)
    assert all(p["kind"] == "merge" for p in pending)  # the fixture's notes differ by a number
    # The strongest evidence first: the exact duplicate before the notes that differ.
    first = re.search(r'<tbody><tr data-id="([^"]+)">', proposals)
    (exact,) = [p for p in pending if p["titles"] == ["Staging DB port", "Staging DB port"]]
    assert first is not None and first.group(1) == exact["id"]
    assert 'id="top-recalled"' in page
    dom, log = _browse(out, tmp_path / "profile")
    assert _console_messages(log) == []
    assert re.search(r'<tr class="blocked" data-id="[^"]+"><td>Deploy v2</td>', dom)


def test_stats_and_report_show_a_remote_and_what_is_not_pushed(
    gm: Any, filled: Path, tmp_path: Path
) -> None:
    from conftest import git

    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    git(filled, "remote", "add", "origin", str(bare))
    assert gm("sync").code == 0
    synced = json.loads(gm("stats", "--json").out)["sync"]
    assert synced["remote"] == "origin" and synced["ahead"] == 0 and synced["behind"] == 0
    assert synced["last_sync"]
    assert gm("record", "fact", "Written after the sync.", "-t", "Unpushed fact").code == 0
    assert gm("record", "fact", "Also after it.", "-t", "Another unpushed fact").code == 0
    assert json.loads(gm("stats", "--json").out)["sync"]["ahead"] == 2
    assert "origin: 2 writes not pushed" in gm("stats").out
    page = _report(gm, tmp_path / "r.html")
    assert re.search(r'id="n-unpushed" data-value="2"', page)
    assert "origin: 2 write(s) not pushed, 0 " in page


def test_report_since_limits_sessions_and_growth_but_counts_all_of_head(
    gm: Any, filled: Path, tmp_path: Path
) -> None:
    whole = _report(gm, tmp_path / "all.html")
    later = _report(gm, tmp_path / "later.html", "--since", "2026-02-03")
    assert "Session 1: worked on the importer" in whole
    assert "Session 1: worked on the importer" not in later  # written 2026-02-02
    assert "Session 4: worked on the importer" in later
    assert re.search(r'id="n-records" data-value="38"', later)  # HEAD, whatever --since says
    assert "2026-01-05" in whole and "2026-01-05" not in later  # growth starts later


def test_stats_on_a_terminal_draws_tables(filled: Path) -> None:
    """On a terminal (a real pseudo-terminal, as a person's shell), the counts are rich tables;
    the same numbers as in a pipe."""
    import pty
    import sys

    leader, follower = pty.openpty()
    env = {**os.environ, "GITMEM_STORE": str(filled), "COLUMNS": "100", "TERM": "xterm"}
    done = subprocess.run(
        [sys.executable, "-m", "gitmem", "stats"],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
        timeout=120,
        check=False,
    )
    os.close(follower)
    chunks = []
    with contextlib.suppress(OSError):  # EIO once everything written has been read
        while chunk := os.read(leader, 65536):
            chunks.append(chunk)
    os.close(leader)
    shown = re.sub(r"\x1b\[[0-9;]*m", "", b"".join(chunks).decode("utf-8", "replace"))
    assert done.returncode == 0, done.stderr
    assert "by type" in shown and "by type:" not in shown  # a table's title, not the pipe's list
    assert re.search(r"[│┃|]\s*decision\s*[│┃|]\s*3\s*[│┃|]", shown), shown
    assert re.search(r"[─━]{5,}", shown)  # the table's rules
