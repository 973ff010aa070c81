"""Lenses, Likert intervals and bin granularity, Kirchenbauer, Oaks & Heim (2022)
==============================================================================

Reproduce the lens, Likert and bin-granularity experiments of Kirchenbauer, Oaks & Heim (2022).

What it reproduces
------------------
Kirchenbauer, Oaks & Heim (2022) generalise the ECE into a lens (what is
compared), a selection (which samples), an adaptive k-d tree binning with bin
fraction ``gamma`` (App. B) and a distance. This script reruns three of their
experiments on real predictions that calipers can read offline (their own
data sets, CrisisMMD and ETHEC, and their models are not available):

1. **Inter-interval (Likert) calibration, §4.3 and §5.3, Figs. 5-6.** A binary
   classifier's confidence is shown to people as low ``[0, 0.33]``, medium
   ``[0.33, 0.66]`` or high ``[0.66, 1]``. For each category, the error of the
   samples whose score lies in it, measured with the inter-interval distance
   ``max(0, l - y_bar, y_bar - h)`` (eq. 7): a bin costs nothing while its
   observed frequency stays in the category. Data: the four probability-of-
   precipitation forecasts for Niamey in 2016 (Vogel et al. 2018; ``--data DIR``
   with ``niamey2016_{Logistic,EMOS,ENS,EPC}.npz``) or, without ``--data``,
   three scikit-learn classifiers on the breast-cancer data shipped with
   scikit-learn (a seeded 50/50 split). The paper's finding: all its models
   have **zero** error in the medium category, and some have zero error in
   every category; the traditional (top-label, equal-width) ECE hides which
   category is at fault.
2. **Grouping lens, eqs. 5-6, §5.2, Fig. 3.** Probabilities summed within
   groups of classes: the calibration that matters when every class of a group
   triggers the same action. Data: DenseNet-40 on CIFAR-10 (Kull et al. 2019
   logits; ``densenet40_c10_test.npz`` in ``--data``), groups vehicles
   (airplane, automobile, ship, truck) and animals; or, without ``--data``,
   the digits predictions shipped with calipers with groups of digits with
   loops {0, 6, 8, 9}, straight digits {1, 4, 7} and the rest {2, 3, 5}. The
   paper's finding (App. D, Fig. 12): the coarser the grouping, the lower the
   ECE; the full (finest) ECE is the largest.
3. **Bin-granularity sweep, App. B.2, Fig. 7.** The full ECE (whole probability
   vectors, TVD, k-d tree bins) against the bin fraction ``gamma = 2**-1 ..
   2**-9``, with the standard deviation over bootstrap resamples of the test
   set (the paper: 1000 resamples; here 100, ``--quick``: 5), and the
   traditional ECE against the number of equal-width bins. The paper's
   finding: the estimate rises with finer bins (negative bias of coarse bins,
   positive bias of sparse bins) and "stabilizes" around ``gamma = 2**-4``.

Run
---
``python examples/reproduce_kirchenbauer2022.py [--data DIR] [--out DIR] [--quick]``

The full run takes about 75 s of CPU time with ``--data`` (10 000 CIFAR-10
predictions, 9 x 101 k-d tree ECEs; 71 s measured, 9 minutes of wall time on
a shared 2-core machine under heavy load) and less on the shipped digits
predictions; ``--quick`` (about 8 s of CPU time) uses 3 values of
``gamma``, 5 resamples and at most 2000 samples. Seeded (``numpy.random.default_rng(0)``). Output in
``--out`` (default ``./reproduce-kirchenbauer2022``): ``likert.png``,
``grouping.png``, ``granularity.png`` and ``granularity.csv``.
"""

from __future__ import annotations

import argparse
import csv
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.special import softmax  # noqa: E402

import calipers as cp  # noqa: E402

LIKERT = ((0.0, 0.33), (0.33, 0.66), (0.66, 1.0))
NIAMEY_METHODS = ("Logistic", "EMOS", "ENS", "EPC")
CIFAR10_GROUPS: tuple[list[int], ...] = ([0, 1, 8, 9], [2, 3, 4, 5, 6, 7])
CIFAR10_GROUP_NAMES: tuple[str, ...] = ("vehicles", "animals")
DIGIT_GROUPS = ([0, 6, 8, 9], [1, 4, 7], [2, 3, 5])
DIGIT_GROUP_NAMES = ("loops 0689", "straight 147", "other 235")


def binary_forecasts(data: Path | None) -> tuple[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Binary probability forecasts and outcomes, one entry per forecaster.

    Parameters
    ----------
    data : Path or None
        Folder with ``niamey2016_<method>.npz`` (arrays ``p`` and ``y``); None
        trains three scikit-learn classifiers on the breast-cancer data.

    Returns
    -------
    name, models
        A description and ``{model: (p, y)}`` with ``p = P(y = 1)``.
    """
    if data is not None:
        models = {}
        for method in NIAMEY_METHODS:
            with np.load(data / f"niamey2016_{method}.npz", allow_pickle=False) as f:
                models[method] = (f["p"], f["y"].astype(np.int64))
        return "Niamey rain forecasts of 2016", models

    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)
    estimators = {
        "logistic regression": make_pipeline(StandardScaler(), LogisticRegression(C=0.1)),
        "naive Bayes": GaussianNB(),
        "random forest": RandomForestClassifier(n_estimators=50, random_state=0),
    }
    models = {}
    with threadpool_limits(1):  # BLAS threads only slow these tiny fits down
        for name, est in estimators.items():
            models[name] = (est.fit(Xtr, ytr).predict_proba(Xte)[:, 1], yte)
    return "breast cancer, 50/50 split", models


def multiclass_predictions(
    data: Path | None, quick: bool
) -> tuple[str, np.ndarray, np.ndarray, tuple[list[int], ...], tuple[str, ...]]:
    """Multi-class probabilities, labels and a grouping of the classes.

    Parameters
    ----------
    data : Path or None
        Folder with ``densenet40_c10_test.npz``; None uses the digits
        predictions shipped with calipers (logistic regression).
    quick : bool
        Keep a seeded subsample of at most 2000 samples.

    Returns
    -------
    name, probs, labels, groups, group_names
    """
    if data is not None:
        with np.load(data / "densenet40_c10_test.npz", allow_pickle=False) as f:
            probs, labels = softmax(f["logits"], axis=1), f["labels"]
        name, groups, names = "DenseNet-40 / CIFAR-10 test", CIFAR10_GROUPS, CIFAR10_GROUP_NAMES
    else:
        from calipers.datasets import load_default_predictions

        d = load_default_predictions()
        probs, labels = d.probs["logistic_regression"], d.labels
        name, groups, names = "logistic regression / digits", DIGIT_GROUPS, DIGIT_GROUP_NAMES
    if quick and len(labels) > 2000:
        keep = np.sort(np.random.default_rng(0).choice(len(labels), 2000, replace=False))
        probs, labels = probs[keep], labels[keep]
    return name, probs, labels, tuple(list(g) for g in groups), names


def granularity_sweep(
    probs: np.ndarray,
    labels: np.ndarray,
    gammas: Sequence[float],
    n_bins: Sequence[int],
    n_boot: int,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Full ECE against ``gamma`` and ECE against the number of bins, with bootstrap spread.

    Parameters
    ----------
    probs, labels : ndarray
        Multi-class probabilities and labels.
    gammas : sequence of float
        k-d tree bin fractions for :func:`calipers.full_ece`.
    n_bins : sequence of int
        Equal-width bin counts for :func:`calipers.ece`.
    n_boot : int
        Bootstrap resamples (n draws with replacement from the n samples,
        Kirchenbauer, Oaks & Heim 2022, App. B.2).
    seed : int, default 0

    Returns
    -------
    list of dict
        Rows ``{"metric", "setting", "estimate", "boot_mean", "boot_std"}``;
        ``estimate`` is on the full sample.
    """
    rng = np.random.default_rng(seed)
    n = len(labels)
    resamples = [rng.integers(0, n, n) for _ in range(n_boot)]
    rows: list[dict[str, Any]] = []
    for metric, settings, fn in (
        ("full_ece", gammas, lambda p, y, s: cp.full_ece(p, y, gamma=s)),
        ("ece", n_bins, lambda p, y, s: cp.ece(p, y, n_bins=int(s))),
    ):
        for s in settings:
            boot = np.array([float(fn(probs[i], labels[i], s)) for i in resamples])
            rows.append(
                {
                    "metric": metric,
                    "setting": float(s),
                    "estimate": float(fn(probs, labels, s)),
                    "boot_mean": float(boot.mean()),
                    "boot_std": float(boot.std(ddof=1)) if n_boot > 1 else float("nan"),
                }
            )
    return rows


def _plot_granularity(rows: list[dict[str, Any]], title: str, path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
    for ax, metric, xlabel in (
        (axes[0], "full_ece", "bin fraction gamma (k-d tree)"),
        (axes[1], "ece", "number of equal-width bins"),
    ):
        r = [row for row in rows if row["metric"] == metric]
        x = np.array([row["setting"] for row in r])
        ax.errorbar(
            x,
            [row["boot_mean"] for row in r],
            yerr=[row["boot_std"] for row in r],
            marker="o",
            capsize=3,
            label="bootstrap mean +/- sd",
        )
        ax.plot(x, [row["estimate"] for row in r], "k.", label="full sample")
        ax.set_xscale("log", base=2)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("full ECE (TVD)" if metric == "full_ece" else "top-label ECE")
        if metric == "full_ece":
            ax.invert_xaxis()  # finer bins to the right, as in the paper's Fig. 7
            ax.axvline(2**-4, color="0.6", ls=":", label="gamma = 2**-4")
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.savefig(path, dpi=70)
    plt.close(fig)


def _write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the three experiments; return the numbers printed.

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    dict
        ``likert`` (model -> [trad. ECE, full ECE, low, medium, high]),
        ``grouping`` (dict of the grouping numbers), ``sweep`` (rows of
        :func:`granularity_sweep`), ``probs``/``labels`` (the multi-class
        predictions swept) and ``figures`` (paths).
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="folder with the niamey2016_*.npz and densenet40_c10_test.npz files",
    )
    parser.add_argument("--out", type=Path, default=Path("reproduce-kirchenbauer2022"))
    parser.add_argument(
        "--quick", action="store_true", help="3 gammas, 5 resamples, <= 2000 samples"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    figures = {}

    # 1. Likert intervals
    name, models = binary_forecasts(args.data)
    print(f"1. Inter-interval (Likert) calibration error on {name}")
    print(
        f"  {'model':<20}{'Trad.':>7}{'Full':>7}{'low':>7}{'medium':>7}{'high':>7}   n per category"
    )
    likert = {}
    for model, (p, y) in models.items():
        per = cp.interval_calibration_error(p, y, intervals=LIKERT)
        values = [float(cp.ece(p, y)), float(cp.full_ece(p, y)), *per.tolist()]
        likert[model] = values
        counts = [int(np.sum((p >= lo) & (p <= hi))) for lo, hi in LIKERT]
        print(f"  {model:<20}" + "".join(f"{v:7.3f}" for v in values) + f"   {counts}")
    fig = cp.interval_diagram(
        {m: (p, y) for m, (p, y) in models.items()}, intervals=LIKERT, title=name
    )
    fig.set_size_inches(6, 4.6)
    figures["likert"] = args.out / "likert.png"
    fig.savefig(figures["likert"], dpi=90)
    plt.close(fig)
    print("  paper (CrisisMMD, Fig. 5): zero error in the medium category for every model,")
    print("  zero in all categories for TS, BCTS and HB; the traditional ECE cannot say where.")

    # 2. Grouping lens
    name, probs, labels, groups, group_names = multiclass_predictions(args.data, args.quick)
    print(
        f"\n2. Grouping lens on {name} ({len(labels)} samples), groups {dict(zip(group_names, groups, strict=True))}"
    )
    grouping = {
        "traditional ECE": float(cp.ece(probs, labels)),
        "full ECE (finest grouping)": float(cp.full_ece(probs, labels)),
        "group ECE": float(cp.group_ece(probs, labels, groups)),
    }
    for g, gname in zip(groups, group_names, strict=True):
        grouping[f"group ECE | true class in {gname}"] = float(
            cp.calibration_error(
                probs,
                labels,
                lens=cp.grouping(groups),
                selection=cp.LabelSelection(g),
                estimator=cp.KDTree(0.1),
                divergence=cp.TVD(),
            )
        )
    for key, value in grouping.items():
        print(f"  {key:<40}{value:.4f}")
    print("  paper (ETHEC, App. D Fig. 12): coarser groupings give lower ECE than the full ECE.")
    fig = cp.group_bar_chart(probs, labels, groups, group_names=group_names, title=name)
    fig.set_size_inches(5, 3.4)
    figures["grouping"] = args.out / "grouping.png"
    fig.savefig(figures["grouping"], dpi=90)
    plt.close(fig)

    # 3. Bin-granularity sweep
    gammas = [2.0**-k for k in ((1, 4, 7) if args.quick else range(1, 10))]
    n_bins = (2, 15, 100) if args.quick else (1, 2, 3, 5, 8, 10, 15, 20, 30, 50, 100, 200)
    n_boot = 5 if args.quick else 100
    sweep = granularity_sweep(probs, labels, gammas, n_bins, n_boot)
    print(f"\n3. Bin-granularity sweep on {name}, {n_boot} bootstrap resamples")
    for row in sweep:
        label = (
            f"gamma = 2**{np.log2(row['setting']):.0f}"
            if row["metric"] == "full_ece"
            else f"B = {row['setting']:.0f}"
        )
        print(
            f"  {row['metric']:<9}{label:<14} estimate {row['estimate']:.4f}"
            f"   bootstrap {row['boot_mean']:.4f} +/- {row['boot_std']:.4f}"
        )
    print("  paper (Fig. 7): the full ECE rises with finer bins and stabilizes near gamma = 2**-4;")
    print("  bootstrap sd < 0.01 at an error of about 0.14, spread 0.08 over the gamma range.")
    _write_csv(args.out / "granularity.csv", sweep)
    figures["granularity"] = args.out / "granularity.png"
    _plot_granularity(sweep, f"{name}: estimate vs bin granularity", figures["granularity"])
    print(f"\nfigures in {args.out}; {time.perf_counter() - start:.1f} s")
    return {
        "likert": likert,
        "grouping": grouping,
        "sweep": sweep,
        "probs": probs,
        "labels": labels,
        "figures": figures,
    }


if __name__ == "__main__":
    main()
