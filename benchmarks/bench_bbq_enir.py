"""Time calipers' BBQ and ENIR recalibrators beside netcal's, in one process.

fit on ``n`` calibration rows + predict on ``n`` test rows, binary probabilities:

* ``BayesianBinningIntoQuantiles`` (Naeini, Cooper & Hauskrecht 2015) with
  netcal's reading (``binning="equal_width", criterion="bic",
  estimate="frequency", selection="elbow"``) beside netcal's ``BBQ()``, and with
  the paper's (the defaults: equal-frequency bins, BDeu);
* ``EnsembleOfNearIsotonicRegression`` (Naeini & Cooper 2016) with netcal's
  reading (``interpolation="step", selection="elbow"``) beside netcal's
  ``ENIR()``, and with the paper's (linear interpolation, every model).

Each row prints the median time of ``--rounds`` paired rounds, the ratio netcal
time / calipers time (> 1: calipers faster) and the largest difference between
the two predictions (BBQ: netcal's float32 log-likelihood only; ENIR: netcal's
path defects, see the class docstring, so a large number is expected).

netcal's ENIR runs its near-isotonic path in Python, one loop over the groups per
merge (O(n^2)); it is left out above ``--netcal-enir-max`` rows (default 3000)
and its time there is extrapolated quadratically from the largest size it ran.

Data (seeded): ``z ~ N(0.3, 2.5^2)``, ``p = sigmoid(z)``, ``y ~ Bernoulli(sigmoid(z / 2))``.

Run: ``python benchmarks/bench_bbq_enir.py [--sizes 3000 10000] [--large]``
(default n = 3000 and 10^4, about 1 min; ``--large`` adds n = 10^6, where netcal's BBQ
alone takes minutes).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time
import warnings
from collections.abc import Callable

import numpy as np
from scipy.special import expit

from calipers import BayesianBinningIntoQuantiles, EnsembleOfNearIsotonicRegression

NETCAL_BBQ = dict(binning="equal_width", criterion="bic", estimate="frequency", selection="elbow")
NETCAL_ENIR = dict(interpolation="step", selection="elbow")


def data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(0.3, 2.5, n)
    return expit(z), (rng.random(n) < expit(z / 2)).astype(np.int64)


def timed(fn: Callable[[], np.ndarray]) -> tuple[float, np.ndarray]:
    t = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        out = fn()
    return time.perf_counter() - t, out


def cases(
    p: np.ndarray, y: np.ndarray, pt: np.ndarray, netcal_enir: bool
) -> dict[str, Callable[[], np.ndarray]]:
    out: dict[str, Callable[[], np.ndarray]] = {
        "BBQ, netcal's reading": lambda: (
            BayesianBinningIntoQuantiles(**NETCAL_BBQ).fit(p, y).predict_proba(pt)
        ),
        "BBQ, the paper's": lambda: BayesianBinningIntoQuantiles().fit(p, y).predict_proba(pt),
        "ENIR, netcal's reading": lambda: (
            EnsembleOfNearIsotonicRegression(**NETCAL_ENIR).fit(p, y).predict_proba(pt)
        ),
        "ENIR, the paper's": lambda: EnsembleOfNearIsotonicRegression().fit(p, y).predict_proba(pt),
    }
    try:
        from netcal.binning import BBQ, ENIR

        out["netcal BBQ()"] = lambda: np.asarray(BBQ().fit(p, y).transform(pt))
        if netcal_enir:
            out["netcal ENIR()"] = lambda: np.asarray(ENIR().fit(p, y).transform(pt))
    except ImportError:
        print("netcal not installed")
    return out


PAIRS = {"netcal BBQ()": "BBQ, netcal's reading", "netcal ENIR()": "ENIR, netcal's reading"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[3_000, 10_000])
    ap.add_argument("--large", action="store_true", help="also n = 10^6")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--netcal-enir-max", type=int, default=3_000)
    args = ap.parse_args()
    sizes = list(args.sizes) + ([1_000_000] if args.large else [])
    enir_seen: tuple[int, float] | None = None
    for n in sizes:
        p, y = data(n, 0)
        pt, _ = data(n, 1)
        fns = cases(p, y, pt, n <= args.netcal_enir_max)
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
        print(f"{'implementation':28s} {'seconds':>9s} {'x calipers':>11s} {'max |diff|':>11s}")
        for name in fns:
            med = float(np.median(times[name]))
            ours = PAIRS.get(name)
            if ours is None:
                print(f"{name:28s} {med:9.3f}")
                continue
            ratio = med / float(np.median(times[ours]))
            diff = float(np.max(np.abs(preds[name] - preds[ours])))
            print(f"{name:28s} {med:9.3f} {ratio:10.1f}x {diff:11.2e}")
            if name == "netcal ENIR()":
                enir_seen = (n, med)
        if "netcal ENIR()" not in fns and enir_seen is not None:
            m, t = enir_seen
            est = t * (n / m) ** 2
            ours_t = float(np.median(times["ENIR, netcal's reading"]))
            print(
                f"{'netcal ENIR() (estimated)':28s} {est:9.0f} {est / ours_t:10.0f}x"
                f"   (quadratic from n = {m})"
            )


if __name__ == "__main__":
    main()
