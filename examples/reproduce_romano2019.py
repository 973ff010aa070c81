"""Conformalized quantile regression vs split conformal, Romano et al. (2019)
==========================================================================

Reproduce the synthetic heteroscedastic experiment of Romano, Patterson & Candès (2019).

What it reproduces
------------------
The synthetic example of Romano, Patterson & Candès (2019, §6 and Fig. 1;
the ``cqr`` repository's synthetic notebook): ``X ~ U(0, 5)`` and

    Y = Pois(sin(X)^2 + 0.1) + 0.03 X eps1 + 25 1{U < 0.01} eps2,

with ``eps1, eps2 ~ N(0, 1)`` and ``U ~ U(0, 1)`` independent: Poisson counts
whose spread follows ``sin(X)^2``, a little Gaussian noise growing with ``X``,
and 1 % of large outliers. 2000 training rows are split in halves: a *proper
training* half fits the models, a *calibration* half conformalizes them; 5000
test rows measure the coverage and the average length of the 90 % intervals
(``alpha = 0.1``).

Two methods, as in the paper:

* **split conformal** (Lei et al. 2018): a point model (scikit-learn's
  gradient boosting, squared error) and the interval ``yhat +- d``, ``d`` the
  ``ceil((n + 1) 0.9)``-th smallest absolute calibration residual
  (:class:`calipers.recalibration.SplitConformal`);
* **CQR** (their eq. 6-8): two quantile models at 5 % and 95 % (gradient
  boosting, pinball loss) and the interval ``[q_lo - Q, q_hi + Q]``
  (:class:`calipers.recalibration.ConformalizedQuantileRegression`).

The uncalibrated quantile pair ``[q_lo, q_hi]`` is reported too. The paper's
models are random forests and neural networks; gradient boosting stands in
(scikit-learn, no download). What the paper states, and the JSON checks
(``statements``): both conformal methods cover 90 % on average over seeds
(their Thm. 1; the split-to-split spread is reported), and CQR's intervals
are shorter on average because they follow the heteroscedasticity while split
conformal's have one width everywhere.

Outputs in ``--out`` (default ``./reproduce-romano2019``): ``romano2019.json``
(every number, per seed and summarised), ``romano2019_first_seed.npz`` (the
test rows and the three intervals of the first seed) and
``fig1_romano2019.png`` (that seed's intervals against ``X``, as their Fig. 1;
needs matplotlib).

Run
---
::

    python examples/reproduce_romano2019.py           # 20 seeds
    python examples/reproduce_romano2019.py --quick   # 3 seeds, smaller models

The full run takes 25 s of CPU time (49 s on a loaded 2-core machine), ``--quick``
6 s of CPU time.
All randomness is seeded; run time is printed to standard error. Requires
numpy, scipy and scikit-learn (matplotlib for the figure).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from calipers.recalibration import ConformalizedQuantileRegression, SplitConformal

LEVEL = 0.9


def draw(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of the synthetic data: ``x ~ U(0, 5)`` and ``y`` as in the module docstring."""
    x = rng.uniform(0.0, 5.0, n)
    y = rng.poisson(np.sin(x) ** 2 + 0.1).astype(np.float64)
    y += 0.03 * x * rng.standard_normal(n)
    y += 25.0 * (rng.uniform(0.0, 1.0, n) < 0.01) * rng.standard_normal(n)
    return x, y


def _models(n_estimators: int, seed: int) -> dict:
    from sklearn.ensemble import GradientBoostingRegressor

    common = {"n_estimators": n_estimators, "max_depth": 3, "learning_rate": 0.1}
    a = (1 - LEVEL) / 2
    return {
        "point": GradientBoostingRegressor(loss="squared_error", random_state=seed, **common),
        "lower": GradientBoostingRegressor(loss="quantile", alpha=a, random_state=seed, **common),
        "upper": GradientBoostingRegressor(
            loss="quantile", alpha=1 - a, random_state=seed, **common
        ),
    }


def _summary(lo: np.ndarray, hi: np.ndarray, y: np.ndarray) -> dict:
    return {
        "coverage": float(np.mean((lo <= y) & (y <= hi))),
        "length": float(np.mean(hi - lo)),
    }


def run_seed(seed: int, n_train: int, n_test: int, n_estimators: int) -> dict:
    """One split: fit on the proper half, conformalize on the calibration half, test."""
    rng = np.random.default_rng(seed)
    x, y = draw(n_train, rng)
    xt, yt = draw(n_test, rng)
    half = n_train // 2
    fit_rows, cal_rows = slice(0, half), slice(half, None)
    models = _models(n_estimators, seed)
    pred = {}
    for name, model in models.items():
        model.fit(x[fit_rows, None], y[fit_rows])
        pred[name] = (model.predict(x[cal_rows, None]), model.predict(xt[:, None]))
    sc = SplitConformal(level=LEVEL).fit(pred["point"][0], y[cal_rows])
    sc_lo, sc_hi = sc.predict_interval(pred["point"][1])
    cqr = ConformalizedQuantileRegression(level=LEVEL).fit(
        pred["lower"][0], pred["upper"][0], y[cal_rows]
    )
    cqr_lo, cqr_hi = cqr.predict_interval(pred["lower"][1], pred["upper"][1])
    raw_lo, raw_hi = pred["lower"][1], pred["upper"][1]
    return {
        "split_conformal": {**_summary(sc_lo, sc_hi, yt), "d": sc.conformity_quantile()},
        "cqr": {**_summary(cqr_lo, cqr_hi, yt), "Q": cqr.correction()},
        "quantile_model": _summary(raw_lo, raw_hi, yt),
        "arrays": {
            "x": xt,
            "y": yt,
            "split_conformal": np.column_stack([sc_lo, sc_hi]),
            "cqr": np.column_stack([cqr_lo, cqr_hi]),
            "quantile_model": np.column_stack([raw_lo, raw_hi]),
        },
    }


METHODS = ("split_conformal", "cqr", "quantile_model")


def summarize(runs: list[dict], n_cal: int) -> dict:
    out: dict = {}
    for m in METHODS:
        cov = np.array([r[m]["coverage"] for r in runs])
        length = np.array([r[m]["length"] for r in runs])
        out[m] = {
            "coverage_mean": float(cov.mean()),
            "coverage_se": float(cov.std(ddof=1) / math.sqrt(len(runs))) if len(runs) > 1 else 0.0,
            "coverage_min": float(cov.min()),
            "length_mean": float(length.mean()),
        }
    # the finite-sample range of the expected coverage: [level, level + 1 / (n + 1)]
    upper = LEVEL + 1 / (n_cal + 1)

    def covers(m: str) -> bool:
        s = out[m]
        return bool(
            s["coverage_mean"] + 2 * s["coverage_se"] >= LEVEL
            and s["coverage_mean"] - 2 * s["coverage_se"] <= upper
        )

    out["statements"] = {
        "split conformal covers 90 % (mean over seeds, within 2 standard errors)": covers(
            "split_conformal"
        ),
        "CQR covers 90 % (mean over seeds, within 2 standard errors)": covers("cqr"),
        "CQR intervals are shorter than split conformal's on average": bool(
            out["cqr"]["length_mean"] < out["split_conformal"]["length_mean"]
        ),
    }
    return out


def print_summary(res: dict) -> None:
    s = res["summary"]
    print(
        f"Romano, Patterson & Candes (2019) synthetic data: {res['seeds']} seeds, "
        f"{res['n_train']} training rows ({res['n_train'] // 2} for calibration), "
        f"{res['n_test']} test rows, level {LEVEL}"
    )
    print(f"{'method':<18}{'coverage':>10}{'(se)':>9}{'min':>8}{'avg length':>12}")
    for m in METHODS:
        r = s[m]
        print(
            f"{m:<18}{r['coverage_mean']:>10.4f}{r['coverage_se']:>9.4f}"
            f"{r['coverage_min']:>8.4f}{r['length_mean']:>12.3f}"
        )
    for text, ok in s["statements"].items():
        print(f"  [{'yes' if ok else 'NO '}] {text}")


def plot(arrays: dict, out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - the figure is optional
        print("matplotlib is not installed: no figure", file=sys.stderr)
        return
    order = np.argsort(arrays["x"])
    x = arrays["x"][order]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, m, title in zip(
        axes, ("split_conformal", "cqr"), ("Split conformal", "CQR"), strict=True
    ):
        iv = arrays[m][order]
        ax.scatter(arrays["x"], arrays["y"], s=2, color="0.6", label="test rows")
        ax.fill_between(x, iv[:, 0], iv[:, 1], color="C0", alpha=0.3, label="90 % interval")
        ax.set_title(title)
        ax.set_xlabel("X")
        ax.set_ylim(-3, 6)
    axes[0].set_ylabel("Y")
    axes[0].legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "fig1_romano2019.png", dpi=80)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="3 seeds, 1000 training rows, 50 trees (seconds)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("reproduce-romano2019"),
        help="folder for the JSON, the first seed's intervals and the figure",
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    seeds, n_train, n_test, trees = (3, 1000, 2000, 50) if args.quick else (20, 2000, 5000, 100)
    runs = [run_seed(seed, n_train, n_test, trees) for seed in range(seeds)]
    first = runs[0]["arrays"]
    for r in runs:
        del r["arrays"]
    res = {
        "seeds": seeds,
        "n_train": n_train,
        "n_test": n_test,
        "n_estimators": trees,
        "level": LEVEL,
        "summary": summarize(runs, n_train - n_train // 2),
        "per_seed": runs,
    }
    print_summary(res)
    np.savez(args.out / "romano2019_first_seed.npz", **first)
    plot(first, args.out)
    (args.out / "romano2019.json").write_text(json.dumps(res, indent=1))
    print(f"\nnumbers, intervals and figure written to {args.out}")
    print(f"run time {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return res


if __name__ == "__main__":
    main()
