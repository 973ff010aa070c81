"""How often the group checks raise an alarm, for calibrated and miscalibrated models.

Seeded runs on synthetic binary predictions with a known truth: ``p ~ U(0, 1)``,
``G`` groups of unequal sizes (shares proportional to 1, 2, ..., G), and labels
``y ~ Bernoulli(p)`` (calibrated) or ``Bernoulli(p**1.6)`` in the smallest group
(miscalibrated there only). For each run:

* "any group > its own noise": some group's ECE exceeds the 95th percentile of
  a calibrated model's ECE at that group's size (``exceeds_noise`` of
  :func:`calipers.subgroups.calibration_by_group`, one group at a time, no
  correction for looking at ``G`` groups);
* "worst group > family noise": :func:`calipers.subgroups.worst_group`'s
  ``exceeds_noise`` (the worst ECE against the worst of a calibrated model);
* "audit > noise": :func:`calipers.subgroups.multicalibration_audit`'s
  ``exceeds_noise`` (joint normalisation, 10 bins, the groups and all rows).

For the calibrated model all three are false-alarm rates: the family checks
should be near 5 %, the per-group check grows with ``G``. For the
miscalibrated one they are detection rates. Default: 50 runs per cell, under
2 minutes; ``--runs`` to change.

    python benchmarks/study_subgroup_noise.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from calipers.subgroups import calibration_by_group, multicalibration_audit, worst_group


def run(n: int, G: int, miscalibrated: bool, seed: int, draws: int) -> tuple[bool, bool, bool]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    share = np.arange(1, G + 1) / np.sum(np.arange(1, G + 1))
    g = rng.choice(G, size=n, p=share)
    truth = np.where((g == 0) & miscalibrated, p**1.6, p)
    y = (rng.uniform(size=n) < truth).astype(int)
    kw = {"n_null": draws, "seed": seed, "min_size": 1}
    by = calibration_by_group(p, y, groups=g, n_resamples=0, **kw)
    w = worst_group(p, y, groups=g, n_resamples=0, **kw)
    a = multicalibration_audit(p, y, groups=g, **kw)
    return any(s.exceeds_noise for s in by.groups), w.exceeds_noise, a.exceeds_noise


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--draws", type=int, default=200)
    a = ap.parse_args()
    t0 = time.perf_counter()
    print(
        f"{'model':<14} {'n':>6} {'G':>3}  {'any group > own noise':>22}  "
        f"{'worst group > family noise':>27}  {'audit > noise':>14}"
    )
    for miscalibrated in (False, True):
        for n, G in ((2000, 2), (2000, 8), (10000, 8)):
            hits = np.array(
                [run(n, G, miscalibrated, seed, a.draws) for seed in range(a.runs)], dtype=float
            )
            rate = hits.mean(axis=0)
            name = "miscalibrated" if miscalibrated else "calibrated"
            print(f"{name:<14} {n:>6} {G:>3}  {rate[0]:>22.3f}  {rate[1]:>27.3f}  {rate[2]:>14.3f}")
    print(f"\n{a.runs} runs per row, {a.draws} label draws each; {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
