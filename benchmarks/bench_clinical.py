"""Time ``calipers.clinical.calibration_hierarchy`` (without the belt) and its parts.

Risks of a logistic model with calibration slope 0.8 (an over-fitted model), n = 10^4
by default (``--large``: also 10^6). Prints, for each n, the wall and CPU time of the
whole hierarchy and of its costly parts, beside:

* statsmodels' ``GLM(family=Binomial())`` for the calibration intercept (offset model)
  and slope (where statsmodels is installed), with the largest coefficient difference;
* a plain loess: the same local quadratic fits at the 200 grid risks, each summed row
  by row over its neighbourhood (``O(span n)`` a point, the textbook computation), with
  the largest difference from calipers' curve.

Ratios are peer time / calipers time (above 1: calipers is faster), the median of
``--rounds`` paired rounds. Under 1 min with the defaults.

Run: ``python benchmarks/bench_clinical.py [--large] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import expit, logit

from calipers.clinical import _flexible_calibration_curve as fcc
from calipers.clinical import calibration_hierarchy, calibration_intercept_slope


def data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    lp = rng.normal(-1.5, 1.3, n)
    y = (rng.uniform(size=n) < expit(-0.3 + 0.8 * lp)).astype(float)
    return expit(lp), y


def timed(f: Callable[[], Any]) -> tuple[float, float, Any]:
    c0, w0 = time.process_time(), time.perf_counter()
    out = f()
    return time.perf_counter() - w0, time.process_time() - c0, out


def plain_loess(p: np.ndarray, y: np.ndarray, at: np.ndarray, span: float = 0.75) -> np.ndarray:
    """Loess of degree 2 at ``at``, each point summed over its q nearest rows."""
    xs_order = np.argsort(p)
    xs, ys = p[xs_order], y[xs_order]
    n = xs.shape[0]
    q = int(np.floor(n * span))
    pair = xs[: n - q] + xs[q:]
    out = np.empty(at.shape[0])
    for i, x0 in enumerate(at):
        lo = int(np.searchsorted(pair, 2 * x0))
        x = xs[lo : lo + q] - x0
        d = max(-x[0], x[-1])
        w = (1 - np.minimum(np.abs(x) / d, 1) ** 3) ** 3
        X = np.column_stack([np.ones(q), x, x * x])
        A = (X * w[:, None]).T @ X
        out[i] = np.linalg.solve(A, (X * w[:, None]).T @ ys[lo : lo + q])[0]
    return out


def statsmodels_weak(p: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    import statsmodels.api as sm

    lp = logit(p)
    fam = sm.families.Binomial()
    a = sm.GLM(y, np.ones((p.shape[0], 1)), family=fam, offset=lp).fit().params[0]
    b = sm.GLM(y, sm.add_constant(lp), family=fam).fit().params[1]
    return float(a), float(b)


def run(n: int, rounds: int) -> None:
    p, y = data(n)
    calibration_hierarchy(p[:2000], y[:2000])  # imports and caches
    rows: dict[str, list[tuple[float, float]]] = {}

    def add(name: str, wall: float, cpu: float) -> None:
        rows.setdefault(name, []).append((wall, cpu))

    try:
        import statsmodels.api  # noqa: F401

        have_sm = True
    except ImportError:
        have_sm = False
    ratios: dict[str, list[float]] = {"statsmodels GLM": [], "plain loess": []}
    for _ in range(rounds):
        w, c, h = timed(lambda: calibration_hierarchy(p, y))
        add("calibration_hierarchy (no belt)", w, c)
        w_weak, c_weak, weak = timed(lambda: calibration_intercept_slope(p, y))
        add("  calibration_intercept_slope", w_weak, c_weak)
        w_curve, c_curve, curve = timed(lambda: fcc.flexible_calibration_curve(p, y, grid=200))
        add("  flexible_calibration_curve (loess, 200 risks)", w_curve, c_curve)
        if have_sm:
            w_sm, c_sm, (a, b) = timed(lambda: statsmodels_weak(p, y))
            add("statsmodels GLM (offset + slope models)", w_sm, c_sm)
            ratios["statsmodels GLM"].append(w_sm / w_weak)
            diff_sm = max(abs(a - weak.intercept), abs(b - weak.slope))
        w_pl, c_pl, est = timed(lambda g=curve.grid: plain_loess(p, y, g))
        add("plain loess at the same 200 risks", w_pl, c_pl)
        ratios["plain loess"].append(w_pl / w_curve)
        diff_loess = float(np.max(np.abs(est - curve.estimate)))
    print(f"\nn = {n:,} risks, {int(y.sum()):,} events (median of {rounds} rounds)")
    print(f"  {'':52s} {'wall s':>8s} {'cpu s':>8s}")
    for name, vals in rows.items():
        wall = float(np.median([v[0] for v in vals]))
        cpu = float(np.median([v[1] for v in vals]))
        print(f"  {name:52s} {wall:8.3f} {cpu:8.3f}")
    if have_sm:
        print(
            f"  x calipers, statsmodels GLM / calibration_intercept_slope: "
            f"{np.median(ratios['statsmodels GLM']):.1f} (coefficients {diff_sm:.1e} apart)"
        )
    print(
        f"  x calipers, plain loess / flexible_calibration_curve: "
        f"{np.median(ratios['plain loess']):.1f} (curves {diff_loess:.1e} apart)"
    )
    print(
        f"  ICI {h.index.ici:.4f} (exact at every risk: {h.index.exact}), slope {h.weak.slope:.3f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--large", action="store_true", help="also n = 10^6")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    for n in (10_000, 1_000_000) if args.large else (10_000,):
        run(n, args.rounds if n <= 10_000 else max(1, args.rounds - 2))


if __name__ == "__main__":
    main()
