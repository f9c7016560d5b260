"""`--as-of` ranks with context and the source prior as they stood then (issue 21): a recall as
of a commit answers as a clone checked out at that commit recalls at its HEAD."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from test_context import NOW, PLAIN, QUERIES, START, fill
from test_index import tiny, tiny_model_dir  # noqa: F401  (a fixture)

from gitmem.api import Store
from gitmem.index.index import Index
from gitmem.recall.moment import MomentIndex
from gitmem.recall.pastcontext import PastText
from gitmem.recall.recall import DEFAULTS, Result
from gitmem.store.record import format_time

PRIOR_ONLY = replace(DEFAULTS, context_weight=0.0)


def _later_turn(store: Store) -> str:
    """A turn recorded later but dated between the first two of session 1: the first turn
    (the bicycle) leaves the third's window (±2 in the source's order)."""
    at = START + timedelta(minutes=1, seconds=30)
    return store.record(
        "fact", "A helmet came with it", title="turn 0b", agent="a", source="session:1", now=at
    ).record.id


@pytest.fixture
def talk(store_path: Path, tiny_model_dir: Path) -> tuple[Store, dict[str, list[str]], str, str]:  # noqa: F811
    """The conversation of test_context, its commit, then a later turn (a second later)."""
    store = Store.open(store_path)
    store.use_model(tiny(tiny_model_dir))
    ids = fill(store)
    earlier = store.head()
    assert earlier is not None
    time.sleep(1.1)  # commit times have seconds: the later turn's is after the earlier commit's
    ids["later"] = [_later_turn(store)]
    return store, ids, earlier, str(store.head())


def _ids(result: Result) -> list[str]:
    return [h.id for h in result.hits]


def test_as_of_finds_a_turn_through_its_neighbours_as_they_were(
    talk: tuple[Store, dict[str, list[str]], str, str],
) -> None:
    store, ids, earlier, _ = talk
    turns = ids["session:1"]
    now = store.recall("bicycle", mode="keyword", now=NOW)
    assert turns[2] not in _ids(now)  # the later turn pushed the bicycle out of its window
    assert set(_ids(now)) == {turns[0], ids["later"][0], turns[1]}
    moment = store.time_travel().moment(earlier).time
    for when in (earlier, format_time(moment)):  # the commit, and the moment it was written
        then = store.recall("bicycle", mode="keyword", now=NOW, as_of=when)
        assert _ids(then)[0] == turns[0]
        assert set(_ids(then)) == {turns[0], turns[1], turns[2]}
        # Without context, only the turn that names the bicycle, then as now.
        plain = store.recall("bicycle", mode="keyword", now=NOW, as_of=when, options=PLAIN)
        assert _ids(plain) == [turns[0]]


@pytest.mark.parametrize("indexed", [False, True], ids=["embedded", "copied"])
def test_as_of_a_commit_equals_a_clone_checked_out_at_it(
    talk: tuple[Store, dict[str, list[str]], str, str],
    tmp_path: Path,
    tiny_model_dir: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    indexed: bool,
) -> None:
    store, ids, earlier, _ = talk
    store.supersede(ids["session:2"][0], "The garden is bare", title="turn 0", source="session:2")
    store.forget(ids["session:3"][1], reason="wrong")
    middle = str(store.head())
    store.record("fact", "A tandem race on the harbour", title="x", agent="a", source="session:3")
    copied: list[int] = []
    if indexed:  # HEAD's index first: the versions it holds have their vectors copied from it
        store.index()
        real = Index.vectors_of

        def counted(index: Index, blobs: Any) -> Any:
            found = real(index, blobs)
            copied.append(len(found[1]))  # vector rows copied
            return found

        monkeypatch.setattr(Index, "vectors_of", counted)
    for commit in (earlier, middle):
        there = tmp_path / f"clone-{commit[:8]}"
        subprocess.run(["git", "clone", "-q", str(store.root), str(there)], check=True)
        subprocess.run(["git", "reset", "-q", "--hard", commit], cwd=there, check=True)
        clone = Store.open(there)
        clone.use_model(tiny(tiny_model_dir))
        when = store.time_travel().moment(commit).time
        compared = 0
        for options in (DEFAULTS, PLAIN, PRIOR_ONLY):
            for mode in ("keyword", "hybrid"):
                for q in QUERIES:
                    past = store.recall(q, mode=mode, now=NOW, as_of=commit, options=options)
                    head = clone.recall(q, mode=mode, now=when, options=options)
                    assert _ids(past) == _ids(head), (commit, q, mode, options)
                    assert [h.score for h in past.hits] == pytest.approx(
                        [h.score for h in head.hits], rel=1e-5
                    )
                    assert [h.prior for h in past.hits] == pytest.approx(
                        [h.prior for h in head.hits]
                    )
                    compared += len(past.hits)
        assert compared > 50  # the queries find something in either tree
    assert bool(copied) == indexed and all(copied)


def test_explain_as_of_shows_the_context_share_and_the_prior(
    talk: tuple[Store, dict[str, list[str]], str, str],
    gm: Callable[..., Any],
) -> None:
    _, ids, earlier, _ = talk
    shown = gm("recall", "bicycle", "--mode", "keyword", "--explain", "--as-of", earlier).out
    everything = shown.splitlines()
    lines = [line for line in everything if "bm25 " in line]
    assert len(lines) == 3  # the turn that names it and its two turns after, as they were
    named = [everything[everything.index(line) - 1] for line in lines]  # each hit's own line
    assert ids["session:1"][0] in named[0]
    assert {ids["session:1"][1], ids["session:1"][2]} == {
        rid for rid in ids["session:1"] if any(rid in line for line in named[1:])
    }
    own = lines[0].split("bm25 ")[1].split(",")[0]
    assert "context 0.000" in lines[0] and float(own) > 0
    for line in lines[1:]:
        bm25, context = line.split("bm25 ")[1].split(")")[0].split(", context ")
        assert float(bm25) == pytest.approx(float(context)) and float(context) > 0
    assert all("prior ×1.500" in line for line in lines)


def test_a_view_keeps_no_index_on_disk_once_dropped(
    talk: tuple[Store, dict[str, list[str]], str, str],
) -> None:
    """A view as of a commit indexes its own records in a temporary directory; a view at a
    moment searches the span index (gitmem.recall.spans) and makes none."""
    store, _, earlier, _ = talk
    travel = store.time_travel()
    commits = git(store.root, "rev-list", "-7", "HEAD").split()[1:]
    roots: list[Path] = []
    for commit in commits:  # more views than are kept in memory, each with its keyword index
        store.recall("bicycle", mode="keyword", now=NOW, as_of=commit)
        past = travel._past(travel.moment(commit))
        assert isinstance(past._past_text, PastText)
        roots.append(past._past_text.root)
    assert all(r.is_dir() for r in roots[2:])  # the four kept
    assert not any(r.exists() for r in roots[:2])  # the two dropped, removed with them
    moment = travel.moment(earlier).time  # a second before the later turn
    store.recall("bicycle", mode="keyword", now=NOW, as_of=moment)
    assert isinstance(travel._past(travel.moment(moment)), MomentIndex)
