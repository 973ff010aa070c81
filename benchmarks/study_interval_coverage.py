"""Coverage of bootstrap intervals for calibration errors, on predictors with a KNOWN error.

Usage::

    python benchmarks/study_interval_coverage.py                 # 200 replications per cell, ~9 min
    python benchmarks/study_interval_coverage.py --reps 100 --quick
    python benchmarks/study_interval_coverage.py --workers 1 --resamples 2000

The predictors (seeded; every replication draws fresh rows):

* binary: ``p ~ Beta(2, 2)``, ``P(y = 1 | p) = g_T(p) = sigmoid(logit(p) / T)``;
  metrics ``cp.ece`` (positive-class lens, 15 equal-width bins) and ``cp.ace``
  (Nixon et al.'s class-wise equal-mass ranges, 15 per class: on 1-D input the
  classes are y = 1 with score p and y = 0 with score 1 - p);
* top-label: 10 classes, confidence ``c = 0.1 + 0.9 u`` with ``u ~ Beta(3, 1)``, the
  predicted class uniform, the other classes sharing ``1 - c`` equally; the prediction
  is correct with probability ``g_T(c)`` (else the label is uniform on the other
  classes); metric ``cp.ece`` (top label, 15 equal-width bins);

with ``T = 1.5`` (clearly over-confident), ``T = 1.1`` (slightly) and ``T = 1``
(calibrated). The truths are integrals, computed with ``scipy.integrate.quad`` to
about 1e-12, independent of calipers:

* binned truth (what a binned estimate is consistent for):
  ``sum_b |integral over bin b of (g_T(s) - s) f(s) ds|`` with the 15 equal-width bins
  for ECE and the 15 equal-mass bins of f (its quantiles) for ACE;
* L1 truth ``integral |g_T(s) - s| f(s) ds`` (the binning-free calibration error;
  binned truth <= L1 truth, with equality when g_T - s keeps its sign in every bin).

For every replication the bootstrap distribution (``--resamples``, default 1000) and
the grouped-jackknife values (100 groups) are computed once by the code behind
``cp.confidence_interval`` and turned into the three intervals (95 %): percentile,
basic and BCa. The table gives, per cell, the fraction of replications whose interval
contains the binned truth (with its Monte-Carlo standard error
``sqrt(c (1 - c) / R)``), the mean width, and for ECE the fraction that contains the
L1 truth. "BCa undef." counts replications in which every resample lay on one side of
the estimate (BCa's bias correction is then infinite; counted as not covering).
Runs on ``--workers`` processes (default 2, one BLAS thread each).
"""

from __future__ import annotations

import argparse
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from scipy import integrate, special, stats  # noqa: E402

import calipers as cp  # noqa: E402
from calipers.inference import _resampling as rs  # noqa: E402
from calipers.inference._confidence_interval import _finish  # noqa: E402
from calipers.validation import CalibrationInputError  # noqa: E402

METHODS = ("percentile", "basic", "bca")
TEMPERATURES = (1.5, 1.1, 1.0)
K = 10


def g(s: np.ndarray | float, T: float) -> np.ndarray | float:
    return special.expit(special.logit(s) / T)


@dataclass(frozen=True)
class Setting:
    name: str
    dist: stats.rv_continuous  # score density f on its support
    metrics: tuple[str, ...]


BINARY = Setting("binary", stats.beta(2, 2), ("ece", "ace"))
TOP = Setting("top-label", stats.beta(3, 1, loc=0.1, scale=0.9), ("ece",))


def _quad(fun, a: float, b: float) -> float:
    val, _ = integrate.quad(fun, a, b, epsabs=1e-14, epsrel=1e-12, limit=200)
    return float(val)


def truths(setting: Setting, T: float) -> dict[str, float]:
    f = setting.dist.pdf
    lo, hi = setting.dist.support()
    gap = lambda s: (g(s, T) - s) * f(s)  # noqa: E731
    # the sign of g_T(s) - s changes only at s = 0.5 (T != 1)
    pts = [x for x in (lo, 0.5, hi) if lo <= x <= hi]
    l1 = sum(abs(_quad(gap, a, b)) for a, b in zip(pts[:-1], pts[1:], strict=False))
    out = {"l1": 0.0 if T == 1 else l1}

    def binned(edges: np.ndarray) -> float:
        tot = 0.0
        for a, b in zip(edges[:-1], edges[1:], strict=False):
            a, b = max(a, lo), min(b, hi)
            if b <= a:
                continue
            inner = [a] + ([0.5] if a < 0.5 < b else []) + [b]
            tot += abs(sum(_quad(gap, u, v) for u, v in zip(inner[:-1], inner[1:], strict=False)))
        return 0.0 if T == 1 else tot

    out["ece"] = binned(np.linspace(0, 1, 16))
    if "ace" in setting.metrics:
        out["ace"] = binned(setting.dist.ppf(np.linspace(0, 1, 16)))
    return out


def draw(setting: Setting, T: float, n: int, rng: np.random.Generator):
    s = setting.dist.rvs(size=n, random_state=rng)
    hit = rng.random(n) < g(s, T)
    if setting is BINARY:
        return s, hit.astype(np.int64)
    pred = rng.integers(0, K, n)
    probs = np.repeat(((1 - s) / (K - 1))[:, None], K, axis=1)
    probs[np.arange(n), pred] = s
    other = (pred + 1 + rng.integers(0, K - 1, n)) % K
    return probs, np.where(hit, pred, other)


def one_cell(args: tuple) -> dict:
    setting_name, T, n, reps, resamples, seed = args
    setting = BINARY if setting_name == "binary" else TOP
    truth = truths(setting, T)
    fns = {"ece": cp.ece, "ace": cp.ace}
    res = {
        m: {k: {"cover": 0, "cover_l1": 0, "width": 0.0, "undef": 0} for k in METHODS}
        for m in setting.metrics
    }
    est_sum = dict.fromkeys(setting.metrics, 0.0)
    for r in range(reps):
        rng = np.random.default_rng([seed, int(T * 10), n, r, len(setting_name)])
        probs, y = draw(setting, T, n, rng)
        P = cp.check_predictions(probs, y)
        # what cp.confidence_interval does (same evaluators, resamples, grouped jackknife
        # and interval code), with one set of resamples shared by the metrics of a row
        evs = {m: rs.evaluator(fns[m], P, {})[0] for m in setting.metrics}
        est = {m: float(ev(np.ones((1, n)))[0]) for m, ev in evs.items()}
        brng = np.random.default_rng(seed + r)
        boot: dict[str, list[np.ndarray]] = {m: [] for m in evs}
        for C in rs.bootstrap_counts(brng, n, resamples):
            for m, ev in evs.items():
                boot[m].append(ev(C))
        group = rs.jackknife_groups(n, 100, brng)
        for m, ev in evs.items():
            jack = rs.evaluate(ev, rs.jackknife_weights(group), None)
            b = np.concatenate(boot[m])
            est_sum[m] += est[m]
            for k in METHODS:
                cell = res[m][k]
                try:
                    ci = _finish(m, est[m], b, jack, k, 0.95)
                except CalibrationInputError:
                    cell["undef"] += 1
                    continue
                cell["cover"] += ci.low <= truth[m] <= ci.high
                cell["cover_l1"] += ci.low <= truth["l1"] <= ci.high
                cell["width"] += ci.high - ci.low
    return {
        "setting": setting_name,
        "T": T,
        "n": n,
        "reps": reps,
        "truth": truth,
        "mean_estimate": {m: est_sum[m] / reps for m in setting.metrics},
        "res": res,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=200, help="replications per cell")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 2000, 10_000])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="n = 500 and 2000 only")
    a = ap.parse_args()
    sizes = [s for s in a.sizes if not (a.quick and s > 2000)]
    jobs = [
        (st, T, n, a.reps, a.resamples, a.seed)
        for st in ("binary", "top-label")
        for T in TEMPERATURES
        for n in sizes
    ]
    jobs.sort(key=lambda j: -j[2])  # the long ones first
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=a.workers) as ex:
        out = list(ex.map(one_cell, jobs))
    dt = time.perf_counter() - t0
    out.sort(key=lambda o: (o["setting"] != "binary", -o["T"], o["n"]))
    print(
        f"coverage of 95 % bootstrap intervals; {a.reps} replications per cell, "
        f"{a.resamples} resamples, BCa acceleration from a 100-group jackknife; "
        f"seed {a.seed}; {dt:.0f} s on {a.workers} workers"
    )
    print(
        "MC s.e. = sqrt(c (1 - c) / R) of the coverage c; width = mean interval width; "
        "'L1 cov.' = coverage of the binning-free L1 error (ECE rows)\n"
    )
    head = (
        "| setting | metric | T | binned truth | L1 truth | n | mean estimate | method | "
        "coverage (MC s.e.) | mean width | L1 cov. | BCa undef. |"
    )
    print(head)
    print("|" + "---|" * head.count("|")[:-1] if False else "|" + "|".join(["---"] * 12) + "|")
    for o in out:
        for m, by in o["res"].items():
            for k in METHODS:
                c = by[k]
                R = o["reps"]
                cov = c["cover"] / R
                se = math.sqrt(cov * (1 - cov) / R)
                ok = R - c["undef"]
                width = c["width"] / ok if ok else math.nan
                l1 = f"{c['cover_l1'] / R:.3f}" if m == "ece" else ""
                undef = str(c["undef"]) if k == "bca" else ""
                print(
                    f"| {o['setting']} | {m.upper()} | {o['T']} | {o['truth'][m]:.5f} | "
                    f"{o['truth']['l1']:.5f} | {o['n']} | {o['mean_estimate'][m]:.5f} | {k} | "
                    f"{cov:.3f} ({se:.3f}) | {width:.4f} | {l1} | {undef} |"
                )


if __name__ == "__main__":
    main()
