"""The PyTorch path on CUDA beside the CPU paths, at the sizes of large evaluations.

    PYTHONPATH=src python benchmarks/bench_gpu.py            # on a machine with a GPU
    PYTHONPATH=src python benchmarks/bench_gpu.py --small    # a quick run anywhere

Times, on one machine, each quantity on NumPy arrays (CPU), on CPU tensors and on CUDA
tensors, and prints the values so that agreement can be read off:

* the top-label ECE (15 equal-width bins, Guo et al. 2017) of 10⁷ × 10 logits, next
  to torchmetrics' ``multiclass_calibration_error`` on the same CUDA tensors;
* the canonical calibration error with the Dirichlet kernel (Popordanoska et al. 2024,
  bandwidth 0.02) at n = 5·10⁴, k = 10 (the CPU path at n = 10⁴ and, when that takes
  under 4 s, at 5·10⁴);
* the block SKCE (Widmann et al. 2019, block size 2) at n = 10⁷, k = 10;
* the Nadaraya–Watson calibration-sharpness terms (Chidambaram & Ge 2024) of 10⁷ binary
  predictions.

Each figure is the median of ``--repeats`` timed calls after one warm-up call, with
``torch.cuda.synchronize()`` around the CUDA calls. Data are seeded.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import torch

import calipers as cp

PROFILE = False


def timed(f: Callable[[], Any], repeats: int, cuda: bool) -> tuple[float, Any]:
    """Median wall time of ``repeats`` calls after a warm-up, and the last value."""
    value = f()
    times = []
    for _ in range(repeats):
        if cuda:
            torch.cuda.synchronize()
        t = time.perf_counter()
        value = f()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return statistics.median(times), value


def as_float(v: Any) -> float:
    if hasattr(v, "calibration_error"):  # CalibrationSharpness
        return float(v.calibration_error)
    if hasattr(v, "value"):
        return float(v.value)
    return float(v)


def row(name: str, where: str, seconds: float, value: Any) -> None:
    print(
        f"{name:<34} {where:<14} {seconds * 1e3:11.1f} ms   value {as_float(value):.12g}",
        flush=True,
    )


def logits_data(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)).astype(np.float32) * 2.0
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    u = rng.uniform(size=(n, 1))
    y = (p.cumsum(1) < u).sum(1).clip(0, k - 1)  # labels drawn from the predictions
    return z, y.astype(np.int64)


def probs_data(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    z, y = logits_data(n, k, seed)
    z64 = z.astype(np.float64) / 2.0
    p = np.exp(z64 - z64.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True), y


def bench_ece(n: int, R: int, cuda: bool) -> None:
    z, y = logits_data(n, 10)
    name = f"ECE top-label, logits {n:.0e}x10"
    row(name, "numpy cpu", *timed(partial(cp.ece, z, y, logits=True), R, False))
    zt, yt = torch.from_numpy(z), torch.from_numpy(y)
    row(name, "torch cpu", *timed(partial(cp.ece, zt, yt, logits=True), R, False))
    if not cuda:
        return
    zc, yc = zt.cuda(), yt.cuda()
    row(name, "torch cuda", *timed(partial(cp.ece, zc, yc, logits=True), R, True))
    if PROFILE:
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts) as prof:
            cp.ece(zc, yc, logits=True)
            torch.cuda.synchronize()
        for key in ("cuda_time_total", "cpu_time_total"):
            print(prof.key_averages().table(sort_by=key, row_limit=12))
    try:
        from torchmetrics.functional.classification import multiclass_calibration_error
    except ImportError:
        print("  (torchmetrics not installed)")
        return

    def peer() -> Any:
        return multiclass_calibration_error(torch.softmax(zc, 1), yc, num_classes=10, n_bins=15)

    row("  torchmetrics (softmax given)", "torch cuda", *timed(peer, R, True))


def bench_dirichlet(sizes: tuple[int, int], R: int, cuda: bool) -> None:
    cpu_small = math.inf
    for n in sizes:
        p, y = probs_data(n, 10, seed=1)
        name = f"Dirichlet canonical CE n={n} k=10"
        if cuda:
            pc, yc = torch.from_numpy(p).cuda(), torch.from_numpy(y).cuda()
            row(name, "torch cuda", *timed(partial(cp.ce_kl, pc, yc, bandwidth=0.02), R, True))
        if n == sizes[0] or cpu_small * (n / sizes[0]) ** 2 < 100:
            t, v = timed(partial(cp.ce_kl, p, y, bandwidth=0.02), 1, False)
            row(name, "numpy cpu", t, v)
            cpu_small = min(cpu_small, t)
        else:
            print(f"{name:<34} numpy cpu      skipped (over 100 s, from the smaller n)")


def bench_linear(n: int, R: int, cuda: bool) -> None:
    p, y = probs_data(n, 10, seed=2)
    name = f"SKCE block n={n:.0e} k=10"
    row(name, "numpy cpu", *timed(partial(cp.skce, p, y, estimator="block"), R, False))
    if cuda:
        pc, yc = torch.from_numpy(p).cuda(), torch.from_numpy(y).cuda()
        row(name, "torch cuda", *timed(partial(cp.skce, pc, yc, estimator="block"), R, True))
    rng = np.random.default_rng(3)
    q = rng.uniform(size=n)
    t = (rng.uniform(size=n) < q**1.3).astype(np.int64)
    name = f"NW calibration-sharpness n={n:.0e}"
    row(name, "numpy cpu", *timed(partial(cp.calibration_sharpness, q, t), R, False))
    if cuda:
        qc, tc = torch.from_numpy(q).cuda(), torch.from_numpy(t).cuda()
        row(name, "torch cuda", *timed(partial(cp.calibration_sharpness, qc, tc), R, True))


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--small", action="store_true", help="sizes divided by 100 (a quick check)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="print torch.profiler tables")
    args = ap.parse_args()
    global PROFILE
    PROFILE = args.profile
    scale = 100 if args.small else 1
    cuda = torch.cuda.is_available()
    where = torch.cuda.get_device_name(0) if cuda else "no CUDA (CPU tensors only)"
    print(f"torch {torch.__version__}; device: {where}; {torch.get_num_threads()} CPU threads")
    bench_ece(10_000_000 // scale, args.repeats, cuda)
    bench_dirichlet((10_000 // scale, 50_000 // scale), args.repeats, cuda)
    bench_linear(10_000_000 // scale, args.repeats, cuda)


if __name__ == "__main__":
    main()
