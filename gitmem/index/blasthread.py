"""gitmem's products on one BLAS thread (gitmem.index.vectors' products, through numpy).

numpy's OpenBLAS splits a large product over the cores, and its threads then spin ~0.1 s
waiting for more work. In a recall the keyword half runs beside the product, so the spinning
thread takes its core: measured at 100k records, one BLAS thread makes a hybrid recall's p50
0.84x and its CPU 0.7x (benchmarks/bench_recall.py, docs/benchmarks.md). And a product split
another way rounds differently in the last bit, so one thread also makes scores the same on
every machine, whatever its cores. The count is set only around gitmem's own products and
put back after the last of them leaves; a BLAS that is not a known OpenBLAS (MKL,
Accelerate) is left as it is. The count and its lock are gitmem.index.blas's (THREAD_LIMIT): one
per process, shared with gitmem.index.literank's products on the same library.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from gitmem.index.blas import THREAD_LIMIT, Controls, openblas

__all__ = ["blas_controls", "one_blas_thread"]

_controls: list[Controls | None] = []  # found once: [] not looked for yet, [None] none


def one_blas_thread() -> AbstractContextManager[None]:
    return THREAD_LIMIT.one(blas_controls())


def blas_controls() -> Controls | None:
    if not _controls:
        _controls.append(_find_openblas())
    return _controls[0]


def _find_openblas() -> Controls | None:
    """numpy's bundled OpenBLAS and its thread calls (gitmem.index.blas finds it)."""
    lib = openblas()
    return None if lib is None else lib.controls()
