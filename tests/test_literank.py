"""gitmem.index.literank ranks the vector rows without numpy and must answer as
gitmem.index.vectors.Ranking does over the same file: the same rows, in the same order, with
the very same floats."""

from __future__ import annotations

import os
import subprocess
import sys
from array import array
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gitmem.index import blas, literank, vectors
from gitmem.index.literank import LiteRanking, Unranked, hidden_rows

pytestmark = pytest.mark.skipif(not literank.available(), reason="no OpenBLAS of numpy's")
DIM = 256


def vector_file(tmp_path: Path, matrix: Any) -> Path:
    path = tmp_path / "vectors.f32"
    path.write_bytes(np.ascontiguousarray(matrix, dtype=np.float32).tobytes())
    return path


def case(rng: np.random.Generator, rows: int, dim: int = DIM) -> Any:
    """Unit rows, some of them copies of others (scores that tie exactly)."""
    matrix = vectors.normalise(rng.standard_normal((rows, dim), dtype=np.float32))
    if rows > 2:
        copies = rng.integers(0, rows, size=max(1, rows // 50))
        matrix[copies] = matrix[rng.integers(0, rows)]
        matrix[rows - 1] = matrix[0]  # a copy in the last block (of one row at 4097 rows)
    return matrix


def both(path: Path, matrix: Any, q: Any, hide: list[int]) -> tuple[LiteRanking, vectors.Ranking]:
    rows = matrix.shape[0]
    mask = np.zeros(rows, dtype=bool)
    mask[hide] = True
    mapped = vectors.VectorFile(path, matrix.shape[1]).matrix(rows)
    lite = LiteRanking(path, rows, matrix.shape[1], array("f", q.tobytes()), hide)
    return lite, vectors.Ranking(mapped, q, None, mask)


def hides(rng: np.random.Generator, rows: int) -> list[list[int]]:
    some = sorted({int(r) for r in rng.integers(0, rows, size=max(1, rows // 10))})
    few_left = sorted(set(range(rows)) - {int(r) for r in rng.integers(0, rows, size=3)})
    return [[], some, few_left, list(range(rows))]


@pytest.mark.parametrize("rows", [1, 2, 4095, 4096, 4097, 10000])
def test_the_top_rows_are_numpys(tmp_path: Path, rows: int) -> None:
    rng = np.random.default_rng(rows)
    matrix = case(rng, rows)
    path = vector_file(tmp_path, matrix)
    queries = [matrix[0], -matrix[rows // 2], vectors.normalise(rng.standard_normal(DIM))[0]]
    for q in queries:
        for hide in hides(rng, rows):
            lite, ranking = both(path, matrix, q, hide)
            shown = rows - len(hide)
            for k in sorted({1, 2, 7, 150, shown // 2, shown - 1, shown, shown + 5, rows + 1}):
                assert lite.top(k) == ranking.top(k), (rows, len(hide), k)


def test_every_score_is_numpys_to_the_last_bit(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    for rows in (1, 4097, 10000):
        matrix = case(rng, rows)
        path = vector_file(tmp_path, matrix)
        q = vectors.normalise(rng.standard_normal(DIM))[0]
        expected = vectors._Product(vectors.VectorFile(path, DIM).matrix(rows), q).run()
        lite = LiteRanking(path, rows, DIM, array("f", q.tobytes()), [])
        got = np.zeros(rows, dtype=np.float32)
        for row, score in lite.top(rows):
            got[row] = score
        assert got.tobytes() == expected.tobytes()


def test_ties_at_the_cut_are_all_kept(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    matrix = case(rng, 300)
    matrix[10:60] = matrix[5]  # fifty copies of row 5: the best rows for its own vector
    path = vector_file(tmp_path, matrix)
    lite, ranking = both(path, matrix, matrix[5], [11, 30])
    for k in (1, 3, 49, 50, 51):
        assert lite.top(k) == ranking.top(k)
        assert len(lite.top(k)) >= 49


def test_the_top_widens_and_narrows_as_asked(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    matrix = case(rng, 5000)
    path = vector_file(tmp_path, matrix)
    lite, ranking = both(path, matrix, matrix[7], [1, 2, 3])
    for k in (225, 900, 3600, 10, 4997, 150):
        assert lite.top(k) == ranking.top(k)


def test_a_query_without_a_vector_ranks_no_row(tmp_path: Path) -> None:
    matrix = case(np.random.default_rng(4), 100)
    path = vector_file(tmp_path, matrix)
    lite, ranking = both(path, matrix, np.zeros(DIM, dtype=np.float32), [])
    assert lite.top(10) == ranking.top(10) == []
    assert LiteRanking(path, 0, DIM, array("f", bytes(4 * DIM)), []).top(5) == []


def test_another_dimension(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    matrix = case(rng, 4099, dim=37)
    path = vector_file(tmp_path, matrix)
    lite, ranking = both(path, matrix, matrix[9], [4098])
    assert lite.top(4098) == ranking.top(4098)


def test_a_damaged_file_is_left_to_numpy(tmp_path: Path) -> None:
    matrix = case(np.random.default_rng(6), 50)
    q = array("f", matrix[3].tobytes())
    matrix[20] = np.nan
    path = vector_file(tmp_path, matrix)
    with pytest.raises(Unranked):
        LiteRanking(path, 50, DIM, q, [])
    LiteRanking(path, 50, DIM, q, [20]).top(50)  # a hidden NaN row does not matter
    matrix[20] = -10 * matrix[3]  # a score of -10: no cosine
    path = vector_file(tmp_path, matrix)
    assert LiteRanking(path, 50, DIM, q, []).top(5) == both(path, matrix, matrix[3], [])[1].top(5)
    with pytest.raises(Unranked):
        LiteRanking(path, 50, DIM, q, []).top(50)
    with pytest.raises(Unranked):  # shorter than the catalog says
        LiteRanking(path, 51, DIM, q, [])
    with pytest.raises(Unranked):  # gone (replaced by a compaction)
        LiteRanking(tmp_path / "gone.f32", 50, DIM, q, [])


def test_the_blas_thread_count_is_put_back(tmp_path: Path) -> None:
    lib = blas.openblas()
    assert lib is not None
    matrix = case(np.random.default_rng(7), 5000)
    path = vector_file(tmp_path, matrix)
    before = lib.get_threads()
    LiteRanking(path, 5000, DIM, array("f", matrix[0].tobytes()), []).top(10)
    assert lib.get_threads() == before
    assert blas.THREAD_LIMIT.depth == 0


def test_isamax_finds_the_first_largest_magnitude() -> None:
    lib = blas.openblas()
    assert lib is not None
    values = array("f", [0.5, -3.0, 2.0, 3.0, -3.0])
    assert lib.isamax(len(values), values.buffer_info()[0]) == 1
    assert lib.isamax(2, values.buffer_info()[0] + 4 * 3) == 0


def test_hidden_rows_are_the_dead_and_the_superseded() -> None:
    rng = np.random.default_rng(8)
    for rows, dead_share in ((0, 0.0), (1, 1.0), (1000, 0.01), (100_000, 0.002), (5000, 0.9)):
        key = array("q", rng.integers(0, 10**12, size=rows + 3).tolist())
        superseded = array("b", [0]) * (rows + 3)
        for row in rng.integers(0, rows + 3, size=int(rows * dead_share) + 1):
            key[row] = -1 if row % 3 else -(2**40)
        for row in rng.integers(0, rows + 3, size=int(rows * dead_share) + 1):
            superseded[row] = 1
        for include in (True, False):
            expected = [
                row for row in range(rows) if key[row] < 0 or (not include and superseded[row] != 0)
            ]
            assert hidden_rows(key, superseded, rows, include) == expected


def test_ranking_never_imports_numpy(tmp_path: Path) -> None:
    matrix = case(np.random.default_rng(9), 5000)
    path = vector_file(tmp_path, matrix)
    code = (
        "import sys\n"
        "from array import array\n"
        "from pathlib import Path\n"
        "from gitmem.index.literank import LiteRanking, hidden_rows\n"
        f"path = Path({str(path)!r})\n"
        f"q = array('f', {matrix[0].tolist()!r})\n"
        "hide = hidden_rows(array('q', range(5000)), array('b', bytes(5000)), 5000, False)\n"
        "top = LiteRanking(path, 5000, 256, q, hide).top(10)\n"
        "print(len(top), 'numpy' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.split() == ["10", "False"]
