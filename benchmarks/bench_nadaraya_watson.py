"""Calibration-sharpness quantities (Chidambaram & Ge (2024)) side by side, in one process.

Usage::

    python benchmarks/bench_nadaraya_watson.py            # n = 50 000, k = 10 and 1000
    python benchmarks/bench_nadaraya_watson.py --quick    # n = 10 000, fewer rounds
    python benchmarks/bench_nadaraya_watson.py --json out.json

Every implementation computes *all* the quantities of a calibration-sharpness
diagram for the same predictions: the calibration curve, the KDE, the
pointwise sharpness gap and the band on a grid of 5000 points
(``linspace(0, 1, 5000)``, sharpcal's grid), the calibration error d_CAL, the
total divergence d_TOT (multi-class Brier) and, for calipers, accuracy and the
eq. (C.3) form of d_CAL.

Implementations
---------------
``calipers (auto)``
    ``calipers.metrics._calibration_sharpness.calibration_sharpness(p, y, n_points=5000)``
    (binned FFT path at this size; d_CAL at every sample).
``calipers (exact)``
    the same with ``method="exact"``: the double sums in blocks, O(n^2) for
    d_CAL (every sample is an evaluation point).
``sharpcal approach, re-implemented``
    a re-implementation, written here from the description in
    docs/how-calipers-computes.md §7.1, of the approach of the authors'
    code -- **not the authors' code**: torch on the CPU, in the input's dtype
    (float32); full ``n_points x n`` Gaussian kernel matrices; d_CAL as the mean
    over 10 repetitions of ``mean (m_hat(x) - x)^2`` at 5000 confidences drawn
    with replacement (``m_hat`` from all n points, self included), with the
    standard deviation; the band from two more ``5000 x n`` regressions on the
    grid (correctness and per-sample Brier), ``gap = (reg - (m_hat - x)^2) * kde``,
    band ``[max(m_hat - gap / 2, 0), m_hat + gap / 2]``.

Timing: one warm-up call per implementation (its values are printed), then
rounds in which every implementation is called in turn (paired); an
implementation whose warm-up took more than ``--slow`` seconds (default 5) is
timed in ``--slow-rounds`` rounds only (default 0: its warm-up time is its
only time, shown as ``w`` in the rounds column; at n = 50 000 the
re-implementation takes minutes per call on 2 cores). The table shows min and median wall time
(``time.perf_counter``) and the median of per-round ratios to the re-
implementation of the sharpcal approach. Data: seeded synthetic softmax
predictions (the recipe of bench_ece.py / the standard benchmark recipe).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

N_POINTS = 5000  # sharpcal's grid and subsample size
BANDWIDTH = 0.05


# ----------------------------------------------------------------------------- data


def make_multiclass(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Overconfident float32 softmax predictions: logits = 3 N(0, 1),
    labels ~ softmax(logits), probs = softmax(1.5 logits) (float64, stored as float32)."""
    rng = np.random.default_rng(seed)
    logits = 3.0 * rng.standard_normal((n, k))
    u = rng.random(n)
    labels = np.empty(n, dtype=np.int64)
    probs = np.empty((n, k), dtype=np.float32)
    step = max(1, (1 << 22) // k)
    for i in range(0, n, step):
        z = logits[i : i + step]
        e = np.exp(z - z.max(axis=1, keepdims=True))
        cdf = np.cumsum(e / e.sum(axis=1, keepdims=True), axis=1)
        labels[i : i + step] = np.minimum((u[i : i + step, None] > cdf).sum(1), k - 1)
        e = np.exp(1.5 * (z - z.max(axis=1, keepdims=True)))
        probs[i : i + step] = e / e.sum(axis=1, keepdims=True)
    return probs, labels


# ----------------------------------------------------------------------------- sharpcal approach


def sharpcal_approach(
    probs: np.ndarray, labels: np.ndarray, seed: int = 0, n_subsamples: int = 10
) -> dict[str, Any]:
    """Re-implementation of the approach described in docs/how-calipers-computes.md §7.1 (NOT the authors' code)."""
    import torch

    p = torch.from_numpy(probs)
    y = torch.from_numpy(labels)
    conf, pred = p.max(dim=1)
    correct = (pred == y).to(p.dtype)
    sigma = BANDWIDTH
    norm = 1.0 / (sigma * math.sqrt(2 * math.pi))

    def kernel(u: Any) -> Any:
        return torch.exp(-(u**2) / (2 * sigma**2)) * norm

    def kernel_regression(x: Any, h: Any, t: Any) -> tuple[Any, Any]:
        w = kernel(x.unsqueeze(1) - h.unsqueeze(0))  # (len(x), n) matrix
        kde = w.mean(dim=1)
        return (w * t.unsqueeze(0)).mean(dim=1) / kde, kde

    onehot = torch.nn.functional.one_hot(y, p.shape[1]).to(p.dtype)
    loss = ((p - onehot) ** 2).sum(dim=1)  # multi-class Brier per sample
    rng = np.random.default_rng(seed)
    cals = []
    if len(conf) > N_POINTS:
        for _ in range(n_subsamples):
            x = conf[torch.from_numpy(rng.choice(len(conf), N_POINTS))]  # with replacement
            m, _ = kernel_regression(x, conf, correct)
            cals.append(float(((m - x) ** 2).mean()))
        cal_mean = float(np.mean(cals))
        cal_std = float(torch.tensor(cals).std())  # ddof = 1
    else:
        m, _ = kernel_regression(conf, conf, correct)
        cal_mean, cal_std = float(((m - conf) ** 2).mean()), 0.0
    grid = torch.linspace(0, 1, N_POINTS, dtype=p.dtype)
    curve, kde = kernel_regression(grid, conf, correct)
    reg_loss, _ = kernel_regression(grid, conf, loss)
    gap = (reg_loss - (curve - grid) ** 2) * kde
    return {
        "d_cal": cal_mean,
        "d_cal_std": cal_std,
        "d_tot": float(loss.double().mean()),
        "curve": curve.double().numpy(),
        "density": kde.double().numpy(),
        "band_lower": torch.clamp(curve - gap / 2, min=0).double().numpy(),
        "band_upper": (curve + gap / 2).double().numpy(),
    }


def calipers_all(probs: np.ndarray, labels: np.ndarray, method: str) -> dict[str, Any]:
    from calipers.metrics._calibration_sharpness import calibration_sharpness

    r = calibration_sharpness(
        probs,
        labels,
        bandwidth=BANDWIDTH,
        n_points=N_POINTS,
        method=method,  # type: ignore[arg-type]
    )
    return {
        "d_cal": r.calibration_error_sharpcal,
        "d_cal_plugin": r.calibration_error,
        "d_tot": r.total_divergence,
        "accuracy": r.accuracy,
        "curve": r.calibration_curve,
        "density": r.density,
        "band_lower": r.band_lower,
        "band_upper": r.band_upper,
    }


# ----------------------------------------------------------------------------- harness


@dataclass
class Impl:
    name: str
    fn: Callable[[], dict[str, Any]]
    value: dict[str, Any] | None = None
    warm_s: float = 0.0
    times: list[float] = field(default_factory=list)
    max_rounds: int = 10**9
    error: str | None = None


def run_case(impls: list[Impl], rounds: int, slow_s: float, slow_rounds: int) -> None:
    for im in impls:
        gc.collect()
        t0 = time.perf_counter()
        try:
            im.value = im.fn()
        except Exception as exc:  # an implementation failing must not stop the others
            im.error = f"{type(exc).__name__}: {exc}"[:200]
            continue
        im.warm_s = time.perf_counter() - t0
        im.max_rounds = slow_rounds if im.warm_s > slow_s else rounds
    gc.collect()
    for r in range(rounds):
        for im in impls:
            if im.error is None and r < im.max_rounds:
                t0 = time.perf_counter()
                im.fn()
                im.times.append(time.perf_counter() - t0)
                gc.collect()


def paired_ratio(a: list[float], b: list[float]) -> float | None:
    m = min(len(a), len(b))
    return statistics.median(a[i] / b[i] for i in range(m)) if m else None


def summarize(title: str, impls: list[Impl], baseline: str, load: tuple[float, float]) -> dict:
    base = next(i for i in impls if i.name == baseline)
    ref = next(i for i in impls if i.name.startswith("calipers (auto)"))
    print()
    print(title)
    print(f"   load average before / after the case: {load[0]:.2f} / {load[1]:.2f}")
    print(
        f"   {'implementation':<44} {'n':>2} {'min s':>8} {'median s':>9} {'x re-impl':>9} "
        f"{'d_CAL (code)':>13} {'d_CAL (C.3)':>12} {'d_TOT':>9} {'max|curve-calipers|':>20} "
        f"{'max|band-calipers|':>19}"
    )
    rows = []
    for im in impls:
        if im.error is not None or im.value is None:
            print(f"   {im.name:<44} FAILED: {im.error}")
            rows.append({"name": im.name, "error": im.error})
            continue
        v = im.value
        rv = ref.value if ref.value is not None else v
        ok = np.isfinite(v["curve"]) & np.isfinite(rv["curve"])
        dcurve = float(np.max(np.abs(v["curve"][ok] - rv["curve"][ok])))
        dband = float(
            np.nanmax(
                np.abs(
                    np.concatenate(
                        [v["band_upper"] - rv["band_upper"], v["band_lower"] - rv["band_lower"]]
                    )
                )
            )
        )
        times = im.times or [im.warm_s]  # a slow impl may be timed by its warm-up only
        med, mn = statistics.median(times), min(times)
        base_times = base.times or [base.warm_s]
        ratio = paired_ratio(times, base_times)
        dcal = f"{v['d_cal']:.7f}" + (f"±{v['d_cal_std']:.1e}" if "d_cal_std" in v else "")
        plug = f"{v['d_cal_plugin']:.7f}" if "d_cal_plugin" in v else "-"
        print(
            f"   {im.name:<44} {len(im.times) or 'w':>2} {mn:>8.3f} {med:>9.3f} "
            f"{(f'{ratio:.4f}' if ratio is not None else '-'):>9} {dcal:>13} {plug:>12} "
            f"{v['d_tot']:>9.6f} {dcurve:>20.2e} {dband:>19.2e}"
        )
        rows.append(
            {
                "name": im.name,
                "warm_s": im.warm_s,
                "times_s": im.times,
                "min_s": mn,
                "median_s": med,
                "ratio_to_reimpl": ratio,
                "d_cal_code": v["d_cal"],
                "d_cal_code_std": v.get("d_cal_std"),
                "d_cal_plugin": v.get("d_cal_plugin"),
                "d_tot": v["d_tot"],
                "accuracy": v.get("accuracy"),
                "max_abs_curve_diff": dcurve,
                "max_abs_band_diff": dband,
            }
        )
    if ref.value is not None:
        print(f"   accuracy (calipers): {ref.value['accuracy']:.5f}")
    if ref.times:
        med = statistics.median(ref.times)
        tag = "met" if med < 1.0 else "MISSED"
        print(
            f"   [{tag}] calipers (auto) computes every quantity in under 1 s: median {med:.3f} s"
        )
    return {"title": title, "rows": rows, "load": load}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="n = 10 000, 3 rounds")
    ap.add_argument("--n", type=int, default=None, help="number of samples (default 50 000)")
    ap.add_argument("--classes", default="10,1000", help="comma-separated k values")
    ap.add_argument("--rounds", type=int, default=None, help="timed rounds (default 7, quick 3)")
    ap.add_argument("--slow", type=float, default=5.0, help="warm-up seconds beyond which ...")
    ap.add_argument(
        "--slow-rounds",
        type=int,
        default=0,
        help="... an impl is timed this often (0: its warm-up time is its only time, 'w')",
    )
    ap.add_argument("--no-exact", action="store_true", help="skip the calipers exact path")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args(argv)
    n = args.n or (10_000 if args.quick else 50_000)
    rounds = args.rounds or (3 if args.quick else 7)

    try:
        import torch

        torch_info = f"torch {torch.__version__}, {torch.get_num_threads()} threads"
    except ImportError:
        torch_info = "torch not installed (the re-implementation needs it)"
    import calipers

    print("calibration-sharpness benchmark (one process; wall time of one call)")
    print(
        f"   machine: {platform.machine()}, {os.cpu_count()} CPUs; numpy {np.__version__}; "
        f"{torch_info}; calipers from {os.path.dirname(calipers.__file__)}"
    )
    print(
        f"   n = {n}, grid = {N_POINTS} points, Gaussian sigma = {BANDWIDTH}; "
        f"{rounds} rounds (slow ones {args.slow_rounds}); 'x re-impl' = median of per-round "
        "time ratios to the sharpcal-approach re-implementation"
    )
    print(
        "   d_CAL (code) = mean (m_hat(h) - h)^2 [re-impl: mean ± sd over 10 subsamples of "
        f"{N_POINTS}]; d_CAL (C.3) = Chidambaram & Ge (2024) eq. (C.3); max|...-calipers| vs calipers (auto)"
    )
    results = []
    for k in [int(s) for s in args.classes.split(",") if s.strip()]:
        probs, labels = make_multiclass(n, k, args.seed)
        impls = [
            Impl("calipers (auto)", lambda p=probs, y=labels: calipers_all(p, y, "auto")),
        ]
        if not args.no_exact:
            impls.append(
                Impl("calipers (exact)", lambda p=probs, y=labels: calipers_all(p, y, "exact"))
            )
        impls.append(
            Impl(
                "sharpcal approach, re-implemented (torch)",
                lambda p=probs, y=labels: sharpcal_approach(p, y, args.seed),
            )
        )
        load0 = os.getloadavg()[0]
        run_case(impls, rounds, args.slow, args.slow_rounds)
        load1 = os.getloadavg()[0]
        results.append(
            summarize(
                f"k = {k}: n = {n} float32 softmax predictions",
                impls,
                "sharpcal approach, re-implemented (torch)",
                (load0, load1),
            )
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": n, "rounds": rounds, "cases": results}, f, indent=1)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
