"""Coverage of the honest calibration band on predictors with a known calibration curve.

For each monotone calibration curve ``p`` below, sample size ``n`` and seed:
predictions ``x ~ U(0, 1)``, outcomes ``y ~ Bernoulli(p(x))``, then

* the honest band of Dimitriadis, Dümbgen, Henzi, Puke & Ziegel (2023)
  (``calipers.inference.honest_calibration_band``, ``alpha = 0.05``, ``method="standard"``):
  does it hold the true curve at every prediction (``CalibrationBand.covers``,
  which for a non-decreasing curve means on all of [0, 1])? Its mean width at
  the predictions, and whether it excludes the diagonal anywhere (the false
  alarm rate for the calibrated predictor, the power for the others);
* for comparison, the 95 % Wilson intervals of calipers' reliability table
  (15 equal-width bins, ``calipers.reliability_table``): does every bin's
  interval hold the true mean of ``p`` over the bin's rows (the quantity its
  frequency estimates)? Each interval holds with about 95 %; all of them at once
  far less often.

Curves: calibrated ``p(x) = x``; over-confident ``p = sigmoid(0.5 logit x)``;
under-confident ``p = sigmoid(2 logit x)``; a step ``p = 0.2`` below 0.5 and
``0.7`` from 0.5 on. The table gives the coverage with its binomial standard
error ``sqrt(c (1 - c) / runs)``; the band's guarantee is coverage >= 0.95.

Run: ``python benchmarks/study_honest_band_coverage.py [--runs 80] [--runs-large 30]``
(``--runs`` seeds per cell for n = 200 and 1000, ``--runs-large`` for n = 5000;
about 1 min with the defaults on an idle core, 2.5 min on 2 busy ones; the table of the
guide page is from ``--runs 100 --runs-large 40``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import calipers as cp
from calipers.inference import honest_calibration_band


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _logit(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 1e-12, 1 - 1e-12)
    return np.log(x / (1 - x))


CURVES = {
    "calibrated": lambda x: np.asarray(x, dtype=float),
    "over-confident": lambda x: _sigmoid(0.5 * _logit(x)),
    "under-confident": lambda x: _sigmoid(2.0 * _logit(x)),
    "step": lambda x: np.where(np.asarray(x) < 0.5, 0.2, 0.7),
}


def wilson_covers(x: np.ndarray, y: np.ndarray, p: np.ndarray) -> bool:
    t = cp.reliability_table(x, y, n_bins=15, as_frame=False)
    edges = np.linspace(0, 1, 16)
    ids = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, 14)
    for row in t:
        truth = p[ids == row["bin"]].mean()
        if not row["ci_lower"] <= truth <= row["ci_upper"]:
            return False
    return True


def cell(name: str, n: int, runs: int, alpha: float) -> dict[str, float]:
    curve = CURVES[name]
    band_hits = wilson_hits = flagged = 0
    widths = []
    for seed in range(runs):
        rng = np.random.default_rng([n, seed, list(CURVES).index(name)])
        x = rng.uniform(size=n)
        p = curve(x)
        y = (rng.uniform(size=n) < p).astype(int)
        band = honest_calibration_band(x, y, alpha=alpha)
        band_hits += band.covers(curve)
        flagged += bool(band.deviations())
        widths.append(float(np.mean(band.upper - band.lower)))
        wilson_hits += wilson_covers(x, y, p)
    return {
        "band": band_hits / runs,
        "wilson": wilson_hits / runs,
        "width": float(np.mean(widths)),
        "flagged": flagged / runs,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=80, help="seeds per cell, n = 200 and 1000")
    ap.add_argument("--runs-large", type=int, default=30, help="seeds per cell, n = 5000")
    ap.add_argument("--alpha", type=float, default=0.05)
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(
        "| curve | n | runs | band coverage (SE) | mean band width | band excludes diagonal "
        "| Wilson per-bin, all bins (SE) |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in CURVES:
        for n in (200, 1000, 5000):
            runs = args.runs_large if n >= 5000 else args.runs
            r = cell(name, n, runs, args.alpha)

            def se(c: float, runs: int = runs) -> float:
                return float(np.sqrt(c * (1 - c) / runs))

            print(
                f"| {name} | {n} | {runs} | {r['band']:.3f} ({se(r['band']):.3f}) | "
                f"{r['width']:.3f} | {r['flagged']:.2f} | {r['wilson']:.3f} ({se(r['wilson']):.3f}) |"
            )
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
