"""A writer's look at the vector graph (gitmem.index.annbuild.plan) counts the dead rows in the
catalog's tables rather than reading all the row facts (0.35 s at a million rows): it must
decide as the facts would, whatever the lag allowed."""

from __future__ import annotations

from pathlib import Path

import pytest
import test_ann
from test_ann import _answers, _searchable, _stamp

from gitmem.index import ann, annbuild
from gitmem.index.vectors import RowArrays, VectorFile

pytest.importorskip("usearch")
tiny_model_dir = test_ann.tiny_model_dir  # the fixtures, shared
small_threshold = test_ann.small_threshold


def test_the_plan_counts_dead_rows_as_the_row_facts_do(
    store_path: Path, tiny_model_dir: Path, small_threshold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _searchable(store_path, tiny_model_dir, 30)
    _answers(store)  # the graph built, covering every row (LAZY_ROWS 0)
    covered = int(_stamp(store)["covered"])  # type: ignore[call-overload]
    monkeypatch.setattr(ann, "LAZY_ROWS", 10**6)  # from here the graph lags
    ids = [r.id for r in store.records()]
    for rid in ids[:10]:
        store.forget(rid, reason="wrong")  # their rows under the graph die, none is added
    store.record("fact", "Webhooks are signed with HMAC.", title="Webhook signatures")
    _answers(store)
    index = store.index()
    catalog = index._catalog
    assert catalog is not None and _stamp(store)["covered"] == covered  # not built again
    stored = catalog.row_facts()
    rows = catalog.next_row()
    facts = RowArrays.of(stored.facts.parts, rows, lambda _: []) if stored is not None else None
    assert facts is not None and rows > covered

    def dead_by_facts(n: int) -> int:  # how the plan counted them before
        return int(facts.dead[:n].sum())

    assert dead_by_facts(covered) >= 10 > rows - covered  # so the dead rows decide
    dim = store.model().dim  # type: ignore[union-attr]
    vectors = VectorFile(index.root / (catalog.meta("vectors") or "vectors.f32"), dim)
    decisions = set()
    for lazy in range(0, dead_by_facts(covered) + 3):
        monkeypatch.setattr(ann, "LAZY_ROWS", lazy)
        expected = ann.plan(index.root, vectors.path.name, rows, dead_by_facts, dim)
        assert annbuild.plan(index.root, vectors, catalog) == expected, lazy
        decisions.add(expected.build)
    assert decisions == {True, False}  # the lags tried cross the line
