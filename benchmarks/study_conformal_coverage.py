"""Coverage of split conformal and CQR intervals over many seeded calibration splits.

Usage::

    python benchmarks/study_conformal_coverage.py              # 1000 splits per cell, < 1 min
    python benchmarks/study_conformal_coverage.py --reps 200   # faster
    python benchmarks/study_conformal_coverage.py --markdown   # the table as Markdown

The data (seeded; every split draws fresh rows): ``x ~ U(0, 1)`` and
``y = sin(3 x) + (0.1 + x) eps``, ``eps ~ N(0, 1)`` (heteroscedastic). Two
deliberately imperfect models, fixed in advance (no fitting, so every split is a
fresh calibration set of an unchanged model):

* a point forecast ``yhat = sin(3 x) + 0.1 x`` (biased) for **split conformal**
  (:class:`calipers.recalibration.SplitConformal`, Lei et al. 2018);
* a quantile pair ``yhat -+ (0.1 + x)`` (too narrow: about 68 % of the rows) for
  **CQR** (:class:`calipers.recalibration.ConformalizedQuantileRegression`,
  Romano, Patterson & Candès 2019).

For each calibration size ``n`` and level, ``--reps`` calibration splits are drawn;
each fits both methods and is scored on 1000 fresh held-out rows (its *held-out
coverage*) and, exactly, by the coverage its interval has under the known law
(``mean_x [Phi((u(x) - m(x)) / s(x)) - Phi((l(x) - m(x)) / s(x))]`` over 2000 grid
points of ``x``: the coverage given that split). The finite-sample theory says the
mean over splits of the exact coverage is ``k / (n + 1)``, ``k = ceil((n + 1) level)``,
in ``[level, level + 1 / (n + 1)]`` (Lei et al. 2018, Thm. 2.2; Romano et al. 2019,
Thm. 1); single splits scatter around it (a Beta(k, n + 1 - k) law).

Columns: ``k/(n+1)`` the theory's mean; ``exact`` the mean exact coverage over
splits (its Monte-Carlo standard error in brackets); ``held-out`` the mean
held-out coverage; ``min`` the smallest exact coverage of one split; ``width``
the mean interval width (the target's units). Runs in one process.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
from scipy.special import ndtr

from calipers.recalibration import ConformalizedQuantileRegression, SplitConformal

SIZES = (20, 50, 100, 500, 1000)
LEVELS = (0.8, 0.9)


def _truth(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.sin(3 * x), 0.1 + x


def _point(x: np.ndarray) -> np.ndarray:
    return np.sin(3 * x) + 0.1 * x


def _pair(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m = _point(x)
    return m - (0.1 + x), m + (0.1 + x)


def _draw(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    x = rng.uniform(0, 1, n)
    m, s = _truth(x)
    return x, m + s * rng.standard_normal(n)


def cell(n: int, level: float, reps: int, seed: int) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(seed)
    grid = (np.arange(2000) + 0.5) / 2000
    gm, gs = _truth(grid)
    g_point = _point(grid)
    g_lo, g_hi = _pair(grid)
    out: dict[str, dict[str, list[float]]] = {
        m: {"exact": [], "held": [], "width": []} for m in ("split conformal", "CQR")
    }
    for _ in range(reps):
        x, y = _draw(n, rng)
        xt, yt = _draw(1000, rng)
        d = SplitConformal(level=level).fit(_point(x), y).conformity_quantile()
        q = ConformalizedQuantileRegression(level=level).fit(*_pair(x), y).correction()
        lo_t, hi_t = _pair(xt)
        for name, (lo_g, hi_g, lo, hi, width) in {
            "split conformal": (
                g_point - d,
                g_point + d,
                _point(xt) - d,
                _point(xt) + d,
                2 * d,
            ),
            "CQR": (g_lo - q, g_hi + q, lo_t - q, hi_t + q, float(np.mean(hi_t - lo_t)) + 2 * q),
        }.items():
            exact = float(np.mean(ndtr((hi_g - gm) / gs) - ndtr((lo_g - gm) / gs)))
            out[name]["exact"].append(exact)
            out[name]["held"].append(float(np.mean((lo <= yt) & (yt <= hi))))
            out[name]["width"].append(width)
    res = {}
    for name, v in out.items():
        exact = np.array(v["exact"])
        res[name] = {
            "exact": float(exact.mean()),
            "se": float(exact.std(ddof=1) / math.sqrt(reps)),
            "held": float(np.mean(v["held"])),
            "min": float(exact.min()),
            "width": float(np.mean(v["width"])),
        }
    return res


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=1000, help="calibration splits per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    rows = []
    for level in LEVELS:
        for n in SIZES:
            k = math.ceil((n + 1) * level - 1e-9)
            res = cell(n, level, args.reps, args.seed + 1000 * n + int(100 * level))
            for method, r in res.items():
                rows.append({"level": level, "n": n, "method": method, "theory": k / (n + 1), **r})
    if args.markdown:
        print("| level | n | method | k/(n+1) | exact (se) | held-out | min | width |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            print(
                f"| {r['level']} | {r['n']} | {r['method']} | {r['theory']:.4f} | "
                f"{r['exact']:.4f} ({r['se']:.4f}) | {r['held']:.4f} | {r['min']:.3f} | "
                f"{r['width']:.3f} |"
            )
    else:
        print(f"{args.reps} calibration splits per cell, 1000 held-out rows per split")
        head = f"{'level':>5} {'n':>5}  {'method':<16}{'k/(n+1)':>8}{'exact':>8}{'(se)':>8}"
        print(head + f"{'held-out':>9}{'min':>7}{'width':>7}")
        for r in rows:
            print(
                f"{r['level']:>5} {r['n']:>5}  {r['method']:<16}{r['theory']:>8.4f}"
                f"{r['exact']:>8.4f}{r['se']:>8.4f}{r['held']:>9.4f}{r['min']:>7.3f}"
                f"{r['width']:>7.3f}"
            )
    bad = [
        r
        for r in rows
        if not (
            r["level"] - 4 * r["se"] <= r["exact"] <= r["level"] + 1 / (r["n"] + 1) + 4 * r["se"]
        )
    ]
    print(
        "every cell within [level, level + 1/(n+1)] (4 standard errors): "
        + ("yes" if not bad else f"NO ({len(bad)} cells)")
    )
    print(f"run time {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return rows


if __name__ == "__main__":
    main()
