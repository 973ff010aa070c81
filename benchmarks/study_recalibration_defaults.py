"""Defaults of the recalibrators: held-out NLL, Brier, ECE and fit time, before and after.

Usage::

    python benchmarks/study_recalibration_defaults.py            # 5 seeded digits splits
    python benchmarks/study_recalibration_defaults.py --quick    # 2 splits, fewer settings

Part 1, vector and matrix scaling (Guo et al. 2017) with the penalty towards
temperature scaling (``reg="temperature"``, strengths ``lambda_ = mu``), Kull
et al.'s (2019) ODIR (``reg="odir"``) and no penalty (``reg="none"``), against
temperature scaling, on:

* digits (scikit-learn, 1797 rows, 10 classes) split 40 % train / 30 %
  calibration (539 rows) / 30 % test, stratified, seeds 0, 1, ...: the
  decision values of ``SVC()`` (one-vs-rest shape, the default), of
  ``SVC(gamma=0.001)`` and the logits of ``LogisticRegression``;
* DenseNet-40 on CIFAR-10 (Kull et al. 2019's logits; 5000 validation rows
  for calibration, 10000 test rows), when the shared data folder has it
  (``$CALIPERS_SHARED_DATA`` or ``../shared/data``).

Part 2, histogram binning and isotonic regression with ``smoothing="none"``
(exact bin frequencies) and ``"laplace"`` ((k + 1) / (n + 2)), on the
out-of-fold predictions of ``calipers demo`` (``calipers.datasets``; split
into calibration and test halves as ``calipers demo`` does) and on the real
predictions of the shared data folder (DenseNet-40 probabilities; the
cross-validated probabilities of the label-errors benchmark's models and the
Niamey rain forecasts of Vogel et al. 2018, split into halves). Part 3: Platt scaling with and without Platt's
(1999) smoothed targets on a separable binary SVC calibration split, against
scikit-learn's ``CalibratedClassifierCV(method="sigmoid")`` fit.

Fit times are wall-clock seconds of ``fit`` with one BLAS thread (set before
NumPy loads; more threads only add contention on these small problems). NLL is
``inf`` when some test row gets probability 0 on its true class. Tables are
printed as Markdown (the recalibration guide shows them).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import calipers as cp  # noqa: E402


def digits_cases(seeds: list[int]) -> list[tuple[str, int, Any, Any, Any, Any]]:
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.svm import SVC

    X, y = load_digits(return_X_y=True)
    out = []
    for seed in seeds:
        Xtr, Xr, ytr, yr = train_test_split(X, y, test_size=0.6, random_state=seed, stratify=y)
        Xc, Xt, yc, yt = train_test_split(Xr, yr, test_size=0.5, random_state=seed, stratify=yr)
        models = {
            "digits/SVC": SVC(),
            "digits/SVC(gamma=0.001)": SVC(gamma=0.001),
            "digits/logistic": LogisticRegression(max_iter=5000),
        }
        for name, m in models.items():
            m.fit(Xtr, ytr)
            out.append((name, seed, m.decision_function(Xc), yc, m.decision_function(Xt), yt))
    return out


def shared(name: str) -> Path | None:
    env = os.environ.get("CALIPERS_SHARED_DATA")
    root = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"
    return root / name if (root / name).is_file() else None


def densenet() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    v, t = shared("densenet40_c10_val.npz"), shared("densenet40_c10_test.npz")
    if v is None or t is None:
        return None
    a, b = np.load(v), np.load(t)
    return a["logits"], a["labels"], b["logits"], b["labels"]


def scores(p: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    return float(cp.nll(p, y)), float(cp.brier(p, y)), float(cp.ece(p, y))


def fit_eval(rc: Any, zc: Any, yc: Any, zt: Any, yt: Any, logits: bool) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        t0 = time.perf_counter()
        rc.fit(zc, yc, logits=logits)
        dt = time.perf_counter() - t0
    nll, brier, ece = scores(rc.predict_proba(zt, logits=logits), yt)
    return {"nll": nll, "brier": brier, "ece": ece, "time": dt, "iter": getattr(rc, "n_iter_", 0)}


def scaling_methods(quick: bool) -> dict[str, Any]:
    grid = [3.0, 30.0] if quick else [1.0, 3.0, 10.0, 30.0, 100.0]
    m: dict[str, Any] = {"TS": lambda: cp.TemperatureScaling()}
    m["VS none"] = lambda: cp.VectorScaling(reg="none")
    for lam in grid:
        m[f"VS temperature {lam:g}"] = lambda lam=lam: cp.VectorScaling(lambda_=lam, mu=lam)
    m["MS none"] = lambda: cp.MatrixScaling(reg="none")
    m["MS odir 1e-3"] = lambda: cp.MatrixScaling(reg="odir")
    if not quick:
        m["MS odir 1"] = lambda: cp.MatrixScaling(reg="odir", lambda_=1.0, mu=1.0)
    for lam in grid:
        m[f"MS temperature {lam:g}"] = lambda lam=lam: cp.MatrixScaling(lambda_=lam, mu=lam)
    return m


def part1(seeds: list[int], quick: bool) -> None:
    cases = digits_cases(seeds)
    d = densenet()
    if d is not None:
        cases.append(("DenseNet-40/CIFAR-10", -1, *d))
    methods = scaling_methods(quick)
    names = sorted({c[0] for c in cases}, key=[c[0] for c in cases].index)
    print("## Vector and matrix scaling: held-out scores (mean over splits; worst NLL)\n")
    for name in names:
        rows = [c for c in cases if c[0] == name]
        zc0, zt0 = rows[0][2], rows[0][4]
        before = [scores(_softmax(c[4]), c[5])[0] for c in rows]
        print(
            f"### {name}: {len(rows)} split(s), {len(zc0)} calibration / {len(zt0)} test rows, "
            f"{zc0.shape[1]} classes; uncalibrated NLL {np.mean(before):.4f}\n"
        )
        print("| method | NLL | worst NLL | Brier | ECE | fit time (s) | iterations |")
        print("|---|---|---|---|---|---|---|")
        for mname, make in methods.items():
            res = [fit_eval(make(), c[2], c[3], c[4], c[5], True) for c in rows]
            nll = [r["nll"] for r in res]
            print(
                f"| {mname} | {_f(np.mean(nll))} | {_f(max(nll))} | "
                f"{np.mean([r['brier'] for r in res]):.4f} | "
                f"{np.mean([r['ece'] for r in res]):.4f} | "
                f"{np.mean([r['time'] for r in res]):.3f} (max {max(r['time'] for r in res):.3f}) | "
                f"{np.mean([r['iter'] for r in res]):.0f} |",
                flush=True,
            )
        print()


def part2() -> None:
    from calipers.datasets import load_default_predictions
    from calipers.recalibration import calibration_split_indices

    print("## Histogram binning and isotonic regression: held-out NLL / Brier / ECE\n")
    print("| predictions | uncalibrated | HB none | HB laplace | IR none | IR laplace |")
    print("|---|---|---|---|---|---|")
    dp = load_default_predictions()
    y = np.asarray(dp.labels)
    sets: list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    for model, p in dp.probs.items():
        ci, ti = calibration_split_indices(y, seed=0)
        sets.append((f"demo {model}", p[ci], y[ci], p[ti], y[ti]))
    d = densenet()
    if d is not None:
        sets.append(("DenseNet-40/CIFAR-10", _softmax(d[0]), d[1], _softmax(d[2]), d[3]))
    for stem in ("labelerrors_cifar10", "labelerrors_20news", "labelerrors_imdb"):
        f = shared(stem + ".npz")
        if f is not None:  # cross-validated probabilities: halves as calipers demo splits
            a = np.load(f)
            pr, lab = a["probs"], a["labels"]
            ci, ti = calibration_split_indices(lab, seed=0)
            sets.append((stem, pr[ci], lab[ci], pr[ti], lab[ti]))
    for stem in ("niamey2016_Logistic", "niamey2016_EMOS", "niamey2016_ENS", "niamey2016_EPC"):
        f = shared(stem + ".npz")
        if f is not None:  # binary P(rain): 92 days, halves
            a = np.load(f)
            pr, lab = a["p"], a["y"].astype(np.int64)
            ci, ti = calibration_split_indices(lab, seed=0)
            sets.append((stem, pr[ci], lab[ci], pr[ti], lab[ti]))
    for name, pc, yc, pt, yt in sets:
        cells = ["/".join(_f(v) for v in scores(pt, yt))]
        for cls in (cp.HistogramBinning, cp.IsotonicRegression):
            for sm in ("none", "laplace"):
                r = fit_eval(cls(smoothing=sm), pc, yc, pt, yt, False)
                cells.append(f"{_f(r['nll'])}/{r['brier']:.4f}/{r['ece']:.4f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()


def part3() -> None:
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.datasets import make_classification
    from sklearn.svm import LinearSVC

    print("## Platt scaling on a separable calibration split\n")
    X, y = make_classification(
        600, n_features=5, n_informative=5, n_redundant=0, class_sep=3.0, random_state=0
    )
    tr, ca, te = np.arange(0, 200), np.arange(200, 230), np.arange(230, 600)
    svc = LinearSVC(C=10.0).fit(X[tr], y[tr])
    zc, zt = svc.decision_function(X[ca]), svc.decision_function(X[te])
    sep = bool(np.all((zc > 0) == (y[ca] == 1)))
    sk = CalibratedClassifierCV(svc, method="sigmoid", cv="prefit" if _prefit() else None)
    if _prefit():
        sk.fit(X[ca], y[ca])
    else:  # scikit-learn >= 1.6: FrozenEstimator
        from sklearn.frozen import FrozenEstimator

        sk = CalibratedClassifierCV(FrozenEstimator(svc), method="sigmoid").fit(X[ca], y[ca])
    p_sk = sk.predict_proba(X[te])[:, 1]
    print(f"calibration split of {len(ca)} rows, separated by the SVC: {sep}\n")
    print("| fit | held-out NLL |")
    print("|---|---|")
    print(f"| scikit-learn sigmoid | {_f(cp.nll(p_sk, y[te]))} |")
    for st in (False, True):
        r = fit_eval(cp.PlattScaling(smooth_targets=st), zc, y[ca], zt, y[te], True)
        print(f"| PlattScaling(smooth_targets={st}) | {_f(r['nll'])} |")
    print()


def _prefit() -> bool:
    import sklearn

    major, minor = (int(x) for x in sklearn.__version__.split(".")[:2])
    return (major, minor) < (1, 6)


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _f(x: float) -> str:
    return "inf" if not np.isfinite(x) else f"{x:.4f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--part", type=int, choices=(1, 2, 3))
    a = ap.parse_args()
    seeds = [0, 1] if a.quick else [0, 1, 2, 3, 4]
    if a.part in (None, 1):
        part1(seeds, a.quick)
    if a.part in (None, 2):
        part2()
    if a.part in (None, 3):
        part3()


if __name__ == "__main__":
    main()
