"""Time calibration within groups beside the straightforward loops, in one process.

No peer library computes per-group noise levels or the multicalibration audit
with its null, so the baselines are the loops one would write with calipers'
own public functions:

* per group: ``calipers.consistency_test(p[g], y[g], resample_predictions=False)``
  (one group at a time; it gives each group's noise level but not the maximum
  over the family), beside ``calibration_by_group`` (every group on the same
  draws, the maximum included);
* the multicalibration audit: a Python loop over draws, groups and score bins,
  beside ``multicalibration_audit`` (the same draws: the printed difference of
  the null distributions is 0 up to rounding).

Prints each time and the ratio loop time / calipers time (median of paired
rounds). Defaults finish in well under a minute at n = 10**4; ``--n 1000000``
for the large case (the loops then run on fewer draws, scaled up).

    python benchmarks/bench_subgroups.py
    python benchmarks/bench_subgroups.py --n 1000000 --draws 200
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import calipers as cp
from calipers.subgroups import calibration_by_group, multicalibration_audit


def _timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--groups", type=int, default=8)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--bins", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    n, G, B = a.n, a.groups, a.draws
    p = rng.uniform(0.01, 0.99, size=n)
    g = rng.integers(0, G, size=n)
    y = (rng.uniform(size=n) < np.where(g == 0, p**1.5, p)).astype(int)
    masks = {f"g{j}": g == j for j in range(G)}
    # the loops on fewer draws at large n, their time scaled to B draws
    B_loop = B if n <= 20_000 else max(5, B // 20)
    print(f"n = {n}, {G} groups, {B} draws of labels (loops: {B_loop}, scaled)\n")

    def ours_groups():
        return calibration_by_group(p, y, groups=g, n_resamples=0, n_null=B, seed=a.seed)

    def loop_groups():
        return [
            cp.consistency_test(
                p[g == j], y[g == j], n_resamples=B_loop, resample_predictions=False, seed=j
            )
            for j in range(G)
        ]

    def ours_audit():
        return multicalibration_audit(
            p, y, masks=masks, include_all=False, n_bins=a.bins, n_null=B, seed=a.seed
        )

    bins = np.clip(np.ceil(p * a.bins).astype(int) - 1, 0, a.bins - 1)

    def loop_audit():
        r = np.random.default_rng([a.seed, 1])  # the audit's stream of draws
        null = []
        cells = [m & (bins == v) for m in masks.values() for v in range(a.bins)]
        cells = [c for c in cells if c.any()]
        for _ in range(B_loop):
            ys = r.random(n) < p
            null.append(max(abs(np.sum(ys[c] - p[c])) / n for c in cells))
        return np.array(null)

    for name, ours, loop, scale in (
        ("per-group noise levels (ECE, 15 bins)", ours_groups, loop_groups, B / B_loop),
        (f"multicalibration audit ({a.bins} bins)", ours_audit, loop_audit, B / B_loop),
    ):
        t_ours, t_loop = [], []
        for _ in range(a.rounds):
            t1, r1 = _timed(ours)
            t2, r2 = _timed(loop)
            t_ours.append(t1)
            t_loop.append(t2 * scale)
        mo, ml = statistics.median(t_ours), statistics.median(t_loop)
        print(f"{name}:")
        print(f"  calipers {mo:8.3f} s   loop {ml:8.3f} s   x calipers = {ml / mo:6.1f}")
        if isinstance(r1, cp.subgroups.MulticalibrationAudit):
            d = np.max(np.abs(r1.null_distribution[: len(r2)] - r2))
            print(f"  largest difference of the null maxima (same draws): {d:.2e}")
        else:
            means = [float(np.mean(t.null_distribution)) for t in r2]
            ours_means = [s.null_mean for s in r1.groups]
            print(
                "  noise means, calipers vs loop (other draws): "
                + ", ".join(f"{u:.4f}/{v:.4f}" for u, v in zip(ours_means, means, strict=True))
            )
        print()


if __name__ == "__main__":
    main()
