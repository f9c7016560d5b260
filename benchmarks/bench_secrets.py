"""Measure the secret guard on the labelled corpus: recall, false positives and speed.

Run from the repository root:

    .venv/bin/python benchmarks/bench_secrets.py [--json PATH]

Detection is counted per record: a record with a planted secret is caught when ``scan`` reports
anything in it; a look-alike record is a false positive when ``scan`` reports anything at all.
Throughput is the median of five scans over the whole corpus joined into one text; a 64 KB
record cut from it, and one cut from the look-alikes alone, are timed the same way.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from pathlib import Path

from secrets_corpus import corpus  # found beside this script: Python puts its folder on the path

from gitmem.store.guard import scan

RUNS = 5
RECORD_BYTES = 64 * 1024


def _median_seconds(text: str) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        scan(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _record(text: str) -> str:
    return (text * (RECORD_BYTES // len(text) + 1))[:RECORD_BYTES]


def measure() -> dict[str, object]:
    items = corpus()
    planted = [(text, family) for text, secret, family in items if secret]
    lookalikes = [(text, family) for text, secret, family in items if not secret]
    missed = Counter(family for text, family in planted if not scan(text))
    flagged = Counter(family for text, family in lookalikes if scan(text))
    joined = "\n\n".join(text for text, _secret, _family in items)
    clean = "\n\n".join(text for text, _family in lookalikes)
    seconds = _median_seconds(joined)
    size = len(joined.encode())
    return {
        "planted": len(planted),
        "lookalikes": len(lookalikes),
        "detection_rate": 1 - sum(missed.values()) / len(planted),
        "false_positive_rate": sum(flagged.values()) / len(lookalikes),
        "missed_by_family": dict(sorted(missed.items())),
        "false_positives_by_family": dict(sorted(flagged.items())),
        "corpus_bytes": size,
        "throughput_mb_s": size / seconds / 1e6,
        "record_64kb_ms": _median_seconds(_record(joined)) * 1000,
        "clean_record_64kb_ms": _median_seconds(_record(clean)) * 1000,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    figures = measure()
    print(f"planted secrets      {figures['planted']}")
    print(f"look-alikes          {figures['lookalikes']}")
    print(f"detection rate       {figures['detection_rate']:.1%}")
    print(f"false-positive rate  {figures['false_positive_rate']:.1%}")
    print(f"missed by family     {figures['missed_by_family'] or 'none'}")
    print(f"false positives      {figures['false_positives_by_family'] or 'none'}")
    print(f"throughput           {figures['throughput_mb_s']:.1f} MB/s (median of {RUNS})")
    print(f"64 KB of records     {figures['record_64kb_ms']:.2f} ms, one secret per ~1 KB")
    print(f"64 KB, no secrets    {figures['clean_record_64kb_ms']:.2f} ms, look-alikes only")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
