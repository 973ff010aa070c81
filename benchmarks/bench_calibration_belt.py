"""Time the classic tests and the calibration belt of ``calipers.clinical``.

``hosmer_lemeshow_test`` (Hosmer & Lemeshow 1980), ``spiegelhalter_z_test``
(Spiegelhalter 1986) and ``calibration_belt`` (Finazzi et al. 2011; Nattino,
Finazzi & Bertolini 2014; 200 grid risks, levels 0.8 and 0.95). There is no
Python peer: the authors' R package givitiR (not installed here) solves each end
of the belt by a constrained optimisation over every row; the script times that
way of solving (calipers' own Newton solve on every row, the expansion disabled)
beside the default (the log-likelihood's moment expansion, accepted where its
error bound is below 1e-9), up to ``--every-row-max`` rows, and prints the
largest difference of the two belts.

Data: risks ``p ~ U(0.01, 0.99)``, outcomes drawn from ``logit^-1(0.1 + 1.1
logit(p))`` (slightly too moderate risks); seeded.

Run: ``python benchmarks/bench_calibration_belt.py [--sizes 10000] [--large]``
(default n = 10 000, under 1 min; ``--large`` adds 10⁵ and 10⁶).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import calipers.clinical._calibration_belt as belt_module
from calipers.clinical import calibration_belt, hosmer_lemeshow_test, spiegelhalter_z_test


def data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, n)
    x = np.log(p / (1 - p))
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(0.1 + 1.1 * x)))).astype(float)
    return p, y


def timed(fn, *args, repeats: int = 1, **kwargs) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    ap.add_argument("--large", action="store_true", help="also 10^5 and 10^6 rows")
    ap.add_argument("--every-row-max", type=int, default=10_000)
    args = ap.parse_args()
    sizes = list(args.sizes) + ([100_000, 1_000_000] if args.large else [])
    print(
        f"{'n':>9} {'HL':>9} {'Spiegelh.':>10} {'belt':>9} {'every row':>10} "
        f"{'ratio':>7}  max |diff|  degree  p-value"
    )
    for n in sizes:
        p, y = data(n)
        t_hl, _ = timed(hosmer_lemeshow_test, p, y, repeats=3)
        t_sp, _ = timed(spiegelhalter_z_test, p, y, repeats=3)
        t_b, b = timed(calibration_belt, p, y)
        if n <= args.every_row_max:
            saved = belt_module._TOLERANCE
            belt_module._TOLERANCE = -1.0
            try:
                t_e, e = timed(calibration_belt, p, y)
            finally:
                belt_module._TOLERANCE = saved
            diff = max(np.abs(b.lower - e.lower).max(), np.abs(b.upper - e.upper).max())
            every, ratio, d_txt = f"{t_e:.2f} s", f"{t_e / t_b:.1f}x", f"{diff:.1e}"
        else:
            every, ratio, d_txt = "-", "-", "-"
        print(
            f"{n:>9} {t_hl:>7.3f} s {t_sp:>8.3f} s {t_b:>7.2f} s {every:>10} {ratio:>7}  "
            f"{d_txt:>10}  {b.degree:>6}  {b.p_value:.3g}"
        )


if __name__ == "__main__":
    main()
