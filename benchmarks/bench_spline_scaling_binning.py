"""Time calipers' spline and scaling-binning recalibrators beside their peers, in one process.

fit on ``n`` calibration rows + predict on ``n`` test rows, binary probabilities:

* ``SplineCalibration()`` (Lucena 2018) beside ml-insights' ``SplineCalib()``
  (splinecalib), both with their defaults (30 knots, unity prior, 17
  penalties scored on one fold);
* ``ScalingBinning()`` (Kumar, Liang & Ma 2019; 10 bins) beside the authors'
  ``calibration.PlattBinnerCalibrator(n, 10)`` (uncertainty-calibration), which
  fits its two steps on all the rows it is given;
* ``KSSplineCalibration()`` (Gupta et al. 2021) alone (the authors' code is not
  a package).

Each row prints the median time of ``--rounds`` paired rounds, the ratio peer
time / calipers time (> 1: calipers faster) and the largest difference between
the two predictions (the methods differ in their knots and split, so this is a
sanity check, not an identity).

Data (seeded): ``z ~ N(0.3, 2.5^2)``, ``p = sigmoid(z)``, ``y ~ Bernoulli(sigmoid(z / 2))``.

Run: ``python benchmarks/bench_spline_scaling_binning.py [--sizes 10000] [--large]``
(default n = 10^4, under 1 min; ``--large`` adds n = 10^6; ``--skip SplineCalib`` leaves
out an implementation, e.g. the slowest at 10^6).
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import numpy as np
from scipy.special import expit

from calipers import KSSplineCalibration, ScalingBinning, SplineCalibration


def data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(0.3, 2.5, n)
    return expit(z), (rng.random(n) < expit(z / 2)).astype(np.int64)


def timed(fn: Callable[[], np.ndarray]) -> tuple[float, np.ndarray]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def cases(p: np.ndarray, y: np.ndarray, pt: np.ndarray) -> dict[str, Callable[[], np.ndarray]]:
    out: dict[str, Callable[[], np.ndarray]] = {
        "SplineCalibration": lambda: SplineCalibration().fit(p, y).predict_proba(pt),
        "ScalingBinning": lambda: ScalingBinning().fit(p, y).predict_proba(pt),
        "KSSplineCalibration": lambda: KSSplineCalibration().fit(p, y).predict_proba(pt),
    }
    try:
        from splinecalib import SplineCalib

        def peer_spline() -> np.ndarray:
            sc = SplineCalib()
            sc.fit(p, y)
            return np.asarray(sc.calibrate(pt))

        out["SplineCalib (ml-insights)"] = peer_spline
    except ImportError:
        print("splinecalib not installed")
    try:
        import calibration

        def peer_sb() -> np.ndarray:
            pb = calibration.PlattBinnerCalibrator(len(p), 10)
            pb.train_calibration(p, y)
            return np.asarray(pb.calibrate(pt))

        out["PlattBinnerCalibrator (calibration)"] = peer_sb
    except ImportError:
        print("uncertainty-calibration not installed")
    return out


PAIRS = {
    "SplineCalib (ml-insights)": "SplineCalibration",
    "PlattBinnerCalibrator (calibration)": "ScalingBinning",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    ap.add_argument("--large", action="store_true", help="also n = 10^6")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--skip", nargs="*", default=[], help="names not to run (before any ' (')")
    args = ap.parse_args()
    sizes = list(args.sizes) + ([1_000_000] if args.large else [])
    for n in sizes:
        p, y = data(n, 0)
        pt, _ = data(n, 1)
        fns = {k: f for k, f in cases(p, y, pt).items() if k.split(" (")[0] not in args.skip}
        rounds = 1 if n >= 10**6 else args.rounds
        times: dict[str, list[float]] = {k: [] for k in fns}
        preds: dict[str, np.ndarray] = {}
        for _ in range(rounds):
            for name, fn in fns.items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    dt, preds[name] = timed(fn)
                times[name].append(dt)
        print(f"\nn = {n} calibration + {n} test rows, median of {rounds} round(s)")
        print(f"{'implementation':40s} {'seconds':>9s} {'x calipers':>11s} {'max |diff|':>11s}")
        for name in fns:
            med = float(np.median(times[name]))
            ours = PAIRS.get(name)
            if ours is None or ours not in fns:
                print(f"{name:40s} {med:9.3f}")
                continue
            ratio = med / float(np.median(times[ours]))
            diff = float(np.max(np.abs(preds[name] - preds[ours])))
            print(f"{name:40s} {med:9.3f} {ratio:11.2f} {diff:11.3g}")


if __name__ == "__main__":
    main()
