"""Split conformal and CQR intervals beside crepes and MAPIE, side by side in one process.

Usage::

    python benchmarks/bench_conformal.py                 # n = 10^4, 10^5, 10^6; under 1 min
    python benchmarks/bench_conformal.py --sizes 100000 --rounds 9

For each size ``n`` the calibration split and the test rows both have ``n`` rows
(seeded normal forecasts and targets). Timed, calibrate + predict the intervals at
level 0.9:

* split conformal: ``calipers.recalibration.SplitConformal().fit(yhat, y)
  .predict_interval(yhat_new)`` beside crepes' ``ConformalRegressor().fit(y - yhat)
  .predict_int(yhat_new, confidence=0.9)`` and MAPIE's ``SplitConformalRegressor(prefit
  model, confidence_level=0.9, prefit=True).conformalize(X, y).predict_interval(X_new)``
  (the prefit model returns a column of ``X``: the given forecasts);
* CQR: ``ConformalizedQuantileRegression().fit(lo, hi, y).predict_interval(lo_new,
  hi_new)`` beside MAPIE's ``ConformalizedQuantileRegressor([lower, upper, median],
  prefit=True)`` with ``symmetric_correction=True``.

Each row prints the median time over ``--rounds`` paired rounds, the ratio peer time /
calipers time, and the largest difference of the intervals from calipers' (0 when they
are the same numbers). A peer that is not installed prints "not installed".
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from calipers.recalibration import ConformalizedQuantileRegression, SplitConformal


def _column_model(j: int) -> Any:
    from sklearn.base import BaseEstimator, RegressorMixin

    class Column(RegressorMixin, BaseEstimator):
        def __init__(self, j: int = 0) -> None:
            self.j = j

        def fit(self, X: Any, y: Any = None) -> Any:
            self.n_features_in_ = np.asarray(X).shape[1]
            return self

        def predict(self, X: Any) -> np.ndarray:
            return np.asarray(X)[:, self.j]

    return Column(j)


def _cases(n: int, seed: int) -> dict[str, dict[str, Callable[[], np.ndarray] | None]]:
    rng = np.random.default_rng(seed)
    f, y = rng.normal(size=n), rng.normal(size=n)
    f_new = rng.normal(size=n)
    half = rng.uniform(0.5, 2.0, n)
    lo, hi = f - half, f + half
    lo_new, hi_new = f_new - 1.0, f_new + 1.0

    def ours_sc() -> np.ndarray:
        return np.column_stack(SplitConformal(level=0.9).fit(f, y).predict_interval(f_new))

    def ours_cqr() -> np.ndarray:
        rc = ConformalizedQuantileRegression(level=0.9).fit(lo, hi, y)
        return np.column_stack(rc.predict_interval(lo_new, hi_new))

    sc: dict[str, Callable[[], np.ndarray] | None] = {"calipers": ours_sc}
    cqr: dict[str, Callable[[], np.ndarray] | None] = {"calipers": ours_cqr}
    try:
        import crepes

        def crepes_sc() -> np.ndarray:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return np.asarray(
                    crepes.ConformalRegressor().fit(y - f).predict_int(f_new, confidence=0.9)
                )

        sc["crepes"] = crepes_sc
    except ImportError:
        sc["crepes"] = None
    try:
        from mapie.regression import ConformalizedQuantileRegressor, SplitConformalRegressor

        X, X_new = f[:, None], f_new[:, None]
        Xq = np.column_stack([lo, hi, f])
        Xq_new = np.column_stack([lo_new, hi_new, f_new])

        def mapie_sc() -> np.ndarray:
            m = SplitConformalRegressor(
                _column_model(0).fit(X, y), confidence_level=0.9, prefit=True
            ).conformalize(X, y)
            return m.predict_interval(X_new)[1][:, :, 0]

        def mapie_cqr() -> np.ndarray:
            models = [_column_model(j).fit(Xq, y) for j in range(3)]
            m = ConformalizedQuantileRegressor(models, confidence_level=0.9, prefit=True)
            m.conformalize(Xq, y)
            return m.predict_interval(Xq_new, symmetric_correction=True)[1][:, :, 0]

        sc["MAPIE"], cqr["MAPIE"] = mapie_sc, mapie_cqr
    except ImportError:
        sc["MAPIE"] = cqr["MAPIE"] = None
    return {"split conformal": sc, "CQR": cqr}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(
        f"{'method':<16}{'n':>9}  {'implementation':<10}{'median s':>10}{'x calipers':>12}{'max |diff|':>12}"
    )
    for n in args.sizes:
        for method, impls in _cases(n, args.seed).items():
            live = {k: v for k, v in impls.items() if v is not None}
            ref = live["calipers"]()
            out = {k: fn() for k, fn in live.items()}  # warm-up, and the values compared
            times: dict[str, list[float]] = {k: [] for k in live}
            for _ in range(args.rounds):
                for k, fn in live.items():
                    t0 = time.perf_counter()
                    fn()
                    times[k].append(time.perf_counter() - t0)
            base = float(np.median(times["calipers"]))
            for k in impls:
                if impls[k] is None:
                    print(f"{method:<16}{n:>9}  {k:<10}{'not installed':>22}")
                    continue
                t = float(np.median(times[k]))
                diff = float(np.max(np.abs(out[k] - ref)))
                print(f"{method:<16}{n:>9}  {k:<10}{t:>10.4f}{t / base:>12.2f}{diff:>12.1e}")


if __name__ == "__main__":
    main()
