"""Proposals and decisions travelling between two devices through `gitmem sync`: both devices
ran `gitmem sleep` before syncing, so each wrote the same proposal files with other `created`
stamps, and the sync merge meets two versions of each. A decision made on either device must
survive it (docs/consolidation.md, docs/sync.md). Real repositories: a bare remote and two
clones; no mocked git."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from conftest import Result, assert_clean, git
from sleepfixture import plant

from gitmem.consolidate.proposals import Proposal, dump_proposal, merge_choice, proposal_id
from gitmem.store.store import Store

Gm = Callable[..., Result]


def _json(gm: Gm, *args: str) -> dict[str, object]:
    done = gm(*args, "--json")
    assert done.code == 0, done.err
    answer = json.loads(done.out)
    assert isinstance(answer, dict)
    return answer


def _statuses(gm: Gm, store: Path) -> dict[str, str]:
    listed = _json(gm, "proposals", "--all", "--store", str(store))["proposals"]
    return {p["id"]: p["status"] for p in listed}  # type: ignore[union-attr]


def test_decisions_made_on_either_device_survive_a_sync_when_both_slept_first(
    tmp_path: Path, gm: Gm
) -> None:
    seed, _ = Store.init(tmp_path / "seed")
    truth = plant(seed)
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    assert gm("remote", "add", str(bare), "--store", str(seed.root)).code == 0
    assert gm("sync", "--store", str(seed.root)).code == 0
    a, b = tmp_path / "a", tmp_path / "b"
    for device in (a, b):
        assert gm("clone", str(bare), str(device)).code == 0

    on_a = _json(gm, "sleep", "--store", str(a))["proposed"]
    time.sleep(1.1)  # B's copies get a later `created` stamp: the same paths, other content
    on_b = _json(gm, "sleep", "--store", str(b))["proposed"]
    assert isinstance(on_a, list) and isinstance(on_b, list)
    assert [p["id"] for p in on_a] == [p["id"] for p in on_b] and len(on_a) >= 10
    assert all(x["created"] < y["created"] for x, y in zip(on_a, on_b, strict=True))

    merges = [p for p in on_a if p["kind"] == "merge"]
    both, only_b = merges[0], merges[1]  # `both`: rejected on A, accepted on B
    for p in on_a:
        if p["id"] != only_b["id"]:
            assert gm("decide", p["id"], "--reject", "--note", "no", "--store", str(a)).code == 0
    for p in (both, only_b):
        assert gm("decide", p["id"], "--accept", "--store", str(b)).code == 0

    assert gm("sync", "--store", str(a)).code == 0
    merged = gm("sync", "--store", str(b))
    assert merged.code == 0, merged.err
    assert gm("sync", "--store", str(a)).code == 0
    assert git(a, "rev-parse", "HEAD^{tree}") == git(b, "rev-parse", "HEAD^{tree}")

    accepted = {both["id"], only_b["id"]}
    expected = {p["id"]: "accepted" if p["id"] in accepted else "rejected" for p in on_a}
    for device in (a, b):
        assert _statuses(gm, device) == expected
        assert _json(gm, "proposals", "--store", str(device))["pending"] == 0
        again = _json(gm, "sleep", "--dry-run", "--store", str(device))
        # Nothing proposed again; the accepted merges' pairs are no longer found at all.
        assert again["proposed"] == [] and again["known"] == len(on_a) - len(accepted)
        opened = Store.open(device)
        for p in (both, only_b):
            (retired,) = set(p["records"]) - {p["keep"]}
            assert opened.get(retired).status == "superseded"
        assert {r.id for r in opened.records()} >= truth.clean  # rejections changed nothing
        assert_clean(device)
    # The merge says which version it kept and why.
    assert "rejected (" in merged.err and "beats pending" in merged.err
    assert "accepted beats rejected" in merged.err


def _version(status: str, created: str, decided: str = "") -> tuple[str, bytes]:
    records = ("rec-a", "rec-b")
    proposal = Proposal(
        proposal_id("merge", records), "merge", records, "alike", created, keep="rec-a"
    )
    if status != "pending":
        proposal = proposal.decided_as(status, decided, "", "someone")
    data = dump_proposal(proposal)
    return git_blob_id(data), data


def git_blob_id(data: bytes) -> str:
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def test_the_proposal_rule_prefers_a_decision_and_is_the_same_in_any_order() -> None:
    path = f"proposals/{proposal_id('merge', ('rec-a', 'rec-b'))}.json"
    early = _version("pending", "2026-01-01T00:00:00Z")
    late = _version("pending", "2026-01-02T00:00:00Z")
    rejected = _version("rejected", "2026-01-02T00:00:00Z", "2026-01-05T00:00:00Z")
    rejected_later = _version("rejected", "2026-01-01T00:00:00Z", "2026-01-06T00:00:00Z")
    accepted = _version("accepted", "2026-01-01T00:00:00Z", "2026-01-03T00:00:00Z")
    cases = [
        ((early, late), early),
        ((early, rejected), rejected),
        ((late, accepted), accepted),
        ((rejected, rejected_later), rejected_later),
        ((rejected_later, accepted), accepted),
    ]
    for pair, winner in cases:
        for order in (pair, pair[::-1]):
            chosen = merge_choice(path, list(order))
            assert chosen is not None and chosen[0] == winner[0], (order, chosen)
    broken = (git_blob_id(b"{"), b"{")
    assert merge_choice(path, [early, broken]) is None  # left to the plain file rule
