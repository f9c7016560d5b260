"""benchmarks/bench_locomo.py on a small conversation in LoCoMo's own schema: the figures it
reports, its probe's emulation of plain BM25, and context finding a turn only its neighbour
names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_locomo.py"
FILLER = [
    "I went hiking in the mountains last weekend",
    "The weather was lovely and sunny all day",
    "We cooked pasta with tomatoes for dinner",
    "My sister is starting a new job next month",
    "I have been reading a novel about sailors",
    "The garden needs watering every evening",
]


def _sample() -> dict[str, Any]:
    """Two sessions; the answer to the first question ("It's red!") shares no word with it:
    only the turn before it names the bicycle."""
    first = [
        *({"speaker": "Ana", "dia_id": f"D1:{i + 1}", "text": t} for i, t in enumerate(FILLER)),
        {"speaker": "Ana", "dia_id": "D1:7", "text": "I bought a new bicycle yesterday"},
        {"speaker": "Ben", "dia_id": "D1:8", "text": "It's red! Shiny paint and all."},
    ]
    second = [{"speaker": "Ben", "dia_id": f"D2:{i + 1}", "text": t} for i, t in enumerate(FILLER)]
    return {
        "sample_id": "conv-test",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": first,
            "session_2_date_time": "10:00 am on 20 May, 2023",
            "session_2": second,
        },
        "qa": [
            {"question": "What colour is the bicycle?", "evidence": ["D1:8"], "category": 4},
            {"question": "Where did Ana go hiking?", "evidence": ["D1:1"], "category": 1},
            {"question": "Is this adversarial?", "evidence": ["D1:2"], "category": 5},
        ],
    }


def _run(tmp_path: Path, *args: str) -> tuple[str, dict[str, Any]]:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([_sample()]), encoding="utf-8")
    out = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--data", str(data), "--json", str(out), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads(out.read_text(encoding="utf-8"))


def test_reports_each_category_with_a_paired_difference_from_the_baseline(
    tmp_path: Path,
) -> None:
    text, report = _run(tmp_path, "--resamples", "200")
    figures = report["compared"]
    assert set(figures) == {"bm25", "keyword", "keyword plain"}
    # Category 5 is left out; the two others are reported apart.
    assert set(figures["bm25"]) == {"all", "single-hop", "multi-hop"}
    assert figures["bm25"]["all"]["n"] == 2
    # The hiking question finds its turn, the bicycle one cannot (no word in common).
    assert figures["bm25"]["multi-hop"]["r@5"] == 1.0
    assert figures["bm25"]["single-hop"]["r@10"] == 0.0
    # The product's context (the turn before it) finds the bicycle question's answer; its
    # plain configuration, like BM25, cannot.
    assert figures["keyword"]["single-hop"]["r@10"] == 1.0
    assert figures["keyword plain"]["single-hop"]["r@10"] == 0.0
    diff = figures["keyword"]["all"]["r@10 vs bm25"]
    assert diff["low"] <= diff["mean"] <= diff["high"]
    assert "vs bm25:" in text


def test_the_probe_reproduces_bm25_and_context_finds_the_neighbours_answer(
    tmp_path: Path,
) -> None:
    _, report = _run(tmp_path, "--probe", "--resamples", "200")
    grid = report["grid"]
    # The probe's own ranking of the product's BM25 scores is the product's ranking.
    assert grid["probe:bm25"] == grid["bm25"]
    # With the turn before it as context, the answer is found; the source prior alone
    # cannot lift a turn that matches nothing.
    assert grid["ctx±1 w=0.5"]["r@10"] == 1.0
    assert grid["prior p=0.5"]["r@10"] == 0.5
    assert "ctx±2 w=0.5 ×p=0.5" in report["compared"]


def test_a_gitmem_eval_dataset_scores_as_gitmem_eval_does(tmp_path: Path) -> None:
    from gitmem.evaluate import evaluate

    folder = Path(__file__).resolve().parent.parent / "benchmarks" / "retrieval" / "coding-agent"
    _, report = _run(tmp_path, "--dataset", str(folder), "--resamples", "50")
    expected = evaluate(folder, model=None, resamples=50)["modes"]["keyword"]
    for group, cell in expected.items():
        assert report["compared"]["keyword"][group]["ndcg@10"] == round(cell["ndcg@10"]["mean"], 4)
