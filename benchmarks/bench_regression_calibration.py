"""Regression calibration diagnostics beside uncertainty-toolbox and scoringrules, in one process.

Usage::

    python benchmarks/bench_regression_calibration.py            # n = 10**6
    python benchmarks/bench_regression_calibration.py --quick    # n = 10**5
    python benchmarks/bench_regression_calibration.py --rounds 7

Data (seeded): ``mu ~ N(0, 1)``, ``sigma ~ U(0.5, 2)``, ``y ~ N(mu + 0.2,
(1.3 sigma)**2)``: miscalibrated Gaussian predictions, float64.

Three parts:

1. **Speed of the calibration summaries** at ``n`` rows (default 10**6):
   calipers' PIT KS statistic (``pit_histogram(...).ks_statistic``) and
   ``miscalibration_area`` / ``mean_absolute_calibration_error`` beside
   uncertainty-toolbox's ``miscalibration_area`` (its default, 100 levels,
   not vectorised: one NumPy pass per level) and
   ``mean_absolute_calibration_error(vectorized=True)`` (its non-vectorised
   default loops over rows in Python: minutes at 10**6). uncertainty-toolbox
   has no KS statistic; its miscalibration area is the summary a user runs
   in its place. The values are printed beside each other.
2. **Memory of** ``quantile_calibration`` at ``n`` rows x 98 levels: the peak
   RSS (VmHWM) added by one call, in a fresh child process each, for the
   current code and for the former one (levels in blocks of an ``n x
   levels`` comparison matrix, kept below as ``former_coverage``).
3. **Closed-form CRPS** of the parametric families at ``n / 10`` rows
   beside scoringrules' ``crps_<family>`` (NumPy backend), same values
   (twice as many rounds: each call takes milliseconds).

Every timed implementation is called once as a warm-up, then all in turn,
round after round (``--rounds``, default 5); ``x calipers`` is the median
over rounds of the per-round ratio peer time / calipers time (above 1:
calipers is faster). Finishes in under a minute with the defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np


def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=n)
    sd = rng.uniform(0.5, 2.0, n)
    y = rng.normal(mu + 0.2, 1.3 * sd)
    return mu, sd, y


def timed(impls: list[tuple[str, Callable[[], object]]], rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name, _ in impls}
    for _, f in impls:
        f()
    for _ in range(rounds):
        for name, f in impls:
            t0 = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t0)
    return times


def report(title: str, times: dict[str, list[float]], base: str, values: dict[str, float]) -> None:
    print(f"\n{title}")
    print(f"{'implementation':58s} {'median s':>9s} {'min s':>8s} {'x calipers':>10s}  value")
    for name, ts in times.items():
        ratio = statistics.median(t / b for t, b in zip(ts, times[base], strict=True))
        v = values.get(name)
        print(
            f"{name:58s} {statistics.median(ts):9.4f} {min(ts):8.4f} {ratio:10.2f}  "
            + ("" if v is None else f"{v:.12g}")
        )


# ----------------------------------------------------------------------------- part 1


def part_speed(n: int, rounds: int) -> None:
    from calipers.regression import (
        mean_absolute_calibration_error,
        miscalibration_area,
        pit_histogram,
    )

    mu, sd, y = make_data(n)
    impls: list[tuple[str, Callable[[], object]]] = [
        ("calipers pit_histogram().ks_statistic", lambda: pit_histogram(mu, std=sd, targets=y)),
        ("calipers miscalibration_area", lambda: miscalibration_area(mu, std=sd, targets=y)),
        (
            "calipers mean_absolute_calibration_error",
            lambda: mean_absolute_calibration_error(mu, std=sd, targets=y),
        ),
    ]
    values = {
        "calipers pit_histogram().ks_statistic": pit_histogram(mu, std=sd, targets=y).ks_statistic,
        "calipers miscalibration_area": miscalibration_area(mu, std=sd, targets=y),
        "calipers mean_absolute_calibration_error": mean_absolute_calibration_error(
            mu, std=sd, targets=y
        ),
    }
    try:
        from uncertainty_toolbox import metrics_calibration as ut
    except ImportError:
        print("\nuncertainty-toolbox not installed: calipers alone")
    else:
        impls += [
            ("uncertainty-toolbox miscalibration_area", lambda: ut.miscalibration_area(mu, sd, y)),
            (
                "uncertainty-toolbox mean_absolute_calibration_error (vec.)",
                lambda: ut.mean_absolute_calibration_error(mu, sd, y, vectorized=True),
            ),
        ]
        values["uncertainty-toolbox miscalibration_area"] = ut.miscalibration_area(mu, sd, y)
        values["uncertainty-toolbox mean_absolute_calibration_error (vec.)"] = (
            ut.mean_absolute_calibration_error(mu, sd, y, vectorized=True)
        )
    times = timed(impls, rounds)
    report(
        f"1. calibration summaries of Gaussian predictions, n = {n:,}",
        times,
        "calipers pit_histogram().ks_statistic",
        values,
    )
    if "uncertainty-toolbox miscalibration_area" in times:
        ut_area = times["uncertainty-toolbox miscalibration_area"]
        for name in ("calipers miscalibration_area", "calipers mean_absolute_calibration_error"):
            r = statistics.median(u / c for u, c in zip(ut_area, times[name], strict=True))
            print(f"   uncertainty-toolbox miscalibration_area / {name}: {r:.2f} x")


# ----------------------------------------------------------------------------- part 2


def former_coverage(mu: np.ndarray, var: np.ndarray, y: np.ndarray, lv: np.ndarray) -> np.ndarray:
    """The former quantile_calibration core: levels in blocks of a comparison matrix."""
    from scipy.special import ndtri

    w = np.ones(y.shape[0])
    total = float(np.sum(w))
    absz = np.abs(y - mu) / np.sqrt(var)
    half_width = ndtri((1.0 + lv) / 2.0)
    step = max(1, (1 << 24) // y.shape[0])
    coverage = np.empty(lv.shape[0])
    for a in range(0, lv.shape[0], step):
        inside = absz[None, :] <= half_width[a : a + step, None]
        coverage[a : a + step] = (inside @ w) / total
    return coverage


def _hwm_kib() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM"):
                return int(line.split()[1])
    return -1


def child_memory(which: str, n: int) -> None:
    """Run in a fresh process: the peak RSS one call adds, as JSON on stdout."""
    from calipers.regression import quantile_calibration

    mu, sd, y = make_data(n)
    var = sd * sd
    lv = np.linspace(0.01, 0.98, 98)
    quantile_calibration(mu[:10], variance=var[:10], targets=y[:10], levels=lv)  # imports
    before = _hwm_kib()
    if which == "current":
        cov = quantile_calibration(mu, variance=var, targets=y, levels=lv).coverage
    else:
        cov = former_coverage(mu, var, y, lv)
    after = _hwm_kib()
    print(json.dumps({"added_mib": (after - before) / 1024, "coverage_sum": float(cov.sum())}))


def part_memory(n: int) -> None:
    print(
        f"\n2. quantile_calibration memory, n = {n:,} rows x 98 levels (peak RSS added, fresh child)"
    )
    inputs_mib = 3 * n * 8 / 2**20
    print(f"   (the inputs: 3 arrays of n float64 = {inputs_mib:.0f} MiB, not counted)")
    out = {}
    for which in ("former", "current"):
        res = subprocess.run(
            [sys.executable, __file__, "--child", which, "--n", str(n)],
            capture_output=True,
            text=True,
            check=True,
        )
        out[which] = json.loads(res.stdout.strip().splitlines()[-1])
        print(
            f"   {which:8s} +{out[which]['added_mib']:7.1f} MiB   "
            f"sum of coverages {out[which]['coverage_sum']!r}"
        )
    same = out["former"]["coverage_sum"] == out["current"]["coverage_sum"]
    print(f"   same coverages: {same}")


# ----------------------------------------------------------------------------- part 3


def part_crps(n: int, rounds: int) -> None:
    from scipy import stats

    from calipers.regression import Parametric

    rng = np.random.default_rng(1)
    loc = rng.normal(size=n)
    sc = rng.uniform(0.5, 2.0, n)
    y = rng.normal(size=n) * 2
    yp = np.exp(rng.normal(size=n))
    mu = rng.uniform(0.5, 20.0, n)
    k = rng.poisson(mu).astype(float)
    nn = rng.uniform(0.5, 10.0, n)
    p = rng.uniform(0.1, 0.9, n)
    kb = stats.nbinom(nn, p).rvs(random_state=2).astype(float)
    df = rng.uniform(2.0, 10.0, n)
    sh = rng.uniform(0.5, 5.0, n)
    rt = rng.uniform(0.5, 3.0, n)
    cases = {
        "normal": (Parametric("normal", loc=loc, scale=sc), y, "crps_normal", (y, loc, sc)),
        "student_t": (
            Parametric("student_t", df=df, loc=loc, scale=sc),
            y,
            "crps_t",
            (y, df, loc, sc),
        ),
        "laplace": (Parametric("laplace", loc=loc, scale=sc), y, "crps_laplace", (y, loc, sc)),
        "logistic": (Parametric("logistic", loc=loc, scale=sc), y, "crps_logistic", (y, loc, sc)),
        "lognormal": (
            Parametric("lognormal", meanlog=loc, sdlog=sc),
            yp,
            "crps_lognormal",
            (yp, loc, sc),
        ),
        "gamma": (Parametric("gamma", shape=sh, rate=rt), yp, "crps_gamma", (yp, sh, rt)),
        "poisson": (Parametric("poisson", mu=mu), k, "crps_poisson", (k, mu)),
        "negative_binomial": (
            Parametric("negative_binomial", n=nn, p=p),
            kb,
            "crps_negbinom",
            (kb, nn, p),
        ),
    }
    try:
        import scoringrules as sr
    except ImportError:
        sr = None
        print("\nscoringrules not installed: calipers alone")
    print(
        f"\n3. closed-form CRPS per row, n = {n:,} (x calipers = scoringrules time / calipers time)"
    )
    print(
        f"{'family':20s} {'calipers s':>10s} {'scoringrules s':>14s} {'x calipers':>10s} {'max rel. diff':>14s}"
    )
    for fam, (dist, obs, srname, args) in cases.items():
        impls: list[tuple[str, Callable[[], object]]] = [
            ("calipers", lambda d=dist, o=obs: d.crps(o))
        ]
        if sr is not None:
            f = getattr(sr, srname)
            impls.append(("scoringrules", lambda f=f, a=args: f(*a)))
        times = timed(impls, rounds)
        c = statistics.median(times["calipers"])
        if sr is None:
            print(f"{fam:20s} {c:10.4f}")
            continue
        s = statistics.median(times["scoringrules"])
        ratio = statistics.median(
            a / b for a, b in zip(times["scoringrules"], times["calipers"], strict=True)
        )
        ours = dist.crps(obs)
        theirs = np.asarray(getattr(sr, srname)(*args))
        diff = float(np.max(np.abs(ours - theirs) / np.maximum(1.0, np.abs(theirs))))
        print(f"{fam:20s} {c:10.4f} {s:14.4f} {ratio:10.2f} {diff:14.2e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 10**5 instead of 10**6")
    ap.add_argument("--n", type=int, default=None, help="rows (default 10**6, --quick 10**5)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--child", choices=("current", "former"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    n = args.n or (10**5 if args.quick else 10**6)
    if args.child:
        child_memory(args.child, n)
        return
    import scipy

    print(
        f"Python {platform.python_version()}, NumPy {np.__version__}, SciPy {scipy.__version__}, "
        f"{os.cpu_count()} CPUs"
    )
    part_speed(n, args.rounds)
    part_memory(n)
    part_crps(max(n // 10, 1000), 2 * args.rounds)


if __name__ == "__main__":
    main()
