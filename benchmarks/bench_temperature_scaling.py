"""Side-by-side timing of temperature-scaling fits, in one process.

Usage::

    python benchmarks/bench_temperature_scaling.py            # n = 50 000, k = 1000
    python benchmarks/bench_temperature_scaling.py --quick    # n = 10 000, k = 100

Data (benchmarks/bench_ece.py's recipe): ``z = 3 N(0, 1)``, labels drawn from
``softmax(z)``, and the model's logits ``1.5 z`` stored as float32 (so the true
temperature is 1.5).

Implementations (each fits T on the same data):

* calipers ``TemperatureScaling().fit(logits, labels)``: the public path,
  including the input validation and conversion of ``Recalibrator.fit``;
* calipers core: ``TemperatureScaling()._fit`` on the float32 logits, i.e. the
  optimiser alone, without the float64 copy and softmax validation that the
  base class currently makes (what a lighter validation would give);
* netcal ``TemperatureScaling().fit(probs, labels)`` (installed peer): SciPy
  L-BFGS-B with a numerical gradient of a torch NLL. It is given float64
  probabilities (with float32 input its finite-difference gradient is 0 and
  it returns T = 1 untouched);
* Guo et al.'s gpleiss ``temperature_scaling.py``, re-implemented here: torch
  ``LBFGS(lr=0.01, max_iter=50)`` on the cross-entropy from ``T0 = 1.5``
  (docs/how-calipers-computes.md §10);
* NN_calibration's (Gruber & Buettner (2022)) ``TemperatureScaling``, re-implemented here:
  ``scipy.optimize.minimize(method="BFGS", x0=1, maxiter=50)`` on
  ``sklearn.metrics.log_loss(y, softmax(z / T))``.

Every implementation is called once as a warm-up (its fitted T is taken from
that call), then all are called in turn, round after round; implementations
whose warm-up took longer than ``--slow`` seconds are not repeated (their
warm-up time is their only time). The table shows the median and minimum
wall time, the median of the paired ratios to calipers' public fit, and the
fitted temperatures.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))


def make_data(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """float32 logits ``1.5 z`` and labels drawn from ``softmax(z)``, ``z = 3 N(0, 1)``."""
    rng = np.random.default_rng(seed)
    logits = np.empty((n, k), dtype=np.float32)
    labels = np.empty(n, dtype=np.int64)
    step = max(1, (1 << 22) // k)
    for i in range(0, n, step):
        z = 3.0 * rng.standard_normal((min(step, n - i), k))
        p = np.exp(z - z.max(axis=1, keepdims=True))
        cdf = np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)
        u = rng.random(len(z))
        labels[i : i + len(z)] = np.minimum((u[:, None] > cdf).sum(axis=1), k - 1)
        logits[i : i + len(z)] = 1.5 * z
    return logits, labels


@dataclass
class Impl:
    name: str
    fn: Callable[[], float]  # returns the fitted T
    value: float | None = None
    warm_s: float = 0.0
    times: list[float] = field(default_factory=list)
    error: str | None = None


def _impls(L: np.ndarray, y: np.ndarray, skipped: list[str]) -> list[Impl]:
    from calipers.recalibration.temperature_scaling import TemperatureScaling

    def calipers_fit() -> float:
        return TemperatureScaling().fit(L, y).temperature_

    def calipers_core() -> float:
        ts = TemperatureScaling()
        ts._fit(L, y, None)
        return ts.temperature_

    out = [
        Impl("calipers TemperatureScaling().fit (public path)", calipers_fit),
        Impl("calipers TemperatureScaling()._fit (optimiser only, float32)", calipers_core),
    ]
    k = L.shape[1]
    try:
        from netcal.scaling import TemperatureScaling as NetcalTS

        z64 = L.astype(np.float64)
        P64 = np.exp(z64 - z64.max(axis=1, keepdims=True))
        P64 /= P64.sum(axis=1, keepdims=True)
        del z64

        def netcal_fit() -> float:
            ts = NetcalTS()
            ts.fit(P64, y, tensorboard=False)
            return float(1.0 / np.asarray(ts.weights).reshape(-1)[0])  # weights = 1 / T

        out.append(Impl("netcal TemperatureScaling().fit (float64 probs)", netcal_fit))
    except ImportError:
        skipped.append("netcal: not installed")
    try:
        import torch

        Lt, yt = torch.from_numpy(L), torch.from_numpy(y)

        def gpleiss_fit() -> float:
            # Guo et al.'s reference code (gpleiss/temperature_scaling), re-implemented
            t = torch.nn.Parameter(torch.ones(1) * 1.5)
            opt = torch.optim.LBFGS([t], lr=0.01, max_iter=50)
            nll = torch.nn.CrossEntropyLoss()

            def closure() -> torch.Tensor:
                opt.zero_grad()
                loss = nll(Lt / t, yt)
                loss.backward()
                return loss

            opt.step(closure)
            return float(t.item())

        out.append(Impl("torch LBFGS(lr=0.01, max_iter=50), T0=1.5 (Guo/gpleiss)", gpleiss_fit))
    except ImportError:
        skipped.append("torch: not installed")
    try:
        from scipy.optimize import minimize
        from scipy.special import softmax
        from sklearn.metrics import log_loss

        classes = np.arange(k)

        def nn_calibration_fit() -> float:
            # Gruber & Buettner's (2022) NN_calibration TemperatureScaling, re-implemented
            def loss(x: np.ndarray) -> float:
                return float(log_loss(y, softmax(L / x[0], axis=1), labels=classes))

            res = minimize(loss, x0=np.array([1.0]), method="BFGS", options={"maxiter": 50})
            return float(res.x[0])

        out.append(Impl("scipy BFGS on sklearn log_loss (NN_calibration)", nn_calibration_fit))
    except ImportError:
        skipped.append("scikit-learn: not installed")
    return out


def run(impls: list[Impl], rounds: int, slow_s: float) -> None:
    for im in impls:
        gc.collect()
        t0 = time.perf_counter()
        try:
            im.value = im.fn()
        except Exception as exc:  # a peer failing must not stop the benchmark
            im.error = f"{type(exc).__name__}: {exc}"[:200]
        im.warm_s = time.perf_counter() - t0
    for _ in range(rounds):
        for im in impls:
            if im.error is not None or im.warm_s > slow_s:
                continue
            gc.collect()
            t0 = time.perf_counter()
            im.fn()
            im.times.append(time.perf_counter() - t0)
    for im in impls:
        if im.error is None and not im.times:
            im.times = [im.warm_s]


def report(impls: list[Impl], skipped: list[str]) -> None:
    base = impls[0]
    ref = base.value
    print(
        f"   {'implementation':<62} {'n':>2} {'median s':>9} {'min s':>8} {'x calipers':>10} "
        f"{'fitted T':>12} {'T - calipers':>13}"
    )
    for im in impls:
        if im.error is not None:
            print(f"   {im.name:<62} FAILED: {im.error}")
            continue
        m = min(len(im.times), len(base.times))
        paired = [im.times[i] / base.times[i] for i in range(m)]
        ratio = statistics.median(paired) if len(im.times) > 1 else im.times[0] / min(base.times)
        dv = "" if ref is None or im.value is None else f"{im.value - ref:+.2e}"
        print(
            f"   {im.name:<62} {len(im.times):>2} {statistics.median(im.times):>9.3f} "
            f"{min(im.times):>8.3f} {ratio:>10.2f} {im.value:>12.7f} {dv:>13}"
        )
    for s in skipped:
        print(f"   {s}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 10 000, k = 100, 3 rounds")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--slow", type=float, default=20.0, help="do not repeat fits slower than this")
    args = ap.parse_args()
    n, k = (10_000, 100) if args.quick else (50_000, 1000)
    rounds = args.rounds if args.rounds is not None else (3 if args.quick else 5)
    print(
        f"Temperature scaling fit, n = {n}, k = {k}, float32 logits (true T = 1.5); "
        f"{rounds} rounds; Python {platform.python_version()}, NumPy {np.__version__}, "
        f"{os.cpu_count()} CPUs"
    )
    L, y = make_data(n, k)
    skipped: list[str] = []
    impls = _impls(L, y, skipped)
    run(impls, rounds, args.slow)
    report(impls, skipped)


if __name__ == "__main__":
    main()
