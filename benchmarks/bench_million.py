"""A million records (issue 24): a synthetic store with two years of history, made through the
product's import path, and the figures a team's store lives by at that size.

    nice .venv/bin/python benchmarks/bench_million.py --make STORE --count 1000000 \
        --model benchmarks/.models/minilm-distilled-256 [--json OUT]
    .venv/bin/python benchmarks/bench_million.py --measure STORE [--json OUT] [--skip STAGES]

`--make` imports `--count` records in `--months` monthly imports (one commit each, the
product's `Store.import_records`), each committed at its month's date: history spans
`--months` months up to now, so `--as-of` one year back has a past to read. Then it points
the store's config at `--model` (a model2vec directory; `--tiny-model DIR` builds the tests'
stand-in at 256 dimensions there instead, when the distilled model is not on the machine).

`--measure` times, on such a store: the full rebuild, the catch-up after 100 new commits,
recall in-process (p50, p95, resident memory), `gitmem recall` as a whole process (a regular
install of the work tree with the `scale` extra, bench_recall.whole_process), and `--as-of`
one year back (the first, which builds the time-travel cache, and repeated ones, each in a
fresh process). The stages are those of benchmarks/bench_recall.py; `--skip rebuild,cli,...`
leaves some out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, median, percentile, synthetic_items, write_json
from bench_recall import configure_model, in_process, incremental, report_cli, whole_process

from gitmem.api import Store
from gitmem.store import git as git_module

STAGES = ("rebuild", "incremental", "in_process", "cli", "asof")


def _dated(moment: datetime) -> Any:
    """gitmem.store.git's `datetime` with `now()` at `moment`: the commit it writes is dated
    then (the product has no back-dating switch, and a benchmark needs a past)."""

    class Dated(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return moment if tz is None else moment.astimezone(tz)

    return Dated


def make(root: Path, count: int, months: int) -> dict[str, float]:
    """`count` records in `months` monthly imports, the last one this month."""
    now = datetime.now(UTC).replace(microsecond=0)
    with mock.patch.object(git_module, "datetime", _dated(now - timedelta(days=30 * months))):
        store, _ = Store.init(root)  # the first commit's time bounds every later one's
    per = -(-count // months)
    items = synthetic_items(count, start=now - timedelta(days=30 * months))
    seconds: list[float] = []
    for month in range(months):
        batch = [item for _, item in zip(range(per), items, strict=False)]
        if not batch:
            break
        moment = now - timedelta(days=30 * (months - 1 - month))
        with mock.patch.object(git_module, "datetime", _dated(moment)):
            began = time.perf_counter()
            store.import_records(batch, agent="bench")
            seconds.append(time.perf_counter() - began)
        print(
            f"  import {month + 1}/{months}: {len(batch)} records in {seconds[-1]:.1f} s",
            flush=True,
        )
    return {"import_total_s": sum(seconds), "import_per_month_median_s": median(seconds)}


def make_fast(root: Path, count: int, months: int) -> dict[str, float]:
    """As `make`, but the first `months - 1` monthly imports go through `git fast-import`
    (each record rendered by the product's own serializer, the commits carrying the product's
    import message), and only the last month through `Store.import_records`, timed: the
    product's import of a month (~42k records) into a store of ~958k. The product's path
    writes a loose object per record (~1.5 ms each under load here), ~40 min for a million."""
    from gitmem.store.record import from_mapping
    from gitmem.store.recordfile import dump
    from gitmem.store.writes import message

    Store.init(root)
    now = datetime.now(UTC).replace(microsecond=0)
    per = -(-count // months)
    items = synthetic_items(count, start=now - timedelta(days=30 * months))
    branch = subprocess.run(
        ["git", "-C", str(root), "symbolic-ref", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    began = time.perf_counter()
    feed = subprocess.Popen(
        ["git", "-C", str(root), "fast-import", "--quiet", "--done", "--force"],
        stdin=subprocess.PIPE,
    )
    assert feed.stdin is not None
    out = feed.stdin
    _init_again(root, branch, out, now - timedelta(days=30 * months))
    for month in range(months - 1):
        moment = now - timedelta(days=30 * (months - 1 - month))
        batch = [item for _, item in zip(range(per), items, strict=False)]
        text = message(
            "import",
            "",
            f"import: {len(batch)} records",
            "",
            "bench",
            {"Gitmem-Count": str(len(batch))},
            raw_subject=True,
        ).encode()
        stamp = f"{int(moment.timestamp())} +0000"
        out.write(f"commit {branch}\nauthor bench <bench@gitmem.local> {stamp}\n".encode())
        out.write(f"committer bench <bench@gitmem.local> {stamp}\n".encode())
        out.write(f"data {len(text)}\n".encode() + text + b"\n")
        for item in batch:
            record = from_mapping(item, item["body"])
            data = dump(record).encode("utf-8")
            out.write(f"M 100644 inline {record.path}\ndata {len(data)}\n".encode())
            out.write(data + b"\n")
        print(f"  fast-import {month + 1}/{months - 1}: {len(batch)} records", flush=True)
    out.write(b"done\n")
    out.close()
    if feed.wait():
        raise SystemExit("git fast-import failed")
    subprocess.run(["git", "-C", str(root), "reset", "--hard", "--quiet"], check=True)
    fast = time.perf_counter() - began
    rest = [item for item in items]
    began = time.perf_counter()
    Store.open(root).import_records(rest, agent="bench")
    product = time.perf_counter() - began
    print(
        f"  fast-import + checkout {fast:.0f} s; the product's import of the last "
        f"{len(rest)} records {product:.1f} s",
        flush=True,
    )
    return {
        "fast_import_and_checkout_s": fast,
        "product_import_last_month_s": product,
        "product_import_last_month_records": len(rest),
    }


def _init_again(root: Path, branch: str, out: Any, moment: datetime) -> None:
    """`gitmem init`'s commit again, dated `moment`, as the new root of `branch`: a commit's
    effective time is the latest of its own and its parents' (gitmem.recall.commitwalk), so
    back-dated imports on top of an init made now would all count as written now."""
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-tree", "-r", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    text = subprocess.run(
        ["git", "-C", str(root), "log", "-1", "--format=%B", "HEAD"],
        capture_output=True,
        check=True,
    ).stdout
    stamp = f"{int(moment.timestamp())} +0000"
    out.write(f"reset {branch}\ncommit {branch}\n".encode())
    out.write(f"author bench <bench@gitmem.local> {stamp}\n".encode())
    out.write(f"committer bench <bench@gitmem.local> {stamp}\n".encode())
    out.write(f"data {len(text)}\n".encode() + text + b"\n")
    for line in listed:
        meta, path = line.split("\t", 1)
        mode, _, blob = meta.split()
        out.write(f"M {mode} {blob} {path}\n".encode())
    out.write(b"\n")


def tiny_model(where: Path) -> Path:
    """The tests' stand-in model at 256 dimensions (tests/tinymodel.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from tinymodel import build_tiny_model

    if not (where / "model.safetensors").exists():
        build_tiny_model(where, dim=256)
    return where


ASOF = """
import json, sys, time
from pathlib import Path
from datetime import UTC, datetime, timedelta
from gitmem.api import Store
store = Store.open(Path(sys.argv[1]))
when = datetime.now(UTC) - timedelta(days=365)
times = []
for query in sys.argv[2:]:
    start = time.perf_counter()
    result = store.recall(query, limit=10, as_of=when)
    times.append(time.perf_counter() - start)
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM")][0]
print(json.dumps({"times_s": times, "hits": len(result.hits),
                  "max_rss_mb": int(hwm.split()[1]) / 1024}))
"""


def asof(root: Path, processes: int) -> dict[str, Any]:
    """`recall --as-of` one year back: a first process (it may build the time-travel cache),
    then `processes` fresh ones, each asking three queries (the first of each pays opening
    the cache; the others are repeats)."""

    def one(queries: list[str]) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-c", ASOF, str(root), *queries],
            capture_output=True,
            text=True,
            check=True,
        )
        figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return figures

    first = one(["webhook retry budget"])
    later = [
        one(["postgres session token", "deploy rollback", "cache index"]) for _ in range(processes)
    ]
    result = {
        "first_s": first["times_s"][0],
        "fresh_process_s": median([r["times_s"][0] for r in later]),
        "repeated_s": median([t for r in later for t in r["times_s"][1:]]),
        "max_rss_mb": max(r["max_rss_mb"] for r in [first, *later]),
        "load_average": os.getloadavg()[0],
    }
    print(
        f"--as-of one year back: first {result['first_s']:.1f} s (builds the time-travel "
        f"cache), a fresh process's first {result['fresh_process_s']:.2f} s, repeated "
        f"{result['repeated_s']:.2f} s, max RSS {result['max_rss_mb']:.0f} MB "
        f"(load {result['load_average']:.1f})",
        flush=True,
    )
    return result


def measure(root: Path, skip: set[str], runs: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    store = Store.open(root)
    if "rebuild" not in skip:
        began = time.perf_counter()
        stats = store.rebuild()
        results["rebuild_s"] = time.perf_counter() - began
        results["index_bytes"] = stats["bytes"]
        results["rebuild_load_average"] = os.getloadavg()[0]
        print(
            f"full rebuild: {results['rebuild_s']:.1f} s, index {stats['bytes'] / 1e6:.0f} MB, "
            f"{stats['vectors']} vectors (load {results['rebuild_load_average']:.1f})",
            flush=True,
        )
    else:
        store.index()
    if "incremental" not in skip:
        writes: list[float] = []
        times = [incremental(store, writes) for _ in range(3)]
        results["incremental_100_commits_s"] = times
        results["record_in_process_ms"] = {
            "p50": percentile(writes, 0.5) * 1000,
            "p95": percentile(writes, 0.95) * 1000,
            "first": writes[0] * 1000,
            "writes": len(writes),
        }
        print(
            f"catch-up after 100 commits: {[round(t, 2) for t in times]} s; the {len(writes)} "
            f"writes before them (store.record): p50 {percentile(writes, 0.5) * 1000:.0f} ms, "
            f"p95 {percentile(writes, 0.95) * 1000:.0f} ms, the first {writes[0] * 1000:.0f} ms "
            f"(load {os.getloadavg()[0]:.1f})",
            flush=True,
        )
    if "in_process" not in skip:
        results["recall_in_process"] = in_process(root, runs)
    if "cli" not in skip:
        # With the `scale` extra, as docs/scaling.md tells a store this size to install: without
        # usearch a process ranks a million rows exactly (~0.5 s more a recall on this host).
        results["cli_recall"] = cli = whole_process(root, 7, extras="scale")
        report_cli(cli)
    if "asof" not in skip:
        results["asof_one_year"] = asof(root, runs)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--make", metavar="STORE", help="Make a store here (a new directory).")
    parser.add_argument("--measure", metavar="STORE", help="Measure this store.")
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument(
        "--fast",
        action="store_true",
        help="All months but the last by git fast-import (see make_fast).",
    )
    parser.add_argument("--months", type=int, default=24)
    parser.add_argument("--model", help="The model directory the store's config names.")
    parser.add_argument("--tiny-model", metavar="DIR", help="Build the tests' stand-in here.")
    parser.add_argument("--skip", default="", help=f"Stages to leave out: {','.join(STAGES)}")
    parser.add_argument("--runs", type=int, default=3, help="Processes per recall figure.")
    parser.add_argument(
        "--hide-usearch",
        action="store_true",
        help="This process as an install without the scale extra: its writes (the catch-up) "
        "leave the vector graph alone and never build one (the stages' child processes still "
        "see usearch).",
    )
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.hide_usearch:
        sys.modules["usearch"] = None  # type: ignore[assignment]  # find_spec: ValueError
    results: dict[str, Any] = {
        "machine": machine(),
        "load_before": os.getloadavg()[0],
        "usearch_hidden": args.hide_usearch,
    }
    if args.make:
        root = Path(args.make)
        model = args.model or (args.tiny_model and str(tiny_model(Path(args.tiny_model))))
        if not model:
            parser.error("--make needs --model or --tiny-model")
        results.update(count=args.count, months=args.months, model=model)
        maker = make_fast if args.fast else make
        results.update(maker(root, args.count, args.months))
        configure_model(root, model)
    if args.measure:
        results.update(
            measure(Path(args.measure), set(filter(None, args.skip.split(","))), args.runs)
        )
    write_json(args.json, results)


if __name__ == "__main__":
    main()
