"""Time ``cp.verdict`` with the Dirichlet-kernel CE_KL, piece by piece.

K = 10 classes, predictions over-confident by a temperature (labels drawn from a
model ``p1``, scored with the sharpened ``p2 = p1^(1/0.6)``, renormalised). Prints
the time of the estimate itself (bandwidth search and one kernel regression), of
the calibrated null's label draws, of the fitted world's draws (with the curve
refits) and of the whole verdict, at n = 2000 (200 draws of each kind) and
n = 10000 (100 draws).

Run: ``python benchmarks/bench_verdict.py [n:B ...]`` (default ``2000:200 10000:100``).
"""

from __future__ import annotations

import sys
import time

import numpy as np

import calipers as cp
from calipers.inference import _resampling as rs
from calipers.inference import _verdict as vd
from calipers.inference.calibration_test import _draw_labels
from calipers.inference.calibration_world import CalibrationWorldFitter
from calipers.validation import check_predictions


def data(n: int, k: int = 10, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    u = rng.dirichlet(np.ones(k), size=n)
    p1 = u ** (1 / 0.9)
    p1 /= p1.sum(1, keepdims=True)
    y = (rng.random(n)[:, None] > p1.cumsum(1)).sum(1).clip(0, k - 1)
    p2 = p1 ** (1 / 0.6)
    p2 /= p2.sum(1, keepdims=True)
    return p2, y


def bench(n: int, B: int) -> dict[str, float]:
    p, y = data(n)
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    res = cp.proper_calibration_error(p, y, divergence="kl")
    out["estimate"] = time.perf_counter() - t0
    P = rs.numpy_predictions(check_predictions(p, y))
    m = vd._bind(cp.ce_kl, {})
    m.kwargs["bandwidth"] = res.bandwidth
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    null = vd._null(m, P, B, rng)
    out["null draws"] = time.perf_counter() - t0
    fitter = CalibrationWorldFitter(P.probs, vd._family(m, P), P.sample_weight)
    world = fitter.fit(P.labels, include_identity=False)
    theta_fn = vd._estimand_fn(m, P)
    assert theta_fn is not None
    t0 = time.perf_counter()
    vd._null(m, P, B, rng, q=world.probs)
    out["world draws"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(B):
        y_ = _draw_labels(world.probs, rng)
        theta_fn(fitter.fit(y_, include_identity=False, start=world).probs)
    out["world refits"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    v = cp.verdict(cp.ce_kl, p, y, n_resamples=B)
    out["verdict"] = time.perf_counter() - t0
    out["_check"] = float(null.mean() + v.recommended)
    return out


def main(argv: list[str]) -> None:
    cells = [tuple(int(x) for x in a.split(":")) for a in argv] or [(2000, 200), (10000, 100)]
    for n, B in cells:
        t = bench(n, B)
        parts = ", ".join(f"{k} {v:.2f} s" for k, v in t.items() if not k.startswith("_"))
        print(f"n = {n}, K = 10, B = {B}: {parts}  (check {t['_check']:.12g})", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
