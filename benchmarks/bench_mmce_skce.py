"""MMCE and SKCE on 10^4 points: calipers side by side with netcal's MMCE, in one process.

Usage::

    python benchmarks/bench_mmce_skce.py            # n = 10 000, k = 10, 5 rounds
    python benchmarks/bench_mmce_skce.py --n 2000 --repeats 3

Each implementation is called once to warm up (its value is taken from that call),
then all are called in turn, round after round; the table shows median and min
wall seconds and the median per-round ratio to calipers' MMCE. Data: the
the standard benchmark recipe (logits = 3 N(0, 1), labels ~ softmax(logits),
probs = softmax(1.5 logits)).

calipers' MMCE is exact in O(n log n) (a sorted exponential scan); SKCE is the
O(n^2) U-statistic evaluated in row blocks on a thread pool (memory O(1024 n));
its block estimator is O(n). netcal's MMCE forms the n x n matrix.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import calipers as cp


def data(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = 3 * rng.standard_normal((n, k))
    e = np.exp(z - z.max(1, keepdims=True))
    p_true = e / e.sum(1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p_true, 1)).sum(1).clip(0, k - 1)
    e = np.exp(1.5 * (z - z.max(1, keepdims=True)))
    return e / e.sum(1, keepdims=True), y


def rounds_table(impls: dict[str, Callable[[], Any]], repeats: int, base: str) -> None:
    """Warm up each implementation (its value is taken there), time all of them in turn
    for ``repeats`` rounds, print median / min seconds and the median per-round ratio
    to ``base``."""
    values = {name: float(f()) for name, f in impls.items()}
    times: dict[str, list[float]] = {name: [] for name in impls}
    for _ in range(repeats):
        for name, f in impls.items():
            t = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t)
    print(f"{'implementation':<36}{'median s':>11}{'min s':>10}{'ratio':>10}{'value':>22}")
    for name in impls:
        ratio = statistics.median(t / b for t, b in zip(times[name], times[base], strict=True))
        print(
            f"{name:<36}{statistics.median(times[name]):>11.4f}{min(times[name]):>10.4f}"
            f"{ratio:>10.1f}{values[name]:>22.15f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    p, y = data(a.n, a.k)
    impls: dict[str, Callable[[], float]] = {
        "calipers mmce": lambda: cp.mmce(p, y),
        "calipers skce (unbiased)": lambda: cp.skce(p, y),
        "calipers skce (biased)": lambda: cp.skce(p, y, estimator="biased"),
        "calipers skce (block, m=2)": lambda: cp.skce(p, y, estimator="block"),
    }
    try:
        import torch

        pt, yt = torch.from_numpy(p), torch.from_numpy(y)
        impls["calipers skce (unbiased, torch cpu)"] = lambda: cp.skce(pt, yt)
    except ImportError:
        print("torch: not installed")
    try:
        from netcal.metrics import MMCE

        def netcal_mmce() -> float:
            return float(MMCE().measure(p, y))

        impls["netcal MMCE"] = netcal_mmce
    except ImportError:
        print("netcal: not installed")
    print(f"n = {a.n}, k = {a.k}, {a.repeats} rounds")
    rounds_table(impls, a.repeats, "calipers mmce")


if __name__ == "__main__":
    main()
