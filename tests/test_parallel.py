"""thread_map: results in order, BLAS held to one thread inside the pool and restored."""

import os

import numpy as np
from threadpoolctl import threadpool_info

from calipers._parallel import thread_map


def _blas_threads() -> list[int]:
    return [d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"]


def test_order_and_values() -> None:
    assert thread_map(lambda x: x * x, range(50)) == [x * x for x in range(50)]
    assert thread_map(lambda x: x, []) == []


def test_blas_limited_inside_and_restored_after() -> None:
    np.ones((2, 2)) @ np.ones((2, 2))  # BLAS loaded
    before = _blas_threads()
    inside = thread_map(lambda _: _blas_threads(), range(4))
    assert _blas_threads() == before
    if (os.cpu_count() or 1) > 1:  # on one core the items run in the caller, untouched
        assert all(t == [1] * len(before) for t in inside)
