"""Dirichlet-kernel CE_KL (Popordanoska et al. (2024)): calipers' blocked estimator vs the full-tensor approach.

Usage::

    python benchmarks/bench_dirichlet.py                  # cases A-C, reference at n = 5000
    python benchmarks/bench_dirichlet.py --reference-n 10000   # needs ~19 GB of memory
    python benchmarks/bench_dirichlet.py --quick

Every measurement runs in a fresh child process (``--child``), so that the
peak resident memory it reports (``ru_maxrss``) belongs to that one call;
the time is the wall time of the call itself (imports and data generation
excluded), median over ``--repeats`` children run in turn (A B A B ...).

Cases:

A. canonical CE_KL, n = 10 000, k = 10, h = 0.02 (Popordanoska et al.'s (2024) CIFAR bandwidth):
   calipers (NumPy), calipers (PyTorch CPU), and "reference": a re-implementation,
   written from docs/how-calipers-computes.md §5.1-5.3, of the Popordanoska et al. (2024) code's formulation —
   the full n x n log-kernel with ``finfo.min`` on the diagonal and the numerator
   LogSumExp over an (n, n, k) tensor ``logK[:, :, None] + log(onehot)[None]``,
   float64, torch CPU. It is not the authors' code; it reproduces its memory
   layout (O(n^2 k)), which is what makes it slow.
B. n = 50 000, k = 10 (calipers only).
C. class-wise CE_KL, k = 100, n = 10 000 (calipers only).

Data: the Popordanoska et al. (2024) synthetic recipe (docs/how-calipers-computes.md §5.7): u ~ Uniform(simplex),
p1 = softmax(log u / 0.9), y ~ p1, scores p2 = softmax(log p1 / 0.6).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import numpy as np


def synthetic(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    u = np.diff(
        np.sort(np.concatenate([np.zeros((n, 1)), rng.random((n, k - 1)), np.ones((n, 1))], 1), 1),
        axis=1,
    )
    u = np.clip(u, 1e-300, None)

    def softmax(z: np.ndarray) -> np.ndarray:
        z = z - z.max(1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(1, keepdims=True)

    p1 = softmax(np.log(u) / 0.9)
    y = (rng.random(n)[:, None] > np.cumsum(p1, 1)).sum(1).clip(0, k - 1)
    p2 = softmax(np.log(p1) / 0.6)
    return p2, y


def reference_ce_kl(p: np.ndarray, y: np.ndarray, h: float) -> float:
    """Full-tensor formulation (docs/how-calipers-computes.md §5.1-5.3), float64 torch CPU."""
    import torch

    g = torch.tensor(p, dtype=torch.float64).clamp(1e-7, 1 - 1e-7)
    n, k = g.shape
    alpha = g / h + 1
    log_beta = torch.lgamma(alpha).sum(1) - torch.lgamma(alpha.sum(1))
    log_num = torch.log(g) @ (alpha - 1).T
    logK = (
        log_num
        - log_beta[None, :]
        + torch.finfo(torch.float64).min * torch.eye(n, dtype=torch.float64)
    )
    onehot = torch.nn.functional.one_hot(torch.tensor(y), k).to(torch.float64)
    num = torch.logsumexp(logK[:, :, None] + torch.log(onehot)[None, :, :], dim=1)
    den = torch.logsumexp(logK, dim=1)
    r = torch.exp(num - den[:, None]).clamp(min=1e-45)
    return float((r * torch.log(r / g)).sum(1).mean())


def child(impl: str, n: int, k: int, lens: str, h: float) -> None:
    p, y = synthetic(n, k)
    import calipers as cp

    if impl == "torch":
        import torch

        pt, yt = torch.tensor(p), torch.tensor(y)
        t0 = time.perf_counter()
        v = float(cp.ce_kl(pt, yt, bandwidth=h, lens=lens))
    elif impl == "numpy":
        t0 = time.perf_counter()
        v = float(cp.ce_kl(p, y, bandwidth=h, lens=lens))
    elif impl == "mle":
        t0 = time.perf_counter()
        res = cp.proper_calibration_error(p, y, lens=lens)
        v = float(res.value)
        h = float(res.bandwidth) if not isinstance(res.bandwidth, tuple) else float("nan")
    else:
        t0 = time.perf_counter()
        v = reference_ce_kl(p, y, h)
    dt = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"time": dt, "value": v, "rss_mb": rss, "bandwidth": h}))


def run_child(impl: str, n: int, k: int, lens: str, h: float) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", impl, str(n), str(k), lens, str(h)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        return {
            "error": out.stderr.strip().splitlines()[-1] if out.stderr else f"rc {out.returncode}"
        }
    return json.loads(out.stdout.strip().splitlines()[-1])


def case(
    title: str, impls: list[tuple[str, int]], k: int, lens: str, h: float, repeats: int
) -> None:
    print(f"\n{title}")
    results: dict[str, list[dict]] = {f"{i}@{n}": [] for i, n in impls}
    for _ in range(repeats):
        for impl, n in impls:
            results[f"{impl}@{n}"].append(run_child(impl, n, k, lens, h))
    base = None
    print(
        f"{'implementation':<22}{'n':>8}{'median s':>11}{'min s':>9}{'peak MB':>10}{'value':>22}{'ratio':>9}"
    )
    for impl, n in impls:
        rs = results[f"{impl}@{n}"]
        ok = [r for r in rs if "error" not in r]
        if not ok:
            print(f"{impl:<22}{n:>8}   failed: {rs[0]['error']}")
            continue
        med = statistics.median(r["time"] for r in ok)
        if base is None:
            base = med
        extra = f" h={ok[0]['bandwidth']:.4g}" if impl == "mle" else ""
        print(
            f"{impl:<22}{n:>8}{med:>11.3f}{min(r['time'] for r in ok):>9.3f}"
            f"{max(r['rss_mb'] for r in ok):>10.0f}{ok[0]['value']:>22.15f}{med / base:>9.2f}{extra}"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--reference-n", type=int, default=5000)
    ap.add_argument("--cases", default="ABC")
    a = ap.parse_args()
    if a.child:
        impl, n, k, lens, h = a.child
        child(impl, int(n), int(k), lens, float(h))
        return
    if a.quick:
        n_a, n_ref, n_b, n_c, reps = 3000, 2000, 10000, 2000, 1
    else:
        n_a, n_ref, n_b, n_c, reps = 10000, a.reference_n, 50000, 10000, a.repeats
    if "A" in a.cases:
        impls = [("numpy", n_a), ("torch", n_a), ("reference", n_ref)]
        if n_ref != n_a:
            impls.append(("numpy", n_ref))
        case(
            "A. canonical CE_KL, k = 10, h = 0.02 (ratio: to the first row)",
            impls,
            10,
            "canonical",
            0.02,
            reps,
        )
        case(
            "A'. the same with the bandwidth chosen by LOO likelihood",
            [("mle", n_a)],
            10,
            "canonical",
            0.02,
            1,
        )
    if "B" in a.cases:
        case("B. canonical CE_KL, k = 10, h = 0.02", [("numpy", n_b)], 10, "canonical", 0.02, 1)
    if "C" in a.cases:
        case("C. class-wise CE_KL, k = 100, h = 0.02", [("numpy", n_c)], 100, "classwise", 0.02, 1)


if __name__ == "__main__":
    main()
