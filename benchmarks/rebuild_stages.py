"""Where a full rebuild's time goes: parsing, embedding, the keyword index, the catalog.

    .venv/bin/python benchmarks/rebuild_stages.py --records 100000 \
        --model benchmarks/.models/minilm-distilled-256

Wraps the index's stages with timers (wall time spent inside each) and rebuilds once.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from _common import make_store
from bench_recall import configure_model

import gitmem.index as index_module
from gitmem.api import Store
from gitmem.catalog import Catalog
from gitmem.textindex import TextIndex

SPENT: dict[str, float] = {}


def timed(function: Callable[..., Any], key: str) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            SPENT[key] = SPENT.get(key, 0.0) + time.perf_counter() - start

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--model", required=True)
    args = parser.parse_args()
    root = make_store(args.records)
    configure_model(root, args.model)
    TextIndex.write = timed(TextIndex.write, "keyword index")  # type: ignore[method-assign]
    Catalog.apply = timed(Catalog.apply, "catalog")  # type: ignore[method-assign]
    index_module.embed_docs = timed(index_module.embed_docs, "embedding")
    parse = index_module.Index._parse

    def parsing(self: index_module.Index, files: Iterable[Any]) -> Iterator[Any]:
        docs = parse(self, files)
        while True:
            start = time.perf_counter()
            try:
                doc = next(docs)
            except StopIteration:
                return
            finally:
                SPENT["parse"] = SPENT.get("parse", 0.0) + time.perf_counter() - start
            yield doc

    index_module.Index._parse = parsing  # type: ignore[method-assign,assignment]
    store = Store.open(root)
    model = store.model()
    if model is not None:
        model.get()
    start = time.perf_counter()
    store.rebuild()
    total = time.perf_counter() - start
    print(f"rebuild of {args.records} records: {total:.1f} s")
    for key, spent in sorted(SPENT.items(), key=lambda kv: -kv[1]):
        print(f"  {key:14} {spent:6.1f} s")


if __name__ == "__main__":
    main()
