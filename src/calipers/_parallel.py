"""Row blocks of an O(n^2) sum on a thread pool, with BLAS held to one thread.

NumPy ufuncs and matrix products release the GIL, so the blocks of a pairwise sum
run on all cores from plain Python threads. OpenBLAS, though, starts its own
threads for each matrix product above a small size; with one product per Python
thread that is cores x cores busy-waiting threads, and on a 2-core machine the
Dirichlet-kernel and SKCE sums ran 1.3-2x slower than with one BLAS thread
(benchmarks/bench_mmce_skce.py, bench_dirichlet.py). ``thread_map`` limits BLAS
(through threadpoolctl) while its pool runs and restores it afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from threadpoolctl import threadpool_limits

T = TypeVar("T")
R = TypeVar("R")


def thread_map(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``[fn(x) for x in items]``, in order, on ``os.cpu_count()`` threads.

    One item (or one core) runs in the calling thread with BLAS untouched; more
    run on a pool with BLAS limited to one thread for the duration.
    """
    todo = list(items)
    workers = min(len(todo), os.cpu_count() or 1)
    if workers <= 1:
        return [fn(x) for x in todo]
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(workers) as ex:
        return list(ex.map(fn, todo))
