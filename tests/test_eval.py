"""`gitmem eval DATASET`: the figures of every mode on a dataset in the generic JSONL format,
and a clear refusal of a folder that is not one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Result
from test_index import tiny_model_dir  # noqa: F401

RECORDS = [
    {"id": "webhook-retries-aaaaaa", "type": "decision", "title": "Retry webhooks with backoff",
     "abstract": "We retry webhook deliveries for 24 hours.", "body": "Exponential backoff.",
     "created": "2026-03-01T09:00:00Z", "updated": "2026-03-01T09:00:00Z"},
    {"id": "payments-db-bbbbbb", "type": "fact", "title": "Payments database",
     "abstract": "Postgres 15 behind pgbouncer.", "body": "Pooling in transaction mode.",
     "created": "2026-03-02T09:00:00Z", "updated": "2026-03-02T09:00:00Z"},
    {"id": "friday-deploys-cccccc", "type": "lesson", "title": "No Friday deploys",
     "abstract": "A Friday deploy broke checkout (PAY-1423).", "body": "Deploy on Tuesdays.",
     "created": "2026-03-03T09:00:00Z", "updated": "2026-03-03T09:00:00Z"},
]  # fmt: skip
QUERIES = [
    {"id": "q1", "query": "PAY-1423", "category": "exact-id", "gold": ["friday-deploys-cccccc"]},
    {"id": "q2", "query": "postgres pooling", "category": "paraphrase",
     "gold": ["payments-db-bbbbbb"], "now": "2026-04-01T00:00:00Z"},
]  # fmt: skip


def dataset(root: Path, records: list[dict] = RECORDS, queries: list[dict] = QUERIES) -> Path:  # type: ignore[type-arg]
    root.mkdir()
    (root / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    return root


def test_eval_reports_every_mode_and_writes_json(
    gm: Callable[..., Result],
    tmp_path: Path,
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    out = tmp_path / "figures.json"
    result = gm(
        "eval", str(dataset(tmp_path / "d")), "--model", str(tiny_model_dir), "--json", str(out),
        "--resamples", "100",
    )  # fmt: skip
    assert result.code == 0, result.err
    for heading in ("keyword", "semantic", "hybrid", "hybrid - keyword (ndcg@10)"):
        assert heading in result.out
    report = json.loads(out.read_text())
    assert report["queries"] == 2
    keyword = report["modes"]["keyword"]
    assert keyword["all"]["r@1"]["mean"] == 1.0  # both queries name their record's words
    assert set(keyword) == {"all", "exact-id", "paraphrase"}


def test_eval_uses_the_built_in_model_unless_told_none(
    gm: Callable[..., Result], tmp_path: Path
) -> None:
    # The default model ships in the package: no network, and hybrid out of the box.
    result = gm("eval", str(dataset(tmp_path / "d")), "--resamples", "100")
    assert result.code == 0, result.err
    assert "model: builtin:minilm-256" in result.out and "\nhybrid\n" in result.out
    result = gm("eval", str(dataset(tmp_path / "e")), "--model", "none", "--resamples", "100")
    assert result.code == 0, result.err
    assert "keyword only" in result.out and "semantic" not in result.out


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda root: root / "nowhere", "no dataset at {root}/nowhere: a dataset is a folder"),
        (
            lambda root: (root / "empty").mkdir() or root / "empty",
            "{root}/empty has no queries.jsonl",
        ),
        (
            lambda root: dataset(root / "d", queries=[]),
            "{root}/d/queries.jsonl holds no queries",
        ),
        (lambda root: dataset(root / "d", records=[]), "{root}/d/records.jsonl holds no records"),
        (
            lambda root: dataset(root / "d", queries=[{"id": "q1", "query": "x"}]),
            "{root}/d/queries.jsonl line 1: not a query",
        ),
    ],
)
def test_eval_refuses_a_folder_that_is_not_a_dataset(
    gm: Callable[..., Result], tmp_path: Path, make: Callable[[Path], Path], said: str
) -> None:
    result = gm("eval", str(make(tmp_path)))
    assert (result.code, result.out) == (2, "")
    assert said.format(root=tmp_path) in result.err
