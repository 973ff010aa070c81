"""How often is a verdict of ``cp.verdict`` right? Predictors with a KNOWN calibration error.

Usage::

    python benchmarks/study_verdicts.py            # the full table (1353 s measured, see below)
    python benchmarks/study_verdicts.py --quick    # n = 500 and 2000, 2-3 replications (84 s)

Times measured with 2 worker processes on a 2-core machine shared with other jobs (load
average about 10); on an idle machine they should be several times shorter (not measured).
Replications: 40 per ECE cell; 24/12/2 (K = 2) and 12/6/2 (K = 5, 10) per CE_KL cell at
n = 500/2000/10 000.

Settings (every replication draws fresh rows; seeded):

* ``binary`` (K = 2): ``p ~ Beta(2, 2)``, ``P(y = 1 | p) = g_T(p) = sigmoid(logit(p) / T)``;
  metric ``cp.ece`` (positive class, 15 equal-width bins);
* ``top-label`` (K = 5, 10): confidence ``c = 0.1 + 0.9 u``, ``u ~ Beta(3, 1)`` (clipped
  to at least 1/K + 0.01 for K = 5), the predicted class uniform, the other classes
  sharing ``1 - c``; the prediction is correct with probability ``g_T(c)``; metric
  ``cp.ece`` (top label, 15 equal-width bins);

  both from benchmarks/study_interval_coverage.py, with ``T`` = 1 (calibrated), 1.2
  and 2 (over-confident); the truth is the binned calibration error the ECE is
  consistent for, an integral computed there with ``scipy.integrate.quad``;
* ``canonical`` (K = 2, 5, 10): the recipe of benchmarks/study_dirichlet_bias.py with
  a temperature ``t``: ``p1 = softmax(log u / 0.9)``, ``u ~ Uniform(simplex)``, labels
  ``y ~ p1``, scores ``p2 = softmax(log p1 / t)`` for ``t`` = 1 (calibrated), 0.8 and
  0.6; since ``p2`` is an injective function of ``p1``, ``E[Y | p2] = p1`` and the true
  canonical CE_KL is ``E[KL(p1 || p2)]`` (Popordanoska et al. 2024, eq. 8), computed on
  200 000 fresh draws; metric ``cp.ce_kl`` (Dirichlet kernel, canonical lens) at
  Popordanoska et al.'s (2024) n-schedule of bandwidths (0.01 for n <= 1000, 0.001 for
  n <= 5000, 0.0005 for n <= 10 000).

Every replication runs ``cp.verdict`` as shipped (alpha = 0.05, bias_ratio = 0.5,
bandwidth range x1/2..x2 for the kernel estimate), with 99 calibrated draws for the ECE
and 39 for CE_KL (the batched kernel null), no bootstrap interval. A verdict is
counted **right** when

* "resolved": the truth ``c`` is positive and the bias-corrected estimate lies within
  a factor 2 of it (``c/2 <= T - mean(T*) <= 2c``);
* "not distinguishable": ``c = 0``, or ``c`` is below the calibrated noise of this
  replication (``c <= q95(T*) - mean(T*)``);
* "cannot resolve": the raw estimate is off by more than a factor 2 (``T`` outside
  ``[c/2, 2c]``; always so when ``c = 0``): the number really was not to be trusted.

"false resolved" is the share of replications with a "resolved" verdict whose
bias-corrected estimate is not within a factor 2 of the truth: the failure the
verdicts exist to prevent. Runs on ``--workers`` processes (default 2).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from study_interval_coverage import BINARY, TOP, g, truths  # noqa: E402

import calipers as cp  # noqa: E402

LEVELS = {"binary": (1.0, 1.2, 2.0), "top-label": (1.0, 1.2, 2.0), "canonical": (1.0, 0.8, 0.6)}
LEVEL_NAMES = ("none", "mild", "strong")


@dataclass(frozen=True)
class Cell:
    setting: str
    k: int
    n: int
    level: int  # index into LEVELS[setting]
    reps: int

    @property
    def param(self) -> float:
        return LEVELS[self.setting][self.level]


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(1, keepdims=True)


def _dirichlet(n: int, k: int, t: float, rng: np.random.Generator):
    u = np.clip(rng.dirichlet(np.ones(k), size=n), 1e-300, None)
    p1 = np.clip(_softmax(np.log(u) / 0.9), 1e-7, 1 - 1e-7)
    y = (rng.random(n)[:, None] > np.cumsum(p1, 1)).sum(1).clip(0, k - 1)
    p2 = np.clip(_softmax(np.log(p1) / t), 1e-7, 1 - 1e-7)
    return p1, p2, y


def _top(n: int, k: int, T: float, rng: np.random.Generator):
    c = np.maximum(TOP.dist.rvs(size=n, random_state=rng), 1 / k + 0.01)
    hit = rng.random(n) < g(c, T)
    pred = rng.integers(0, k, n)
    probs = np.repeat(((1 - c) / (k - 1))[:, None], k, axis=1)
    probs[np.arange(n), pred] = c
    other = (pred + 1 + rng.integers(0, k - 1, n)) % k
    return probs, np.where(hit, pred, other)


def truth(setting: str, k: int, param: float) -> float:
    if param == 1.0:
        return 0.0
    if setting == "binary":
        return truths(BINARY, param)["ece"]
    if setting == "top-label":
        # the clip of c at 1/K + 0.01 (so that the predicted class is the arg-max) moves
        # P(c < 0.11) ~ 1e-6 of the mass for K = 10 and P(c < 0.21) ~ 2e-3 for K = 5, where
        # |g_T(c) - c| < 0.1: the truth of the unclipped law is off by < 2e-4
        return truths(TOP, param)["ece"]
    p1, p2, _ = _dirichlet(200_000, k, param, np.random.default_rng(12345))
    return float((p1 * np.log(p1 / p2)).sum(1).mean())


def schedule(n: int) -> float:
    return 0.01 if n <= 1000 else 0.001 if n <= 5000 else 0.0005


def one(cell: Cell, rep: int) -> tuple[str, float, float, float, float]:
    which = ("binary", "top-label", "canonical").index(cell.setting)
    rng = np.random.default_rng([which, cell.k, cell.n, cell.level, rep])
    if cell.setting == "binary":
        p = BINARY.dist.rvs(size=cell.n, random_state=rng)
        y = (rng.random(cell.n) < g(p, cell.param)).astype(int)
        v = cp.verdict(cp.ece, p, y, n_resamples=99, n_bootstrap=0, seed=rep)
    elif cell.setting == "top-label":
        probs, y = _top(cell.n, cell.k, cell.param, rng)
        v = cp.verdict(cp.ece, probs, y, n_resamples=99, n_bootstrap=0, seed=rep)
    else:
        _, p2, y = _dirichlet(cell.n, cell.k, cell.param, rng)
        v = cp.verdict(
            cp.ce_kl, p2, y, bandwidth=schedule(cell.n), n_resamples=39, n_bootstrap=0, seed=rep
        )
    return v.category, v.estimate, v.null_mean, v.null_quantile, v.bias_corrected


def right(category: str, c: float, est: float, q: float, mu: float, bc: float) -> bool:
    within = c > 0 and c / 2 <= bc <= 2 * c
    if category == "resolved":
        return within
    if category == "not_distinguishable":
        return c == 0 or c <= q - mu
    return not (c > 0 and c / 2 <= est <= 2 * c)


def cells(quick: bool) -> list[Cell]:
    out = []
    ns = (500, 2000) if quick else (500, 2000, 10000)
    for setting, ks in (("binary", (2,)), ("top-label", (5, 10)), ("canonical", (2, 5, 10))):
        for k in ks:
            for n in ns:
                for level in range(3):
                    if setting == "canonical":
                        reps = {500: 12, 2000: 6, 10000: 2}[n] if not quick else 2
                        if k == 2 and n < 10000 and not quick:
                            reps *= 2
                    else:
                        reps = 3 if quick else 40
                    out.append(Cell(setting, k, n, level, reps))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    t0 = time.perf_counter()
    todo = cells(a.quick)
    truths_ = {(c.setting, c.k, c.level): truth(c.setting, c.k, c.param) for c in todo}
    tasks = [(c, r) for c in todo for r in range(c.reps)]
    # the costly cells first, so that the two workers finish together
    tasks.sort(key=lambda cr: -(cr[0].n ** 2 * cr[0].k if cr[0].setting == "canonical" else 0))
    with ProcessPoolExecutor(a.workers) as ex:
        results = list(ex.map(one, *zip(*tasks, strict=True)))
    got: dict[Cell, list[tuple[str, float, float, float, float]]] = {}
    for (c, _), res in zip(tasks, results, strict=True):
        got.setdefault(c, []).append(res)
    print(
        "| setting | K | n | miscalibration | truth | reps | mean estimate | mean calibrated "
        "mean | resolved | not distinguishable | cannot resolve | right | false resolved |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    tot_right = tot = 0
    for c in todo:
        rows = got[c]
        tr = truths_[(c.setting, c.k, c.level)]
        cats = [r[0] for r in rows]
        ok = [right(r[0], tr, r[1], r[3], r[2], r[4]) for r in rows]
        false_res = [r[0] == "resolved" and not k for r, k in zip(rows, ok, strict=True)]
        tot_right += sum(ok)
        tot += len(ok)

        def pct(xs: list[bool]) -> str:
            return f"{100 * np.mean(xs):.0f}%"

        print(
            f"| {c.setting} | {c.k} | {c.n} | {LEVEL_NAMES[c.level]} ({c.param:g}) | {tr:.4f} "
            f"| {len(rows)} | {np.mean([r[1] for r in rows]):.4f} "
            f"| {np.mean([r[2] for r in rows]):.4f} "
            f"| {pct([x == 'resolved' for x in cats])} "
            f"| {pct([x == 'not_distinguishable' for x in cats])} "
            f"| {pct([x == 'cannot_resolve' for x in cats])} | {pct(ok)} | {pct(false_res)} |"
        )
    print(
        f"\noverall right: {tot_right}/{tot} = {100 * tot_right / tot:.1f}%; "
        f"{time.perf_counter() - t0:.0f} s on {a.workers} workers"
    )


if __name__ == "__main__":
    main()
