"""Bias of the Dirichlet-kernel CE_KL and CE_2^2 as n grows (Popordanoska et al. (2024) §7.1, Fig. 2c).

Usage::

    python benchmarks/study_dirichlet_bias.py            # K = 2, 5, 10; n = 500, 2000, 10000
    python benchmarks/study_dirichlet_bias.py --quick

Synthetic recipe of docs/how-calipers-computes.md §5.7: u ~ Uniform(simplex_K), p1 = softmax(log u / 0.9)
(calibrated, labels y ~ p1), scores p2 = softmax(log p1 / 0.6). p2 is an injective
function of p1, so E[Y | p2] = p1 and the true canonical calibration errors are
E[KL(p1 || p2)] and E[||p1 - p2||^2], computed here on 400 000 fresh draws (the
Monte-Carlo standard error is printed). For each n the estimate (direct, eq. 9,
canonical lens) is averaged over independent samples; the bandwidth follows
Popordanoska et al.'s (2024) n-schedule (docs/how-calipers-computes.md §5.5: n <= 1000 -> 0.01, <= 5000 -> 0.001,
<= 10000 -> 0.0005) and, in a second column, the leave-one-out likelihood choice.
Relative bias = (mean estimate - truth) / truth.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import calipers as cp


def draw(n: int, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cuts = np.sort(rng.random((n, k - 1)), axis=1)
    u = np.diff(np.concatenate([np.zeros((n, 1)), cuts, np.ones((n, 1))], 1), axis=1)
    u = np.clip(u, 1e-300, None)

    def softmax(z: np.ndarray) -> np.ndarray:
        z = z - z.max(1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(1, keepdims=True)

    p1 = np.clip(softmax(np.log(u) / 0.9), 1e-7, 1 - 1e-7)
    y = (rng.random(n)[:, None] > np.cumsum(p1, 1)).sum(1).clip(0, k - 1)
    p2 = np.clip(softmax(np.log(p1) / 0.6), 1e-7, 1 - 1e-7)
    return p1, p2, y


def truth(k: int, seed: int = 12345, n: int = 400_000) -> dict[str, tuple[float, float]]:
    p1, p2, _ = draw(n, k, np.random.default_rng(seed))
    kl = (p1 * np.log(p1 / p2)).sum(1)
    l2 = ((p1 - p2) ** 2).sum(1)
    return {
        "kl": (float(kl.mean()), float(kl.std() / np.sqrt(n))),
        "squared_l2": (float(l2.mean()), float(l2.std() / np.sqrt(n))),
    }


def schedule(n: int) -> float:
    return 0.01 if n <= 1000 else 0.001 if n <= 5000 else 0.0005 if n <= 10000 else 1e-4


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--ks", default="2,5,10")
    a = ap.parse_args()
    ks = [int(x) for x in a.ks.split(",")]
    sizes = [(500, 3), (2000, 2)] if a.quick else [(500, 10), (2000, 5), (10000, 2)]
    for k in ks:
        gt = truth(k)
        print(
            f"\nK = {k}: true CE_KL = {gt['kl'][0]:.5f} (MC s.e. {gt['kl'][1]:.1e}), "
            f"true CE_2^2 = {gt['squared_l2'][0]:.5f} (s.e. {gt['squared_l2'][1]:.1e})"
        )
        print(
            f"{'n':>7}{'reps':>5}{'h':>9}{'CE_KL':>10}{'rel.bias':>10}{'CE_2^2':>10}{'rel.bias':>10}"
            f"{'h_mle':>9}{'CE_KL':>10}{'rel.bias':>10}{'s':>7}"
        )
        for n, reps in sizes:
            rng = np.random.default_rng(1000 * k + n)
            t0 = time.perf_counter()
            est = {"kl": [], "squared_l2": [], "mle": [], "h": []}
            for _ in range(reps):
                _, p2, y = draw(n, k, rng)
                h = schedule(n)
                est["kl"].append(cp.ce_kl(p2, y, bandwidth=h))
                est["squared_l2"].append(cp.ce_squared_l2(p2, y, bandwidth=h))
                res = cp.proper_calibration_error(p2, y)
                est["mle"].append(res.value)
                est["h"].append(res.bandwidth)
            m = {key: float(np.mean(v)) for key, v in est.items()}

            def rb(key: str, g: str, m: dict = m, gt: dict = gt) -> float:
                return (m[key] - gt[g][0]) / gt[g][0]

            print(
                f"{n:>7}{reps:>5}{schedule(n):>9.4g}{m['kl']:>10.5f}{rb('kl', 'kl'):>+10.3f}"
                f"{m['squared_l2']:>10.5f}{rb('squared_l2', 'squared_l2'):>+10.3f}"
                f"{m['h']:>9.4f}{m['mle']:>10.5f}{rb('mle', 'kl'):>+10.3f}{time.perf_counter() - t0:>7.1f}"
            )


if __name__ == "__main__":
    main()
