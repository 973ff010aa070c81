"""What the three regression diagrams share: inputs, the recalibrated numbers, the figure.

The diagrams of :mod:`calipers.diagrams.pit_histogram`,
:mod:`calipers.diagrams.quantile_reliability` and
:mod:`calipers.diagrams.variance_error` draw the numbers of
:mod:`calipers.regression` for a model's Gaussian predictions and, given a
fitted regression recalibrator, the same numbers after recalibration. The
recalibrated predictive distribution need not be Gaussian (the quantile
recalibration of Kuleshov et al. 2018 is not), so its PIT values come from
``recalibrator.predict_cdf`` and its interval coverage from
``recalibrator.predict_interval``; both are summarised here by the rules of
:func:`calipers.regression.pit_histogram` and
:func:`calipers.regression.quantile_calibration`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..regression import (
    GaussianPredictions,
    PITHistogram,
    PredictiveDistribution,
    ProbabilisticPredictions,
    check_gaussian,
    check_predictive,
)
from ..validation import CalibrationInputError
from ._style import SINGLE_COLUMN, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: Methods a fitted regression recalibrator must have for the diagrams.
_RECALIBRATOR_METHODS = ("predict_cdf", "predict_interval")


def check_recalibrator(recalibrator: Any) -> Any:
    """``recalibrator`` if it has the regression recalibrator's methods, else a TypeError."""
    missing = [m for m in _RECALIBRATOR_METHODS if not callable(getattr(recalibrator, m, None))]
    if missing:
        raise TypeError(
            "recalibrator must be a fitted regression recalibrator (e.g. "
            "calipers.recalibration.VarianceScaling().fit(...)); "
            f"{type(recalibrator).__name__} has no {', '.join(missing)}"
        )
    return recalibrator


#: The predictions a regression diagram draws: Gaussian arrays, or a distribution of any kind.
Predictions = GaussianPredictions | ProbabilisticPredictions


def checked_predictions(
    mean: Any, variance: Any, std: Any, targets: Any, sample_weight: Any
) -> Predictions:
    """The diagrams' one input check: Gaussian arrays (or ``GaussianPredictions``) by
    :func:`calipers.regression.check_gaussian`, as before; a
    :class:`~calipers.regression.PredictiveDistribution` of any kind (or
    ``ProbabilisticPredictions``) by :func:`calipers.regression.check_predictive`."""
    if isinstance(mean, PredictiveDistribution | ProbabilisticPredictions):
        if variance is not None or std is not None:
            raise CalibrationInputError(
                f"variance= and std= are for a Gaussian given by its means; a "
                f"{type(mean).__name__} states its own spread"
            )
        return check_predictive(mean, targets=targets, sample_weight=sample_weight)
    return check_gaussian(
        mean, variance=variance, std=std, targets=targets, sample_weight=sample_weight
    )


def _first(G: Predictions) -> tuple[Any, dict[str, Any]]:
    """The recalibrators' first argument (and spread) for ``G``."""
    if isinstance(G, GaussianPredictions):
        return G.mean, {"variance": G.variance}
    return G.distribution, {}


def weights(G: Predictions) -> np.ndarray:
    """Row weights of ``G`` (ones when it has none)."""
    return np.ones(G.n_samples) if G.sample_weight is None else G.sample_weight


def effective_n(w: np.ndarray) -> float:
    """Kish's effective sample size ``(sum w)^2 / sum w^2`` (``n`` for unit weights)."""
    return float(np.sum(w) ** 2 / np.sum(w**2))


def _check_output(values: Any, n: int, what: str) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    if a.shape != (n,) or not np.all(np.isfinite(a)):
        raise CalibrationInputError(
            f"the recalibrator's {what} must be {n} finite numbers; got shape {a.shape}"
            + ("" if a.shape != (n,) or np.all(np.isfinite(a)) else " with non-finite values")
        )
    return a


def recalibrated_pit(recalibrator: Any, G: Predictions) -> np.ndarray:
    """PIT values of the recalibrated predictions, read as the PIT before recalibration is.

    ``predict_pit`` where the recalibrator has it: the randomised PIT of Czado,
    Gneiting & Held (2009) where the predictions have atoms or unknown tails
    (counts, ensembles, quantile sets), drawn with the seed 0 that
    :func:`calipers.regression.pit_values` uses for the uncalibrated row, then
    recalibrated; equal to ``predict_cdf`` for continuous predictions such as
    Gaussians. ``predict_cdf`` (``F'_i(y_i)``) otherwise. Reading one side
    randomised and the other at the upper end of each jump would compare two
    different PITs (a recalibrated quantile set's KS read 0.21 by ``predict_cdf``
    where its randomised PIT reads 0.016)."""
    first, spread = _first(G)
    method = "predict_pit" if hasattr(recalibrator, "predict_pit") else "predict_cdf"
    u = _check_output(
        getattr(recalibrator, method)(first, targets=G.targets, **spread),
        G.n_samples,
        method,
    )
    if np.any((u < 0) | (u > 1)):
        raise CalibrationInputError(f"the recalibrator's {method} returned values outside [0, 1]")
    return u


def histogram_of_pit(u: np.ndarray, w: np.ndarray, n_bins: int) -> PITHistogram:
    """:class:`~calipers.regression.PITHistogram` of given PIT values, by the rules of
    :func:`calipers.regression.pit_histogram` (equal-width bins, last one closed; L1
    distance of the binned distribution and KS statistic of the values from uniform)."""
    total = float(np.sum(w))
    idx = np.minimum((u * n_bins).astype(np.int64), n_bins - 1)
    counts = np.bincount(idx, weights=w, minlength=n_bins).astype(np.float64)
    order = np.argsort(u, kind="stable")
    us, ws = u[order], w[order] / total
    after = np.cumsum(ws)
    ks = float(max(np.max(after - us), np.max(us - (after - ws))))
    return PITHistogram(
        edges=np.linspace(0.0, 1.0, n_bins + 1),
        counts=counts,
        l1_distance=float(np.sum(np.abs(counts / total - 1.0 / n_bins))),
        ks_statistic=ks,
    )


def recalibrated_coverage(recalibrator: Any, G: Predictions, levels: np.ndarray) -> np.ndarray:
    """Weighted fraction of targets inside the recalibrated central interval of each level."""
    w = weights(G)
    first, spread = _first(G)
    out = np.empty(levels.shape[0])
    for j, p in enumerate(levels):
        lo, hi = recalibrator.predict_interval(first, level=float(p), **spread)
        lo = _check_output(lo, G.n_samples, "predict_interval lower ends")
        hi = _check_output(hi, G.n_samples, "predict_interval upper ends")
        inside = (G.targets >= lo) & (G.targets <= hi)
        out[j] = float(np.dot(w, inside) / np.sum(w))
    return out


def recalibrated_variance(recalibrator: Any, G: Predictions) -> np.ndarray:
    """Recalibrated predicted variances; a CalibrationInputError when the recalibrated
    distribution is not Gaussian (``recalibrator.gaussian`` false)."""
    if not getattr(recalibrator, "gaussian", False) or not callable(
        getattr(recalibrator, "predict_variance", None)
    ):
        raise CalibrationInputError(
            f"{type(recalibrator).__name__} does not predict a Gaussian distribution "
            "(its gaussian attribute is not True), so it has no predicted variance to draw"
        )
    first, spread = _first(G)
    var = _check_output(
        recalibrator.predict_variance(first, **spread), G.n_samples, "predict_variance"
    )
    if np.any(var <= 0):
        raise CalibrationInputError("the recalibrator's predict_variance returned a value <= 0")
    return var


def figure_and_axes(ax: Any, height: float = 2.8) -> tuple[Figure, Axes]:
    """A new single-column figure with one Axes, or the figure of the given ``ax``."""
    if ax is None:
        fig = new_figure(SINGLE_COLUMN, height)
        return fig, fig.add_subplot()
    return ax.figure, ax
