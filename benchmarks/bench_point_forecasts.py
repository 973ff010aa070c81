"""Point-forecast diagnostics beside model-diagnostics, in one process.

Usage::

    python benchmarks/bench_point_forecasts.py            # n = 10**5 (mean) and 5000
    python benchmarks/bench_point_forecasts.py --n 200000 --n-slow 50000

Times, on the same arrays, calipers and model-diagnostics (1.5) for:

* the generalised bias overall and in 10 quantile bins of a feature
  (``calipers.regression.bias`` / ``bias_by_group`` against ``compute_bias``), mean functional;
* the isotonic recalibration (``isotonic_recalibration`` against scikit-learn's
  ``IsotonicRegression`` for the mean, model-diagnostics' ``IsotonicRegression`` for the
  0.9-quantile and 0.9-expectile);
* the score decomposition (``score_decomposition`` against ``decompose``) for the squared
  error, the pinball loss at 0.9 and the 0.9-expectile score.

The mean cases run at ``--n`` rows, the quantile and expectile cases at ``--n-slow`` rows
(model-diagnostics pools block by block in Python). Data: ``x ~ U(0, 3)``, ``y = x + (0.5 +
0.5 x) e`` with standard normal ``e``, forecasts ``x + 0.3`` (mean) and ``x + 0.96`` (the
quantile and expectile), seeded. Each line prints the median time of ``--rounds`` paired
rounds, the ratio peer / calipers (above 1: calipers is faster) and the largest absolute
difference of the results. Finishes in about a minute with the defaults on two loaded cores.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np


def _median_time(f: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    times = []
    out = None
    for _ in range(rounds):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--n-slow", type=int, default=5_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    warnings.simplefilter("ignore")

    import model_diagnostics.scoring as mds
    from model_diagnostics._utils.isotonic import IsotonicRegression as MDIso
    from model_diagnostics.calibration import compute_bias
    from sklearn.isotonic import IsotonicRegression as SKIso

    from calipers.regression import (
        bias,
        bias_by_group,
        isotonic_recalibration,
        score_decomposition,
    )

    def data(n: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(0)
        x = rng.uniform(0.0, 3.0, n)
        return x, x + (0.5 + 0.5 * x) * rng.normal(size=n)

    rows: list[tuple[str, int, float, float, float]] = []
    # warm-up: the imports and first calls of both libraries, on a few rows
    xw, yw = data(50)
    for f, lv in (("mean", None), ("quantile", 0.9), ("expectile", 0.9)):
        isotonic_recalibration(xw, yw, functional=f, level=lv)
        MDIso(functional=f if f != "mean" else "expectile", level=0.9 if lv else 0.5).fit(xw, yw)
    bias_by_group(xw, yw, feature=xw)
    compute_bias(yw, xw, feature=xw)
    score_decomposition(xw, yw)
    mds.decompose(yw, xw, scoring_function=mds.SquaredError())
    SKIso().fit(xw, yw)

    def case(
        name: str, n: int, ours: Callable[[], Any], peer: Callable[[], Any], diff: Any
    ) -> None:
        t_ours, a = _median_time(ours, args.rounds)
        t_peer, b = _median_time(peer, args.rounds)
        rows.append((name, n, t_ours, t_peer, float(diff(a, b))))

    n = args.n
    x, y = data(n)
    z = x + 0.3
    case(
        "bias (mean), overall",
        n,
        lambda: bias(z, y),
        lambda: compute_bias(y, z),
        lambda a, b: abs(a.bias - b["bias_mean"][0]) + abs(a.stderr - b["bias_stderr"][0]),
    )
    case(
        "bias (mean), 10 quantile bins of x",
        n,
        lambda: bias_by_group(z, y, feature=x, n_bins=10),
        lambda: compute_bias(y, z, feature=x, n_bins=10, bin_method="quantile"),
        lambda a, b: np.max(np.abs(a.bias - b["bias_mean"].to_numpy())),
    )
    case(
        "isotonic recalibration, mean (scikit-learn)",
        n,
        lambda: isotonic_recalibration(z, y),
        lambda: SKIso().fit(z, y).predict(z),
        lambda a, b: np.max(np.abs(a - b)),
    )
    case(
        "decomposition, squared error",
        n,
        lambda: score_decomposition(z, y),
        lambda: mds.decompose(y, z, scoring_function=mds.SquaredError()),
        lambda a, b: abs(a.miscalibration - b["miscalibration"][0]),
    )

    n = args.n_slow
    x, y = data(n)
    z = x + 0.96
    for functional, score, md_score in (
        ("quantile", "pinball", mds.PinballLoss(level=0.9)),
        ("expectile", "expectile", mds.HomogeneousExpectileScore(degree=2, level=0.9)),
    ):
        case(
            f"isotonic recalibration, 0.9-{functional}",
            n,
            lambda functional=functional: isotonic_recalibration(
                z, y, functional=functional, level=0.9
            ),
            lambda functional=functional: (
                MDIso(functional=functional, level=0.9).fit(z, y).predict(z)
            ),
            lambda a, b: np.max(np.abs(a - b)),
        )
        case(
            f"decomposition, {score} at 0.9",
            n,
            lambda score=score: score_decomposition(z, y, scoring_function=score, level=0.9),
            lambda md_score=md_score: mds.decompose(y, z, scoring_function=md_score),
            lambda a, b: (
                abs(a.miscalibration - b["miscalibration"][0])
                + abs(a.discrimination - b["discrimination"][0])
            ),
        )

    print(
        f"{'case':<44} {'n':>7} {'calipers':>10} {'model-diag.':>12} {'ratio':>7} {'max diff':>9}"
    )
    for name, nn, a, b, d in rows:
        print(f"{name:<44} {nn:>7} {a:>9.4f}s {b:>11.4f}s {b / a:>6.1f}x {d:>9.1e}")


if __name__ == "__main__":
    main()
