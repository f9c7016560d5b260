"""What a reader's document count costs (`textcarry.counted`, run by every reload): meta.json
checked against the searcher (`fits`, two probes a segment), and every segment's size probed
(the path taken when another process committed between the reload and the meta.json read).

    PYTHONPATH=TREE nice -n 5 .venv/bin/python benchmarks/textcarry_count.py INDEX/text

INDEX is a store's `.gitmem/index`. Medians of 20 calls each, in one process; only reads.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from gitmem.index import textcarry, textindex
from gitmem.index.textindex import TextIndex


def _median_ms(call: Callable[[], object], runs: int = 20) -> float:
    took = []
    for _ in range(runs):
        began = time.perf_counter()
        call()
        took.append(time.perf_counter() - began)
    return statistics.median(took) * 1e3


def main() -> None:
    directory = Path(sys.argv[1])
    index = TextIndex.open(directory)
    searcher = index._main.searcher()
    address = textindex.tantivy.DocAddress  # tantivy's one owner hands it over
    print("segments", [s.max_doc for s in textcarry.segments(directory)])

    def counted() -> object:
        return textcarry.counted(searcher, directory, address)

    def probed() -> object:
        return [textcarry._probed(searcher, address, o) for o in range(searcher.num_segments)]

    print(f"counted, meta.json fits: {_median_ms(counted):.2f} ms")
    print(f"every segment probed: {_median_ms(probed):.2f} ms")
    print(f"TextIndex.reload: {_median_ms(index.reload):.2f} ms")


if __name__ == "__main__":
    main()
