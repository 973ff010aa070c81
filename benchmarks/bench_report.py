"""Time of the full report on 50 000 x 1000 logits with 5 recalibration methods.

    python benchmarks/bench_report.py [--n 50000] [--k 1000] [--no-figures]

The predictions follow the standard benchmark recipe (logits = 3 N(0, 1), labels drawn from
softmax(logits), model logits 1.5 x, float32). The rows are split 50/50 into a
calibration and a test half (stratified, seed 0); TS, ETS, HB, IR and MRR are fitted on
the first and the standard suite (with the ECE null p-value and, unless --no-figures,
three diagrams per row) is computed on the second. Prints the wall time of each stage.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import calipers as cp


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--k", type=int, default=1000)
    ap.add_argument("--no-figures", action="store_true")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    z = 3 * rng.standard_normal((a.n, a.k))
    e = np.exp(z - z.max(1, keepdims=True))
    y = (
        (rng.random(a.n)[:, None] > np.cumsum(e / e.sum(1, keepdims=True), 1))
        .sum(1)
        .clip(0, a.k - 1)
    )
    logits = (1.5 * z).astype(np.float32)
    del z, e
    t0 = time.perf_counter()
    ci, ti = cp.recalibration.calibration_split_indices(y, seed=0)
    methods = [
        cp.TemperatureScaling(),
        cp.EnsembleTemperatureScaling(),
        cp.HistogramBinning(),
        cp.IsotonicRegression(),
        cp.MeanReplacement(),
    ]
    rep = cp.report(
        {"model": (logits[ti], y[ti])},
        logits=True,
        calibration={"model": (logits[ci], y[ci])},
        recalibrators=methods,
        figures=not a.no_figures,
    )
    t1 = time.perf_counter()
    print(rep.to_markdown())
    print(f"n = {a.n}, k = {a.k}, 5 methods, figures = {not a.no_figures}: {t1 - t0:.1f} s")


if __name__ == "__main__":
    main()
