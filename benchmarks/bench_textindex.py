"""Time gitmem.index.textindex on deterministic synthetic records (default 100k, ~150 words each).

    .venv/bin/python benchmarks/bench_textindex.py [--docs 100000] [--runs 3] [--context-words N]

Prints: full index time (wall and CPU); search p50/p95 for 3-8 word queries (limit 50), also with
an `allowed` set of 10, 1k and half the ids; a 2,000-word query; an identifier query; an
incremental write of 100 new records, of 100 edits, and of edits to 2.5% of the records spread
over old segments (which rewrites the whole index). Each figure is the median over --runs.
--context-words N adds N more words to every record's text, standing in for the text a context
field would index (issue 21: ±2 neighbours lend ~4 × 174 words; docs/search.md).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from gitmem.index.textindex import TextDoc, TextIndex

_SYLLABLES = "ka lo mi ne ru ta shi po ve da gri zu fen bar tol quin ex or al en".split()
_SUFFIXES = ["", "", "", "ing", "ed", "s", "ment", "er", "ation", "ly"]


class Corpus:
    """Pseudo-words with a Zipf distribution, so there are stop-word-like and rare terms."""

    def __init__(self, seed: int = 7, vocabulary: int = 30_000) -> None:
        self.rng = np.random.default_rng(seed)
        words: dict[str, None] = {}
        while len(words) < vocabulary:
            parts = self.rng.integers(0, len(_SYLLABLES), int(self.rng.integers(1, 4)))
            suffix = _SUFFIXES[int(self.rng.integers(0, len(_SUFFIXES)))]
            words["".join(_SYLLABLES[int(p)] for p in parts) + suffix] = None
        self.words = list(words)
        weights = 1.0 / np.arange(1, vocabulary + 1)
        self.p = weights / weights.sum()

    def text(self, count: int) -> list[str]:
        picks = self.rng.choice(len(self.words), size=count, p=self.p).tolist()
        return [self.words[i] for i in picks]

    def docs(self, n: int, start: int = 0, version: str = "a", extra: int = 0) -> list[TextDoc]:
        picks = self.rng.choice(len(self.words), size=(n, 174 + extra), p=self.p).tolist()
        out = []
        for k, row in enumerate(picks):
            i = start + k
            w = [self.words[j] for j in row]
            out.append(
                TextDoc(
                    id=f"rec-{i:06d}",
                    blob=f"{version}{i:039x}",
                    title=" ".join(w[:6]),
                    abstract=" ".join(w[6:21]),
                    body=" ".join(w[24:]) + f" See PAY-{i} in src/mod{i % 97}/file{i}.go.",
                    tags=tuple(w[21:24]),
                    type="fact",
                )
            )
        return out


def timed(fn: Callable[..., object], *args: object) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(
    corpus: Corpus, docs: list[TextDoc], queries: list[str], directory: Path, run: int
) -> dict[str, float]:
    """One full measurement on a fresh index in `directory`."""
    out: dict[str, float] = {}
    n = len(docs)
    ids = [d.id for d in docs]
    sets = {
        "": None,
        ", allowed 10": frozenset(ids[:: max(1, n // 10)][:10]),
        ", allowed 1k": frozenset(corpus.rng.choice(ids, min(1000, n), replace=False).tolist()),
        ", allowed half": frozenset(corpus.rng.choice(ids, n // 2, replace=False).tolist()),
    }
    index = TextIndex.create(directory)
    cpu = time.process_time()
    out["full index, wall (s)"] = timed(index.write, docs, [])
    out["full index, cpu (s)"] = time.process_time() - cpu
    for label, allowed in sets.items():
        times = [1000 * timed(index.search, q, 50, allowed) for q in queries]
        out[f"search p50{label} (ms)"] = statistics.median(times)
        out[f"search p95{label} (ms)"] = percentile(times, 0.95)
    long_queries = [" ".join(corpus.text(2000)) for _ in range(10)]
    times = [1000 * timed(index.search, q, 50) for q in long_queries]
    out["2,000-word query p50 (ms)"] = statistics.median(times)
    identifier = f"PAY-{n // 2}"
    out["identifier query (ms)"] = 1000 * timed(index.search, identifier, 50)
    assert index.search(identifier, 1)[0].id == f"rec-{n // 2:06d}"
    fresh = corpus.docs(100, start=n + 100 * run, version="c")
    out["write 100 new (s)"] = timed(index.write, fresh, [])
    edits = corpus.docs(100, start=int(corpus.rng.integers(0, n - 100)), version="b")
    out["write 100 edits (s)"] = timed(index.write, edits, [])
    # Edits spread over old segments: past 2% of leftovers the whole index is rewritten.
    picks = corpus.rng.choice(n, size=n // 40, replace=False).tolist()
    spread = [replace(docs[i], blob="d" + docs[i].blob[1:], title="edited") for i in picks]
    out["write 2.5% edits, rewrite (s)"] = timed(index.write, spread, [])
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--context-words", type=int, default=0)
    args = parser.parse_args()
    corpus = Corpus()
    docs = corpus.docs(args.docs, extra=args.context_words)
    queries = [" ".join(corpus.text(int(corpus.rng.integers(3, 9)))) for _ in range(args.queries)]
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-textindex-") as tmp:
        for i in range(args.runs):
            directory = Path(tmp) / f"run{i}"
            directory.mkdir()
            for name, value in run(corpus, docs, queries, directory, i).items():
                results.setdefault(name, []).append(value)
    print(
        f"{args.docs} docs (+{args.context_words} words each), {args.queries} queries of 3-8 "
        f"words, median of {args.runs} runs"
    )
    for name, values in results.items():
        print(f"  {name:32} {statistics.median(values):8.2f}")


if __name__ == "__main__":
    main()
