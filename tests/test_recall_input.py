"""What recall refuses, and how: through the CLI (flags and --batch lines), the fast path and
the Python API alike. A refused recall names the problem, exits 2 and prints no result."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

import pytest
from conftest import Result, git
from test_index import fill

from gitmem.api import Store
from gitmem.errors import UsageError
from gitmem.index.entries import Filter


@pytest.fixture
def filled(store_path: Path) -> Path:
    fill(Store.open(store_path))
    return store_path


DATED = [  # created on fixed days, so that no test depends on today's date
    {"id": "march-first-aaaaaa", "type": "fact", "title": "Deploy freeze one",
     "body": "Deploy freeze on March 1st.", "created": "2026-03-01T00:00:00Z"},
    {"id": "march-first-late-bbbbbb", "type": "fact", "title": "Deploy freeze two",
     "body": "Deploy freeze, late on March 1st.", "created": "2026-03-01T23:59:59Z"},
    {"id": "march-second-cccccc", "type": "fact", "title": "Deploy freeze three",
     "body": "Deploy freeze on March 2nd.", "created": "2026-03-02T00:00:00Z"},
]  # fmt: skip


@pytest.fixture
def dated(store_path: Path) -> Path:
    Store.open(store_path).import_records(DATED, agent="test")
    return store_path


def titles(result: Result) -> list[str]:
    assert result.code == 0, result.err
    return sorted(hit["title"] for hit in json.loads(result.out)["hits"])


@pytest.mark.parametrize(
    ("span", "found"),
    [
        (["--since", "2026-03-01", "--until", "2026-03-01"], ["one", "two"]),  # the whole day
        (["--until", "2026-03-02"], ["one", "three", "two"]),
        (["--until", "2026-02-28"], []),
        (["--since", "2026-03-01T12:00:00Z", "--until", "2026-03-02T00:00:00Z"], ["three", "two"]),
        (["--until", "2026-03-01T23:59:58Z"], ["one"]),  # a time is that very second
        (["--since", "2026-03-02"], ["three"]),
    ],
)
def test_until_a_bare_date_includes_that_day(
    dated: Path, gm: Callable[..., Result], span: list[str], found: list[str]
) -> None:
    result = gm("recall", "deploy freeze", "--json", *span)
    assert titles(result) == [f"Deploy freeze {word}" for word in found]


def test_until_today_and_yesterday_end_their_day() -> None:
    from gitmem.recall.options import recall_options

    for word, back in (("today", 0), ("yesterday", 1)):
        before = datetime.now(UTC)
        until = recall_options({"until": word}, {}).filter.until
        after = datetime.now(UTC)
        ends = {  # the day's last second, by the clock before or after (midnight between)
            int(datetime.combine(moment.date() - timedelta(days=back - 1), time(), UTC).timestamp())
            - 1
            for moment in (before, after)
        }
        assert until in ends


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["--since", "2026-12-05", "--until", "2026-11-01"],
            "since (2026-12-05T00:00:00Z) is after",
        ),
        (
            ["--type", "nosuchtype"],
            "no record type nosuchtype in this store; its types are context,",
        ),
        (["--type", "fact,nosuch"], "no record type nosuch in this store"),
        (["--scope", "weird"], 'scope must be one of shared, agent, private, not "weird"'),
    ],
)
def test_a_filter_that_could_match_nothing_is_refused(
    filled: Path, gm: Callable[..., Result], args: list[str], said: str
) -> None:
    result = gm("recall", "friday deploy", *args)
    assert (result.code, result.out) == (2, "")
    assert said in result.err and len(result.err.strip().splitlines()) == 1


def test_a_bad_decay_window_names_the_variable(
    filled: Path, gm: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITMEM_DECAY_WINDOW", "abc")
    result = gm("recall", "friday deploy")
    assert result.code == 2 and "GITMEM_DECAY_WINDOW='abc'" in result.err
    monkeypatch.setenv("GITMEM_DECAY_WINDOW", "off")
    assert gm("recall", "friday deploy").code == 0


BAD_LINES = [
    ("not json", "line 3: not JSON (Expecting value); nothing was searched"),
    ('["friday"]', 'line 3: each line is an object, {"query": "...", ...}'),
    ('{"query": ""}', 'line 3: needs a "query" with some text in it'),
    ('{"limit": 2}', 'line 3: needs a "query" with some text in it'),
    ('{"query": "job", "type": 5}', "line 3: type must be a name or a list of names, not 5"),
    ('{"query": "job", "limit": 0}', "line 3: limit must be between 1 and 1000, not 0"),
    ('{"query": "job", "limit": false}', "line 3: limit must be a whole number from 1 to 1000"),
    ('{"query": "job", "limit": "many"}', "line 3: limit must be a whole number from 1 to 1000"),
    ('{"query": "job", "include_superseded": "no"}', "line 3: include_superseded must be true"),
    ('{"query": "job", "mode": "bogus"}', "line 3: mode must be one of hybrid, keyword, semantic"),
    ('{"query": "job", "limt": 3}', "line 3: unknown field limt; a recall takes query, mode,"),
    ('{"query": "job", "type": "nosuch"}', "line 3: no record type nosuch in this store"),
    ('{"query": "job", "until": "2000-01-01", "since": "2001-01-01"}', "line 3: since ("),
]


@pytest.mark.parametrize(("line", "said"), BAD_LINES, ids=[said for _, said in BAD_LINES])
def test_a_batch_with_a_bad_line_is_refused_whole(
    filled: Path, gm: Callable[..., Result], tmp_path: Path, line: str, said: str
) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_text(f'{{"query": "friday deploy"}}\n\n{line}\n{{"query": "redis"}}\n')
    result = gm("recall", "--batch", str(batch))
    assert (result.code, result.out) == (2, "")  # not the good lines before it either
    assert f"gitmem: {batch} {said}" in result.err, result.err


def test_a_batch_answers_each_line_with_its_own_options(
    filled: Path, gm: Callable[..., Result], tmp_path: Path
) -> None:
    batch = tmp_path / "q.jsonl"
    lines = [
        {"query": "friday deploy", "limit": 1, "type": ["lesson"]},
        {"query": "postgres pooling", "mode": "keyword", "include_superseded": True},
        {"query": "redis", "until": "2099-01-01", "tag": []},
    ]
    batch.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = gm("recall", "--batch", str(batch), "--limit", "3")
    assert result.code == 0, result.err
    answers = [json.loads(out) for out in result.out.splitlines()]
    assert [a["query"] for a in answers] == [line["query"] for line in lines]
    assert [h["title"] for h in answers[0]["hits"]] == ["No Friday deploys"]
    assert answers[1]["hits"][0]["title"] == "Payments database"
    assert len(answers[1]["hits"]) <= 3  # the command line's limit where a line has none
    assert answers[2]["hits"][0]["title"] == "Sessions in Redis"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["redis"], "--batch reads its queries from the file; drop the query argument"),
        (["--explain"], "--batch writes JSON lines, which carry what --explain shows"),
    ],
)
def test_a_batch_refuses_arguments_it_would_ignore(
    filled: Path, gm: Callable[..., Result], tmp_path: Path, args: list[str], said: str
) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_text('{"query": "friday deploy"}\n')
    result = gm("recall", "--batch", str(batch), *args)
    assert (result.code, result.out) == (2, "") and said in result.err


def test_a_batch_that_is_a_directory_is_a_usage_error(
    filled: Path, gm: Callable[..., Result], tmp_path: Path
) -> None:
    result = gm("recall", "--batch", str(tmp_path))
    assert (result.code, result.out) == (2, "")
    assert f"{tmp_path} is a directory; give a file" in result.err


def test_the_api_takes_a_path_as_text_and_refuses_what_the_cli_refuses(filled: Path) -> None:
    store = Store.open(str(filled))
    assert store.recall("friday deploy", limit=1).hits[0].title == "No Friday deploys"
    assert store.recall("friday deploy", since="2020-01-01", until="2099-12-31").hits
    assert not store.recall("friday deploy", until="2020-01-01").hits
    for wrong in (
        dict(mode="fuzzy"),
        dict(limit=0),
        dict(limit=-1),
        dict(limit=5000),
        dict(since="2026-12-05", until="2026-11-01"),
        dict(since="someday"),
    ):
        with pytest.raises(UsageError):
            store.recall("friday deploy", **wrong)  # type: ignore[arg-type]

    with pytest.raises(UsageError, match="no record type nosuch in this store"):
        store.recall("friday deploy", filter=Filter(types=("nosuch",)))
    with pytest.raises(UsageError, match="scope must be one of"):
        store.recall("friday deploy", filter=Filter(scope="weird"))


def test_a_type_whose_schema_was_removed_still_filters_its_records(
    dated: Path, gm: Callable[..., Result], tmp_path: Path
) -> None:
    git(dated, "rm", "-q", "schemas/fact.toml")
    git(dated, "commit", "-qm", "no more facts")
    assert len(titles(gm("recall", "deploy freeze", "--json", "--type", "fact"))) == 3
    batch = tmp_path / "q.jsonl"
    batch.write_text('{"query": "deploy freeze", "type": "fact"}\n')
    result = gm("recall", "--batch", str(batch))
    assert result.code == 0 and len(json.loads(result.out)["hits"]) == 3
    assert Store.open(dated).recall("deploy freeze", filter=Filter(types=("fact",))).hits
    refused = gm("recall", "deploy freeze", "--type", "nosuch")
    assert refused.code == 2 and "its types are context, decision, entity, lesson" in refused.err
