"""`gitmem sleep`, `proposals`, `decide` and `feedback` as a user runs them, on real stores with
planted duplicates, contradictions, stale records and clean ones (tests/sleepfixture.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import Result, assert_clean, git, set_model, snapshot
from sleepfixture import NOW, Planted, plant, score
from tinymodel import build_tiny_model

from gitmem.consolidate.recallstats import LOG_NAME, note_recall, read_stats
from gitmem.consolidate.similarity import Budget, near_duplicates, similar_sets, words
from gitmem.store.config import DEFAULT_MODEL
from gitmem.store.record import Record
from gitmem.store.store import Store

Gm = Callable[..., Result]


@pytest.fixture
def planted(store_path: Path) -> Planted:
    """The planted store, keyword-only: these tests hold the word pass to its measured truth
    (benchmarks/sleep_truth.py); test_with_a_model_the_pass_also_compares_meaning runs the
    product's default model."""
    set_model(store_path, "none")
    return plant(Store.open(store_path))


def _sleep(gm: Gm, *args: str) -> dict[str, object]:
    done = gm("sleep", "--json", *args)
    assert done.code == 0, done.err
    answer = json.loads(done.out)
    assert isinstance(answer, dict)
    return answer


def _unstamped(proposal: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in proposal.items() if k != "created"}


def test_sleep_proposes_the_planted_truth_and_leaves_clean_records_alone(
    store_path: Path, planted: Planted, gm: Gm
) -> None:
    head = git(store_path, "rev-parse", "HEAD")
    dry = _sleep(gm, "--dry-run")
    assert git(store_path, "rev-parse", "HEAD") == head  # a dry run writes nothing
    assert not (store_path / ".gitmem" / "sleep-report.txt").exists()
    answer = _sleep(gm)
    proposed = answer["proposed"]
    assert isinstance(proposed, list) and isinstance(dry["proposed"], list)
    # The dry run proposes the same; only the wall-clock stamp may differ (the runs can
    # straddle a second).
    assert [_unstamped(p) for p in proposed] == [_unstamped(p) for p in dry["proposed"]]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", p["created"]) for p in proposed)
    # Measured over 30 plantings (benchmarks/sleep_truth.py): every planted duplicate found,
    # no proposal wrong; the texts are fixed, only the ids' random ends change.
    got = score(proposed, planted)
    assert got.clean_named == frozenset(), got
    assert (got.duplicates, got.wrong) == (got.planted, 0), got
    kinds = {p["kind"] for p in proposed}
    assert {"merge", "supersede", "archive"} <= kinds
    stale = {p["records"][0] for p in proposed if p["kind"] == "archive"}
    assert stale == planted.stale
    assert_clean(store_path)
    report = (store_path / ".gitmem" / "sleep-report.txt").read_text()
    assert report.startswith(f"gitmem sleep: scanned {answer['scanned']} records")
    assert f"proposed {len(proposed)}" in report.splitlines()[0]
    # One commit holds every proposal, a file each under proposals/, outside records/.
    assert git(store_path, "log", "-1", "--format=%s").startswith(
        f"sleep: {len(proposed)} proposals"
    )
    files = git(store_path, "ls-files", "proposals").split()
    assert len(files) == len(proposed)
    listed = json.loads(gm("proposals", "--json").out)
    assert listed["pending"] == len(proposed)
    # Proposals never reach recall.
    hits = json.loads(gm("recall", "near-duplicates", "--json").out)
    assert all(not h["path"].startswith("proposals/") for h in hits["hits"])
    # Found again, nothing is proposed twice.
    again = _sleep(gm)
    assert again["proposed"] == [] and again["known"] == len(proposed)
    assert git(store_path, "rev-parse", "HEAD") != head


def test_accepting_is_one_commit_naming_the_proposal_and_rejecting_is_remembered_everywhere(
    store_path: Path, planted: Planted, gm: Gm, tmp_path: Path
) -> None:
    proposed = _sleep(gm)["proposed"]
    assert isinstance(proposed, list)
    merge = next(p for p in proposed if p["kind"] == "merge")
    supersede = next(p for p in proposed if p["kind"] == "supersede")
    before = git(store_path, "rev-parse", "HEAD").strip()
    done = gm("decide", merge["id"][:6], "--accept", "--note", "same fact", "--json")
    assert done.code == 0, done.err
    decision = json.loads(done.out)
    assert decision["proposal"]["status"] == "accepted"
    assert git(store_path, "rev-list", "--count", f"{before}..HEAD") == "1\n"
    message = git(store_path, "log", "-1", "--format=%B")
    assert f"Gitmem-Proposal: {merge['id']}" in message and "same fact" in message
    kept = Store.open(store_path).get(merge["keep"])
    (retired_id,) = set(merge["records"]) - {merge["keep"]}
    retired = Store.open(store_path).get(retired_id)
    assert retired.status == "superseded" and retired.superseded_by == kept.id
    assert retired_id in kept.supersedes
    assert_clean(store_path)
    # Reverting the one commit undoes the decision whole.
    git(store_path, "revert", "--no-edit", "HEAD")
    assert Store.open(store_path).get(retired_id).status == "active"
    git(store_path, "reset", "-q", "--hard", "HEAD~1")

    assert gm("decide", supersede["id"], "--reject", "--note", "both hold").code == 0
    refused = gm("decide", supersede["id"], "--accept")
    assert refused.code == 1 and "already rejected" in refused.err
    # Another device (a clone) knows the rejection and does not propose it again.
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(store_path), str(other))
    again = _sleep(gm, "--store", str(other))
    ids = {p["id"] for p in again["proposed"]}  # type: ignore[union-attr]
    assert supersede["id"] not in ids and merge["id"] not in ids
    listed = json.loads(gm("proposals", "--all", "--json", "--store", str(other)).out)
    states = {p["id"]: p["status"] for p in listed["proposals"]}
    assert states[supersede["id"]] == "rejected" and states[merge["id"]] == "accepted"


def _texts(store_path: Path) -> dict[str, str]:
    return {r.id: r.body for r in Store.open(store_path).records()}


def test_no_record_text_leaves_head_without_an_accepted_proposal(
    store_path: Path, planted: Planted, gm: Gm
) -> None:
    cache = store_path / ".gitmem"
    clean = sorted(planted.clean)
    for _ in range(3):  # two clean records recalled together: linked unattended
        note_recall(cache, [clean[0], clean[1]])
    start = _texts(store_path)
    answer = _sleep(gm)
    assert any("link" in line for line in answer["done"])  # type: ignore[union-attr]
    after = _texts(store_path)
    assert all(after.get(rid) == body for rid, body in start.items())
    accepted: set[str] = set()
    for p in answer["proposed"]:  # type: ignore[union-attr]
        assert gm("decide", p["id"], "--accept").code == 0
        if p["kind"] == "archive":
            accepted.update(p["records"])
    final = _texts(store_path)
    gone = {rid for rid in start if rid not in final}
    assert gone == accepted == planted.stale
    # Superseded and merged records keep their text in HEAD.
    assert all(final[rid] == body for rid, body in start.items() if rid not in gone)
    assert_clean(store_path)


def test_unattended_changes_are_safe_and_each_its_own_commit(
    store_path: Path, planted: Planted, gm: Gm
) -> None:
    cache = store_path / ".gitmem"
    clean = sorted(planted.clean)
    low = sorted(planted.stale)[0]
    for _ in range(3):
        note_recall(cache, [clean[0], clean[1]])
    for _ in range(5):
        note_recall(cache, [low])
    before = git(store_path, "rev-parse", "HEAD").strip()
    answer = _sleep(gm)
    log = git(store_path, "log", "--format=%s", f"{before}..HEAD").splitlines()
    assert sorted(log[1:]) == [
        f"sleep: link {clean[0]} to {clean[1]}",
        f"sleep: weight of {low} 0.3 -> 1",
    ]
    assert len(log) == 3 and "proposal" in log[0]  # each change its own commit, then proposals
    opened = Store.open(store_path)
    assert clean[1] in opened.get(clean[0]).links
    assert opened.get(low).weight == 1.0
    archived = {p["records"][0] for p in answer["proposed"] if p["kind"] == "archive"}  # type: ignore[union-attr]
    assert low not in archived  # recalled: not stale
    assert len(answer["commits"]) == 3  # type: ignore[arg-type]
    assert _sleep(gm)["done"] == []  # done once


def test_feedback_moves_a_weight_one_step_within_bounds_and_says_so_in_git(
    store_path: Path, planted: Planted, gm: Gm
) -> None:
    rid = sorted(planted.clean)[0]
    weights = []
    for _ in range(8):
        done = gm("feedback", rid, "--useful", "--json")
        assert done.code == 0, done.err
        weights.append(json.loads(done.out)["weight"])
    assert weights[:2] == [1.25, 1.562] and max(weights) == 4.0 == weights[-1]
    assert json.loads(gm("feedback", rid, "--useful", "--json").out)["commit"] is None
    assert "Gitmem-Feedback: useful" in git(store_path, "log", "-1", "--format=%B")
    for _ in range(14):  # 4 / 1.25 ** 13 < 0.25: the floor holds it
        assert gm("feedback", rid, "--not-useful").code == 0
    assert Store.open(store_path).get(rid).weight == 0.25
    assert_clean(store_path)


def test_bad_input_is_refused_with_the_next_step_and_nothing_written(
    store_path: Path, planted: Planted, gm: Gm
) -> None:
    _sleep(gm)
    state = snapshot(store_path)
    missing = gm("decide", "p-nothing", "--accept")
    assert missing.code == 1 and '"gitmem proposals"' in missing.err
    both = gm("decide", "p-", "--accept", "--reject")
    assert both.code == 2 and "--accept or --reject" in both.err
    neither = gm("feedback", sorted(planted.clean)[0])
    assert neither.code == 2 and "--useful or --not-useful" in neither.err
    nobody = gm("feedback", "no-such-record", "--useful")
    assert nobody.code == 1 and "gitmem list" in nobody.err
    assert snapshot(store_path) == state
    config = store_path / "config.toml"
    config.write_text(config.read_text() + "\n[sleep]\nduplicate_jaccard = -1\n")
    git(store_path, "commit", "-qam", "a bad threshold")
    state = snapshot(store_path)
    bad = gm("sleep")
    assert bad.code == 2 and "sleep.duplicate_jaccard" in bad.err
    assert snapshot(store_path) == state


def test_a_proposal_whose_records_changed_is_refused_not_applied(
    store_path: Path, planted: Planted, gm: Gm
) -> None:
    proposed = _sleep(gm)["proposed"]
    merge = next(p for p in proposed if p["kind"] == "merge")  # type: ignore[union-attr]
    assert gm("forget", merge["records"][0], "--reason", "by hand").code == 0
    state = snapshot(store_path)
    done = gm("decide", merge["id"], "--accept")
    assert done.code == 1 and "--reject" in done.err
    assert snapshot(store_path) == state


def test_recall_statistics_live_in_the_cache_and_make_no_commit(
    store_path: Path, planted: Planted, gm: Gm
) -> None:
    head = git(store_path, "rev-parse", "HEAD")
    assert gm("recall", "staging database port").code == 0
    assert gm("recall", "webhook backoff").code == 0
    assert git(store_path, "rev-parse", "HEAD") == head
    stats = read_stats(store_path / ".gitmem")
    assert stats.recalls == 2 and stats.count
    assert (store_path / ".gitmem" / LOG_NAME).read_text().count("\n") == 2
    assert_clean(store_path)


def _record(rid: str, title: str, body: str) -> Record:
    return Record(rid, "fact", title, body, NOW, NOW)


def test_near_duplicates_joins_on_words_and_on_meaning() -> None:
    one = _record("a", "Port", "The staging database listens on port 5433")
    two = _record("b", "Port", "On port 5433 the staging database listens")
    three = _record("c", "Queue", "Jobs run on Redis streams")
    pairs = near_duplicates([one, two, three], threshold=0.6)
    assert [(p.a, p.b) for p in pairs] == [("a", "b")]
    assert words("Listening databases") == {"listen", "databas"}
    meaning = near_duplicates(
        [one, three],
        threshold=0.99,
        cosine=0.9,
        neighbours=lambda r: [("c" if r.id == "a" else "a", 0.95), (r.id, 1.0)],
    )
    assert [(p.a, p.b, p.cosine) for p in meaning] == [("a", "c", 0.95)]


@pytest.mark.parametrize("model", ["tiny", DEFAULT_MODEL])
def test_with_a_model_the_pass_also_compares_meaning(
    store_path: Path, planted: Planted, gm: Gm, tmp_path: Path, model: str
) -> None:
    if model == "tiny":
        build_tiny_model(tmp_path / "tiny")
        model = str(tmp_path / "tiny")
    set_model(store_path, model)
    answer = _sleep(gm)
    assert answer["semantic"] is True
    proposed = answer["proposed"]
    assert isinstance(proposed, list)
    got = score([p for p in proposed if p["kind"] != "link"], planted)
    assert got.found >= 0.9 and got.wrong_share <= 0.1, got
    assert any("cosine" in p["evidence"] for p in proposed if p["kind"] == "merge")


def test_mcp_tools_answer_as_the_cli_does(store_path: Path, planted: Planted, gm: Gm) -> None:
    from test_mcp import call

    from gitmem.api import Store as ApiStore
    from gitmem.mcp_server import build_server

    server = build_server(ApiStore.open(store_path), agent="mcp-agent")
    dry = call(server, "sleep", {})
    assert dry["dry_run"] is True and git(store_path, "ls-files", "proposals") == ""
    cli_dry = _sleep(gm, "--dry-run")
    strip = lambda answer: [{**p, "created": ""} for p in answer["proposed"]]  # noqa: E731
    assert strip(dry) == strip(cli_dry)
    _sleep(gm)
    listed = call(server, "proposals", {})
    assert listed == json.loads(gm("proposals", "--json").out)
    first = listed["proposals"][0]
    made = call(server, "decide", {"id": first["id"], "accept": False, "note": "not now"})
    assert made["proposal"]["status"] == "rejected" and made["proposal"]["by"] == "mcp-agent"
    again = call(server, "decide", {"id": first["id"], "accept": True})
    assert "already rejected" in again["error"]
    rid = sorted(planted.clean)[0]
    assert call(server, "feedback", {"id": rid, "useful": True})["weight"] == 1.25


def test_session_start_context_mentions_waiting_proposals_within_its_budget(
    store_path: Path, planted: Planted, gm: Gm
) -> None:
    assert "gitmem sleep" not in gm("context").out
    waiting = len(_sleep(gm)["proposed"])  # type: ignore[arg-type]
    block = gm("context").out
    assert f"{waiting} proposals from gitmem sleep wait for review" in block
    small = gm("context", "--budget", "300").out
    assert len(small.rstrip("\n").encode()) <= 300
    first = json.loads(gm("proposals", "--json").out)["proposals"][0]["id"]
    assert gm("decide", first, "--reject").code == 0
    assert f"{waiting - 1} proposals from gitmem sleep" in gm("context").out


def test_records_gitmem_writes_itself_are_left_to_their_commands(
    gm: Callable[..., Result], store_path: Path, tmp_path: Path
) -> None:
    """Entities mirror their files, messages and tasks are coordination, session records are
    the hooks' log: sleep proposes nothing about them, even when they are word for word alike."""
    from hookkit import make_project

    from gitmem.consolidate.scan import SESSION_TAG, WRITTEN_BY_GITMEM
    from gitmem.coord.sessiontag import SESSION_TAG as COORD_SESSION_TAG

    assert SESSION_TAG == COORD_SESSION_TAG
    project = make_project(tmp_path / "work")
    (project / "docs").mkdir()
    for name in ("a", "b"):
        (project / "docs" / f"{name}.md").write_text(
            "---\ntype: task\nstatus: todo\n---\n# Renew the certs\n\nRenew the TLS certs.\n"
        )
    assert gm("entity", "index-all", "--project-dir", str(project)).code == 0
    for _ in range(2):
        assert gm("task", "start", "Renew the TLS certificates before Friday").code == 0
        assert gm("send", "bob", "info", "The certificates expire on Friday").code == 0
        assert gm("log", "fixed", "Fixed the certificate renewal job").code == 0
        assert gm("record", "fact", "Certificates renew on Fridays.", "-t", "Cert day").code == 0
    done = gm("sleep", "--dry-run", "--json")
    assert done.code == 0, done.err
    proposed = json.loads(done.out)["proposed"]
    named = {rid for p in proposed for rid in p["records"]}
    kinds = {Store.open(store_path).get(rid).type for rid in named}
    assert [p["kind"] for p in proposed] == ["merge"] and kinds == {"fact"}, proposed
    assert {"entity", "message", "task"} == WRITTEN_BY_GITMEM


def _pairs(proposed: object, kind: str) -> set[frozenset[str]]:
    assert isinstance(proposed, list)
    return {frozenset(p["records"]) for p in proposed if p["kind"] == kind}


def test_since_looks_only_at_pairs_with_a_record_written_since_then(
    store_path: Path, planted: Planted, gm: Gm
) -> None:
    """The planted pairs' newer records are 25 (paraphrases), 27 (exact copies) and 30 days
    old (contradictions); stale records are looked for in the whole store either way."""
    updated = {r.id: r.updated for r in Store.open(store_path).records()}
    cut = NOW - timedelta(days=26)
    recent = {pair for pair in planted.duplicates if max(updated[i] for i in pair) >= cut}
    assert len(recent) == 4  # the paraphrased pairs
    answer = _sleep(gm, "--dry-run", "--since", "26d")
    assert _pairs(answer["proposed"], "merge") == recent
    assert _pairs(answer["proposed"], "supersede") == set()
    assert {i for pair in _pairs(answer["proposed"], "archive") for i in pair} == planted.stale

    assert _pairs(_sleep(gm, "--dry-run", "--since", "1d")["proposed"], "merge") == set()
    clean = next(r for r in Store.open(store_path).records() if r.id in planted.clean)
    done = gm("record", clean.type, clean.body, "--title", clean.title, "--json")
    assert done.code == 0, done.err
    (copy,) = json.loads(done.out)["ids"]
    today = _sleep(gm, "--dry-run", "--since", "1d")
    assert _pairs(today["proposed"], "merge") == {frozenset((clean.id, copy))}
    everything = _sleep(gm, "--dry-run")
    assert _pairs(everything["proposed"], "merge") == {
        *planted.duplicates,
        frozenset((clean.id, copy)),
    }


def test_a_heavier_stale_record_is_demoted_once_the_recall_log_covers_stale_days(
    store_path: Path, planted: Planted, gm: Gm
) -> None:
    store = Store.open(store_path)
    old = NOW - timedelta(days=400)
    heavy = store.record(
        "fact", "The build farm has 12 ARM runners.", title="Build farm", weight=2.0, now=old
    )
    recalled = store.record(
        "fact",
        "Nightly exports land in the analytics bucket.",
        title="Exports",
        weight=2.0,
        now=old,
    )
    cache = store_path / ".gitmem"
    note_recall(cache, [recalled.record.id])  # recalled today: the log covers no time yet

    def demotions() -> list[dict[str, object]]:
        proposed = _sleep(gm, "--dry-run")["proposed"]
        assert isinstance(proposed, list)
        # The planted stale records are light: archived, never demoted.
        archived = {p["records"][0] for p in proposed if p["kind"] == "archive"}
        assert archived == planted.stale
        return [p for p in proposed if p["kind"] == "demote"]

    assert demotions() == []  # not enough recall statistics to call it unrecalled
    note_recall(cache, [sorted(planted.clean)[0]], when=(NOW - timedelta(days=200)).timestamp())
    (demote,) = demotions()  # the recalled one is not stale
    assert demote["records"] == [heavy.record.id]
    assert demote["weight"] == 0.5  # halved, but not below stale_weight (0.5)
    assert demote["evidence"]["logged_days"] >= 200  # type: ignore[index]
    _sleep(gm)
    assert gm("decide", demote["id"], "--accept").code == 0  # type: ignore[arg-type]
    assert Store.open(store_path).get(heavy.record.id).weight == 0.5
    # Decided: not proposed again (and accepting it updated the record: not stale now).
    assert _sleep(gm, "--dry-run")["proposed"] == []
    assert_clean(store_path)


def test_a_threshold_in_config_changes_what_is_found(
    store_path: Path, planted: Planted, gm: Gm
) -> None:
    bodies = {r.id: r.body for r in Store.open(store_path).records()}
    exact = {pair for pair in planted.duplicates if len({bodies[i] for i in pair}) == 1}
    assert len(exact) == 5
    assert _pairs(_sleep(gm, "--dry-run")["proposed"], "merge") == planted.duplicates
    config = store_path / "config.toml"
    config.write_text(config.read_text() + "\n[sleep]\nduplicate_jaccard = 0.95\n")
    git(store_path, "commit", "-qam", "only near-identical texts are duplicates")
    strict = _sleep(gm, "--dry-run")["proposed"]
    assert _pairs(strict, "merge") == exact  # the paraphrases fall below 0.95
    assert not any(ids & planted.clean for ids in _pairs(strict, "supersede"))


def test_a_join_stops_within_its_budget_and_keeps_what_it_found() -> None:
    """Forty copies of one text make 780 alike pairs; a budget of 25 keeps 25, exact ones."""
    sets = {
        f"r{i:02d}": words("Deploy the billing worker with the blue green script")
        for i in range(40)
    }
    budget = Budget(comparisons=10**6, pairs=25)
    pairs = list(similar_sets(sets, 0.6, budget))
    assert len(pairs) == 25 and budget.stopped and all(score == 1.0 for *_, score in pairs)
    scored = Budget(comparisons=100, pairs=10**6)
    assert len(list(similar_sets(sets, 0.6, scored))) == 100 and scored.stopped
    whole = Budget(comparisons=10**6, pairs=10**6)
    assert len(list(similar_sets(sets, 0.6, whole))) == 780 and not whole.stopped
    exact = Budget(comparisons=780, pairs=780)  # exactly enough: found whole, not stopped
    assert len(list(similar_sets(sets, 0.6, exact))) == 780 and not exact.stopped


def test_a_templated_store_stops_early_and_says_so(gm: Gm, store_path: Path) -> None:
    """Records written from one template are all alike: the pass keeps to its budget, proposes
    at most max_proposals and tells the person why it stopped and what to change."""
    config = store_path / "config.toml"
    config.write_text(config.read_text() + "\n[sleep]\nmax_pairs = 30\n")
    template = "Nightly report for the billing service: all checks passed, no incidents."
    items = [
        {
            "id": f"nightly-report-{i:02d}",
            "type": "fact",
            "title": f"Nightly report {i}",
            "body": f"{template} Run {i}.",
            "created": "2026-11-01T06:00:00Z",
        }
        for i in range(30)
    ]
    source = store_path.parent / "nightly.jsonl"
    source.write_text("".join(json.dumps(item) + "\n" for item in items))
    assert gm("import", str(source)).code == 0
    answer = _sleep(gm, "--dry-run")
    assert answer["stopped"] is True
    proposed = answer["proposed"]
    assert isinstance(proposed, list) and 0 < len(proposed) <= 50
    assert "stopped early" in str(answer["report"]) and "sleep.duplicate_jaccard" in str(
        answer["report"]
    )
    again = _sleep(gm, "--dry-run")
    assert [_unstamped(p) for p in again["proposed"]] == [_unstamped(p) for p in proposed]
