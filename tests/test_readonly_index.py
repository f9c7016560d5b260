"""The pieces the fast recall path shares with the full one: an index opened read-only over the
store's files (StoreTip, catch_up=False), and the one lookup of the configured model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tinymodel import build_tiny_model

from gitmem.api import Store
from gitmem.index.entries import Filter
from gitmem.index.index import Index, IndexNotCurrent
from gitmem.index.model import ModelRef, configured_model
from gitmem.index.modelfiles import ModelUnavailable
from gitmem.store.gitfiles import StoreTip


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("model") / "tiny"
    build_tiny_model(out)
    return out


def test_a_read_only_index_answers_while_current_and_never_catches_up(
    store_path: Path, tiny_model_dir: Path
) -> None:
    store = Store.open(store_path)
    model = ModelRef.from_folder("tiny", tiny_model_dir)
    store.use_model(model)
    store.record("decision", "We retry webhook deliveries with backoff.", title="Retry webhooks")
    expected = store.index().keyword("retry webhooks", 5, Filter())
    assert expected

    tip = StoreTip(store_path)
    assert tip.head() == store.head()
    index = Index(tip, model, catch_up=False, rank_without_numpy=True)
    index.ensure_current()  # current: nothing to do, nothing raised
    assert index.keyword("retry webhooks", 5, Filter()) == expected

    store.record("fact", "Sessions live in Redis.", title="Sessions")  # HEAD moves
    stamp = (store_path / ".gitmem" / "index").stat().st_mtime_ns
    behind = Index(tip, model, catch_up=False)
    with pytest.raises(IndexNotCurrent):
        behind.ensure_current()
    assert (store_path / ".gitmem" / "index").stat().st_mtime_ns == stamp  # nothing written
    with pytest.raises(LookupError):
        _ = tip.repo


def test_the_configured_model_is_found_once_for_every_path(
    store_path: Path, tiny_model_dir: Path
) -> None:
    assert configured_model("none", store_path) is None
    with pytest.raises(ModelUnavailable, match="gitmem model fetch"):
        configured_model("no-such-org/no-such-model", store_path, store_path / "hub")
    shutil.copytree(tiny_model_dir, store_path / "models" / "tiny")
    found = configured_model("models/tiny", store_path)
    assert found is not None and found.folder == store_path / "models" / "tiny"
    assert found.name.startswith("models/tiny@")

    store = Store.open(store_path)
    assert store.config.model != "none"
    store.model_cache = store_path / "hub"
    try:
        spec, cache = store.config.model, store.model_cache
        expected: ModelRef | None = configured_model(spec, store_path, cache)
        problem = None
    except ModelUnavailable as exc:
        expected, problem = None, str(exc)
    model = store.model()
    assert (model and model.name) == (expected and expected.name)
    assert store.model_problem == problem
