"""Are the verdicts of ``cp.verdict`` right, is its recommended number close to the truth,
and does its interval cover the truth? Predictors with a KNOWN calibration error.

Usage::

    python benchmarks/study_verdicts.py                 # the full table (2035 s on 2 workers)
    python benchmarks/study_verdicts.py --quick         # n = 500 and 5000, 3 runs (544 s)
    python benchmarks/study_verdicts.py --workers 2 --out table.md

Settings (every replication draws fresh rows; seeded):

* ``binary`` (K = 2): ``p ~ Beta(2, 2)``, ``P(y = 1 | p) = g_T(p) = sigmoid(logit(p) / T)``;
  metrics ``cp.ece`` (15 equal-width bins) and ``cp.smece`` (Błasiok & Nakkiran 2023);
* ``top-label`` (K = 5, 10): confidence ``c = 0.1 + 0.9 u``, ``u ~ Beta(3, 1)`` (at least
  1/K + 0.01), the predicted class uniform, the other classes sharing ``1 - c``; the
  prediction is correct with probability ``g_T(c)``; metrics ``cp.ece`` and ``cp.smece``
  on the top label;
* ``canonical`` (K = 2, 5, 10): ``p1 = softmax(log u / 0.9)``, ``u ~ Uniform(simplex)``,
  labels ``y ~ p1``, scores ``p2 = softmax(log p1 / t)``; since ``p2`` is an injective
  function of ``p1``, ``E[Y | p2] = p1`` and the true canonical CE_KL is
  ``E[KL(p1 || p2)]`` (Popordanoska et al. 2024, eq. 8); metric ``cp.ce_kl`` at its
  default bandwidth (the leave-one-out likelihood choice).

The miscalibration levels are chosen so that the truth is 0 (calibrated), 0.01 (slight),
0.03 (moderate), 0.08 (large) and 0.15 (strong): ``T`` (binary, top-label; the binned
ECE's truth) and ``t`` (canonical; CE_KL's truth) are solved for by bisection. The
truths: the binned ECE's is the quadrature integral of
benchmarks/study_interval_coverage.py; SmoothECE's is ``cp.smece`` with the labels'
expectation in place of the labels (two weighted copies of each row) on 400 000 rows;
CE_KL's a Monte Carlo mean of ``KL(p1 || p2)`` over 200 000 rows.

Every replication runs ``cp.verdict`` as shipped (alpha = 0.05) with 100 label draws of
each kind (the calibrated null and the fitted curve). A verdict is **right** when:

* "resolved": the truth is positive and inside the recommended number's interval;
* "not distinguishable": the truth is 0, or below the calibrated noise
  ``q95(T*) - mean(T*)`` of that replication (no test at this n could see it);
* "cannot resolve": the truth is positive (the model is not calibrated, as the verdict
  says).

The table also gives the raw estimate's and the recommended number's mean relative
error ``mean |x - truth| / truth`` and the interval's coverage of the truth.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import cache

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from study_interval_coverage import BINARY, TOP, g, truths  # noqa: E402

import calipers as cp  # noqa: E402

TARGETS = (0.0, 0.01, 0.03, 0.08, 0.15)
LEVEL_NAMES = ("calibrated", "slight", "moderate", "large", "strong")
B = 100


@dataclass(frozen=True)
class Cell:
    setting: str
    metric: str
    k: int
    n: int
    level: int  # index into TARGETS


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
    return probs, np.where(hit, pred, other), c


def _kl_truth(k: int, t: float, n: int = 200_000) -> float:
    p1, p2, _ = _dirichlet(n, k, t, np.random.default_rng(12345))
    return float((p1 * np.log(p1 / p2)).sum(1).mean())


def _bisect(f, target: float, lo: float, hi: float) -> float:
    """``x`` in ``[lo, hi]`` with ``f(x) = target`` for ``f`` increasing in ``x``."""
    for _ in range(30):
        mid = (lo + hi) / 2
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@cache
def param(setting: str, k: int, level: int) -> float:
    """``T`` (binary, top-label) or ``t`` (canonical) whose truth is ``TARGETS[level]``."""
    target = TARGETS[level]
    if target == 0:
        return 1.0
    if setting == "binary":
        return _bisect(lambda T: truths(BINARY, T)["ece"], target, 1.0, 50.0)
    if setting == "top-label":
        return _bisect(lambda T: truths(TOP, T)["ece"], target, 1.0, 50.0)
    return 1 / _bisect(lambda s: _kl_truth(k, 1 / s, 20_000), target, 1.0, 20.0)


@cache
def truth(setting: str, metric: str, k: int, level: int) -> float:
    """The population value of the metric at this level (module docstring)."""
    T = param(setting, k, level)
    if TARGETS[level] == 0:
        return 0.0
    if setting == "canonical":
        return _kl_truth(k, T)
    if metric == "ece":
        # the clip of c at 1/K + 0.01 moves < 2e-3 of the mass where |g_T(c) - c| < 0.1
        return truths(BINARY if setting == "binary" else TOP, T)["ece"]
    rng = np.random.default_rng(2024)
    n = 400_000
    if setting == "binary":
        s = BINARY.dist.rvs(size=n, random_state=rng)
        q = g(s, T)
        X, Y = np.concatenate([s, s]), np.r_[np.ones(n, int), np.zeros(n, int)]
    else:
        # the top-label lens sees only (c, correct): the binary problem of c
        c = np.maximum(TOP.dist.rvs(size=n, random_state=rng), 1 / k + 0.01)
        X, Y = np.concatenate([c, c]), np.r_[np.ones(n, int), np.zeros(n, int)]
        q = g(c, T)
    w = np.concatenate([q, 1 - q])
    return float(cp.smece(X, Y, sample_weight=w))


def one(cell: Cell, rep: int) -> tuple[str, float, float, float, float, float, float]:
    which = ("binary", "top-label", "canonical").index(cell.setting)
    rng = np.random.default_rng([which, cell.k, cell.n, cell.level, rep])
    T = param(cell.setting, cell.k, cell.level)
    metric = {"ece": cp.ece, "smece": cp.smece, "ce_kl": cp.ce_kl}[cell.metric]
    if cell.setting == "binary":
        p = BINARY.dist.rvs(size=cell.n, random_state=rng)
        y = (rng.random(cell.n) < g(p, T)).astype(int)
        v = cp.verdict(metric, p, y, n_resamples=B, seed=rep)
    elif cell.setting == "top-label":
        probs, y, _ = _top(cell.n, cell.k, T, rng)
        v = cp.verdict(metric, probs, y, n_resamples=B, seed=rep)
    else:
        _, p2, y = _dirichlet(cell.n, cell.k, T, rng)
        v = cp.verdict(metric, p2, y, n_resamples=B, seed=rep, bandwidth_factors=None)
    return (
        v.category,
        v.estimate,
        v.recommended,
        v.interval[0],
        v.interval[1],
        v.null_quantile - v.null_mean,
        float(v.n_to_resolve or 0),
    )


def right(category: str, c: float, lo: float, hi: float, noise: float) -> bool:
    if category == "resolved":
        return c > 0 and lo <= c <= hi
    if category == "not_distinguishable":
        return c == 0 or c <= noise
    return c > 0


def reps_for(cell: Cell, quick: bool) -> int:
    if quick:
        return 3
    if cell.metric == "ce_kl":
        return {500: 12, 2000: 6, 5000: 4}[cell.n]
    return 10 if cell.n >= 20000 else 16


def cells(quick: bool) -> list[Cell]:
    out = []
    for setting, metrics, ks in (
        ("binary", ("ece", "smece"), (2,)),
        ("top-label", ("ece", "smece"), (5, 10)),
        ("canonical", ("ce_kl",), (2, 5, 10)),
    ):
        if setting == "canonical":
            ns: tuple[int, ...] = (500, 5000) if quick else (500, 2000, 5000)
        else:
            ns = (500, 5000) if quick else (500, 2000, 5000, 20000)
        for metric in metrics:
            for k in ks:
                for n in ns:
                    for level in range(len(TARGETS)):
                        out.append(Cell(setting, metric, k, n, level))
    return out


def _run(args: tuple[Cell, int]):
    cell, rep = args
    return cell, rep, one(cell, rep)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=None, help="also write the Markdown table here")
    args = ap.parse_args()
    t0 = time.time()
    todo = [(c, r) for c in cells(args.quick) for r in range(reps_for(c, args.quick))]
    # the expensive cells first, so that the pool ends together
    todo.sort(key=lambda a: -(a[0].n * (a[0].k if a[0].metric == "ce_kl" else 1)))
    for c, _ in todo:  # solve the levels once, before the workers fork
        param(c.setting, c.k, c.level)
    results: dict[Cell, list] = {}
    with ProcessPoolExecutor(args.workers) as ex:
        for cell, _rep, res in ex.map(_run, todo, chunksize=1):
            results.setdefault(cell, []).append(res)
    head = (
        "| setting | metric | K | n | level | truth | reps | mean estimate | mean recommended "
        "| rel. error of estimate | rel. error of recommended | interval coverage "
        "| resolved | not distinguishable | cannot resolve | right |"
    )
    lines = [head, "|" + "---|" * 16]
    summary = {"right": 0, "total": 0, "false_res": 0, "res": 0}
    for cell in cells(args.quick):
        rs = results[cell]
        c = truth(cell.setting, cell.metric, cell.k, cell.level)
        cat = [r[0] for r in rs]
        est = np.array([r[1] for r in rs])
        rec = np.array([r[2] for r in rs])
        cover = np.array([r[3] <= c <= r[4] for r in rs])
        ok = [right(r[0], c, r[3], r[4], r[5]) for r in rs]
        summary["right"] += sum(ok)
        summary["total"] += len(ok)
        summary["res"] += cat.count("resolved")
        summary["false_res"] += sum(
            1 for r, o in zip(rs, ok, strict=True) if r[0] == "resolved" and not o
        )

        def pct(name: str, cat: list[str] = cat) -> str:
            return f"{100 * cat.count(name) / len(cat):.0f}%"

        def rel(x: np.ndarray, c: float = c) -> str:
            return f"{np.mean(np.abs(x - c)) / c:.2f}" if c > 0 else "-"

        lines.append(
            f"| {cell.setting} | {cell.metric} | {cell.k} | {cell.n} | "
            f"{LEVEL_NAMES[cell.level]} | {c:.4f} | {len(rs)} | {est.mean():.4f} | "
            f"{rec.mean():.4f} | {rel(est)} | {rel(rec)} | "
            f"{100 * cover.mean():.0f}% | {pct('resolved')} | {pct('not_distinguishable')} | "
            f"{pct('cannot_resolve')} | {100 * np.mean(ok):.0f}% |"
        )
    text = "\n".join(lines)
    text += (
        f"\n\nOverall {summary['right']} of {summary['total']} verdicts "
        f"({100 * summary['right'] / summary['total']:.1f} %) are right; "
        f'{summary["false_res"]} of {summary["res"]} "resolved" verdicts miss the truth '
        f"with their interval. {time.time() - t0:.0f} s on {args.workers} workers.\n"
    )
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
