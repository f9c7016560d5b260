"""`gitmem sleep` on a 10k-record store, as whole processes (issue 22's budget: <= 60 s).

    .venv/bin/python benchmarks/bench_sleep.py [--records 10000] [--runs 3] [--model tiny|none]
                                               [--json out.json]

The store: `--records` synthetic records whose words come from the tiny test model's English
vocabulary (tests/tinyvocab.py: ~3,600 words, drawn by Zipf's law, weight 1/rank), imported
in one commit, with planted truth: 2% exact duplicates, 2% paraphrases
(a fifth of the words replaced, the order shuffled), 1% old low-weight records. Each timed run
works on a fresh copy of the store (a run that writes changes the next one's input), index
built and current. `--model tiny` points the store at the tiny test model, so the pass compares
meaning too (one semantic search per record); `none` compares words only. Reported: the
median wall time of `gitmem sleep --dry-run` and `gitmem sleep`, and the proposals' recall
and precision against the planted truth.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import tinyvocab
from _common import machine, median, write_json

from gitmem.store.store import Store

GITMEM = str(Path(sys.executable).with_name("gitmem"))
TYPES = ("decision", "pattern", "context", "fact", "preference", "procedure", "lesson")


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def corpus(count: int, seed: int = 22) -> tuple[list[dict[str, Any]], dict[str, set[Any]]]:
    rng = random.Random(seed)
    vocab = [t for t in tinyvocab.tokens(None) if t.isalpha() and len(t) > 2]
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]  # Zipf's law
    now = datetime.now(UTC).replace(microsecond=0)
    items: list[dict[str, Any]] = []
    truth: dict[str, set[Any]] = {"duplicates": set(), "stale": set()}

    def item(
        i: int, words: list[str], title: list[str], when: datetime, weight: float
    ) -> dict[str, Any]:
        return {
            "id": f"{'-'.join(title[:3])}-{i:06x}",
            "type": TYPES[i % len(TYPES)],
            "title": " ".join(title).capitalize(),
            "abstract": "",
            "tags": [],
            "agent": "bench",
            "scope": "shared",
            "source": "",
            "created": _stamp(when),
            "updated": _stamp(when),
            "weight": weight,
            "links": [],
            "supersedes": [],
            "superseded_by": "",
            "status": "active",
            "body": " ".join(words) + "\n",
        }

    dup, para, stale = int(count * 0.02), int(count * 0.02), int(count * 0.01)
    base = count - dup - para
    for i in range(base):
        words = rng.choices(vocab, weights, k=40)
        title = rng.sample(vocab, 5)
        old = i < stale
        when = now - timedelta(days=400 + i) if old else now - timedelta(days=rng.randint(1, 170))
        items.append(item(i, words, title, when, 0.3 if old else 1.0))
        if old:
            truth["stale"].add(items[-1]["id"])
    for j in range(dup + para):
        source = items[stale + j * 3]
        words = source["body"].split()
        if j >= dup:
            words = [rng.choice(vocab) if rng.random() < 0.2 else w for w in words]
            rng.shuffle(words)
        i = base + j
        title = source["title"].lower().split()
        when = datetime.strptime(source["created"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        items.append(item(i, words, title, when + timedelta(hours=1), 1.0))
        truth["duplicates"].add(frozenset((source["id"], items[-1]["id"])))
    return items, truth


def score(answer: dict[str, Any], truth: dict[str, set[Any]]) -> dict[str, float]:
    proposed = answer["proposed"]
    merges = {frozenset(p["records"]) for p in proposed if p["kind"] == "merge"}
    archived = {p["records"][0] for p in proposed if p["kind"] == "archive"}
    right = len(merges & truth["duplicates"]) + len(archived & truth["stale"])
    return {
        "duplicates_found": len(merges & truth["duplicates"]) / len(truth["duplicates"]),
        "stale_found": len(archived & truth["stale"]) / max(1, len(truth["stale"])),
        "proposals": len(proposed),
        "right_share": right / max(1, len(proposed)),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model", choices=("tiny", "none"), default="none")
    parser.add_argument("--json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gitmem-bench-sleep-"))
    root = work / "store"
    Store.init(root)
    config = root / "config.toml"
    spec = "none"
    if args.model == "tiny":
        from tinymodel import build_tiny_model

        build_tiny_model(work / "tiny")
        spec = str(work / "tiny")
    text = config.read_text()
    start = text.index('model = "')
    config.write_text(
        text[:start]
        + f'model = "{spec}"'
        + text[text.index('"', start + 9) + 1 :]
        + "\n[sleep]\nmax_proposals = 100000  # every finding, to score them all\n"
    )
    subprocess.run(["git", "commit", "-qam", "bench model"], cwd=root, check=True)
    items, truth = corpus(args.records)
    Store.open(root).import_records(items, agent="bench")
    env = {**os.environ, "GITMEM_STORE": str(root), "GITMEM_BACKGROUND_INDEX": "off"}
    subprocess.run([GITMEM, "rebuild"], env=env, check=True, capture_output=True)
    rounds: dict[str, list[float]] = {"dry_run": [], "sleep": []}
    answer: dict[str, Any] = {}
    for _ in range(args.runs):
        for name in ("dry_run", "sleep"):  # alternated, each on a fresh copy
            copy = work / f"copy-{name}"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(root, copy, symlinks=True)
            cmd = [GITMEM, "sleep", "--json", "--store", str(copy)]
            if name == "dry_run":
                cmd.append("--dry-run")
            began = time.perf_counter()
            done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
            rounds[name].append(time.perf_counter() - began)
            answer = json.loads(done.stdout)
    result = {
        "machine": machine(),
        "records": args.records,
        "model": args.model,
        "runs": args.runs,
        "median_s": {k: round(median(v), 2) for k, v in rounds.items()},
        "all_s": {k: [round(x, 2) for x in v] for k, v in rounds.items()},
        "scanned": answer["scanned"],
        "semantic": answer["semantic"],
        **score(answer, truth),
    }
    print(json.dumps(result, indent=2))
    write_json(args.json, result)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
