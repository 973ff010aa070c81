"""Time ``honest_calibration_band`` against the all-intervals evaluation it replaces.

The band of Dimitriadis, Dümbgen, Henzi, Puke & Ziegel (2023) is a maximum
(and a minimum) of Clopper-Pearson bounds over all ``G (G + 1) / 2`` intervals
of the ``G`` distinct predictions. The R package calibrationband evaluates a
Beta quantile (``R::qbeta``) for every interval and side, ``G (G + 1)`` in all;
R is not available here, so the script measures that evaluation in the same
process with SciPy's Beta quantile (``scipy.special.betaincinv``, vectorised):
fully at the smaller sizes (and checks that the bounds agree), and from the
measured cost per quantile beyond. It then times calipers' pruned exact
maximum (``method="standard"``) and the rounding method (``method="round"``,
``digits`` 2 and 3; any ``n``).

Data: predictions ``x ~ U(0, 1)`` (all distinct), outcomes with the
over-confident curve ``p(x) = 1 / (1 + ((1 - x) / x)^0.6)``; seeded.

Run: ``python benchmarks/bench_honest_band.py [--sizes 1000 10000] [--large]``
(default sizes 2000 and 10 000, under 1 min; ``--large`` adds 10⁵ for both
methods and 10⁶ for ``"round"``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.special import betaincinv

from calipers.inference import honest_calibration_band


def data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=n)
    y = (rng.uniform(size=n) < 1 / (1 + ((1 - x) / x) ** 0.6)).astype(int)
    return x, y


def all_intervals(
    x: np.ndarray, y: np.ndarray, alpha: float = 0.05
) -> tuple[np.ndarray, np.ndarray]:
    """Every interval's two quantiles, one vectorised row per interval start (as calibrationband)."""
    order = np.argsort(x, kind="stable")
    ys = y[order].astype(float)
    G = len(ys)
    a = alpha / (G * (G + 1))
    lo = np.zeros(G)
    up = np.ones(G)
    for j in range(G):
        S = np.cumsum(ys[j:])
        F = np.arange(1, G - j + 1) - S
        ql = np.where(S > 0, betaincinv(np.maximum(S, 1), F + 1, a), 0.0)
        qu = np.where(F > 0, 1 - betaincinv(np.maximum(F, 1), S + 1, a), 1.0)
        lo[j:] = np.maximum(lo[j:], np.maximum.accumulate(ql))
        up[j] = min(up[j], qu.min())
    return np.maximum.accumulate(lo), np.minimum.accumulate(up[::-1])[::-1]


def seconds_per_quantile() -> float:
    rng = np.random.default_rng(1)
    s = rng.integers(1, 5000, 2_000_000).astype(float)
    f = rng.integers(1, 5000, 2_000_000).astype(float)
    t0 = time.perf_counter()
    betaincinv(s, f, 1e-9)
    return (time.perf_counter() - t0) / s.size


def timed(fn, *args, repeats: int = 1, **kwargs) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 10_000])
    ap.add_argument(
        "--large", action="store_true", help="also 10^5 (both methods) and 10^6 (round)"
    )
    args = ap.parse_args()
    per_q = seconds_per_quantile()
    print(f"Beta quantile (scipy.special.betaincinv): {per_q * 1e9:.0f} ns each")
    print(
        f"{'n':>8} {'all intervals':>16} {'standard':>10} {'ratio':>8} "
        f"{'round d=3':>10} {'round d=2':>10}  max |diff|"
    )
    sizes = list(args.sizes) + ([100_000] if args.large else [])
    for n in sizes:
        x, y = data(n)
        t_std, band = timed(honest_calibration_band, x, y, repeats=3 if n <= 10_000 else 1)
        if n <= 5000:
            t_all, (lo, up) = timed(all_intervals, x, y)
            diff = max(np.abs(band.lower - lo).max(), np.abs(band.upper - up).max())
            all_txt, diff_txt = f"{t_all:.2f} s", f"{diff:.1e}"
        else:
            t_all = n * (n + 1) * per_q
            all_txt, diff_txt = f"~{t_all:.0f} s (est.)", "-"
        t_r3, _ = timed(honest_calibration_band, x, y, method="round", digits=3, repeats=3)
        t_r2, _ = timed(honest_calibration_band, x, y, method="round", digits=2, repeats=3)
        print(
            f"{n:>8} {all_txt:>16} {t_std:>8.2f} s {t_all / t_std:>7.0f}x "
            f"{t_r3:>8.3f} s {t_r2:>8.3f} s  {diff_txt}"
        )
    if args.large:
        x, y = data(1_000_000)
        t_r3, _ = timed(honest_calibration_band, x, y, method="round", digits=3, repeats=3)
        print(f"n = 10^6, method='round', digits=3: {t_r3:.2f} s")


if __name__ == "__main__":
    main()
