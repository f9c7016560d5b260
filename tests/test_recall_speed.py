"""Recall's fast paths give the answers of the plain ones: the semantic half stops asking the
catalog once its top records are settled and caches row owners, and recall runs the keyword
half beside it. Each test compares with a reference written out in full here, on a real store
with the tiny model (ids, order and scores to the last bit)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_index import tiny, tiny_model_dir  # noqa: F401  (a session fixture)

from gitmem.api import Store
from gitmem.index import blas, blasthread
from gitmem.index.catalog import Catalog
from gitmem.index.entries import Entry, Filter
from gitmem.index.index import Index
from gitmem.index.vectors import VectorFile, normalise, query_row, top_rows
from gitmem.recall.recall import Options, recall
from gitmem.store.store import Store as PlainStore

WORDS = (
    "cache index commit deploy retry webhook postgres redis session token queue worker schema "
    "migration latency timeout payment invoice customer dashboard react component terraform "
    "bucket policy lambda pipeline batch metric alert incident rollback release branch merge"
).split()
TYPES = ("decision", "fact", "lesson", "pattern")
START = datetime(2025, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 1, 1, tzinfo=UTC)
TWIN = "Webhook retry policy"  # five records with this very text: their vectors tie exactly


def items(count: int) -> Iterator[dict[str, Any]]:
    rng = random.Random(3)
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(60 if i % 9 else 700)]  # some span chunks
        title = TWIN if i % 60 == 7 else " ".join(words[:5]).capitalize()
        body = "Retry webhooks with backoff, 24h max." if title == TWIN else " ".join(words)
        stamp = (START + timedelta(hours=7 * i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        yield {
            "id": f"{'-'.join(words[:3])}-{i:05x}",
            "type": TYPES[i % len(TYPES)],
            "title": title,
            "abstract": "" if title == TWIN else " ".join(words[5:15]),
            "tags": ["rare"] if i % 97 == 0 else sorted(set(words[20:22])),
            "agent": "bench",
            "scope": "shared",
            "source": "",
            "created": stamp,
            "updated": stamp,
            "weight": 1.0 + (i % 3),
            "links": [],
            "supersedes": [],
            "superseded_by": "",
            "status": "active",
            "body": body + "\n",
        }


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> Store:  # noqa: F811
    root = tmp_path_factory.mktemp("recall-speed") / "store"
    plain, _ = PlainStore.init(root)
    plain.import_records(items(300), agent="bench")
    store = Store.open(root)
    store.use_model(tiny(tiny_model_dir))
    for i, record in enumerate(sorted(store.records(), key=lambda r: r.id)[:40:8]):
        store.supersede(record.id, f"Retry with jitter, {i + 2} tries.", title=f"Jitter {i}")
    store.index()
    return store


QUERIES = ["webhook retry policy", TWIN, "postgres latency", "deploy rollback incident", "zzz"]
FILTERS = [
    Filter(),
    Filter(include_superseded=True),
    Filter(types=("decision",)),
    Filter(tags=("rare",)),  # narrow: a handful of records, searched as a subset of rows
    Filter(since=int((START + timedelta(days=40)).timestamp())),
    Filter(types=("lesson", "fact"), until=int((START + timedelta(days=60)).timestamp())),
    Filter(exclude=frozenset({"nothing-here"})),
]


def opened(store: Store) -> tuple[Catalog, Any]:
    """The index's catalog and vector matrix, read with the public classes."""
    root = store.cache_dir / "index"
    catalog = Catalog(root / "catalog.sqlite")
    ref = store.model()
    assert ref is not None
    name = catalog.meta("vectors") or "vectors.f32"
    vectors = VectorFile(root / name, ref.get().info.dim)
    return catalog, vectors.matrix(min(vectors.rows(), catalog.next_row()))


def query_vector(store: Store, query: str) -> Any:
    ref = store.model()
    assert ref is not None
    return query_row(ref.encode_query(query)).reshape(1, -1)  # as Index.semantic makes it


def as_before(store: Store, query: str, n: int, flt: Filter) -> list[tuple[str, float]]:
    """The semantic half as it was: every owner and entry of the top rows looked up."""
    catalog, matrix = opened(store)
    q = query_vector(store, query)
    ids = None if not flt.narrow else catalog.matching(flt)
    subset = None if ids is None else catalog.rows_of(ids)
    want = n + n // 2
    while True:
        pairs = top_rows(matrix, q, want, subset)
        owners = catalog.owners([row for row, _ in pairs])
        entries = catalog.entries(list(owners.values()))
        best: dict[str, float] = {}
        for row, score in pairs:
            entry = entries.get(owners.get(row, ""))
            if entry is not None and flt.admits(entry):
                best.setdefault(entry.id, score)
        if len(best) >= n or len(pairs) < want:
            catalog.close()
            return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
        want *= 4


def brute_force(store: Store, query: str, n: int, flt: Filter) -> list[tuple[str, float]]:
    """Every live row scored, each admitted record by its best chunk. A narrow filter's rows
    are scored as a block of their own, as top_rows does (BLAS may round a row's product
    differently in another block: 1 ulp, seen with the tiny model)."""
    catalog, matrix = opened(store)
    q = query_vector(store, query).reshape(-1)
    rows = catalog.all_rows()
    if flt.narrow:
        numbers = catalog.rows_of(catalog.matching(flt))
        scores = dict(zip(numbers, (matrix[numbers] @ q).tolist(), strict=True))
    else:
        scores = dict(enumerate((matrix @ q).tolist()))
    entries: dict[str, Entry] = catalog.entries({rid for _, rid in rows})
    catalog.close()
    best: dict[str, float] = {}
    for row, rid in rows:
        if flt.admits(entries[rid]):
            best[rid] = max(best.get(rid, -2.0), scores[row])
    return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def test_semantic_half_equals_the_path_before_and_a_brute_force(big: Store) -> None:
    index = big.index()
    twins = {r.id for r in big.records() if r.title == TWIN}

    def alike(pairs: list[tuple[str, float]] | None) -> list[tuple[str, float]]:
        """Which of the exactly tied twins makes a cut is arbitrary (top_rows' partition)."""
        return [("twin" if rid in twins else rid, score) for rid, score in pairs or []]

    compared = 0
    for query in QUERIES:
        for flt in FILTERS:
            for n in (1, 2, 3, 10, 100, 400):
                got = index.semantic(query, n, flt)
                assert got == as_before(big, query, n, flt), (query, flt, n)
                assert alike(got) == alike(brute_force(big, query, n, flt)), (query, flt, n)
                compared += len(got or [])
    assert compared > 5000


def test_ties_at_the_cut_are_settled_by_id_as_before(big: Store) -> None:
    index = big.index()
    twins = index.semantic(TWIN, 20, Filter())
    assert twins is not None
    tied = [rid for rid, score in twins if score == twins[0][1]]
    assert len(tied) == 5  # five identical vectors: the n-th record ties with the next ones
    # Rows come in import order, ids in another: stopping at the n-th record instead of after
    # its ties would keep other twins than the path before did.
    assert sorted(tied) != [rid for rid in _row_order(big) if rid in tied]
    for n in range(1, 7):
        assert index.semantic(TWIN, n, Filter()) == as_before(big, TWIN, n, Filter()), n


def _row_order(store: Store) -> list[str]:
    catalog, _ = opened(store)
    rows = sorted(catalog.all_rows())
    catalog.close()
    return list(dict.fromkeys(rid for _, rid in rows))


def test_hybrid_recall_equals_recall_over_the_reference_halves(big: Store) -> None:
    index = big.index()
    index.notices.clear()  # the build's notice (the index was missing), not an answer
    reference = Reference(index, big)
    for query in QUERIES:
        for flt in FILTERS:
            options = Options(filter=flt, now=NOW, limit=20)
            assert recall(index, query, options) == recall(reference, query, options)


class Reference:
    """The index with the plain semantic half, every part run in the calling thread."""

    def __init__(self, index: Index, store: Store) -> None:
        self.index, self.store = index, store
        self.model = index.model
        self.notices: list[str] = []

    def ensure_current(self) -> None:
        self.index.ensure_current()

    def keyword(
        self, query: str, n: int, flt: Filter, context: float = 0.0
    ) -> list[tuple[str, float]]:
        return self.index.keyword(query, n, flt, context)

    def source_prior(self, query: str, ids: Sequence[str]) -> dict[str, float]:
        return self.index.source_prior(query, ids)

    def context_scores(self, query: str, ids: Sequence[str], weight: float) -> dict[str, float]:
        return self.index.context_scores(query, ids, weight)

    def keyword_ceiling(self, query: str) -> float:
        return self.index.keyword_ceiling(query)

    def semantic(self, query: str, n: int, flt: Filter) -> list[tuple[str, float]] | None:
        return brute_force(self.store, query, n, flt)

    def scoring(self, ids: Sequence[str]) -> dict[str, tuple[int, float]]:
        return {rid: (e.updated, e.weight) for rid, e in self.index.entries(ids).items()}

    def entries(self, ids: Sequence[str]) -> dict[str, Entry]:
        return self.index.entries(ids)


def test_a_long_lived_index_answers_like_a_fresh_one_after_writes(
    big: Store,
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    """Owner and entry caches are dropped when the index moves (rows die, a compaction
    renumbers them)."""
    root = big.root.parent / "writes"
    plain, _ = PlainStore.init(root / "store")
    long = next(items(1))  # 700 words: several chunks, so each edit leaves several dead rows
    plain.import_records(items(40), agent="bench")
    store = Store.open(root / "store")
    store.use_model(tiny(tiny_model_dir))
    index = root / "store" / ".gitmem" / "index"
    for i in range(60):
        store.amend(long["id"], {"abstract": f"revision {i} of the retry policy"})
        warm = [store.recall(q, now=NOW, filter=f) for q in QUERIES for f in FILTERS[:4]]
        if list(index.glob("vectors-*.f32")):  # compacted: rows renumbered under the caches
            break
    else:
        pytest.fail("the vector file was never compacted")
    fresh = Store.open(root / "store")
    fresh.use_model(tiny(tiny_model_dir))
    assert [fresh.recall(q, now=NOW, filter=f) for q in QUERIES for f in FILTERS[:4]] == warm


class Failing(Reference):
    """A semantic half that fails while the keyword half is still at work."""

    def __init__(self, index: Index, store: Store) -> None:
        super().__init__(index, store)
        self.started = threading.Event()
        self.finished = threading.Event()

    def keyword(
        self, query: str, n: int, flt: Filter, context: float = 0.0
    ) -> list[tuple[str, float]]:
        self.started.set()
        time.sleep(0.05)
        self.finished.set()
        return []

    def semantic(self, query: str, n: int, flt: Filter) -> list[tuple[str, float]] | None:
        self.started.wait()
        raise RuntimeError("semantic half failed")


def test_a_failing_half_leaves_no_work_running(big: Store) -> None:
    source = Failing(big.index(), big)
    with pytest.raises(RuntimeError, match="semantic half failed"):
        recall(source, "webhook", Options(now=NOW))
    assert source.finished.is_set()  # recall waited for the keyword half before raising


def test_a_reader_drops_its_owners_when_another_process_compacts_under_the_same_commit(
    tmp_path: Path,
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    """A writer moves the stamp, then compacts: a reader that caught up in between cached row
    owners by the old numbers, under the commit the index still has. The renamed vector file
    is all that tells it so (Store objects of their own stand for the two processes)."""
    plain, _ = PlainStore.init(tmp_path / "store")
    long = next(items(1))
    plain.import_records(items(40), agent="bench")

    def opened_store() -> Store:
        store = Store.open(tmp_path / "store")
        store.use_model(tiny(tiny_model_dir))
        return store

    reader, writer = opened_store(), opened_store()
    index = tmp_path / "store" / ".gitmem" / "index"
    seen: list[list[Any]] = []

    def answers() -> list[Any]:
        return [reader.recall(q, now=NOW, mode="semantic") for q in QUERIES]

    compact = Index._compact

    def reader_first(self: Index) -> None:  # the reader catches up before the rows move
        seen.append(answers())
        compact(self)

    writer_index = writer.index()
    writer_index._compact = reader_first.__get__(writer_index)  # type: ignore[method-assign]
    for i in range(60):
        writer.amend(long["id"], {"abstract": f"revision {i} of the retry policy"})
        writer.index()
        if list(index.glob("vectors-*.f32")):
            break
    else:
        pytest.fail("the vector file was never compacted")
    assert seen  # the reader did search between the stamp and the compaction
    assert answers() == [opened_store().recall(q, now=NOW, mode="semantic") for q in QUERIES]


def test_scores_do_not_depend_on_how_many_threads_blas_may_use() -> None:
    """The product runs on one BLAS thread whatever the machine allows (gitmem.index.vectors): a
    product split over two threads rounds some rows differently in the last bit, which would
    make two machines with different cores disagree on scores (DESIGN.md invariant 8)."""
    code = (
        "import hashlib, numpy as np\n"
        "from gitmem.index.blasthread import blas_controls\n"
        "from gitmem.index.vectors import normalise, top_rows\n"
        "rng = np.random.default_rng(7)\n"
        "m = normalise(rng.standard_normal((100000, 256), dtype=np.float32))\n"
        "q = normalise(rng.standard_normal(256, dtype=np.float32))\n"
        "before = blas_controls()[0]() if blas_controls() else None\n"
        # Without the limit this subset scores differently on one thread and on two (checked
        # with numpy 2.4's OpenBLAS 0.3.31 on a Skylake-X); the whole matrix happens not to.
        "pairs = top_rows(m, q, 3000, list(range(0, 100000, 7))) + top_rows(m, q, 2000)\n"
        "after = blas_controls()[0]() if blas_controls() else None\n"
        "print(before == after, hashlib.sha256(repr(pairs).encode()).hexdigest())\n"
    )
    answers = set()
    for threads in ("1", "2"):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads}
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        answers.add(done.stdout)
    assert len(answers) == 1
    assert answers.pop().startswith("True ")  # the count is put back after each product


def test_the_blas_thread_count_is_put_back_when_setting_it_is_interrupted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A KeyboardInterrupt can arrive just as the call that sets one thread returns: the count
    is put back all the same, and the lock is free for the next product."""
    import numpy as np

    count = [2]

    def put(n: int) -> None:
        count[0] = n
        if n == 1:
            raise KeyboardInterrupt  # delivered after the call has set the count

    monkeypatch.setattr(blasthread, "_controls", [(lambda: count[0], put)])
    matrix = normalise(np.eye(4, dtype=np.float32))
    with pytest.raises(KeyboardInterrupt):
        top_rows(matrix, matrix[0], 1)
    assert count == [2]
    assert not blas.THREAD_LIMIT.lock.locked()


def child_code(pid: int, seconds: float, hung: str) -> int:
    """The exit code of a forked child, which is killed (failing the test) if it hangs."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    raise AssertionError(hung)


def test_a_child_forked_while_the_blas_lock_is_held_can_still_search() -> None:
    import numpy as np

    from gitmem.index import vectors

    matrix = vectors.normalise(np.eye(4, dtype=np.float32))
    with blas.THREAD_LIMIT.lock:  # as if another thread were inside a product
        pid = os.fork()
        if pid == 0:  # the child: its copy of the lock must not be held
            try:
                vectors.top_rows(matrix, matrix[1], 1)
            finally:
                os._exit(0)
    assert child_code(pid, 30, "the forked child hung on the BLAS lock") == 0


# --- the product shared between threads (gitmem.index.vectors._Product) ---------------------------


def shared_case(rows: int = 9 * 4096 + 123) -> tuple[Any, Any, Any]:
    """A matrix of several blocks, a query, and each block's product on its own: what every
    row must score however the blocks are shared out."""
    import numpy as np

    from gitmem.index import vectors

    rng = np.random.default_rng(11)
    matrix = normalise(rng.standard_normal((rows, 96), dtype=np.float32))
    q = normalise(rng.standard_normal(96, dtype=np.float32)).reshape(-1)
    step = vectors.BLOCK_ROWS
    with vectors._one_blas_thread():
        blocks = [matrix[i : i + step] @ q for i in range(0, rows, step)]
    return matrix, q, np.concatenate(blocks)


def test_a_product_scores_the_same_however_its_blocks_are_shared() -> None:
    import numpy as np

    from gitmem.index import vectors

    matrix, q, expected = shared_case()
    assert np.array_equal(vectors._Product(matrix, q).run(), expected)
    assert np.allclose(expected, matrix @ q, atol=1e-6)
    # Every block computed by a helper before the owner starts: the owner has nothing left.
    product = vectors._Product(matrix, q)
    vectors._RUNNING.add(product)
    vectors.help_products(threading.get_ident())
    assert product._left == 0
    assert np.array_equal(product.run(), expected)
    assert not vectors._RUNNING
    # And a helper thread joining products as they run, blocks taken by both.
    stop, owner = threading.Event(), threading.get_ident()

    def helper() -> None:
        while not stop.is_set():
            vectors.help_products(owner)

    thread = threading.Thread(target=helper, daemon=True)
    thread.start()
    try:
        for _ in range(40):
            assert np.array_equal(vectors._Product(matrix, q).run(), expected)
    finally:
        stop.set()
        thread.join()


def test_the_owner_waits_for_a_block_a_helper_is_still_computing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import numpy as np

    from gitmem.index import vectors

    matrix, q, expected = shared_case()
    taken = threading.Event()
    real = np.matmul

    def slow_in_helper(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is not threading.main_thread():
            taken.set()
            time.sleep(0.3)
        return real(*args, **kwargs)

    monkeypatch.setattr(vectors.np, "matmul", slow_in_helper)
    product = vectors._Product(matrix, q)
    helper = threading.Thread(target=product.work, kwargs={"owner": False})
    helper.start()
    assert taken.wait(10)
    scores = product.run()  # the helper holds block 0 for 0.3 s
    assert product._left == 0
    helper.join()
    assert np.array_equal(scores, expected)


def test_a_block_a_helper_fails_on_is_computed_by_the_owner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import numpy as np

    from gitmem.index import vectors

    matrix, q, expected = shared_case()
    real = np.matmul
    calls = []

    def fails_once(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            raise MemoryError("no room for the block")
        return real(*args, **kwargs)

    monkeypatch.setattr(vectors.np, "matmul", fails_once)
    product = vectors._Product(matrix, q)
    vectors._RUNNING.add(product)
    with pytest.raises(MemoryError):
        vectors.help_products(threading.get_ident())  # two blocks done, the third given back
    assert product._retry == [2]
    assert np.array_equal(product.run(), expected)
    assert not vectors._RUNNING


def test_a_failing_helper_does_not_fail_the_recall(
    big: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitmem.index import vectors

    expected = big.recall("webhook retry policy", now=NOW)
    monkeypatch.setattr(vectors, "help_products", lambda owner: 1 / 0)
    assert big.recall("webhook retry policy", now=NOW) == expected


def test_the_blas_count_is_put_back_only_when_the_last_product_leaves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gitmem.index import vectors

    count = [2]
    put = lambda n: count.__setitem__(0, n)  # noqa: E731
    monkeypatch.setattr(blasthread, "_controls", [(lambda: count[0], put)])
    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with vectors._one_blas_thread():
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    assert inside.wait(10)
    with vectors._one_blas_thread():
        assert count == [1]
    assert count == [1]  # the other thread's product is still running
    leave.set()
    thread.join()
    assert count == [2]
    assert blas.THREAD_LIMIT.depth == 0


def test_a_recall_helps_only_its_own_product(big: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The keyword half's thread helps the product of its own recall, not one another thread
    runs (another recall of the MCP server, a search of the past): its recall would wait for
    that product too."""
    import numpy as np

    from gitmem.index import vectors

    monkeypatch.setattr(vectors, "BLOCK_ROWS", 16)  # the small store's product in many blocks
    expected = big.recall("webhook", now=NOW)
    real, helped = np.matmul, threading.Event()

    def owner_waits_for_a_helper(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name.startswith("gitmem-keyword"):
            helped.set()
        elif threading.current_thread().name == "recalling":
            helped.wait(10)  # the keyword half's thread must come to help
        return real(*args, **kwargs)

    help_products = vectors.help_products

    def once_the_product_runs(owner: int) -> None:  # the keyword half is done first here too
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with vectors._RUNNING_LOCK:
                if any(p.owner == owner for p in vectors._RUNNING):
                    break
            time.sleep(0.001)
        help_products(owner)

    matrix, q, _ = shared_case()
    other = vectors._Product(matrix, q)  # as if this thread were inside it
    vectors._RUNNING.add(other)
    monkeypatch.setattr(vectors.np, "matmul", owner_waits_for_a_helper)
    monkeypatch.setattr(vectors, "help_products", once_the_product_runs)
    answers: list[Any] = []
    try:
        thread = threading.Thread(
            target=lambda: answers.append(big.recall("webhook", now=NOW)), name="recalling"
        )
        thread.start()
        thread.join()
    finally:
        vectors._RUNNING.discard(other)
    assert helped.is_set()  # its own product was shared
    assert other._next == 0  # no block of the other thread's was taken
    assert answers == [expected]


def test_a_helper_takes_no_block_once_the_owner_has_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An owner that fails (or is interrupted) leaves its product: a helper holding it from
    before computes nothing more for nobody, and the recall waiting for that helper is not
    held up."""
    import numpy as np

    from gitmem.index import vectors

    matrix, q, _ = shared_case()
    real = np.matmul
    calls: list[str] = []

    def fails_in_owner(*args: Any, **kwargs: Any) -> Any:
        calls.append(threading.current_thread().name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(vectors.np, "matmul", fails_in_owner)
    product = vectors._Product(matrix, q)
    with pytest.raises(KeyboardInterrupt):
        product.run()
    assert not vectors._RUNNING
    helper = threading.Thread(target=product.work, kwargs={"owner": False})
    helper.start()
    helper.join()
    assert len(calls) == 2


def test_an_interrupt_as_a_product_is_registered_leaves_it_unregistered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gitmem.index import vectors

    class Interrupted(set[Any]):
        def add(self, item: Any) -> None:
            super().add(item)
            raise KeyboardInterrupt  # delivered as the call returns

    running = Interrupted()
    monkeypatch.setattr(vectors, "_RUNNING", running)
    matrix, q, _ = shared_case()
    with pytest.raises(KeyboardInterrupt):
        vectors._Product(matrix, q).run()
    assert not running  # else every later helper would find it, and it would pin its matrix


def test_a_child_forked_during_another_threads_product_gets_the_blas_count_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The thread that would put the count back is not in the child: the child puts it back
    itself, or its numpy would run on one thread for good."""
    from gitmem.index import vectors

    count = [2]
    put = lambda n: count.__setitem__(0, n)  # noqa: E731
    monkeypatch.setattr(blasthread, "_controls", [(lambda: count[0], put)])
    inside, leave = threading.Event(), threading.Event()

    def product() -> None:
        with vectors._one_blas_thread():
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=product)
    thread.start()
    try:
        assert inside.wait(10)
        assert count == [1]
        pid = os.fork()
        if pid == 0:  # the child
            os._exit(0 if count == [2] and blas.THREAD_LIMIT.depth == 0 else 3)
        _, status = os.waitpid(pid, 0)
    finally:
        leave.set()
        thread.join()
    assert os.waitstatus_to_exitcode(status) == 0
    assert count == [2]


def test_a_semantic_half_that_widens_its_rows_computes_the_product_once(
    big: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three records in four fail the filter, so the top rows are widened (want *= 4) until
    enough pass: the product is not computed again for each widening."""
    from gitmem.index import vectors

    index = big.index()
    runs = []
    real_run = vectors._Product.run

    def counted(self: Any) -> Any:
        runs.append(1)
        return real_run(self)

    flt = Filter(types=("decision",))
    expected = index.semantic("webhook retry policy", 60, flt)  # narrow: a subset of rows
    assert expected is not None and len(expected) == 60
    monkeypatch.setattr(vectors._Product, "run", counted)
    monkeypatch.setattr(Filter, "narrow", property(lambda self: False))  # every row scored
    got = index.semantic("webhook retry policy", 60, flt)
    assert runs == [1]
    assert got is not None
    assert [rid for rid, _ in got] == [rid for rid, _ in expected]
    assert all(abs(a - b) < 1e-6 for (_, a), (_, b) in zip(got, expected, strict=True))


def test_records_tied_at_the_cut_give_the_same_answer_after_a_rebuild(
    store_path: Path,
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    """Copies of one note score exactly alike. An index caught up write by write holds their
    rows in the order they were written, a rebuild in file order; which of them the semantic
    half keeps at the cut must not depend on that (DESIGN.md, invariant 1)."""
    store = Store.open(store_path)
    store.use_model(tiny(tiny_model_dir))
    rng = random.Random(0)
    for i in range(24):
        if i % 3 == 0:
            store.record("fact", "Retry webhooks with backoff, 24h max.", title=TWIN)
        else:
            words = [rng.choice(WORDS) for _ in range(30)]
            store.record("fact", " ".join(words), title=" ".join(words[:4]))
        store.index()  # caught up after each write: rows in the order of the writes

    def answers() -> list[list[tuple[str, float]] | None]:
        index = store._opened_index()
        return [index.semantic(TWIN, n, Filter()) for n in range(1, 10)]

    updated = answers()
    store.rebuild()
    assert answers() == updated


def test_every_row_tied_with_the_kth_is_kept() -> None:
    """Scores here are each row's first component (the query is the first axis), so every
    product is exact and rows 7 and 40-45 tie, however BLAS sums."""
    import numpy as np

    rng = np.random.default_rng(5)
    matrix = np.zeros((46, 8), dtype=np.float32)
    matrix[:, 0] = (rng.permutation(46) + 0.25) / 64  # distinct, none 0.5
    matrix[[7, *range(40, 46)], 0] = 0.5  # below 13 rows, tied with each other
    query = np.eye(8, dtype=np.float32)[0]
    above = {int(row) for row in np.flatnonzero(matrix[:, 0] > 0.5)}
    tied = {7, *range(40, 46)}
    for k in range(1, 25):
        rows = {row for row, _ in top_rows(matrix, query, k)}
        if k <= len(above):
            assert len(rows) == k, k
        else:
            assert above | tied <= rows, k
            assert len(rows) == max(k, len(above | tied)), k
    subset = [*range(0, 46, 3), 7]  # 7 and the tied rows 42 and 45
    in_subset = {int(row) for row in subset if matrix[row, 0] > 0.5}
    rows = {row for row, _ in top_rows(matrix, query, len(in_subset) + 1, subset)}
    assert rows == in_subset | {7, 42, 45}
    # A query with no vector (no word the model knows) ties every row: it ranks none.
    assert top_rows(matrix, np.zeros(8, dtype=np.float32), 5) == []


@pytest.mark.parametrize("seed", range(6))
def test_the_sampled_selection_keeps_exactly_the_rows_tied_with_or_above_the_kth(
    seed: int,
) -> None:
    """vectors._at_least_kth finds the k-th highest among the rows above a sample's: the same
    rows as a selection over all of them, whatever the ties (spread over the sample's stride
    or not), hidden rows (-inf) or NaN do."""
    import numpy as np

    from gitmem.index import vectors

    rng = np.random.default_rng(seed)
    for size in (9_599, 9_600, 20_000, 100_003):
        scores = rng.standard_normal(size).astype(np.float32)
        if seed % 2:  # coarse scores: many ties, on and off the sample's rows
            scores = np.round(scores * 8) / 8
        if seed % 3 == 1:
            scores[rng.integers(0, size, size // 4)] = -np.inf
        if seed == 5:
            scores[rng.integers(0, size, 7)] = np.nan
        clean = np.where(np.isnan(scores), -np.inf, scores)  # NaN: a damaged vector file
        for k in (1, 2, 16, 150, 151, 600, size // 64, size // 64 + 1):
            got = vectors._at_least_kth(scores, k)
            kth = np.partition(clean, size - k)[size - k]
            expected = np.flatnonzero(clean >= kth)
            # With NaN, fewer than k rows is also an answer: Ranking.top then selects anew.
            assert np.array_equal(got, expected) or (seed == 5 and got.size < k), (size, k)


class KeywordFails(Reference):
    def keyword(
        self, query: str, n: int, flt: Filter, context: float = 0.0
    ) -> list[tuple[str, float]]:
        raise RuntimeError("keyword half failed")


def test_a_failing_keyword_half_fails_the_recall_and_not_the_next(big: Store) -> None:
    with pytest.raises(RuntimeError, match="keyword half failed"):
        recall(KeywordFails(big.index(), big), "webhook", Options(now=NOW))
    assert recall(big.index(), "webhook", Options(now=NOW)).hits  # the keyword thread lives


def test_a_child_forked_while_the_keyword_thread_is_busy_can_recall(big: Store) -> None:
    """The child has no keyword thread (fork copies only the forking one) and may hold a
    copy of its lock: its first hybrid recall starts a thread of its own."""
    from gitmem.recall.worker import POOL

    expected = [h.id for h in big.recall("webhook retry", now=NOW).hits]
    release = threading.Event()
    blocker = POOL.submit(release.wait)  # the parent's thread is busy
    with POOL._lock:
        pid = os.fork()
        if pid == 0:  # the child
            try:
                got = [h.id for h in big.recall("webhook retry", now=NOW).hits]
                os._exit(0 if got == expected else 3)
            finally:
                os._exit(4)
    release.set()
    blocker.result()
    assert child_code(pid, 60, "the forked child's recall hung") == 0


class OneGone(Reference):
    """A record that another process's update removed between scoring and display."""

    gone = ""

    def entries(self, ids: Sequence[str]) -> dict[str, Entry]:
        return {k: v for k, v in self.index.entries(ids).items() if k != self.gone}


def test_a_hit_gone_since_it_was_scored_leaves_the_list_full(big: Store) -> None:
    source = OneGone(big.index(), big)
    full = recall(source, "webhook retry policy", Options(now=NOW, limit=5))
    source.gone = full.hits[0].id
    later = recall(source, "webhook retry policy", Options(now=NOW, limit=5))
    assert [h.id for h in later.hits] == [h.id for h in full.hits[1:]] + [later.hits[-1].id]
    assert len(later.hits) == 5 and source.gone not in {h.id for h in later.hits}


NOW_TS = NOW.timestamp()


@settings(max_examples=300, deadline=None)
@given(
    candidates=st.lists(
        st.tuples(
            st.sampled_from([0.0, 0.25, 0.5, 1.0, -0.5, 3.4e-322, 3.5e-322, -5e-324])
            | st.floats(-2, 2, allow_nan=False, allow_subnormal=True),
            st.integers(0, 400),  # age in days
            st.sampled_from([0.1, 0.25, 1.0, 2.0, 4.0, 10.0]),
            st.booleans(),  # has facts
        ),
        max_size=60,
    ),
    half_life=st.sampled_from([0.0, 3.0, 14.0]),
    floor=st.sampled_from([0.0, 0.8, 1.0, 1.5, -0.2]),
    strength=st.sampled_from([0.0, 0.1, 1.0, -0.3]),
)
def test_candidates_come_best_first_as_a_full_sort_ranks_them(
    candidates: list[tuple[float, int, float, bool]],
    half_life: float,
    floor: float,
    strength: float,
) -> None:
    """recall._best_first scores as few candidates as the order needs: it must give them in
    the order of scoring all and sorting, ties (equal scores, coarse inputs) by id."""
    from gitmem.recall import recall as recall_module

    options = Options(half_life_days=half_life, decay_floor=floor, weight_strength=strength)
    fused = {f"r{i:03d}": base for i, (base, _, _, _) in enumerate(candidates)}
    facts = {
        f"r{i:03d}": (int(NOW_TS) - age * 86400, weight)
        for i, (_, age, weight, known) in enumerate(candidates)
        if known
    }
    expected = sorted(
        recall_module._scored(rid, base, facts, NOW_TS, options)
        for rid, base in fused.items()
        if rid in facts
    )
    assert list(recall_module._best_first(fused, facts, NOW_TS, options)) == expected


def test_subnormal_scores_come_in_the_full_sorts_order() -> None:
    """Where a product is subnormal its rounding error is absolute, not relative: a case
    (found by a review's random search) that a relative slack alone misordered."""
    from gitmem.recall import recall as recall_module

    now = 1.8e9
    fused = {"r00": 3.4e-322, "r01": 3.4e-322, "r02": 3.5e-322}
    facts = {
        "r00": (1799773200, 3.341934665638675),
        "r01": (1799683200, 3.4733982938917056),
        "r02": (1799766000, 3.270071438104053),
    }
    options = Options(half_life_days=0.5, decay_floor=0.0, weight_strength=1.0)
    expected = sorted(recall_module._scored(r, b, facts, now, options) for r, b in fused.items())
    assert list(recall_module._best_first(fused, facts, now, options)) == expected
