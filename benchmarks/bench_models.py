"""Measure static model candidates for the default model (issue 21): size, speed, quality.

For each model folder (built by benchmarks/build_model.py):

- size on disk (every file of the folder), and deflated in a zip as in a wheel;
- load in a fresh process, as `gitmem recall` does it (the standard-library query encoder
  where it reads the model, else gitmem.index.embedding.load with numpy), then the first
  query's vector: median of 7 processes, with the process's peak resident memory;
- `gitmem recall` as a whole process on a store of 1,000 synthetic records using the model;
- one query's vector (`encode_query`, warm) over LoCoMo's 760 questions: median and p95;
  and encoding LoCoMo's turns in batches (what an index build does): texts per second;
- LoCoMo development half, turn level (benchmarks/locomo.py's stores, queries and product
  defaults): R@5, R@10, NDCG@10 for semantic and hybrid recall, overall and per category;
- the coding-agent set (what `gitmem eval benchmarks/retrieval/coding-agent --model DIR`
  computes, through the same functions): NDCG@10 and R@10 for semantic and hybrid, per category;
- with `--baseline NAME`: paired bootstrap (2,000 resamples) of each figure's per-query
  difference against that candidate, on both datasets.

Writes one JSON per model into --out (merged into the build record build_model.py left there,
when there is one), keeping the per-query scores that the paired comparison needs.

    .venv/bin/python benchmarks/bench_models.py benchmarks/.models/minilm-distilled-256 ... \
        [--out benchmarks/results/models_s11] [--baseline minilm-distilled-256] [--table]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import locomo
from _common import machine, make_store, outside
from bench_recall import configure_model

from gitmem.evaluate import load_queries, model_ref, paired_difference, run_queries, score
from gitmem.evaluate import store_for as eval_store
from gitmem.index.embedding import load
from gitmem.recall.recall import DEFAULTS

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "models_s11"
CODING = HERE / "retrieval" / "coding-agent"
METRICS = ("r@5", "r@10", "ndcg@10")
MODES = ("semantic", "hybrid")
RESAMPLES = 2000

# One fresh process, the way `gitmem recall` reads a model: the standard-library query encoder
# (gitmem.index.queryvec) where it reads the layout (a float32 or float16 matrix, no mapping, no
# weights), else gitmem.index.embedding.load, which imports numpy.
_PROBE = """
import json, sys, time
from pathlib import Path
def hwm_kb():  # this process's peak resident memory (ru_maxrss would inherit the parent's)
    status = Path("/proc/self/status").read_text().split("VmHWM:")[1]
    return int(status.split()[0])
t0 = time.perf_counter()
from gitmem.index.queryvec import query_encoder
model = query_encoder(Path(sys.argv[1]))
route = "stdlib"
if model is None:
    from gitmem.index.embedding import load
    model, route = load(sys.argv[1]), "numpy"
t1 = time.perf_counter()
model.encode_query("what did Caroline research for her adoption plans")
t2 = time.perf_counter()
print(json.dumps({"load_ms": (t1 - t0) * 1e3, "first_query_ms": (t2 - t1) * 1e3,
                  "rss_mb": hwm_kb() / 1024,
                  "route": route}))
"""


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def zipped_size(folder: Path) -> int:
    """What the folder weighs deflated in a zip, as in a wheel."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder))
    return len(buffer.getvalue())


def fresh_load(folder: Path, runs: int = 7) -> dict[str, float]:
    rows = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, str(folder)], capture_output=True, text=True, check=True
        )
        row = json.loads(done.stdout)
        row["process_ms"] = (time.perf_counter() - start) * 1e3
        rows.append(row)
    route = rows[0].pop("route")
    numbers = {k: round(statistics.median(r[k] for r in rows), 2) for k in rows[0]}
    return numbers | {"route": route}


def cli_recall(folder: Path, runs: int = 11) -> dict[str, float]:
    """`gitmem recall` as a whole process (the editable dev install) on a store of 1,000
    synthetic records whose config names the model: the median of `runs` processes."""
    root = make_store(1000)
    configure_model(root, str(folder))
    gitmem = str(Path(sys.executable).parent / "gitmem")
    env = {**os.environ, "GITMEM_STORE": str(root)}
    subprocess.run([gitmem, "rebuild"], check=True, capture_output=True, env=env, cwd=outside())
    times = []
    for i in range(runs + 1):
        start = time.perf_counter()
        subprocess.run(
            [gitmem, "recall", f"why did the deploy of the payment worker fail {i}"],
            check=True,
            capture_output=True,
            env=env,
            cwd=outside(),
        )
        times.append((time.perf_counter() - start) * 1e3)
    return {"recall_process_ms": round(statistics.median(times[1:]), 1)}


def encode_speed(folder: Path, questions: list[str], turns: list[str]) -> dict[str, float]:
    model = load(str(folder))
    assert model is not None
    for q in questions[:20]:
        model.encode_query(q)
    times = []
    for q in questions:
        start = time.perf_counter()
        model.encode_query(q)
        times.append((time.perf_counter() - start) * 1e6)
    times.sort()
    start = time.perf_counter()
    model.encode(turns)
    took = time.perf_counter() - start
    return {
        "query_us_p50": round(times[len(times) // 2], 1),
        "query_us_p95": round(times[int(len(times) * 0.95)], 1),
        "batch_texts_per_s": round(len(turns) / took),
    }


def locomo_scores(folder: Path, samples: list[Any]) -> dict[str, list[dict[str, Any]]]:
    configs = {m: c for m, c in locomo.configurations(DEFAULTS, True).items() if m in MODES}
    with tempfile.TemporaryDirectory(prefix="gitmem-models-") as tmp:
        scores = locomo.measure(samples, str(folder), configs, Path(tmp))
    return {
        mode: [{"id": q.id, "category": q.category, **s} for q, s in rows]
        for mode, rows in scores.items()
    }


def coding_scores(folder: Path) -> dict[str, list[dict[str, Any]]]:
    queries = load_queries(CODING / "queries.jsonl")
    out: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="gitmem-models-") as tmp:
        store = eval_store(CODING, model_ref(str(folder)), Path(tmp))
        for mode in MODES:
            rankings = run_queries(store, queries, replace(DEFAULTS, mode=mode))
            out[mode] = [
                {"id": q.id, "category": q.category, **score(r, q.gold)}
                for q, r in zip(queries, rankings, strict=True)
            ]
    return out


def means(per_query: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode, rows in per_query.items():
        groups: dict[str, list[dict[str, Any]]] = {"all": rows}
        for row in rows:
            groups.setdefault(row["category"], []).append(row)
        out[mode] = {
            g: {"n": len(rs)} | {m: round(sum(r[m] for r in rs) / len(rs), 4) for m in METRICS}
            for g, rs in groups.items()
        }
    return out


def measure(folder: Path, out: Path, samples: list[Any]) -> dict[str, Any]:
    path = out / f"{folder.name}.json"
    record: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    record.setdefault("name", folder.name)
    record["size_bytes"] = size_of(folder)
    record["zipped_bytes"] = zipped_size(folder)
    questions = [str(qa["question"]) for s in samples for qa in s["qa"]]
    turns = [r["body"] for s in samples for r in locomo.dataset(s)[0]]
    record["machine"] = machine() | {"load_before": os.getloadavg()[0]}
    record["load"] = fresh_load(folder) | cli_recall(folder)
    record["encode"] = encode_speed(folder, questions, turns)
    record["machine"]["load_after_timing"] = os.getloadavg()[0]
    per_locomo = locomo_scores(folder, samples)
    per_coding = coding_scores(folder)
    record["locomo"] = means(per_locomo)
    record["coding_agent"] = means(per_coding)
    record["per_query"] = {"locomo": compact(per_locomo), "coding_agent": compact(per_coding)}
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def compact(per_query: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per-query scores as the paired comparison needs them: query ids once, then each mode's
    R@10 and NDCG@10 in that order."""
    first = next(iter(per_query.values()))
    out: dict[str, Any] = {"ids": [r["id"] for r in first]}
    for mode, rows in per_query.items():
        assert [r["id"] for r in rows] == out["ids"]
        out[mode] = {m: [round(r[m], 4) for r in rows] for m in ("r@10", "ndcg@10")}
    return out


def compare(out: Path, baseline: str) -> None:
    """Paired bootstrap of every candidate against the baseline, written into its JSON."""
    base = json.loads((out / f"{baseline}.json").read_text())["per_query"]
    for path in sorted(out.glob("*.json")):
        record = json.loads(path.read_text())
        if "per_query" not in record:
            continue
        diffs: dict[str, Any] = {"baseline": baseline}
        for dataset, scores in record["per_query"].items():
            theirs = base[dataset]
            assert theirs["ids"] == scores["ids"], f"{path.name}: other queries than {baseline}"
            for mode in MODES:
                for metric in ("r@10", "ndcg@10"):
                    diff = paired_difference(scores[mode][metric], theirs[mode][metric], RESAMPLES)
                    diffs[f"{dataset}/{mode}/{metric}"] = {k: round(v, 4) for k, v in diff.items()}
        record["minus_baseline"] = diffs
        path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def _diff(record: dict[str, Any], key: str) -> str:
    d = record.get("minus_baseline", {}).get(key)
    return "" if d is None else f" ({d['mean']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}])"


def table(out: Path) -> str:
    """The candidates as a markdown table, smallest first (docs/benchmarks.md)."""
    rows = []
    records = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
    for r in sorted((r for r in records if "locomo" in r), key=lambda r: r["size_bytes"]):
        lo, ca = r["locomo"], r["coding_agent"]
        cells = [
            r["name"],
            r.get("license", "?"),
            f"{r['size_bytes'] / 1e6:.1f} ({r['zipped_bytes'] / 1e6:.1f})",
            f"{r['load']['load_ms']:.0f} ({r['load']['route']})",
            f"{r['load']['recall_process_ms']:.0f}",
            f"{r['encode']['query_us_p50']:.0f}",
            f"{r['encode']['batch_texts_per_s']:,}",
            f"{lo['semantic']['all']['r@5']:.3f} / {lo['semantic']['all']['r@10']:.3f} / "
            f"{lo['semantic']['all']['ndcg@10']:.3f}{_diff(r, 'locomo/semantic/r@10')}",
            f"{lo['hybrid']['all']['r@5']:.3f} / {lo['hybrid']['all']['r@10']:.3f} / "
            f"{lo['hybrid']['all']['ndcg@10']:.3f}{_diff(r, 'locomo/hybrid/r@10')}",
            f"{ca['semantic']['all']['ndcg@10']:.3f}{_diff(r, 'coding_agent/semantic/ndcg@10')}",
            f"{ca['hybrid']['all']['ndcg@10']:.3f}{_diff(r, 'coding_agent/hybrid/ndcg@10')}",
        ]
        rows.append("| " + " | ".join(cells) + " |")
    head = (
        "| candidate | license | MB (zipped) | load ms (route) | recall process ms "
        "| query µs | texts/s "
        "| LoCoMo semantic R@5 / R@10 / NDCG@10 (R@10 − baseline) "
        "| LoCoMo hybrid R@5 / R@10 / NDCG@10 (R@10 − baseline) "
        "| coding semantic NDCG@10 (− baseline) | coding hybrid NDCG@10 (− baseline) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|"
    )
    return "\n".join([head, *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--data", type=Path, default=locomo.DATA)
    parser.add_argument("--baseline", help="candidate name to compare every other against")
    parser.add_argument("--table", action="store_true", help="print --out's results as markdown")
    args = parser.parse_args()
    samples = json.loads(args.data.read_text(encoding="utf-8"))
    args.out.mkdir(parents=True, exist_ok=True)
    for folder in args.models:
        r = measure(folder, args.out, samples)
        lo, ca, ld, en = r["locomo"], r["coding_agent"], r["load"], r["encode"]
        print(
            f"{folder.name}: {r['size_bytes'] / 1e6:.1f} MB, load {ld['load_ms']:.0f} ms "
            f"(process {ld['process_ms']:.0f}), query {en['query_us_p50']:.0f} us, "
            f"LoCoMo hybrid R@5 {lo['hybrid']['all']['r@5']} R@10 {lo['hybrid']['all']['r@10']} "
            f"NDCG {lo['hybrid']['all']['ndcg@10']}, semantic R@10 {lo['semantic']['all']['r@10']}"
            f"; coding hybrid NDCG {ca['hybrid']['all']['ndcg@10']} semantic "
            f"{ca['semantic']['all']['ndcg@10']} (load avg {r['machine']['load_before']:.1f})",
            flush=True,
        )
    if args.baseline:
        compare(args.out, args.baseline)
    if args.table:
        print(table(args.out))


if __name__ == "__main__":
    main()
