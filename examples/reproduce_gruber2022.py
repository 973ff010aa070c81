"""Calibration estimators and the RBS, Gruber & Buettner (2022), Fig. 2
====================================================================

Reproduce Gruber & Buettner (2022), Fig. 2 and the RBS experiments on real logits, with calipers.

What it reproduces
------------------
(a) Fig. 2 (details in their App. G.1): simulated 100-class models whose true
    calibration is known. Logits are drawn per class from a normal distribution
    centred at the class's unit vector with a covariance drawn from an inverse
    Wishart distribution (scale I / 0.01, 100 degrees of freedom); labels are drawn
    from softmax(logits), so softmax(logits) is perfectly calibrated. The
    "mediocre" and "bad" models multiply the logits by 1.5 and 2.5. For test sizes
    from 100 to 10 000 the script draws fresh test sets (seeded) and reports the
    mean and standard deviation of the estimators Gruber & Buettner (2022, §5)
    compare: ECE (15 equal-width bins), 100-bin TCE_2, 15-bin equal-mass debiased
    TCE_2, KS, 15-bin CWCE_2 and RBS. The true values (TCE_1, TCE_2 and CE_2 of
    each model, and the population value of the 15-bin ECE, which is what the
    estimator converges to) are computed from the known label probabilities on a
    large fresh sample.

(b) RBS and the calibration upper bound on real logits (their §5, Figs. 1, 3, 5, 6):
    before and after temperature scaling fitted on a calibration split, the same
    estimators on the full test set and on random test subsets of growing size,
    and the estimated recalibration improvement. Gruber & Buettner (2022) show
    these only as curves (no table of numbers); the DenseNet-40 / CIFAR-10 logits
    of Kull et al. (2019) are among the logit sets they used, so pass that test
    split with ``--data`` (an ``.npz`` with ``logits`` (n, K) and ``labels`` (n,)),
    and its validation split with ``--calibration``. The script then also prints
    the values Kull et al. (2019) published for the same logits. Without
    ``--data`` it uses the logistic-regression predictions on scikit-learn's
    digits shipped in :func:`calipers.datasets.load_default_predictions`, with
    their calibration/test split.

Figures are written into ``--out`` (default ``./reproduce-gruber2022``):
``fig2_ece_simulation.png``, ``fig2_estimators_simulation.png`` and
``real_logits_test_size.png``.

Run
---
::

    python examples/reproduce_gruber2022.py            # full run
    python examples/reproduce_gruber2022.py --quick    # a few seconds
    python examples/reproduce_gruber2022.py --data densenet40_c10_test.npz \\
        --calibration densenet40_c10_val.npz

The full run takes 63 s (43 s of CPU time) on a 2-core machine, and took 218 s
there while other jobs loaded it heavily; ``--quick`` takes about 6 to 9 s. The printed numbers are deterministic (all
randomness is seeded); run time is printed to standard error. Requires numpy, scipy and matplotlib.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.stats import invwishart

import calipers as cp

N_CLASSES = 100
MODELS = {"perfect": 1.0, "mediocre": 1.5, "bad": 2.5}


def softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise softmax."""
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def estimators() -> dict[str, Callable[[np.ndarray, np.ndarray], float]]:
    """The estimators of Gruber & Buettner (2022, §5), all in root (not squared) space."""
    return {
        "ECE": lambda p, y: float(cp.ece(p, y, n_bins=15)),
        "100b TCE2": lambda p, y: float(cp.tce_p(p, y, p=2, n_bins=100)),
        "15b d TCE2": lambda p, y: float(
            cp.debiased_calibration_error(p, y, lens="top_label", estimator=cp.EqualMass(15), p=2)
        ),
        "KS": lambda p, y: float(cp.ks_calibration_error(p, y)),
        "15b CWCE2": lambda p, y: float(cp.cwce_p(p, y, p=2, n_bins=15)),
        "RBS": lambda p, y: float(cp.rbs(p, y)),
    }


# --------------------------------------------------------------------------- (a)


class Simulation:
    """The generative model of Gruber & Buettner (2022) App. G.1."""

    def __init__(self, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        covs = invwishart.rvs(
            df=N_CLASSES, scale=np.eye(N_CLASSES) / 0.01, size=N_CLASSES, random_state=rng
        )
        self.chol = np.linalg.cholesky(covs)

    def draw(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Logits, true label probabilities and labels of ``n`` fresh rows."""
        cls = rng.integers(0, N_CLASSES, n)
        z = rng.standard_normal((n, N_CLASSES))
        logits = np.zeros((n, N_CLASSES))
        for c in np.unique(cls):
            rows = cls == c
            logits[rows] = z[rows] @ self.chol[c].T
        logits[np.arange(n), cls] += 1.0
        p_true = softmax(logits)
        y = (rng.random(n)[:, None] > np.cumsum(p_true, axis=1)).sum(axis=1).clip(0, N_CLASSES - 1)
        return logits, p_true, y


def true_values(sim: Simulation, n: int, seed: int) -> dict[str, dict[str, float]]:
    """True calibration of each model from the known label probabilities."""
    logits, p_true, _ = sim.draw(n, np.random.default_rng(seed))
    rows = np.arange(n)
    out = {}
    for name, scale in MODELS.items():
        f = softmax(scale * logits)
        top = f.argmax(axis=1)
        conf = f[rows, top]
        hit = p_true[rows, top]  # P(Y = top | f(X)): f is an injective function of p_true
        bins = np.clip(np.ceil(conf * 15).astype(int) - 1, 0, 14)
        w = np.bincount(bins, minlength=15) / n
        gap = np.bincount(bins, weights=conf - hit, minlength=15) / n
        brier = (f**2).sum(axis=1) - 2 * (f * p_true).sum(axis=1) + 1
        out[name] = {
            "accuracy": float(hit.mean()),
            "TCE1": float(np.abs(conf - hit).mean()),
            "ECE15 limit": float(np.abs(gap[w > 0]).sum()),
            "TCE2": float(np.sqrt(((conf - hit) ** 2).mean())),
            "CE2": float(np.sqrt(((f - p_true) ** 2).sum(axis=1).mean())),
            "RBS limit": float(np.sqrt(brier.mean())),
        }
    return out


def run_simulation(sizes: list[int], reps: dict[int, int], n_truth: int) -> dict:
    """Estimator mean and spread per model and test size."""
    sim = Simulation(seed=0)
    truth = true_values(sim, n_truth, seed=1)
    est = estimators()
    res: dict = {name: {key: {"mean": [], "sd": []} for key in est} for name in MODELS}
    for n in sizes:
        rng = np.random.default_rng(100 + n)
        vals: dict = {name: {key: [] for key in est} for name in MODELS}
        for _ in range(reps[n]):
            logits, _, y = sim.draw(n, rng)
            for name, scale in MODELS.items():
                f = softmax(scale * logits)
                for key, fn in est.items():
                    vals[name][key].append(fn(f, y))
        for name in MODELS:
            for key in est:
                res[name][key]["mean"].append(float(np.mean(vals[name][key])))
                res[name][key]["sd"].append(float(np.std(vals[name][key])))
    return {"sizes": sizes, "reps": reps, "truth": truth, "estimates": res}


def print_simulation(sim: dict) -> None:
    print("(a) Gruber & Buettner (2022) Fig. 2 / App. G.1: simulated 100-class models")
    print("    paper: accuracy about 87.6 %; the ECE estimate of every model falls as the test set")
    print("    grows (Prop. 3.3: E[ECE_n] >= ECE, larger change for smaller n and for smaller true")
    print("    ECE), so the perfect model's ECE is far from 0 at n = 100.")
    sizes = sim["sizes"]
    for name, t in sim["truth"].items():
        print(
            f"\n{name} (logits x {MODELS[name]}): accuracy {t['accuracy']:.3f}; true TCE_1 {t['TCE1']:.4f},"
            f" 15-bin ECE limit {t['ECE15 limit']:.4f}, TCE_2 {t['TCE2']:.4f}, CE_2 {t['CE2']:.4f},"
            f" RBS limit {t['RBS limit']:.4f}"
        )
        print(f"{'estimator':>12}" + "".join(f"{n:>15}" for n in sizes))
        for key, v in sim["estimates"][name].items():
            cells = "".join(
                f"{m:>8.4f} ±{s:<6.4f}" for m, s in zip(v["mean"], v["sd"], strict=True)
            )
            print(f"{key:>12}" + cells)
    counts = ", ".join(f"{n}: {sim['reps'][n]}" for n in sizes)
    print(f"    repetitions per test size: {counts}")


def plot_simulation(sim: dict, out: Path) -> None:
    import matplotlib.pyplot as plt

    sizes = sim["sizes"]
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for i, name in enumerate(MODELS):
        v = sim["estimates"][name]["ECE"]
        m, s = np.array(v["mean"]), np.array(v["sd"])
        ax.plot(sizes, m, "o-", color=f"C{i}", label=f"{name} model")
        ax.fill_between(sizes, m - s, m + s, color=f"C{i}", alpha=0.2)
        ax.axhline(sim["truth"][name]["TCE1"], color=f"C{i}", ls="--", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("test set size")
    ax.set_ylabel("ECE (15 bins)")
    ax.set_title("ECE vs test size (dashed: true TCE_1)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "fig2_ece_simulation.png", dpi=80)
    plt.close(fig)

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True)
    for ax, name in zip(axes, MODELS, strict=True):
        for j, (key, v) in enumerate(sim["estimates"][name].items()):
            m, s = np.array(v["mean"]), np.array(v["sd"])
            ax.plot(sizes, m, "o-", ms=3, color=f"C{j}", label=key)
            ax.fill_between(sizes, m - s, m + s, color=f"C{j}", alpha=0.15)
        ax.axhline(sim["truth"][name]["CE2"], color="k", ls="--", lw=1, label="true CE_2")
        ax.set_xscale("log")
        ax.set_xlabel("test set size")
        ax.set_title(f"{name} model")
    axes[0].set_ylabel("estimate")
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "fig2_estimators_simulation.png", dpi=80)
    plt.close(fig)


# --------------------------------------------------------------------------- (b)


def load_real(
    data: Path | None, calibration: Path | None
) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Test and calibration logits/labels, and a description of their source."""
    if data is None:
        from calipers.datasets import load_default_predictions

        d = load_default_predictions()
        z = d.logits["logistic_regression"]
        cal = d.is_calibration
        source = (
            "calipers.datasets default predictions (logistic regression on scikit-learn digits)"
        )
        return source, z[~cal], d.labels[~cal], z[cal], d.labels[cal]
    with np.load(data, allow_pickle=False) as f:
        z, y = np.asarray(f["logits"], dtype=float), np.asarray(f["labels"])
    if calibration is not None:
        with np.load(calibration, allow_pickle=False) as f:
            zc, yc = np.asarray(f["logits"], dtype=float), np.asarray(f["labels"])
        return f"{data.name} (calibration split: {calibration.name})", z, y, zc, yc
    cal = np.random.default_rng(0).permutation(len(y)) < len(y) // 2
    return (
        f"{data.name} (calibration split: a seeded random half)",
        z[~cal],
        y[~cal],
        z[cal],
        y[cal],
    )


def run_real(data: Path | None, calibration: Path | None, sizes: list[int], reps: int) -> dict:
    """Estimators before / after temperature scaling, full test set and subsets."""
    source, z, y, zc, yc = load_real(data, calibration)
    ts = cp.TemperatureScaling()
    ts.fit(zc, yc, logits=True)
    before = softmax(z)
    after = np.asarray(ts.predict_proba(z, logits=True))
    est = {**estimators(), "U_BS": lambda p, y: float(cp.calibration_upper_bound(p, y))}
    full = {
        "accuracy": (float(cp.accuracy(before, y)), float(cp.accuracy(after, y))),
        **{key: (fn(before, y), fn(after, y)) for key, fn in est.items()},
    }
    sizes = [n for n in sizes if n < len(y)] + [len(y)]
    rng = np.random.default_rng(7)
    curves: dict = {key: {"before": [], "improvement": [], "improvement_sd": []} for key in est}
    for n in sizes:
        r = reps if n < len(y) else 1
        vals: dict = {key: ([], []) for key in est}
        for _ in range(r):
            idx = rng.choice(len(y), n, replace=False) if n < len(y) else np.arange(n)
            for key, fn in est.items():
                b = fn(before[idx], y[idx])
                vals[key][0].append(b)
                vals[key][1].append(b - fn(after[idx], y[idx]))
        for key in est:
            curves[key]["before"].append(float(np.mean(vals[key][0])))
            curves[key]["improvement"].append(float(np.mean(vals[key][1])))
            curves[key]["improvement_sd"].append(float(np.std(vals[key][1])))
    improvement_bs = -float(cp.recalibration_improvement(before, after, y))
    return {
        "source": source,
        "densenet": data is not None and "densenet40" in data.name,
        "n": len(y),
        "temperature": float(ts.temperature_),
        "full": full,
        "sizes": sizes,
        "reps": reps,
        "curves": curves,
        "improvement_bs": improvement_bs,
    }


def print_real(res: dict) -> None:
    print("\n(b) Gruber & Buettner (2022) §5: calibration upper bound and RBS on real logits")
    print(
        f"    data: {res['source']}; {res['n']} test rows; temperature T = {res['temperature']:.4f}"
    )
    print(f"{'':>14}{'uncalibrated':>14}{'temp. scaled':>14}{'improvement':>13}")
    for key, (b, a) in res["full"].items():
        print(f"{key:>14}{b:>14.6f}{a:>14.6f}{b - a:>13.6f}")
    print(
        f"    U_BS(f) - U_BS(TS o f) = {res['improvement_bs']:.6f}: by their Prop. 4.5 an unbiased estimate"
        " of the drop of CE_2^2"
    )
    if res["densenet"]:
        print(
            "    published for these DenseNet-40 / CIFAR-10 logits (Kull et al. 2019; Rahimi et al. 2020):"
        )
        print(
            "      error rate 7.58 %, ECE 0.0550, after temperature scaling ECE 0.0095 with T = 2.88,"
        )
        print(
            "      Brier score / K 0.012738, i.e. U_BS 0.12738 and RBS 0.35690 before recalibration."
        )
        print(
            "    Gruber & Buettner (2022) use these logits among others (§5, App. G; Fig. 3 right)"
        )
        print(
            "    and print no numbers; their finding: only RBS (and KS) stay flat as the test size"
        )
        print("    shrinks, and only RBS estimates the recalibration improvement robustly.")
    print("    mean over random test subsets (improvement = before - after, mean ± sd):")
    sizes = res["sizes"]
    print(f"{'estimator':>12}" + "".join(f"{n:>16}" for n in sizes))
    for key, c in res["curves"].items():
        cells = "".join(
            f"{m:>8.4f} ±{s:<7.4f}"
            for m, s in zip(c["improvement"], c["improvement_sd"], strict=True)
        )
        print(f"{key:>12}" + cells)


def plot_real(res: dict, out: Path) -> None:
    import matplotlib.pyplot as plt

    sizes = res["sizes"]
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 3.8))
    for j, (key, c) in enumerate(res["curves"].items()):
        ax0.plot(sizes, c["before"], "o-", ms=3, color=f"C{j}", label=key)
        m, s = np.array(c["improvement"]), np.array(c["improvement_sd"])
        ax1.plot(sizes, m, "o-", ms=3, color=f"C{j}", label=key)
        ax1.fill_between(sizes, m - s, m + s, color=f"C{j}", alpha=0.12)
    ax0.set_title("estimate (uncalibrated) vs test size")
    ax1.set_title("improvement by temperature scaling")
    ax1.axhline(0.0, color="k", lw=0.8)
    for ax in (ax0, ax1):
        ax.set_xscale("log")
        ax.set_xlabel("test set size")
    ax0.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "real_logits_test_size.png", dpi=80)
    plt.close(fig)


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="small sizes and few repetitions (seconds)"
    )
    parser.add_argument(
        "--out", type=Path, default=Path("reproduce-gruber2022"), help="folder for the PNG figures"
    )
    parser.add_argument(
        "--data", type=Path, default=None, help=".npz with test 'logits' (n, K) and 'labels' (n,)"
    )
    parser.add_argument(
        "--calibration",
        type=Path,
        default=None,
        help=".npz with calibration 'logits' and 'labels' for fitting T",
    )
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if args.quick:
        sizes = [100, 1000]
        reps = {100: 8, 1000: 2}
        n_truth, real_reps = 20_000, 5
    else:
        sizes = [100, 215, 464, 1000, 2154, 4642, 10000]
        reps = {100: 200, 215: 100, 464: 50, 1000: 20, 2154: 10, 4642: 5, 10000: 3}
        n_truth, real_reps = 200_000, 50
    sim = run_simulation(sizes, reps, n_truth)
    print_simulation(sim)
    plot_simulation(sim, args.out)
    real = run_real(args.data, args.calibration, [100, 215, 464, 1000, 2154, 4642], real_reps)
    print_real(real)
    plot_real(real, args.out)
    print(f"\nfigures written to {args.out}")
    print(f"run time {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return {"simulation": sim, "real": real}


if __name__ == "__main__":
    main()
