"""Measure the secret guard on two labelled corpora, against detect-secrets as a second opinion.

Run from the repository root:

    .venv/bin/python benchmarks/bench_secrets.py [--json PATH] [--no-detect-secrets]

Two corpora: ``secrets_corpus.py``, written together with the guard's rules (a regression
check), and ``provider_corpus.py``, built from the providers' published token formats and the
public rule sets of gitleaks, detect-secrets and trufflehog (the independent yardstick).
Detection is counted per record: a record with a planted secret is caught when ``scan`` reports
anything in it; a look-alike record is a false positive when ``scan`` reports anything at all.
Both are reported per kind.

Yelp's detect-secrets (the dev extra) scans the same records, each written to a ``.md`` file as
a store holds it, with its default plugins and filters; the records where the two disagree are
counted per kind. Speed: the median of five scans of a 64 KB record cut from each corpus, for
the guard and for detect-secrets, which decides whether it could run inside the guard (the
budget is 10 ms for a 64 KB record).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

import provider_corpus  # found beside this script: Python puts its folder on the path
import secrets_corpus
from _common import machine

from gitmem.store.guard import scan

RUNS = 5
RECORD_BYTES = 64 * 1024
Items = list[tuple[str, bool, str]]
Detector = Callable[[str], bool]


def _median_ms(detect: Detector, text: str) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        detect(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _record(texts: Iterable[str]) -> str:
    text = "\n\n".join(texts)
    return (text * (RECORD_BYTES // len(text) + 1))[:RECORD_BYTES]


def _guard(text: str) -> bool:
    return bool(scan(text))


def _detect_secrets() -> Detector | None:
    """detect-secrets' verdict on a record, or None when it is not installed."""
    try:
        from detect_secrets.core.scan import scan_file
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    folder = Path(tempfile.mkdtemp(prefix="bench-secrets-"))
    path = folder / "record.md"

    def detect(text: str) -> bool:
        path.write_text(text, encoding="utf-8")
        with default_settings():
            return bool(list(scan_file(str(path))))  # all of it: the timing is of a full scan

    return detect


def _per_kind(items: Items, verdicts: list[bool]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for (_text, secret, kind), flagged in zip(items, verdicts, strict=True):
        row = table.setdefault(kind, {"secret": int(secret), "records": 0, "flagged": 0})
        row["records"] += 1
        row["flagged"] += flagged
    return table


def _rates(items: Items, verdicts: list[bool]) -> dict[str, float]:
    planted = [v for (_t, secret, _k), v in zip(items, verdicts, strict=True) if secret]
    clean = [v for (_t, secret, _k), v in zip(items, verdicts, strict=True) if not secret]
    return {
        "planted": len(planted),
        "lookalikes": len(clean),
        "detection_rate": sum(planted) / len(planted),
        "false_positive_rate": sum(clean) / len(clean),
    }


def measure_corpus(items: Items, other: Detector | None) -> dict[str, object]:
    ours = [_guard(text) for text, _secret, _kind in items]
    figures: dict[str, object] = {
        "guard": _rates(items, ours),
        "guard_by_kind": _per_kind(items, ours),
        "guard_64kb_ms": _median_ms(_guard, _record(t for t, _s, _k in items)),
        "guard_64kb_clean_ms": _median_ms(_guard, _record(t for t, s, _k in items if not s)),
    }
    if other is not None:
        theirs = [other(text) for text, _secret, _kind in items]
        only_guard: Counter[str] = Counter()
        only_theirs: Counter[str] = Counter()
        for (_t, _s, kind), a, b in zip(items, ours, theirs, strict=True):
            if a and not b:
                only_guard[kind] += 1
            elif b and not a:
                only_theirs[kind] += 1
        figures |= {
            "detect_secrets": _rates(items, theirs),
            "detect_secrets_by_kind": _per_kind(items, theirs),
            "flagged_by_guard_only": dict(sorted(only_guard.items())),
            "flagged_by_detect_secrets_only": dict(sorted(only_theirs.items())),
            "detect_secrets_64kb_ms": _median_ms(other, _record(t for t, _s, _k in items)),
        }
    return figures


def _print(name: str, figures: dict[str, object]) -> None:
    guard = figures["guard"]
    theirs = figures.get("detect_secrets")
    assert isinstance(guard, dict)
    print(f"== {name}: {guard['planted']} planted secrets, {guard['lookalikes']} look-alikes")
    line = f"{'':26}{'guard':>14}"
    print(line + (f"{'detect-secrets':>16}" if theirs else ""))
    ours_by_kind = figures["guard_by_kind"]
    theirs_by_kind = figures.get("detect_secrets_by_kind", {})
    assert isinstance(ours_by_kind, dict) and isinstance(theirs_by_kind, dict)
    for kind, row in ours_by_kind.items():
        what = "caught" if row["secret"] else "refused"
        cell = f"{row['flagged']:>4}/{row['records']:<3} {what:<7}"
        if kind in theirs_by_kind:
            cell += f"{theirs_by_kind[kind]['flagged']:>6}/{row['records']:<3}"
        print(f"  {kind:<24}{cell}")
    summary = f"detection {guard['detection_rate']:.1%}, false positives"
    print(f"  guard:          {summary} {guard['false_positive_rate']:.1%}")
    if isinstance(theirs, dict):
        summary = f"detection {theirs['detection_rate']:.1%}, false positives"
        print(f"  detect-secrets: {summary} {theirs['false_positive_rate']:.1%}")
        print(f"  flagged by the guard only:          {figures['flagged_by_guard_only'] or '-'}")
        only = figures["flagged_by_detect_secrets_only"]
        print(f"  flagged by detect-secrets only:     {only or '-'}")
    print(
        f"  64 KB record: guard {figures['guard_64kb_ms']:.2f} ms "
        f"(look-alikes only {figures['guard_64kb_clean_ms']:.2f} ms)"
        + (f", detect-secrets {figures['detect_secrets_64kb_ms']:.0f} ms" if theirs else "")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write the figures here")
    parser.add_argument(
        "--no-detect-secrets", action="store_true", help="measure the guard alone (faster)"
    )
    args = parser.parse_args(argv)
    other = None if args.no_detect_secrets else _detect_secrets()
    if other is None and not args.no_detect_secrets:
        print("detect-secrets is not installed (pip install -e '.[dev]'): the guard alone")
    figures = {
        "machine": {**machine(), "load": os.getloadavg()[0]},
        "providers": measure_corpus(provider_corpus.corpus(), other),
        "own": measure_corpus(secrets_corpus.corpus(), other),
    }
    _print("provider corpus (benchmarks/provider_corpus.py)", figures["providers"])
    _print("own corpus (benchmarks/secrets_corpus.py)", figures["own"])
    print(f"load average at the start: {figures['machine']['load']:.1f}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
