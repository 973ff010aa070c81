"""KDE calibration error (Zhang et al. 2020): calipers beside the authors' procedure, one process.

Usage::

    python benchmarks/bench_kde_calibration_error.py              # n = 10**4 and 10**5
    python benchmarks/bench_kde_calibration_error.py --n 2000 --repeats 3

The baseline re-implements ``ece_kde_binary`` of the Mix-n-Match code as
docs/how-calipers-computes.md §4.3 describes it (KDEpy ``FFTKDE`` with the triweight kernel on
``linspace(-0.6, 1.6, 2**14)``, mirrored data, then a Python loop over the grid
that looks each grid point up with ``argmin |x_int - conf|``, as the authors'
loop does); calipers bins and convolves with NumPy and vectorises the loop.
Data: the the standard benchmark recipe (k = 10). Every implementation runs once
to warm up (its value is taken from that call), then all run in turn, round
after round; the table shows median and min seconds and the median per-round
ratio to calipers.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_mmce_skce import data, rounds_table  # noqa: E402

import calipers as cp  # noqa: E402


def authors_procedure(p: np.ndarray, y: np.ndarray, order: int = 1) -> float:
    from KDEpy import FFTKDE

    x_int = np.linspace(-0.6, 1.6, 2**14)
    p = np.clip(p, 1e-256, 1 - 1e-256)
    n = p.shape[0]
    conf = p.max(1) / p.sum(1)
    correct = (p.argmax(1) == y).astype(float)
    c1 = conf[correct == 1]
    kbw = np.std(c1) * (2 * n) ** -0.2

    def dens(d: np.ndarray) -> np.ndarray:
        m = np.concatenate([-d[d < 0.5], d, 2 - d[d >= 0.5]])
        f = FFTKDE(bw=kbw, kernel="triweight").fit(m).evaluate(x_int)
        f[x_int <= 0] = 0
        f[x_int >= 1] = 0
        return 2 * f

    pp1, pp2 = dens(c1), dens(conf)
    perc = correct.mean()
    integral = np.zeros(x_int.shape)
    for i in range(x_int.shape[0]):
        j = np.abs(x_int - x_int[i]).argmin()
        if max(pp1[j], pp2[j]) > 1e-6:
            with np.errstate(divide="ignore"):
                accu = min(perc * pp1[j] / pp2[j], 1.0)
            if not np.isnan(accu):
                integral[i] = abs(x_int[i] - accu) ** order * pp2[i]
        elif i > 1:
            integral[i] = integral[i - 1]
    ind = (x_int >= 0) & (x_int <= 1)
    trap = np.trapezoid  # np.trapz in the authors' code (NumPy 1)
    return float(trap(integral[ind], x_int[ind]) / trap(pp2[ind], x_int[ind]))


def run(n: int, repeats: int) -> None:
    p, y = data(n, 10)
    impls: dict[str, Callable[[], float]] = {
        "calipers kde_calibration_error": lambda: float(cp.kde_calibration_error(p, y)),
    }
    try:
        import KDEpy  # noqa: F401

        impls["authors' procedure (KDEpy + loop)"] = lambda: authors_procedure(p, y)
    except ImportError:
        print("KDEpy not installed: calipers only (pip install KDEpy)")
    print(f"\nn = {n}, k = 10, {repeats} rounds")
    rounds_table(impls, repeats, "calipers kde_calibration_error")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="*", default=[10_000, 100_000])
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    for n in a.n:
        run(n, a.repeats)


if __name__ == "__main__":
    main()
