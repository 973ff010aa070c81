"""A user's script, fully annotated: ``mypy --strict`` must accept it.

This is how a user with a typed code base calls calipers: metrics, input
validation, the pipeline, a recalibrator, the reliability table, a diagram,
a bootstrap interval, a test and a report. ``tests/test_typing.py`` runs
``python -m mypy --strict`` on this file (calipers found as an installed
package, through its ``py.typed`` marker) and then runs :func:`main` on small
data. Nothing runs on import.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

import calipers as cp
from calipers.datasets import DefaultPredictions, load_default_predictions
from calipers.diagrams import wilson_interval


def make_predictions(
    n: int = 240, k: int = 3, seed: int = 0
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Over-confident softmax predictions and labels drawn from tempered ones."""
    rng = np.random.default_rng(seed)
    logits = 3.0 * rng.normal(size=(n, k))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    tempered = np.exp(logits / 2.0) / np.exp(logits / 2.0).sum(axis=1, keepdims=True)
    labels = np.array([rng.choice(k, p=row) for row in tempered], dtype=np.int64)
    return probs, labels


def metric_suite(probs: NDArray[np.float64], labels: NDArray[np.int64]) -> dict[str, float]:
    """Named metrics as plain floats (the metrics return a float, or a tensor for tensors)."""
    return {
        "ece": float(cp.ece(probs, labels)),
        "ece_left": float(cp.ece(probs, labels, n_bins=10, edge_rule="left")),
        "ace": float(cp.ace(probs, labels)),
        "mce": float(cp.mce(probs, labels)),
        "classwise_ece": float(cp.classwise_ece(probs, labels)),
        "smece": float(cp.smece(probs, labels)),
        "accuracy": float(cp.accuracy(probs, labels)),
        "nll": float(cp.nll(probs, labels)),
        "brier": float(cp.brier(probs, labels)),
    }


def pipeline(probs: NDArray[np.float64], labels: NDArray[np.int64]) -> float:
    """The composable calibration error and its per-bin statistics."""
    P: cp.Predictions = cp.check_predictions(probs, labels)
    n_classes: int = P.n_classes
    binning: cp.EqualMass = cp.EqualMass(10, rule="kumar")
    value = float(cp.calibration_error(P, lens="classwise", estimator=binning))
    slices: list[cp.SliceStatistics] = cp.binned_statistics(
        probs, labels, lens=cp.single_class(n_classes - 1), estimator=cp.EqualWidth(5)
    )
    stats: cp.BinStatistics = slices[0].stats
    counts: NDArray[np.float64] = stats.count
    assert int(counts.sum()) == len(labels)
    return value


def recalibrate(probs: NDArray[np.float64], labels: NDArray[np.int64]) -> float:
    """Fit temperature scaling on one half, measure the ECE on the other."""
    split = cp.calibration_split(probs, labels, calibration_size=0.5, seed=0)
    ts: cp.TemperatureScaling = cp.TemperatureScaling()
    fitted: cp.Recalibrator = ts.fit(split.scores_cal, split.labels_cal)
    calibrated: NDArray[np.float64] = np.asarray(fitted.predict_proba(split.scores_test))
    predicted: NDArray[Any] = np.asarray(fitted.predict(split.scores_test))
    assert predicted.shape == (len(split.labels_test),)
    return float(cp.ece(calibrated, split.labels_test))


def reliability(probs: NDArray[np.float64], labels: NDArray[np.int64]) -> int:
    """The reliability table (a record array here) and the diagram drawn from the same bins."""
    table: Any = cp.reliability_table(probs, labels, n_bins=10, as_frame=False)
    gaps: NDArray[np.float64] = np.asarray(table.gap, dtype=np.float64)
    low, high = wilson_interval(np.asarray(table.observed), np.asarray(table.n_effective))
    assert bool(np.all(low <= high))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # diagrams need matplotlib
        return len(gaps)
    fig = cp.reliability_diagram(probs, labels, n_bins=10, intervals="wilson")
    n_axes = len(fig.axes)
    plt.close(fig)
    return len(gaps) + n_axes


def uncertainty(probs: NDArray[np.float64], labels: NDArray[np.int64]) -> tuple[float, float]:
    """A bootstrap interval of the ECE and the consistency-resampling test."""
    ci: cp.ConfidenceInterval = cp.confidence_interval(
        cp.ece, probs, labels, n_resamples=50, seed=1, n_bins=10
    )
    test: cp.CalibrationTestResult = cp.consistency_test(probs, labels, n_resamples=50, seed=2)
    assert ci.low <= ci.high
    return ci.high - ci.low, float(test.p_value)


def summary(data: DefaultPredictions, n: int) -> str:
    """A report of two shipped models, as Markdown."""
    models = {name: (data.probs[name][:n], data.labels[:n]) for name in data.model_names[:2]}
    rep: cp.Report = cp.report(models, null_resamples=0)
    html: str = rep._repr_html_()
    assert html.count("<table") == 1  # the summary (when there is one), then the table
    return rep.to_markdown()


def main() -> dict[str, float]:
    """Run every part on small data; returns a few numbers."""
    probs, labels = make_predictions()
    out = metric_suite(probs, labels)
    out["classwise_kumar"] = pipeline(probs, labels)
    out["ece_recalibrated"] = recalibrate(probs, labels)
    out["table_rows_and_axes"] = float(reliability(probs, labels))
    width, p_value = uncertainty(probs, labels)
    out["ece_interval_width"] = width
    out["consistency_p_value"] = p_value
    out["report_chars"] = float(len(summary(load_default_predictions(), 200)))
    return out


if __name__ == "__main__":
    for key, value in main().items():
        print(f"{key:24s} {value:.4f}")
