"""Side-by-side timing of the array scores of calipers.regression and their peers, in one process.

Usage::

    python benchmarks/bench_regression_scores.py            # n = 10**5 rows, k = 100 members
    python benchmarks/bench_regression_scores.py --quick    # n = 10**4
    python benchmarks/bench_regression_scores.py --rows 200000 --members 50 --rounds 9

Cases (seeded data: ``mu ~ N(0, 1)``, ``sigma ~ U(0.5, 2)``, ``y = mu + sigma t_4``; members
``mu + sigma N(0, 1)``; quantiles of N(mu, sigma**2) at the 99 levels 0.01 .. 0.99):

* ``crps standard``: the CRPS of ``n x k`` ensembles, standard (energy) estimator:
  calipers ``crps_ensemble_per_row`` (baseline), scoringrules ``crps_ensemble`` (its default
  ``"qd"``, the same number), properscoring ``crps_ensemble``;
* ``crps standard, properscoring``: calipers and properscoring ``crps_ensemble`` on the first
  ``min(n, 5000)`` rows, 3 rounds (properscoring's NumPy fallback takes about 0.5 s per
  1000 rows of 100 members);
* ``crps fair``: the fair estimator: calipers ``estimator="fair"``, scoringrules ``"pwm"``
  (the same number, its O(n k) form; its ``"fair"`` builds a k x k matrix per row);
* ``crps quantiles``: the quantile-averaged pinball CRPS of ``n x 99`` quantiles: calipers
  ``crps_quantiles_per_row``, scoringrules ``crps_quantile``;
* ``pinball``: the mean pinball loss at level 0.9 on ``10 n`` rows: calipers ``pinball_loss``,
  scikit-learn ``mean_pinball_loss``;
* ``interval``: the interval score of 90 % intervals on ``10 n`` rows: calipers
  ``interval_score_per_row``, scoringrules ``interval_score``.

Without numba, scoringrules runs its NumPy backend and properscoring its NumPy fallback;
properscoring's fallback holds an ``n x k x k`` array, so it is called on chunks of 1000 rows
(inside the timed region). Every implementation is called once as a
warm-up (its value, the mean over rows, is printed so that one sees them agree), then all are
called in turn, round after round (``--rounds``, default 5); the table shows the median and
minimum wall time and ``x calipers``, the median over rounds of the per-round ratio of the
implementation's time to calipers' (above 1: calipers is faster).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import platform
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

Impl = tuple[str, Callable[[], object]]


def make_data(n: int, k: int, seed: int = 0) -> dict[str, np.ndarray]:
    from scipy.stats import norm

    rng = np.random.default_rng(seed)
    mu = rng.normal(size=n)
    sd = rng.uniform(0.5, 2.0, n)
    y = mu + sd * rng.standard_t(4, size=n)
    X = mu[:, None] + sd[:, None] * rng.normal(size=(n, k))
    levels = np.arange(1, 100) / 100
    Q = mu[:, None] + sd[:, None] * norm.ppf(levels)[None, :]
    n10 = 10 * n
    mu10 = rng.normal(size=n10)
    sd10 = rng.uniform(0.5, 2.0, n10)
    y10 = mu10 + sd10 * rng.standard_t(4, size=n10)
    return {
        "y": y,
        "X": X,
        "levels": levels,
        "Q": Q,
        "q90": mu10 + 1.2816 * sd10,
        "lo": mu10 - 1.6449 * sd10,
        "hi": mu10 + 1.6449 * sd10,
        "y10": y10,
    }


def _chunked(f: Callable[[np.ndarray, np.ndarray], np.ndarray], y, X, rows: int = 1000):
    return np.concatenate([f(y[i : i + rows], X[i : i + rows]) for i in range(0, len(y), rows)])


def cases(d: dict[str, np.ndarray]) -> list[tuple[str, list[Impl]]]:
    from calipers.regression import (
        crps_ensemble_per_row,
        crps_quantiles_per_row,
        interval_score_per_row,
        pinball_loss,
    )

    y, X, levels, Q = d["y"], d["X"], d["levels"], d["Q"]
    have = {m: importlib.util.find_spec(m) is not None for m in ("scoringrules", "properscoring")}
    have["sklearn"] = importlib.util.find_spec("sklearn") is not None
    sr = __import__("scoringrules") if have["scoringrules"] else None
    ps = __import__("properscoring") if have["properscoring"] else None

    standard: list[Impl] = [("calipers crps_ensemble_per_row", lambda: crps_ensemble_per_row(X, y))]
    fair: list[Impl] = [
        (
            "calipers crps_ensemble_per_row fair",
            lambda: crps_ensemble_per_row(X, y, estimator="fair"),
        )
    ]
    quant: list[Impl] = [
        ("calipers crps_quantiles_per_row", lambda: crps_quantiles_per_row(levels, Q, y))
    ]
    pin: list[Impl] = [
        ("calipers pinball_loss", lambda: pinball_loss(d["q90"], d["y10"], level=0.9))
    ]
    inter: list[Impl] = [
        (
            "calipers interval_score_per_row",
            lambda: interval_score_per_row(d["lo"], d["hi"], d["y10"], level=0.9),
        )
    ]
    if sr is not None:
        standard.append(("scoringrules crps_ensemble (qd)", lambda: sr.crps_ensemble(y, X)))
        fair.append(
            ("scoringrules crps_ensemble pwm", lambda: sr.crps_ensemble(y, X, estimator="pwm"))
        )
        quant.append(("scoringrules crps_quantile", lambda: sr.crps_quantile(y, Q, levels)))
        inter.append(
            (
                "scoringrules interval_score",
                lambda: sr.interval_score(d["y10"], d["lo"], d["hi"], 0.1),
            )
        )
    else:
        print("   scoringrules: not installed")
    small: list[Impl] = []
    if ps is not None:
        m = min(len(y), 5_000)
        ys, Xs = y[:m], X[:m]
        small = [
            (f"calipers crps_ensemble_per_row ({m} rows)", lambda: crps_ensemble_per_row(Xs, ys)),
            (
                f"properscoring crps_ensemble ({m} rows, chunks)",
                lambda: _chunked(ps.crps_ensemble, ys, Xs),
            ),
        ]
    else:
        print("   properscoring: not installed")
    if have["sklearn"]:
        from sklearn.metrics import mean_pinball_loss

        pin.append(
            (
                "scikit-learn mean_pinball_loss",
                lambda: mean_pinball_loss(d["y10"], d["q90"], alpha=0.9),
            )
        )
    else:
        print("   scikit-learn: not installed")
    return [
        ("crps standard", standard),
        ("crps standard, properscoring", small),
        ("crps fair", fair),
        ("crps quantiles", quant),
        ("pinball", pin),
        ("interval", inter),
    ]


def run_case(name: str, impls: list[Impl], rounds: int) -> None:
    values = {}
    for label, f in impls:
        values[label] = float(np.mean(np.asarray(f(), dtype=np.float64)))
    times: dict[str, list[float]] = {label: [] for label, _ in impls}
    gc.disable()
    try:
        for _ in range(rounds):
            for label, f in impls:
                t = time.perf_counter()
                f()
                times[label].append(time.perf_counter() - t)
    finally:
        gc.enable()
    base = times[impls[0][0]]
    print(f"\n{name}", flush=True)
    print(f"   {'implementation':<48} {'median s':>9} {'min s':>9} {'x calipers':>10}  value")
    for label, _ in impls:
        ts = times[label]
        ratio = statistics.median(t / b for t, b in zip(ts, base, strict=True))
        print(
            f"   {label:<48} {statistics.median(ts):9.4f} {min(ts):9.4f} {ratio:10.2f}  "
            f"{values[label]:.15g}",
            flush=True,
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="n = 10**4")
    args = parser.parse_args(argv)
    n = 10_000 if args.quick else args.rows
    print(
        f"bench_regression_scores: n = {n}, k = {args.members}, rounds = {args.rounds}; "
        f"Python {platform.python_version()}, NumPy {np.__version__}, "
        f"numba {'installed' if importlib.util.find_spec('numba') else 'not installed'}"
    )
    d = make_data(n, args.members, args.seed)
    for name, impls in cases(d):
        if impls:
            run_case(name, impls, 3 if "properscoring" in name else args.rounds)


if __name__ == "__main__":
    main(sys.argv[1:])
