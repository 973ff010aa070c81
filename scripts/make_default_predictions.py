"""Regenerate ``src/calipers/datasets/default_predictions.npz``.

The file holds real out-of-fold predictions of three scikit-learn models on the
handwritten-digits data set that ships with scikit-learn
(:func:`sklearn.datasets.load_digits`, 1797 samples, 64 features, 10 classes):

``gaussian_nb``
    ``GaussianNB()`` -- strongly over-confident (mean confidence > accuracy).
``random_forest``
    ``RandomForestClassifier(n_estimators=100, random_state=0)`` -- clearly
    under-confident (mean confidence < accuracy).
``logistic_regression``
    ``make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, C=2.0))``
    -- close to calibrated. Its out-of-fold logits (``decision_function``; the
    softmax of which is exactly ``predict_proba``) are saved as well.

All predictions come from ``cross_val_predict`` with
``StratifiedKFold(n_splits=5, shuffle=True, random_state=0)``, so every sample
is predicted by a model that did not see it. A seeded, stratified 50/50 split
into a calibration part and a test part is stored as ``is_calibration``.

scikit-learn is needed only by this script, not by calipers at run time.

Usage::

    python scripts/make_default_predictions.py            # write the file
    python scripts/make_default_predictions.py --check    # also recompute and
                                                          # compare (determinism)
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import sklearn
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

SEED = 0
N_SPLITS = 5
N_BINS = 15
LOGREG_C = 2.0
NLL_EPS = 1e-15  # probabilities are clipped to [NLL_EPS, 1] for the printed NLL only

MODEL_NAMES = ("gaussian_nb", "random_forest", "logistic_regression")

REPO_ROOT = Path(__file__).resolve().parents[1]
OUTPUT = REPO_ROOT / "src" / "calipers" / "datasets" / "default_predictions.npz"


def make_models() -> dict[str, object]:
    """Return fresh, unfitted estimators keyed by model name (in order)."""
    return {
        "gaussian_nb": GaussianNB(),
        "random_forest": RandomForestClassifier(n_estimators=100, random_state=SEED),
        "logistic_regression": make_pipeline(
            StandardScaler(), LogisticRegression(max_iter=2000, C=LOGREG_C)
        ),
    }


def stratified_half_split(labels: np.ndarray, seed: int) -> np.ndarray:
    """Seeded stratified 50/50 split; True marks the calibration half.

    Within each class the samples are shuffled and the first ``n_c // 2`` go to
    the calibration half. When a class has an odd count its spare sample goes
    alternately to the calibration and the test half (in class order), so each
    class count differs by at most one between halves and so do the totals.
    """
    rng = np.random.default_rng(seed)
    is_cal = np.zeros(labels.shape[0], dtype=bool)
    spare_to_cal = True
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        idx = idx[rng.permutation(idx.size)]
        n_cal = idx.size // 2
        if idx.size % 2 == 1:
            n_cal += int(spare_to_cal)
            spare_to_cal = not spare_to_cal
        is_cal[idx[:n_cal]] = True
    return is_cal


def top_label_ece(probs: np.ndarray, labels: np.ndarray, n_bins: int = N_BINS) -> float:
    """Top-label ECE with ``n_bins`` equal-width bins ``(lo, hi]`` (0 goes to bin 0)."""
    conf = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(np.float64)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    # bin b holds conf in (edges[b], edges[b+1]]; conf == 0 falls into bin 0
    bins = np.clip(np.searchsorted(edges, conf, side="left") - 1, 0, n_bins - 1)
    n = conf.size
    ece = 0.0
    for b in range(n_bins):
        mask = bins == b
        count = int(mask.sum())
        if count:
            ece += count / n * abs(float(conf[mask].mean()) - float(correct[mask].mean()))
    return ece


def summarize(probs: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Accuracy, mean top-label confidence, 15-bin ECE and (clipped) NLL."""
    p_true = probs[np.arange(labels.size), labels]
    return {
        "accuracy": float((probs.argmax(axis=1) == labels).mean()),
        "confidence": float(probs.max(axis=1).mean()),
        "ece": top_label_ece(probs, labels),
        "nll": float(-np.log(np.clip(p_true, NLL_EPS, 1.0)).mean()),
        "n_zero_true": int((p_true == 0.0).sum()),
    }


def compute() -> dict[str, np.ndarray]:
    """Run the cross-validation and return the arrays to be saved."""
    X, y = load_digits(return_X_y=True)
    labels = np.asarray(y, dtype=np.int64)
    cv = StratifiedKFold(n_splits=N_SPLITS, shuffle=True, random_state=SEED)

    arrays: dict[str, np.ndarray] = {
        "labels": labels,
        "model_names": np.array(MODEL_NAMES, dtype=np.str_),
    }
    with warnings.catch_warnings():
        # a convergence warning would mean the predictions are not what we claim
        warnings.simplefilter("error", category=ConvergenceWarning)
        for name, model in make_models().items():
            probs = cross_val_predict(model, X, labels, cv=cv, method="predict_proba")
            arrays[f"probs_{name}"] = np.ascontiguousarray(probs, dtype=np.float64)
        logits = cross_val_predict(
            make_models()["logistic_regression"], X, labels, cv=cv, method="decision_function"
        )
    arrays["logits_logistic_regression"] = np.ascontiguousarray(logits, dtype=np.float64)
    arrays["is_calibration"] = stratified_half_split(labels, SEED)

    description = (
        "Out-of-fold predicted probabilities on the scikit-learn handwritten digits "
        "data set (sklearn.datasets.load_digits: 1797 samples, 64 features, 10 classes; "
        "a copy of the UCI 'Optical Recognition of Handwritten Digits' test set). "
        "Predictions from sklearn.model_selection.cross_val_predict(method='predict_proba') "
        f"with StratifiedKFold(n_splits={N_SPLITS}, shuffle=True, random_state={SEED}). "
        "Models: gaussian_nb = GaussianNB() (over-confident); "
        f"random_forest = RandomForestClassifier(n_estimators=100, random_state={SEED}) "
        "(under-confident); "
        "logistic_regression = make_pipeline(StandardScaler(), "
        f"LogisticRegression(max_iter=2000, C={LOGREG_C})) (close to calibrated). "
        "logits_logistic_regression are the out-of-fold decision_function values of the "
        "same pipeline (their softmax equals probs_logistic_regression). "
        "is_calibration: seeded (numpy default_rng(0)) stratified 50/50 split into "
        "calibration (True) and test (False) halves. "
        f"Generated by scripts/make_default_predictions.py with scikit-learn "
        f"{sklearn.__version__} and numpy {np.__version__}."
    )
    arrays["description"] = np.array(description, dtype=np.str_)
    return arrays


def check_arrays(arrays: dict[str, np.ndarray]) -> None:
    """Sanity checks on the arrays before they are written."""
    labels = arrays["labels"]
    n = labels.shape[0]
    assert labels.dtype == np.int64 and labels.shape == (n,)
    for name in MODEL_NAMES:
        p = arrays[f"probs_{name}"]
        assert p.dtype == np.float64 and p.shape == (n, 10), name
        assert np.all(p >= 0.0) and np.all(p <= 1.0), name
        assert np.max(np.abs(p.sum(axis=1) - 1.0)) < 1e-9, name
    z = arrays["logits_logistic_regression"]
    soft = np.exp(z - z.max(axis=1, keepdims=True))
    soft /= soft.sum(axis=1, keepdims=True)
    assert np.max(np.abs(soft - arrays["probs_logistic_regression"])) < 1e-9
    for key, value in arrays.items():
        assert value.dtype != object, key


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=OUTPUT, help="where to write the .npz")
    parser.add_argument(
        "--check",
        action="store_true",
        help="recompute everything a second time and verify the arrays are byte-identical",
    )
    args = parser.parse_args(argv)

    arrays = compute()
    check_arrays(arrays)

    labels = arrays["labels"]
    print(f"scikit-learn {sklearn.__version__}, numpy {np.__version__}")
    print(f"n = {labels.size}, classes = {np.unique(labels).size}")
    header = f"{'model':<22}{'accuracy':>10}{'mean conf':>11}{'conf-acc':>10}"
    header += f"{'ECE(15)':>9}{'NLL':>8}  p_true==0"
    print(header)
    for name in MODEL_NAMES:
        s = summarize(arrays[f"probs_{name}"], labels)
        gap = s["confidence"] - s["accuracy"]
        print(
            f"{name:<22}{s['accuracy']:>10.4f}{s['confidence']:>11.4f}{gap:>+10.4f}"
            f"{s['ece']:>9.4f}{s['nll']:>8.4f}  {s['n_zero_true']}"
        )
    print(
        f"(NLL uses probabilities clipped to [{NLL_EPS:g}, 1]; "
        "p_true==0 counts samples whose true class got probability exactly 0)"
    )
    is_cal = arrays["is_calibration"]
    print(f"calibration / test sizes: {int(is_cal.sum())} / {int((~is_cal).sum())}")

    if args.check:
        again = compute()
        assert again.keys() == arrays.keys()
        for key in arrays:
            a, b = arrays[key], again[key]
            assert a.dtype == b.dtype and a.shape == b.shape, key
            assert a.tobytes() == b.tobytes(), f"{key} differs between two runs"
        print("determinism check: a second run gave byte-identical arrays")

    args.output.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.output, **arrays)  # type: ignore[arg-type]  # numpy stub quirk

    with np.load(args.output, allow_pickle=False) as f:
        for key, value in arrays.items():
            assert f[key].dtype == value.dtype and f[key].tobytes() == value.tobytes(), key
    print(f"wrote {args.output} ({args.output.stat().st_size / 1024:.1f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
