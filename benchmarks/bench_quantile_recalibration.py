"""Side-by-side timing of quantile recalibration fits (Kuleshov et al. 2018), in one process.

Usage::

    python benchmarks/bench_quantile_recalibration.py             # n = 10**3 .. 10**6
    python benchmarks/bench_quantile_recalibration.py --quick     # n = 10**3 .. 10**5
    python benchmarks/bench_quantile_recalibration.py --src OTHER/src   # another calipers tree

Data (seeded): ``mu ~ N(0, 1)``, ``sigma ~ U(0.5, 2)``, ``y = mu + 1.5 sigma t_4``
(over-confident Gaussian predictions of heavy-tailed targets), float64.

Implementations (each fits a recalibration map of the PIT on the same Gaussian
mean and standard deviation):

* calipers ``QuantileRecalibration().fit(mu, std=sigma, targets=y)``: the
  public path, input validation included (baseline of the ratios);
* netcal ``regression.IsotonicRegression().fit((mu, sigma), y)`` (installed
  peer): the PIT, a sort, and scikit-learn's isotonic regression of the
  empirical CDF on the sorted PIT;
* the PIT and scikit-learn's ``IsotonicRegression(out_of_bounds="clip")`` on
  the sorted PIT values against ``i / n`` (netcal's core without its
  input handling).

Every implementation is called once as a warm-up, then all are called in
turn, round after round (``--rounds``, default 15; 45 up to 10**4, 5 at 10**6); the table shows the
median and minimum wall time and ``x calipers``, the median over rounds of the
per-round ratio of the implementation's time to calipers' (above 1: calipers is
faster). ``--src`` imports calipers from another source tree (for a
before/after of a change, in one process each).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np


def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gaussian means and standard deviations, and heavy-tailed targets 1.5 times wider."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=n)
    sd = rng.uniform(0.5, 2.0, n)
    y = mu + 1.5 * sd * rng.standard_t(4, size=n)
    return mu, sd, y


def implementations(
    mu: np.ndarray, sd: np.ndarray, y: np.ndarray
) -> list[tuple[str, Callable[[], object]]]:
    from calipers.recalibration import QuantileRecalibration

    out: list[tuple[str, Callable[[], object]]] = [
        (
            "calipers QuantileRecalibration().fit",
            lambda: QuantileRecalibration().fit(mu, std=sd, targets=y),
        )
    ]
    try:
        from netcal.regression import IsotonicRegression as NetcalIsotonic

        out.append(
            (
                "netcal regression.IsotonicRegression().fit",
                lambda: NetcalIsotonic().fit((mu, sd), y),
            )
        )
    except ImportError:
        print("   netcal: not installed")
    try:
        from scipy.special import ndtr
        from sklearn.isotonic import IsotonicRegression

        def sklearn_fit() -> object:
            u = np.sort(ndtr((y - mu) / sd))
            return IsotonicRegression(out_of_bounds="clip").fit(
                u, np.arange(1, u.shape[0] + 1) / u.shape[0]
            )

        out.append(("PIT + sklearn IsotonicRegression on the sorted PIT", sklearn_fit))
    except ImportError:
        print("   scikit-learn: not installed")
    return out


def time_case(n: int, rounds: int) -> None:
    mu, sd, y = make_data(n)
    impls = implementations(mu, sd, y)
    times: list[list[float]] = [[] for _ in impls]
    for _, fn in impls:
        fn()  # warm-up
    gc.disable()
    try:
        for _ in range(rounds):
            for i, (_, fn) in enumerate(impls):
                t0 = time.perf_counter()
                fn()
                times[i].append(time.perf_counter() - t0)
    finally:
        gc.enable()
    base = times[0]
    print(f"n = {n:_}, {rounds} rounds")
    print(f"   {'implementation':<52} {'median s':>9} {'min s':>9} {'x calipers':>10}")
    for (name, _), ts in zip(impls, times, strict=True):
        ratio = statistics.median(t / b for t, b in zip(ts, base, strict=True))
        print(f"   {name:<52} {statistics.median(ts):>9.4f} {min(ts):>9.4f} {ratio:>10.2f}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 10**3, 10**4, 10**5 only")
    ap.add_argument(
        "--rounds",
        type=int,
        default=15,
        help="rounds per size (three times as many up to 10**4, 5 at 10**6)",
    )
    ap.add_argument("--src", default=None, help="import calipers from this source tree")
    args = ap.parse_args(argv)
    src = args.src or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    sys.path.insert(0, os.path.abspath(src))
    import calipers

    print(
        f"calipers {calipers.__file__}, numpy {np.__version__}, Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs"
    )
    sizes = [10**3, 10**4, 10**5] + ([] if args.quick else [10**6])
    for n in sizes:
        rounds = 3 * args.rounds if n <= 10**4 else args.rounds if n < 10**6 else 5
        time_case(n, rounds)


if __name__ == "__main__":
    main()
