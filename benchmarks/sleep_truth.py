"""`gitmem sleep`'s proposals against the planted truth of the test fixture (tests/sleepfixture.py:
5 exact and 4 paraphrased duplicate pairs, 3 contradictions, 3 stale records, 20 clean ones),
the issue-22 figure (>= 90% of planted duplicates found, <= 10% of proposals wrong).

    .venv/bin/python benchmarks/sleep_truth.py [--runs 10] [--model none|tiny|builtin] \
        [--json out.json]

Each run plants the fixture in a fresh store (record ids differ run to run: they end in random
characters, and the join orders ties by id) and runs `gitmem sleep --dry-run --json` as a
process. Reported: planted duplicate pairs found, the share of proposals that are wrong (a link
proposal counts as wrong, so `--model tiny` shows what its weak vectors add; `builtin` is the
product's default model), and the clean records some proposal named. The same scoring as
tests/test_consolidate.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _common import machine, write_json
from sleepfixture import plant, score

from gitmem.store.config import DEFAULT_MODEL
from gitmem.store.store import Store


def one_run(work: Path, model: str) -> dict[str, Any]:
    root = work / "store"
    shutil.rmtree(root, ignore_errors=True)
    Store.init(root)
    if model != DEFAULT_MODEL:  # what `gitmem init` writes
        config = root / "config.toml"
        text = config.read_text()
        start = text.index('model = "')
        end = text.index('"', start + len('model = "'))
        config.write_text(f'{text[:start]}model = "{model}"{text[end + 1 :]}')
        subprocess.run(["git", "commit", "-qam", "bench model"], cwd=root, check=True)
    truth = plant(Store.open(root))
    env = {**os.environ, "GITMEM_BACKGROUND_INDEX": "off", "GITMEM_CAPTURE": "off"}
    cmd = [sys.executable, "-m", "gitmem", "sleep", "--dry-run", "--json", "--store", str(root)]
    done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    answer = json.loads(done.stdout)
    got = score(answer["proposed"], truth)
    return {
        "semantic": answer["semantic"],
        "duplicates_found": got.duplicates,
        "duplicates_planted": got.planted,
        "proposals": got.proposals,
        "wrong": got.wrong,
        "clean_named": len(got.clean_named),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--model", choices=("none", "tiny", "builtin"), default="none")
    parser.add_argument("--json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gitmem-bench-sleep-truth-"))
    model = {"none": "none", "builtin": DEFAULT_MODEL}.get(args.model, str(work / "tiny"))
    if args.model == "tiny":
        from tinymodel import build_tiny_model

        build_tiny_model(work / "tiny")
    runs = [one_run(work, model) for _ in range(args.runs)]
    found = sum(r["duplicates_found"] for r in runs)
    planted = sum(r["duplicates_planted"] for r in runs)
    proposals = sum(r["proposals"] for r in runs)
    wrong = sum(r["wrong"] for r in runs)
    result = {
        "machine": machine(),
        "model": args.model,
        "runs": args.runs,
        "semantic": all(r["semantic"] for r in runs),
        "duplicates_found": f"{found}/{planted}",
        "found_share": round(found / planted, 3),
        "worst_run_found": min(r["duplicates_found"] for r in runs),
        "wrong": f"{wrong}/{proposals}",
        "wrong_share": round(wrong / max(1, proposals), 3),
        "worst_run_wrong": max(r["wrong"] for r in runs),
        "clean_named": sum(r["clean_named"] for r in runs),
        "per_run": runs,
    }
    print(json.dumps(result, indent=2))
    write_json(args.json, result)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
