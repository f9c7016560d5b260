"""Time-travel figures: a store of 10k records built by ~10.5k dated commits over a simulated
year (with supersedes and in-place edits; every ~20 consecutive writes share a `source`, so
records have context and sources a prior), then: HEAD recall p50; the first `--as-of` recall
at each of N new dates; repeated ones at the same dates and their ratio to HEAD; `diff` across
a month; the time-travel cache's build, its catch-up after 100 new commits, and its bytes on
disk after 1 date and after N dates; last, the first `--as-of` recall of a fresh process (as
each `gitmem recall --as-of` is) at --fresh new dates, the cache already built (the recall
call alone, timed inside the process: imports and opening the store left out).

    .venv/bin/python benchmarks/bench_asof.py [--records 10000] [--dates 20] [--json out.json]

The history is real git history, written with `git fast-import` (one commit per write, with the
commit times of the simulated year). The benchmark model (benchmarks/.models/minilm-distilled-256,
`make bench-model`) is used when present, else recall is keyword-only; the output says which.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import TYPES, WORDS, machine, make_store, median, percentile, write_json
from bench_recall import configure_model, queries

from gitmem.api import Store
from gitmem.store.record import Record
from gitmem.store.recordfile import dump

MODEL = Path(__file__).resolve().parent / ".models" / "minilm-distilled-256"
FRESH = """
import sys, time
from datetime import datetime
from pathlib import Path
from gitmem.api import Store
store = Store.open(Path(sys.argv[1]))
began = time.perf_counter()
store.recall(sys.argv[2], mode=sys.argv[3], as_of=datetime.fromisoformat(sys.argv[4]))
print(time.perf_counter() - began)
"""
YEAR = timedelta(days=365)


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def history(
    parent: str, records: int, edits: int, supersedes: int, start: datetime, seed: int = 11
) -> bytes:
    """A fast-import stream on top of `parent`: `records` new records (of which `supersedes`
    replace an older one) and `edits` in-place edits, shuffled over a year, one commit each."""
    rng = random.Random(seed)
    kinds = ["record"] * (records - supersedes) + ["supersede"] * supersedes + ["edit"] * edits
    rng.shuffle(kinds)
    kinds.sort(key=lambda k: k != "record")  # the first writes are records
    head = kinds[:50]
    tail = kinds[50:]
    rng.shuffle(tail)
    kinds = head + tail
    step = YEAR / len(kinds)
    live: list[Record] = []
    out: list[bytes] = []
    for n, kind in enumerate(kinds):
        when = start + step * n
        files: dict[str, Record] = {}
        if kind == "edit":
            i = rng.randrange(len(live))
            old = live[i]
            new = old.with_(body=old.body + "\n" + _text(rng, 12) + "\n", updated=when)
            live[i] = files[new.path] = new
        else:
            words = _text(rng, 80).split()
            new = Record(
                f"{'-'.join(words[:3])}-{n:06x}",
                TYPES[n % len(TYPES)],
                " ".join(words[:6]).capitalize(),
                " ".join(words) + "\n",
                when,
                when,
                abstract=" ".join(words[6:20]),
                tags=tuple(sorted(set(words[20:23]))),
                agent=rng.choice(("claude-code", "codex", "alice")),
                source=f"session-{seed}-{n // 20}",  # ~20 consecutive writes a session
            )
            if kind == "supersede":
                i = rng.randrange(len(live))
                old = live[i]
                new = new.with_(supersedes=(old.id,), type=old.type)
                retired = old.with_(status="superseded", superseded_by=new.id, updated=when)
                files[retired.path] = retired
                live[i] = new
            else:
                live.append(new)
            files[new.path] = new
        message = f"{kind}: {new.title}\n\nGitmem-Operation: {kind}\nGitmem-Agent: bench\n"
        out.append(_commit(n, int(when.timestamp()), message, files, parent if n == 0 else ""))
    return b"".join(out)


def _commit(n: int, stamp: int, message: str, files: dict[str, Record], parent: str) -> bytes:
    msg = message.encode()
    parts = [
        b"commit refs/heads/main\n",
        f"mark :{n + 1}\ncommitter bench <bench@example.com> {stamp} +0000\n".encode(),
        f"data {len(msg)}\n".encode() + msg,
        f"from {parent}\n".encode() if parent else b"",
    ]
    for path, record in files.items():
        data = dump(record).encode()
        parts.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
    return b"".join(parts)


def fast_import(root: Path, stream: bytes) -> None:
    subprocess.run(["git", "-C", str(root), "fast-import", "--quiet"], input=stream, check=True)
    subprocess.run(["git", "-C", str(root), "reset", "-q", "--hard"], check=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--dates", type=int, default=20)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--fresh", type=int, default=5, help="fresh processes, one date each")
    parser.add_argument("--json")
    args = parser.parse_args()

    root = make_store(0)
    # The store's first commit is dated just before the simulated year, which ends now.
    start = datetime.now(UTC).replace(microsecond=0) - YEAR - timedelta(days=1)
    born = (start - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    env = {**os.environ, "GIT_COMMITTER_DATE": born, "GIT_AUTHOR_DATE": born}
    subprocess.run(
        ["git", "-C", str(root), "commit", "-q", "--amend", "--no-edit"], env=env, check=True
    )
    records, edits, supersedes = args.records, args.records // 20, args.records * 7 // 100
    t0 = time.perf_counter()
    fast_import(root, history(_head(root), records, edits, supersedes, start))
    built_history = time.perf_counter() - t0
    use_model = MODEL.is_dir()
    if use_model:
        configure_model(root, str(MODEL))
    commits = int(
        subprocess.run(
            ["git", "-C", str(root), "rev-list", "--count", "HEAD"], capture_output=True, text=True
        ).stdout
    )
    store = Store.open(root)
    t0 = time.perf_counter()
    store.rebuild()
    head_build = time.perf_counter() - t0
    travel = store.time_travel()
    t0 = time.perf_counter()
    travel.timeline.ensure_current()
    timeline_build = time.perf_counter() - t0

    qs = queries(args.queries)
    mode = "hybrid" if use_model else "keyword"
    for q in qs[:5]:
        store.recall(q, mode=mode)
    head = []
    for q in qs:
        t0 = time.perf_counter()
        store.recall(q, mode=mode)
        head.append(time.perf_counter() - t0)

    rng = random.Random(3)
    span = YEAR.total_seconds()
    dates = [start + timedelta(seconds=rng.uniform(0.05, 0.95) * span) for _ in range(args.dates)]
    size_one = None
    first_times = []
    for i, when in enumerate(dates):
        t0 = time.perf_counter()
        store.recall(qs[i % len(qs)], mode=mode, as_of=when)
        first_times.append(time.perf_counter() - t0)
        if i == 0:
            size_one = travel.timeline.size()
    size_all = travel.timeline.size()
    # Repeated dates (the views kept in memory), interleaved with HEAD recalls of the same
    # queries, so that the ratio compares like with like on a shared machine.
    repeated, head_again = [], []
    for when in dates[-4:]:
        for q in qs:
            t0 = time.perf_counter()
            store.recall(q, mode=mode, as_of=when)
            repeated.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            store.recall(q, mode=mode)
            head_again.append(time.perf_counter() - t0)

    diffs = []
    for when in dates[:10]:
        t0 = time.perf_counter()
        changes = store.diff(when, when + timedelta(days=30))
        diffs.append(time.perf_counter() - t0)
    month = changes.to_dict()

    tail_start = datetime.now(UTC) + timedelta(seconds=10)
    fast_import(root, history(_head(root), 100, 0, 0, tail_start, seed=99))
    t0 = time.perf_counter()
    travel.timeline.ensure_current()
    catch_up = time.perf_counter() - t0

    fresh = []
    for i in range(args.fresh):
        when = start + timedelta(seconds=rng.uniform(0.05, 0.95) * span)
        argv = [str(root), qs[i % len(qs)], mode, when.isoformat()]
        done = subprocess.run(
            [sys.executable, "-c", FRESH, *argv], capture_output=True, text=True, check=True
        )
        fresh.append(float(done.stdout.strip().splitlines()[-1]))

    head_p50 = median(head)
    result = {
        "machine": machine(),
        "mode": mode,
        "model": str(MODEL.name) if use_model else None,
        "records": records,
        "commits": commits,
        "history_build_s": round(built_history, 2),
        "head_index_build_s": round(head_build, 2),
        "timeline_build_s": round(timeline_build, 2),
        "timeline_catch_up_100_commits_s": round(catch_up, 3),
        "head_recall_p50_ms": round(head_p50 * 1000, 2),
        "head_recall_p95_ms": round(percentile(head, 0.95) * 1000, 2),
        "asof_first_median_ms": round(median(first_times) * 1000, 1),
        "asof_first_max_ms": round(max(first_times) * 1000, 1),
        "asof_repeated_p50_ms": round(median(repeated) * 1000, 2),
        "asof_fresh_process_median_ms": round(median(fresh) * 1000, 1) if fresh else None,
        "asof_fresh_process_max_ms": round(max(fresh) * 1000, 1) if fresh else None,
        "head_recall_interleaved_p50_ms": round(median(head_again) * 1000, 2),
        "asof_repeated_ratio_to_head": round(median(repeated) / median(head_again), 2),
        "diff_month_median_ms": round(median(diffs) * 1000, 1),
        "diff_month_sample": {k: len(v) for k, v in month.items() if isinstance(v, list)},
        "cache_bytes_after_1_date": size_one,
        "cache_bytes_after_all_dates": size_all,
        "dates": args.dates,
        "head_index_bytes": store.index().stats()["bytes"],
    }
    for key, value in result.items():
        print(f"{key}: {value}")
    write_json(args.json or str(Path(__file__).parent / "results" / "asof.json"), result)


def _head(root: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


if __name__ == "__main__":
    main()
